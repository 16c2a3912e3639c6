//! Approving and rejecting: the approver resolved, the proposal's integrity
//! checked against its events, the durable files materialized in the
//! order protocol §10 fixes, and crash recovery.

use super::*;
use crate::audit::trail::ProposalStep;

/// Who approves: the caller, as its transport vouches for it. Only a person
/// at the CLI may name someone else with `approver`; on an agent transport
/// (MCP, JSONL, HTTP with or without a token) `approver` must equal the
/// transport's own actor — an identity a caller merely asserts is no
/// identity, and self-approval must hold for the identity the transport knows.
pub(super) fn resolve_approver(caller: &Caller, param: Option<String>) -> Result<String> {
    let approver = match param {
        Some(a) if a != caller.actor && (caller.authenticated || caller.is_agent()) => {
            return Err(Error::denied(format!(
                "this {} connection acts as {:?}; `approver` cannot name someone else \
                 ({:?}). A person approves at the command line (`vouch approve`) or over \
                 HTTP with their own token",
                caller.transport.name(),
                caller.actor,
                crate::ids::truncate_for_message(&a)
            )));
        }
        Some(a) => a,
        None => caller.actor.clone(),
    };
    check_actor(&approver)?;
    if crate::ids::reads_as_no_name(&approver) {
        return Err(Error::denied(format!(
            "review_gate: the approver {approver:?} reads as {:?}, the name the audit log \
             uses for \"no name\"; a decision is signed with a person's name",
            crate::ids::NO_NAME
        )));
    }
    Ok(approver)
}

/// The audit events of one proposal: its `proposal.create` event and, if a
/// previous run wrote one and then crashed, the event that decided it.
/// Walks back only as far as the proposal's creation.
pub(super) struct ProposalEvents {
    pub(super) create: Option<Value>,
    pub(super) decision: Option<Value>,
}

/// The step in a proposal's life an audit event records, if any.
fn step_of(ev: &Value) -> Option<ProposalStep> {
    ev.get("event")
        .and_then(Value::as_str)
        .and_then(ProposalStep::of)
}

/// An audit event's id, for a message (`?` when it has none).
fn event_id(ev: &Value) -> &str {
    ev.get("id").and_then(Value::as_str).unwrap_or("?")
}

/// The refusal to approve proposal `id`, which audit event `ev` rejected.
fn rejected(id: &str, ev: &Value) -> Error {
    Error::conflict(format!(
        "proposal {id} was rejected (audit event {}); finish with `vouch reject`",
        event_id(ev)
    ))
}

/// The refusal to reject proposal `id`, which audit event `ev` approved.
fn approved_already(id: &str, ev: &Value) -> Error {
    Error::conflict(format!(
        "proposal {id} was approved (audit event {}); run approve again to finish it",
        event_id(ev)
    ))
}

pub(super) fn proposal_events(kb: &Kb, proposal_id: &str) -> Result<ProposalEvents> {
    let mut found = ProposalEvents {
        create: None,
        decision: None,
    };
    kb.audit_log().scan_back(|ev| {
        let names = ev
            .get("object_ids")
            .and_then(Value::as_array)
            .is_some_and(|ids| ids.first().and_then(Value::as_str) == Some(proposal_id));
        if !names {
            return false;
        }
        match step_of(ev) {
            Some(ProposalStep::Approve | ProposalStep::Reject) => {
                if found.decision.is_none() {
                    found.decision = Some(ev.clone());
                }
                false
            }
            Some(ProposalStep::Create) => {
                found.create = Some(ev.clone());
                true
            }
            None => false,
        }
    })?;
    Ok(found)
}

/// What makes a proposal what it is — kind, reserved id, proposer, session,
/// rationale and the normalized payload — hashed. Recorded in the
/// `proposal.create` event, so a proposal file edited after it was proposed
/// (the words a reviewer saw, or who proposed them) is refused at approve.
pub fn proposal_fingerprint(p: &Proposal) -> Result<String> {
    let payload = match p.kind {
        ProposalKind::Lifecycle => serde_json::to_value(lifecycle_change(p)?)
            .map_err(|e| Error::internal(format!("payload encoding: {e}")))?,
        ProposalKind::Delete | ProposalKind::Redact => p.payload.clone(),
        _ => Draft::from_proposal(p)?.to_payload()?,
    };
    let identity = json!({
        "kind": p.kind.as_str(),
        "object_id": p.object_id,
        "proposed_by": p.proposed_by,
        "session_id": p.session_id,
        "rationale": p.rationale,
        "payload": payload,
    });
    Ok(crate::ids::sha256_hex(
        crate::audit::canonical_json(&identity).as_bytes(),
    ))
}

/// Changing objects that no approval or import let in, or that were edited
/// by hand since: the change's event would record the hand edit's bytes as
/// if the gate had written them. An agent is refused; a person (at the
/// command line, or signed in to the review pages), who decides what the
/// knowledge base holds, is warned, naming them, and goes ahead.
pub(crate) fn refuse_unreviewed(
    kb: &Kb,
    caller: &Caller,
    objects: &[(Dir, &str)],
    what: &str,
) -> Result<()> {
    let unreviewed = crate::retrieval::unaudited_strictly(kb, objects);
    let mut named: Vec<&str> = objects
        .iter()
        .filter(|(dir, id)| unreviewed.contains(&(*dir, id.to_string())))
        .map(|(_, id)| *id)
        .collect();
    named.dedup();
    if named.is_empty() {
        return Ok(());
    }
    if caller.role == crate::kb::Role::Human {
        kb.warn(format!(
            "{} {} not what the gate wrote (written or edited by hand); this change records \
             {} as it is now, as {}'s",
            named.join(", "),
            if named.len() == 1 { "is" } else { "are" },
            if named.len() == 1 { "it" } else { "them" },
            caller.actor
        ));
        return Ok(());
    }
    Err(Error::conflict(format!(
        "cannot {what} {}: no approval or import wrote {} as it is now (written or edited \
         by hand); restore the approved file (git checkout), or propose the change and have \
         it reviewed",
        named.join(", "),
        if named.len() == 1 { "it" } else { "them" }
    )))
}

/// The key of the fingerprint in a `proposal.create` event's data.
pub const FINGERPRINT_KEY: &str = "proposal_sha256";

/// Does the proposal file still say what its `proposal.create` event
/// recorded? `Err` names what differs and what to do.
pub fn check_integrity(p: &Proposal, create: Option<&Value>) -> std::result::Result<(), String> {
    let Some(create) = create else {
        return Err(format!(
            "proposal {} has no proposal.create event in the audit log: it did not come \
             through kb.propose (or the log was cut); reject it and re-propose",
            p.id
        ));
    };
    let actor = create.get("actor").and_then(Value::as_str).unwrap_or("");
    if actor != p.proposed_by {
        return Err(format!(
            "proposal {} says it was proposed by {:?} but its proposal.create event \
             records {:?}: the file was edited after it was proposed; reject it",
            p.id, p.proposed_by, actor
        ));
    }
    let recorded_object = create
        .get("object_ids")
        .and_then(Value::as_array)
        .and_then(|ids| ids.get(1))
        .and_then(Value::as_str);
    if recorded_object.is_some_and(|o| o != p.object_id) {
        return Err(format!(
            "proposal {} now targets {:?}, not the id its proposal.create event reserved: \
             the file was edited after it was proposed; reject it",
            p.id, p.object_id
        ));
    }
    // Events written before fingerprints existed (and vouch 1.x's) carry
    // none; the actor and object checks above are all they allow.
    if let Some(recorded) = create
        .get("data")
        .and_then(|d| d.get(FINGERPRINT_KEY))
        .and_then(Value::as_str)
    {
        let now = proposal_fingerprint(p).map_err(|e| e.message)?;
        if now != recorded {
            return Err(format!(
                "proposal {} was edited after it was proposed (its content no longer \
                 matches the fingerprint in its proposal.create event); what a reviewer \
                 saw is not what would be approved — reject it and re-propose",
                p.id
            ));
        }
    }
    Ok(())
}

pub(super) fn already_decided(p: &Proposal) -> Error {
    Error::conflict(format!(
        "proposal {} is already {} (by {} at {}); a decided proposal cannot be decided again — \
         re-propose to create a new one",
        p.id,
        p.status,
        p.decided_by.as_deref().unwrap_or("unknown"),
        p.decided_at.map(|t| t.to_string()).unwrap_or_default()
    ))
}

/// Load a pending proposal, finishing a crashed decision's cleanup if the
/// proposal is already in `decided/`. Caller holds the lock.
pub(super) fn load_pending(kb: &Kb, id: &str) -> Result<Proposal> {
    check_id("proposal id", id)?;
    let decided = kb.load_proposal(Dir::Decided, id)?;
    let pending = kb.load_proposal(Dir::Proposed, id)?;
    match (pending, decided) {
        (_, Some(d)) => {
            // A crash after the decided/ write left the pending copy behind:
            // remove it so the proposal is decided exactly once.
            atomic::remove(kb.layout().root(), &kb.layout().file(Dir::Proposed, id)?)?;
            kb.forget_pending(&[id.to_string()]);
            Err(already_decided(&d))
        }
        (Some(p), None) => Ok(p),
        (None, None) => Err(Error::not_found(format!(
            "no proposal {id:?} in proposed/ or decided/ (see `vouch pending`)"
        ))),
    }
}

/// Approve one or many proposals. Bulk approval is all-or-nothing: every
/// proposal is checked first, then one audit append (one fsync) and one
/// batched write commit them all.
pub fn approve(kb: &Kb, caller: &Caller, p: ApproveParams) -> Result<Vec<ApproveResult>> {
    let approver = resolve_approver(caller, p.approver)?;
    kb.may_decide(caller)?;
    let ids = p.proposal_id.into_vec();
    if ids.is_empty() {
        return Err(Error::missing("proposal_id"));
    }
    let _lock = kb.lock()?;
    let mut seen = HashSet::new();
    struct Plan {
        proposal: Proposal,
        draft: Draft,
        actor: String,
        at: Timestamp,
        recovered: bool,
        /// The hash of the audit event that decided it (set once appended).
        event_hash: Option<String>,
    }
    let mut plans = Vec::with_capacity(ids.len());
    let mut fresh: Vec<usize> = Vec::new();
    // Listed proposals already approved, with the error to give if the
    // list is not the re-run of an interrupted bulk approval.
    let mut done_before: Vec<(Proposal, Error)> = Vec::new();
    let self_approval = |who: &str, p: &Proposal| {
        Error::denied(format!(
            "{who} proposed {} and cannot also approve it; another person or reviewer must \
             review it",
            p.id
        ))
    };
    // A change to what exists (a lifecycle change, a delete, a redaction)
    // is approved by someone other than its proposer, and on its own.
    let change_alone = |approver: &str, what: &str, p: &Proposal| -> Result<()> {
        if approver == p.proposed_by {
            return Err(self_approval(approver, p));
        }
        if ids.len() > 1 {
            return Err(Error::invalid(format!(
                "{} is a {what} proposal; approve it on its own (a list is all-or-nothing \
                 only for new knowledge)",
                p.id
            )));
        }
        Ok(())
    };
    // Claims approved in this list: a relation listed with them may join
    // them (they are written together).
    let claims_in_list: HashSet<String> = if ids.len() > 1 {
        ids.iter()
            .filter(|id| check_id("proposal id", id).is_ok())
            .filter_map(|id| kb.load_proposal(Dir::Proposed, id).ok().flatten())
            .filter(|p| p.kind == ProposalKind::Claim)
            .map(|p| p.object_id)
            .collect()
    } else {
        HashSet::new()
    };
    for id in &ids {
        if !seen.insert(id.clone()) {
            return Err(Error::invalid(format!("proposal {id} is listed twice")));
        }
        let proposal = match load_pending(kb, id) {
            Ok(p) => p,
            // Part of a list whose approval a crash interrupted: kept
            // aside, and accepted below only if another listed proposal is
            // such an interrupted approval too.
            Err(e) if e.kind == ErrorKind::Conflict && ids.len() > 1 => {
                match kb.load_proposal(Dir::Decided, id)? {
                    Some(d) if d.status == ProposalStatus::Approved => {
                        done_before.push((d, e));
                        continue;
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        // A change to what exists passes the checks every proposal does,
        // then its kind's own rule on a decision already logged, then its
        // own approval.
        let change_events =
            |what: &str, proposal: &Proposal, refusal: &dyn Fn(&Value) -> Option<Error>| {
                let events = proposal_events(kb, id)?;
                check_integrity(proposal, events.create.as_ref()).map_err(Error::denied)?;
                if let Some(e) = events.decision.as_ref().and_then(refusal) {
                    return Err(e);
                }
                change_alone(&approver, what, proposal)?;
                Ok(events)
            };
        match proposal.kind {
            ProposalKind::Redact => {
                change_events("redact", &proposal, &|ev| {
                    Some(Error::conflict(format!(
                        "proposal {id} was decided by audit event {} (a redaction is decided by \
                         its own object.redact event); finish with `vouch reject`",
                        event_id(ev)
                    )))
                })?;
                let done = approve_change(kb, caller, &approver, proposal, p.reason.clone());
                return Ok(vec![done?]);
            }
            ProposalKind::Lifecycle => {
                change_events("lifecycle", &proposal, &|ev| Some(rejected(id, ev)))?;
                let done = approve_change(kb, caller, &approver, proposal, p.reason.clone());
                return Ok(vec![done?]);
            }
            ProposalKind::Delete => {
                let events = change_events("delete", &proposal, &|ev| {
                    (step_of(ev) == Some(ProposalStep::Reject)).then(|| rejected(id, ev))
                })?;
                let done = super::delete::approve_delete(
                    kb,
                    caller,
                    &approver,
                    proposal,
                    events.decision,
                    p.reason.clone(),
                );
                return Ok(vec![done?]);
            }
            _ => {}
        }
        let draft = Draft::from_proposal(&proposal)?;
        let events = proposal_events(kb, id)?;
        // Every check of a fresh approve runs on a recovery too: a decision
        // event in the log is only a record that someone decided, never a
        // pass around the gate (a forged line would otherwise be one).
        check_integrity(&proposal, events.create.as_ref()).map_err(Error::denied)?;
        if approver == proposal.proposed_by {
            return Err(self_approval(&approver, &proposal));
        }
        if let Draft::Relation(d) = &draft {
            let waiting = ends_still_proposed(kb, d, &claims_in_list)?;
            if !waiting.is_empty() {
                let named: Vec<String> = waiting
                    .iter()
                    .map(|(claim, p)| format!("claim {claim} (proposal {p})"))
                    .collect();
                let first: Vec<&str> = waiting.iter().map(|(_, p)| p.as_str()).collect();
                return Err(Error::conflict(format!(
                    "relation proposal {id} joins {}, not approved yet: approve that first, or \
                     together (`vouch approve {} {id}`); if it was rejected, reject this too",
                    named.join(" and "),
                    first.join(" ")
                )));
            }
        }
        let errors = validate(kb, &draft, None, Some(&proposal.object_id), &claims_in_list);
        if !errors.is_empty() {
            return Err(Error::denied(format!(
                "proposal {id} no longer validates: {}",
                errors.join("; ")
            )));
        }
        let dir = object_dir(proposal.kind);
        if let Some(ev) = events.decision {
            // A crash interrupted a decision already in the audit log.
            if step_of(&ev) == Some(ProposalStep::Reject) {
                return Err(rejected(id, &ev));
            }
            let actor = ev
                .get("actor")
                .and_then(Value::as_str)
                .unwrap_or(&approver)
                .to_string();
            if actor == proposal.proposed_by {
                return Err(self_approval(&actor, &proposal));
            }
            check_actor(&actor)?;
            // The crashed run may have written the durable file already; any
            // other file under the reserved id is not ours to replace.
            if let Some(existing) = approved_by_of(kb, dir, &proposal.object_id)?
                && existing.as_deref() != Some(actor.as_str())
            {
                return Err(Error::conflict(format!(
                    "{} {} already exists and was not written by the interrupted approval \
                     of {id}; reject {id} and re-propose",
                    dir.id_label(),
                    proposal.object_id
                )));
            }
            let at = ev
                .get("created_at")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse)
                .unwrap_or_else(|| kb.now());
            plans.push(Plan {
                proposal,
                draft,
                actor,
                at,
                recovered: true,
                event_hash: ev.get("hash").and_then(Value::as_str).map(str::to_string),
            });
            continue;
        }
        if kb.exists(dir, &proposal.object_id) {
            return Err(Error::conflict(format!(
                "{} {} already exists; reject {id} and re-propose",
                dir.id_label(),
                proposal.object_id
            )));
        }
        fresh.push(plans.len());
        plans.push(Plan {
            proposal,
            draft,
            actor: approver.clone(),
            at: kb.now(),
            recovered: false,
            event_hash: None,
        });
    }
    // Re-running a bulk approval that a crash cut between its renames: the
    // proposals it finished are reported, the rest are finished below.
    // Otherwise a decided proposal in the list refuses the whole list.
    // Only proposals the same reviewer decided count as part of that list.
    let interrupted_by: HashSet<&str> = plans
        .iter()
        .filter(|pl| pl.recovered)
        .map(|pl| pl.actor.as_str())
        .collect();
    let mut results = Vec::with_capacity(ids.len());
    for (d, e) in done_before {
        if !d
            .decided_by
            .as_deref()
            .is_some_and(|by| interrupted_by.contains(by))
        {
            return Err(e);
        }
        results.push(ApproveResult {
            ok: true,
            object_id: d.object_id.clone(),
            object_kind: d.kind.as_str().to_string(),
            proposal_id: d.id.clone(),
            recovered: true,
        });
    }
    // Two approvals in one list cannot both replace the same claim.
    let mut replaced: HashMap<&str, &str> = HashMap::new();
    for pl in &plans {
        for old in supersedes_of(&pl.draft) {
            if let Some(first) = replaced.insert(old, &pl.proposal.id) {
                return Err(Error::conflict(format!(
                    "{first} and {} both supersede claim {old}; approve one of them",
                    pl.proposal.id
                )));
            }
        }
    }
    // Every durable file is staged first (in memory), so each approval's
    // event can record the sha256 of what it writes (`data.written`): a
    // later edit by hand is told from what was approved.
    let mut batch = atomic::Batch::new(kb.layout().root());
    let mut written = Vec::new();
    let mut hashes: Vec<serde_json::Map<String, Value>> = Vec::with_capacity(plans.len());
    for pl in &plans {
        let mut shas = serde_json::Map::new();
        let (object, sha) = materialize(
            kb,
            &mut batch,
            pl.draft.clone(),
            &pl.proposal.object_id,
            pl.at,
            &pl.actor,
        )?;
        shas.insert(sha.0, json!(sha.1));
        written.push(object);
        // After the new claim in the batch: a crash between the renames
        // leaves a replaced claim current, never one superseded by a claim
        // that does not exist; approving again finishes it.
        let olds = supersedes_of(&pl.draft);
        // Finishing an approval a crash interrupted: its event already
        // recorded what it writes, so the old claims' files look "edited"
        // until it is done — they are not checked again.
        if !pl.recovered {
            let claims: Vec<(Dir, &str)> = olds.iter().map(|o| (Dir::Claims, *o)).collect();
            refuse_unreviewed(kb, caller, &claims, "supersede")?;
        }
        for old in olds {
            let mut c = kb
                .load::<Claim>(old)?
                .ok_or_else(|| Error::not_found(format!("claim {old:?} does not exist")))?;
            c.superseded(&pl.proposal.object_id, pl.at);
            let (path, sha) = kb.stage(&mut batch, &c)?;
            shas.insert(path, json!(sha));
            written.push(crate::model::Written::Claim(c));
        }
        hashes.push(shas);
    }
    let mut events: Vec<AuditEvent> = fresh
        .iter()
        .map(|&i| {
            let pl = &plans[i];
            let mut data = json!({"kind": pl.proposal.kind.as_str()});
            if let Some(r) = &p.reason {
                data["reason"] = json!(r);
            }
            if pl.actor != caller.actor {
                data["caller"] = json!(caller.actor);
            }
            let mut object_ids = vec![pl.proposal.id.clone(), pl.proposal.object_id.clone()];
            let supersedes = supersedes_of(&pl.draft);
            if !supersedes.is_empty() {
                data["supersedes"] = json!(supersedes);
                object_ids.extend(supersedes.iter().map(|s| s.to_string()));
            }
            data[crate::audit::WRITTEN_KEY] = Value::Object(hashes[i].clone());
            let mut ev = kb.event("proposal.approve", &pl.actor, object_ids, data);
            ev.created_at = pl.at;
            ev
        })
        .collect();
    kb.append_audit(&mut events)?;
    crate::fail::point("approve.logged");
    for (&i, ev) in fresh.iter().zip(&events) {
        plans[i].event_hash = Some(ev.hash.clone());
    }

    // Renames happen in order (durable files, decided/ files), unlinks last.
    for pl in &plans {
        let mut decided = decided(
            &pl.proposal,
            ProposalStatus::Approved,
            pl.actor.clone(),
            pl.at,
            p.reason.clone(),
            pl.event_hash.clone(),
        );
        // vouch 1.x finds the artifact of a decision at `payload.id`.
        if let Value::Object(payload) = &mut decided.payload {
            payload.insert("id".into(), json!(pl.proposal.object_id));
        }
        batch.write(
            kb.layout().file(Dir::Decided, &decided.id)?,
            crate::store::yaml::to_yaml(&decided)?.into_bytes(),
        );
        results.push(ApproveResult {
            ok: true,
            object_id: pl.proposal.object_id.clone(),
            object_kind: pl.proposal.kind.as_str().to_string(),
            proposal_id: pl.proposal.id.clone(),
            recovered: pl.recovered,
        });
    }
    for pl in &plans {
        batch.remove(kb.layout().file(Dir::Proposed, &pl.proposal.id)?);
    }
    batch.commit()?;
    let decided: Vec<String> = plans.iter().map(|pl| pl.proposal.id.clone()).collect();
    kb.forget_pending(&decided);
    kb.announce(&written);
    Ok(results)
}

/// The claims a draft replaces on approval.
pub(super) fn supersedes_of(draft: &Draft) -> Vec<&str> {
    match draft {
        Draft::Claim(d) => d.supersedes.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `Some(approved_by)` when a durable object with this id exists.
pub(super) fn approved_by_of(kb: &Kb, dir: Dir, id: &str) -> Result<Option<Option<String>>> {
    Ok(match dir {
        Dir::Claims => kb.load::<Claim>(id)?.map(|o| o.approved_by),
        Dir::Pages => kb.load::<Page>(id)?.map(|o| o.approved_by),
        Dir::Entities => kb.load::<Entity>(id)?.map(|o| o.approved_by),
        Dir::Relations => kb.load::<Relation>(id)?.map(|o| o.approved_by),
        _ => None,
    })
}

/// Stage the durable artifact for an approved draft.
pub(super) fn materialize(
    kb: &Kb,
    batch: &mut atomic::Batch,
    draft: Draft,
    id: &str,
    at: Timestamp,
    approver: &str,
) -> Result<(crate::model::Written, (String, String))> {
    use crate::model::Written;
    let object = assemble(draft, id, at, approver);
    let sha = match &object {
        Written::Claim(c) => kb.stage(batch, c)?,
        Written::Page(pg) => kb.stage(batch, pg)?,
        Written::Entity(e) => kb.stage(batch, e)?,
        Written::Relation(r) => kb.stage(batch, r)?,
        Written::Source(_) | Written::Removed { .. } => {
            unreachable!("a draft is never a source nor a removal")
        }
    };
    Ok((object, sha))
}

/// The durable object approving `p` writes, as `approver` at `at`: the
/// payload its fingerprint covers, plus what approval adds (its id, status,
/// times and approver). The pull-request check compares an approved file
/// with it.
pub fn approved_object(
    p: &Proposal,
    at: Timestamp,
    approver: &str,
) -> Result<crate::model::Written> {
    Ok(assemble(
        Draft::from_proposal(p)?,
        &p.object_id,
        at,
        approver,
    ))
}

/// The durable object of an approved draft.
fn assemble(draft: Draft, id: &str, at: Timestamp, approver: &str) -> crate::model::Written {
    let approved_by = Some(approver.to_string());
    match draft {
        Draft::Claim(mut d) => {
            let metadata = d.metadata.take();
            let c = Claim::assemble(
                d,
                ClaimRecord {
                    id: id.to_string(),
                    status: ClaimStatus::Working,
                    superseded_by: None,
                    contradicts: Vec::new(),
                    created_at: at,
                    updated_at: at,
                    last_confirmed_at: None,
                    approved_by,
                    extra: metadata
                        .map(|m| [("metadata".to_string(), Value::Object(m))].into())
                        .unwrap_or_default(),
                },
            );
            crate::model::Written::Claim(c)
        }
        Draft::Page(mut d) => {
            let body = std::mem::take(&mut d.body);
            let pg = Page::assemble(
                d,
                PageRecord {
                    id: id.to_string(),
                    status: PageStatus::Active,
                    created_at: at,
                    updated_at: at,
                    approved_by,
                    extra: Default::default(),
                    body,
                },
            );
            crate::model::Written::Page(pg)
        }
        Draft::Entity(d) => {
            let e = Entity::assemble(
                d,
                EntityRecord {
                    id: id.to_string(),
                    created_at: at,
                    updated_at: at,
                    approved_by,
                    extra: Default::default(),
                },
            );
            crate::model::Written::Entity(e)
        }
        Draft::Relation(d) => {
            let r = Relation::assemble(
                d,
                RelationRecord {
                    id: id.to_string(),
                    created_at: at,
                    updated_at: at,
                    approved_by,
                    extra: Default::default(),
                },
            );
            crate::model::Written::Relation(r)
        }
    }
}

/// `kb.reject`: decide a pending proposal as rejected, with the required
/// reason. Nothing durable is written; the proposal moves to `decided/`.
pub fn reject(kb: &Kb, caller: &Caller, p: RejectParams) -> Result<OkResult> {
    if p.reason.trim().is_empty() {
        return Err(Error::missing("reason"));
    }
    check_actor(&caller.actor)?;
    kb.may_decide(caller)?;
    let _lock = kb.lock()?;
    let proposal = load_pending(kb, &p.proposal_id)?;
    // A lifecycle (or redact) proposal's approval is the event that
    // carries it out, naming it.
    if matches!(
        proposal.kind,
        ProposalKind::Lifecycle | ProposalKind::Redact
    ) && let Some(ev) = lifecycle_decision(kb, &proposal.id)?
    {
        return Err(approved_already(&proposal.id, &ev));
    }
    let (actor, at, event_hash) = match proposal_events(kb, &proposal.id)?.decision {
        Some(ev) if step_of(&ev) == Some(ProposalStep::Approve) => {
            return Err(approved_already(&proposal.id, &ev));
        }
        Some(ev) => logged_decision(kb, &ev, &caller.actor),
        None => {
            let mut ev = kb.event(
                "proposal.reject",
                &caller.actor,
                vec![proposal.id.clone(), proposal.object_id.clone()],
                json!({"kind": proposal.kind.as_str(), "reason": p.reason}),
            );
            kb.append_audit(std::slice::from_mut(&mut ev))?;
            crate::fail::point("reject.logged");
            (caller.actor.clone(), ev.created_at, Some(ev.hash))
        }
    };
    let decided = decided(
        &proposal,
        ProposalStatus::Rejected,
        actor,
        at,
        Some(p.reason),
        event_hash,
    );
    file_decision(kb, &decided)?;
    Ok(OkResult { ok: true })
}

/// Pending proposals, oldest first.
pub fn list_pending(kb: &Kb) -> Result<Vec<Proposal>> {
    let mut all = kb.load_proposals(Dir::Proposed)?;
    // A proposal also in decided/ was decided (a crash interrupted cleanup).
    all.retain(|p| !kb.exists(Dir::Decided, &p.id));
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(all)
}

/// The ends of a relation that are claims a pending proposal would create
/// (and not approved in the same list): (claim id, proposal id).
fn ends_still_proposed(
    kb: &Kb,
    d: &RelationDraft,
    in_list: &HashSet<String>,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for end in [&d.source, &d.target] {
        if in_list.contains(end) || check_id("id", end).is_err() || kb.exists(Dir::Claims, end) {
            continue;
        }
        for p in list_pending(kb)? {
            if p.kind == ProposalKind::Claim && &p.object_id == end {
                out.push((end.clone(), p.id));
            }
        }
    }
    Ok(out)
}
