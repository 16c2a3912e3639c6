//! Lifecycle of reviewed knowledge (protocol §10, lifecycle): supersede,
//! contradict, archive, confirm, cite. These change metadata of durable
//! artifacts, not their assertions, so they bypass the gate — but each is
//! audited, with the event written before the files.

use crate::error::{Error, Result};
use crate::ids::{check_id, is_source_id};
use crate::kb::{Caller, Kb, Transport};
use crate::model::{Claim, ClaimStatus, Page, PageStatus};
use crate::params::*;
use crate::store::{Dir, atomic};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

fn claim(kb: &Kb, id: &str) -> Result<Claim> {
    check_id("claim id", id)?;
    kb.load::<Claim>(id)?
        .ok_or_else(|| Error::not_found(format!("claim {id:?} does not exist")))
}

fn reason_data(reason: &Option<String>) -> Value {
    match reason {
        Some(r) => json!({"reason": r}),
        None => json!({}),
    }
}

/// A durable object a lifecycle change rewrites.
enum Changed {
    Claim(Claim),
    Page(Page),
}

impl Changed {
    fn id(&self) -> &str {
        match self {
            Changed::Claim(c) => &c.id,
            Changed::Page(p) => &p.id,
        }
    }

    /// The fields lifecycle changes touch: what an event records before
    /// and after, so it can be reverted and a revert can tell whether the
    /// object changed again since.
    fn state(&self) -> Value {
        match self {
            Changed::Claim(c) => json!({
                "status": c.status,
                "superseded_by": c.superseded_by,
                "supersedes": c.supersedes,
                "contradicts": c.contradicts,
                "evidence": c.evidence,
                "last_confirmed_at": c.last_confirmed_at,
            }),
            Changed::Page(p) => json!({"status": p.status}),
        }
    }

    /// Put back a state recorded by [`Changed::state`].
    fn restore(&mut self, state: &Value, now: crate::model::Timestamp) -> Result<()> {
        let bad = |e: serde_json::Error| {
            Error::corrupt(Path::new("audit.log.jsonl"), format!("recorded state: {e}"))
        };
        let field = |k: &str| state.get(k).cloned().unwrap_or(Value::Null);
        match self {
            Changed::Claim(c) => {
                c.status = serde_json::from_value(field("status")).map_err(bad)?;
                c.superseded_by = serde_json::from_value(field("superseded_by")).map_err(bad)?;
                c.supersedes = serde_json::from_value(field("supersedes")).map_err(bad)?;
                c.contradicts = serde_json::from_value(field("contradicts")).map_err(bad)?;
                c.evidence = serde_json::from_value(field("evidence")).map_err(bad)?;
                c.last_confirmed_at =
                    serde_json::from_value(field("last_confirmed_at")).map_err(bad)?;
                c.updated_at = now;
            }
            Changed::Page(p) => {
                p.status = serde_json::from_value(field("status")).map_err(bad)?;
                p.updated_at = now;
            }
        }
        Ok(())
    }
}

/// A lifecycle change as a caller asked for it: what a gated change's
/// proposal carries (`{"method": "kb.archive", "params": {...}}`) and what
/// its approval replays.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum Change {
    /// `kb.supersede`: an approved claim replaced by a newer one.
    #[serde(rename = "kb.supersede")]
    Supersede(SupersedeParams),
    /// `kb.contradict`: two approved claims that contradict each other.
    #[serde(rename = "kb.contradict")]
    Contradict(ContradictParams),
    /// `kb.archive`: a claim or page kept for history, out of context packs.
    #[serde(rename = "kb.archive")]
    Archive(ArchiveParams),
    /// `kb.confirm`: a claim re-checked now.
    #[serde(rename = "kb.confirm")]
    Confirm(IdParams),
    /// `kb.cite`: a citation added to an approved claim.
    #[serde(rename = "kb.cite")]
    Cite(CiteParams),
    /// `kb.revert`: an earlier lifecycle change put back.
    #[serde(rename = "kb.revert")]
    Revert(RevertParams),
}

impl Change {
    /// The object a proposal of this change is about (shown in review).
    pub fn subject(&self) -> &str {
        match self {
            Change::Supersede(p) => &p.old_id,
            Change::Contradict(p) => &p.a_id,
            Change::Archive(p) => &p.id,
            Change::Confirm(p) => &p.id,
            Change::Cite(p) => &p.id,
            Change::Revert(p) => &p.event_id,
        }
    }

    /// What approving it does, in one sentence, with the reason the agent
    /// gave (shown to the reviewer).
    pub fn summary(&self) -> String {
        let (what, reason) = match self {
            Change::Supersede(p) => (
                format!(
                    "supersede claim {} with claim {} (the old one leaves context packs)",
                    p.old_id, p.new_id
                ),
                &p.reason,
            ),
            Change::Contradict(p) => (
                format!(
                    "mark claims {} and {} as contradicting each other (both become contested)",
                    p.a_id, p.b_id
                ),
                &p.reason,
            ),
            Change::Archive(p) => (
                format!("archive {} (kept for history, out of context packs)", p.id),
                &p.reason,
            ),
            Change::Confirm(p) => (format!("confirm claim {} as re-checked now", p.id), &None),
            Change::Cite(p) => (
                format!(
                    "add a citation to claim {}: agents read it with the claim",
                    p.id
                ),
                &None,
            ),
            Change::Revert(p) => (
                format!("put back what lifecycle event {} changed", p.event_id),
                &p.reason,
            ),
        };
        let method = match self {
            Change::Supersede(_) => "kb.supersede",
            Change::Contradict(_) => "kb.contradict",
            Change::Archive(_) => "kb.archive",
            Change::Confirm(_) => "kb.confirm",
            Change::Cite(_) => "kb.cite",
            Change::Revert(_) => "kb.revert",
        };
        match reason {
            Some(r) => format!("{method}: {what}; reason: {r}"),
            None => format!("{method}: {what}"),
        }
    }

    /// The ids of the objects it changes (for a revert, those its event
    /// changed).
    fn object_ids(&self, kb: &Kb) -> Vec<String> {
        match self {
            Change::Supersede(p) => vec![p.old_id.clone(), p.new_id.clone()],
            Change::Contradict(p) => vec![p.a_id.clone(), p.b_id.clone()],
            Change::Archive(p) => vec![p.id.clone()],
            Change::Confirm(p) => vec![p.id.clone()],
            Change::Cite(p) => vec![p.id.clone()],
            Change::Revert(p) => kb
                .audit_log()
                .find_id(&p.event_id)
                .ok()
                .flatten()
                .and_then(|ev| {
                    Some(
                        ev.get("data")?
                            .get("before")?
                            .as_object()?
                            .keys()
                            .cloned()
                            .collect(),
                    )
                })
                .unwrap_or_default(),
        }
    }

    /// Apply it. Caller holds the lock. `proposal_id` is set when a person
    /// approves a gated change: the lifecycle event names the proposal and
    /// is its decision.
    pub(crate) fn apply_locked(
        self,
        kb: &Kb,
        caller: &Caller,
        proposal_id: Option<&str>,
    ) -> Result<LifecycleResult> {
        let ctx = Ctx {
            kb,
            caller,
            proposal_id,
            proposing: false,
        };
        match self.plan(&ctx)? {
            Some(plan) => commit(&ctx, plan),
            None => Ok(LifecycleResult {
                ok: true,
                updated: Vec::new(),
                proposal_id: None,
            }),
        }
    }

    /// Check it against the knowledge base as it is, writing nothing, as
    /// applying it would: the same refusal for a claim that does not exist,
    /// a source that is not registered, a quote its source does not hold,
    /// an id that is a path. A proposal is filed only for a change that
    /// could be approved. `false` when it would change nothing (a citation
    /// the claim already has). Who may make it is left to the approval: a
    /// proposal asks a person for what the agent may not do itself.
    pub(crate) fn check(&self, kb: &Kb, caller: &Caller) -> Result<bool> {
        let ctx = Ctx {
            kb,
            caller,
            proposal_id: None,
            proposing: true,
        };
        Ok(self.clone().plan(&ctx)?.is_some())
    }

    /// What applying it would write; `None` when it changes nothing.
    fn plan(self, ctx: &Ctx) -> Result<Option<Plan>> {
        match self {
            Change::Supersede(p) => supersede_plan(ctx, p).map(Some),
            Change::Contradict(p) => contradict_plan(ctx, p).map(Some),
            Change::Archive(p) => archive_plan(ctx, p).map(Some),
            Change::Confirm(p) => confirm_plan(ctx, p).map(Some),
            Change::Cite(p) => cite_plan(ctx, p),
            Change::Revert(p) => revert_plan(ctx, p).map(Some),
        }
    }
}

/// A lifecycle proposal as a reviewer reads it: what approving it does and
/// the objects it changes as they read now. `None` for another kind of
/// proposal, or one whose change cannot be read.
pub fn view(kb: &Kb, p: &crate::model::Proposal) -> Option<crate::model::meta::ChangeView> {
    if p.kind != crate::model::ProposalKind::Lifecycle {
        return None;
    }
    let change: Change = serde_json::from_value(p.payload.clone()).ok()?;
    let objects = change
        .object_ids(kb)
        .into_iter()
        .filter(|id| check_id("id", id).is_ok())
        .filter_map(|id| {
            let (kind, text, status) = if let Ok(Some(c)) = kb.load::<Claim>(&id) {
                ("claim", c.text, c.status.as_str().to_string())
            } else if let Ok(Some(pg)) = kb.load::<Page>(&id) {
                ("page", pg.title, pg.status.as_str().to_string())
            } else {
                return None;
            };
            Some(crate::model::meta::ChangedObject {
                kind: kind.into(),
                id,
                text,
                status,
            })
        })
        .collect();
    Some(crate::model::meta::ChangeView {
        summary: change.summary(),
        objects,
    })
}

/// Who asks for a change, and the proposal it carries out, if any.
struct Ctx<'a> {
    kb: &'a Kb,
    caller: &'a Caller,
    proposal_id: Option<&'a str>,
    /// Checked for a proposal, not applied: the approver's rights decide.
    proposing: bool,
}

/// A lifecycle change worked out and not yet written: the event and the
/// objects [`commit`] writes.
struct Plan {
    event: &'static str,
    object_ids: Vec<String>,
    data: Value,
    changes: Vec<(Value, Changed)>,
    /// A quoted span (source id, quote) to keep as evidence first.
    mint: Option<(String, String)>,
}

impl Plan {
    fn new(
        event: &'static str,
        object_ids: Vec<String>,
        data: Value,
        changes: Vec<(Value, Changed)>,
    ) -> Plan {
        Plan {
            event,
            object_ids,
            data,
            changes,
            mint: None,
        }
    }
}

/// Both results, or every problem of the two as one error (its kind when
/// they agree, else `invalid_request`): an agent fixes them in one go.
fn both<A, B>(a: Result<A>, b: Result<B>) -> Result<(A, B)> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
        (Err(x), Err(y)) => {
            let kind = if x.kind == y.kind {
                x.kind
            } else {
                crate::error::ErrorKind::InvalidParams
            };
            Err(Error::new(kind, format!("{}; {}", x.message, y.message)))
        }
    }
}

/// Apply `change` now, or — when `review.gate_lifecycle` is set and an
/// agent asks — turn it into a proposal that a person approves. An agent's
/// `cite` is always a proposal: it attaches text (a quote from a source
/// the agent may have written itself) to knowledge a person approved, and
/// that text would reach every context pack unseen.
fn run(kb: &Kb, caller: &Caller, change: Change) -> Result<LifecycleResult> {
    let adds_text = matches!(change, Change::Cite(_));
    let gated = (kb.settings().review.gate_lifecycle || adds_text) && kb.gated(caller);
    if gated {
        // Nothing to change (a citation the claim has): nothing to review.
        let proposal_id = crate::review::gate::propose_lifecycle(kb, caller, &change)?;
        return Ok(LifecycleResult {
            ok: true,
            updated: Vec::new(),
            proposal_id,
        });
    }
    let _lock = kb.lock()?;
    change.apply_locked(kb, caller, None)
}

/// `kb.supersede`: mark claim `old_id` superseded by `new_id` (under
/// `review.gate_lifecycle`, a gated agent's call becomes a proposal).
pub fn supersede(kb: &Kb, caller: &Caller, p: SupersedeParams) -> Result<LifecycleResult> {
    run(kb, caller, Change::Supersede(p))
}
/// `kb.contradict`: mark two approved claims as contradicting each other
/// (under `review.gate_lifecycle`, a gated agent's call becomes a proposal).
pub fn contradict(kb: &Kb, caller: &Caller, p: ContradictParams) -> Result<LifecycleResult> {
    run(kb, caller, Change::Contradict(p))
}
/// `kb.archive`: keep a claim or page for history, out of context packs
/// (under `review.gate_lifecycle`, a gated agent's call becomes a proposal).
pub fn archive(kb: &Kb, caller: &Caller, p: ArchiveParams) -> Result<LifecycleResult> {
    run(kb, caller, Change::Archive(p))
}
/// `kb.confirm`: set a claim's `last_confirmed_at` to now (under
/// `review.gate_lifecycle`, a gated agent's call becomes a proposal).
pub fn confirm(kb: &Kb, caller: &Caller, p: IdParams) -> Result<LifecycleResult> {
    run(kb, caller, Change::Confirm(p))
}
/// `kb.cite`: add a citation to an approved claim. A gated agent's call
/// always becomes a proposal: the cited text would otherwise reach
/// context packs unseen.
pub fn cite(kb: &Kb, caller: &Caller, p: CiteParams) -> Result<LifecycleResult> {
    run(kb, caller, Change::Cite(p))
}
/// `kb.revert`: put back the lifecycle state an event changed. Refused when
/// an object changed again after that event (revert the later change
/// first), so a revert never silently discards someone else's change.
pub fn revert(kb: &Kb, caller: &Caller, p: RevertParams) -> Result<LifecycleResult> {
    run(kb, caller, Change::Revert(p))
}

/// Audit first, then write the changed objects together. The event
/// records each object's lifecycle state before and after and the
/// transport it came through, so people can see what agents changed and
/// `kb.revert` can undo it.
fn commit(ctx: &Ctx, plan: Plan) -> Result<LifecycleResult> {
    let (kb, caller) = (ctx.kb, ctx.caller);
    let Plan {
        event,
        object_ids,
        mut data,
        changes,
        mint,
    } = plan;
    if let Some((source_id, quote)) = mint {
        crate::sources::mint_evidence_locked(kb, caller, &source_id, &quote)?;
    }
    if let Some(pid) = ctx.proposal_id {
        data["proposal_id"] = json!(pid);
    }
    let before: serde_json::Map<String, Value> = changes
        .iter()
        .map(|(b, c)| (c.id().to_string(), b.clone()))
        .collect();
    let after: serde_json::Map<String, Value> = changes
        .iter()
        .map(|(_, c)| (c.id().to_string(), c.state()))
        .collect();
    data["before"] = Value::Object(before);
    data["after"] = Value::Object(after);
    data["via"] = json!(caller.transport.name());
    let ids: Vec<(crate::store::Dir, &str)> = changes
        .iter()
        .map(|(_, c)| match c {
            Changed::Claim(x) => (crate::store::Dir::Claims, x.id.as_str()),
            Changed::Page(x) => (crate::store::Dir::Pages, x.id.as_str()),
        })
        .collect();
    crate::review::gate::refuse_unreviewed(kb, caller, &ids, &format!("apply {event} to"))?;
    let mut batch = atomic::Batch::new(kb.layout().root());
    let mut written = serde_json::Map::new();
    for (_, c) in &changes {
        let (path, sha) = match c {
            Changed::Claim(c) => kb.stage(&mut batch, c)?,
            Changed::Page(p) => kb.stage(&mut batch, p)?,
        };
        written.insert(path, json!(sha));
    }
    data[crate::audit::WRITTEN_KEY] = Value::Object(written);
    let mut ev = kb.event(event, &caller.actor, object_ids, data);
    ev.reversible = true;
    // Journaled: a crash after the event is logged is finished by the next
    // command, so a supersession never lands on one claim but not the other.
    let (staged, batch_sha) = batch.stage_journaled(&ev.id)?;
    ev.data["batch_sha256"] = json!(batch_sha);
    if let Err(e) = kb.append_audit(std::slice::from_mut(&mut ev)) {
        staged.abandon();
        return Err(e);
    }
    crate::fail::point("lifecycle.logged");
    staged.finish()?;
    let updated = changes.iter().map(|(_, c)| c.id().to_string()).collect();
    let written: Vec<crate::model::Written> = changes
        .into_iter()
        .map(|(_, c)| match c {
            Changed::Claim(c) => crate::model::Written::Claim(c),
            Changed::Page(p) => crate::model::Written::Page(p),
        })
        .collect();
    kb.announce(&written);
    Ok(LifecycleResult {
        ok: true,
        updated,
        proposal_id: None,
    })
}

/// One claim change: its state before, and the claim after.
fn claim_change(before: &Claim, after: Claim) -> (Value, Changed) {
    (
        Changed::Claim(before.clone()).state(),
        Changed::Claim(after),
    )
}

fn supersede_plan(ctx: &Ctx, p: SupersedeParams) -> Result<Plan> {
    let kb = ctx.kb;
    if p.old_id == p.new_id {
        return Err(Error::invalid(format!(
            "claim {} cannot supersede itself",
            p.old_id
        )));
    }
    let (mut old, mut new) = both(claim(kb, &p.old_id), claim(kb, &p.new_id))?;
    let (old_before, new_before) = (old.clone(), new.clone());
    if let Some(why) = crate::rules::supersede_problem(&old, None) {
        return Err(Error::conflict(why));
    }
    if let Some(why) = crate::rules::replacement_problem(&new) {
        return Err(Error::conflict(why));
    }
    // The link this adds, new → old, closes a loop if old already
    // (transitively) supersedes new: possible only through links a hand
    // edit left one-sided, since a superseded claim is refused above.
    let supersedes_of = |id: &str| {
        kb.load::<Claim>(id)
            .ok()
            .flatten()
            .map(|c| c.supersedes)
            .unwrap_or_default()
    };
    if crate::rules::supersedes_reaches(&old.id, &new.id, supersedes_of) {
        return Err(Error::invalid(format!(
            "superseding {} with {} would make a cycle: {} already supersedes {}",
            old.id, new.id, old.id, new.id
        )));
    }
    let now = kb.now();
    old.superseded(&new.id, now);
    if !new.supersedes.contains(&old.id) {
        new.supersedes.push(old.id.clone());
    }
    new.updated_at = now;
    Ok(Plan::new(
        "claim.supersede",
        vec![old.id.clone(), new.id.clone()],
        reason_data(&p.reason),
        vec![
            claim_change(&old_before, old),
            claim_change(&new_before, new),
        ],
    ))
}

fn contradict_plan(ctx: &Ctx, p: ContradictParams) -> Result<Plan> {
    let kb = ctx.kb;
    if p.a_id == p.b_id {
        return Err(Error::invalid(format!(
            "claim {} cannot contradict itself",
            p.a_id
        )));
    }
    let (mut a, mut b) = both(claim(kb, &p.a_id), claim(kb, &p.b_id))?;
    let (a_before, b_before) = (a.clone(), b.clone());
    let now = kb.now();
    for (x, other) in [(&mut a, p.b_id.clone()), (&mut b, p.a_id.clone())] {
        if !x.contradicts.contains(&other) {
            x.contradicts.push(other);
        }
        if !matches!(
            x.status,
            ClaimStatus::Superseded | ClaimStatus::Archived | ClaimStatus::Redacted
        ) {
            x.status = ClaimStatus::Contested;
        }
        x.updated_at = now;
    }
    Ok(Plan::new(
        "claim.contradict",
        vec![a.id.clone(), b.id.clone()],
        reason_data(&p.reason),
        vec![claim_change(&a_before, a), claim_change(&b_before, b)],
    ))
}

fn archive_plan(ctx: &Ctx, p: ArchiveParams) -> Result<Plan> {
    let kb = ctx.kb;
    check_id("id", &p.id)?;
    if let Some(c) = kb.load::<Claim>(&p.id)? {
        let before = c.clone();
        let mut c = c;
        c.status = ClaimStatus::Archived;
        c.updated_at = kb.now();
        return Ok(Plan::new(
            "claim.archive",
            vec![c.id.clone()],
            reason_data(&p.reason),
            vec![claim_change(&before, c)],
        ));
    }
    if let Some(pg) = kb.load::<Page>(&p.id)? {
        let before = Changed::Page(pg.clone()).state();
        let mut pg = pg;
        pg.status = PageStatus::Archived;
        pg.updated_at = kb.now();
        return Ok(Plan::new(
            "page.archive",
            vec![pg.id.clone()],
            reason_data(&p.reason),
            vec![(before, Changed::Page(pg))],
        ));
    }
    Err(Error::not_found(format!(
        "no claim or page {:?} to archive",
        p.id
    )))
}

fn confirm_plan(ctx: &Ctx, p: IdParams) -> Result<Plan> {
    let kb = ctx.kb;
    let mut c = claim(kb, &p.id)?;
    let before = c.clone();
    let now = kb.now();
    c.last_confirmed_at = Some(now);
    c.updated_at = now;
    Ok(Plan::new(
        "claim.confirm",
        vec![c.id.clone()],
        json!({}),
        vec![claim_change(&before, c)],
    ))
}

fn cite_plan(ctx: &Ctx, p: CiteParams) -> Result<Option<Plan>> {
    let kb = ctx.kb;
    let cited = || -> Result<(String, Option<(String, String)>)> {
        Ok(match &p.evidence {
            Citation::Id(id) if is_source_id(id) => {
                if !kb.source_exists(id) {
                    return Err(Error::not_found(format!("source {id} is not registered")));
                }
                (id.clone(), None)
            }
            Citation::Id(id) => {
                check_id("evidence id", id)?;
                if !kb.exists(Dir::Evidence, id) {
                    return Err(Error::not_found(format!(
                        "{id:?} is neither a registered source nor an existing evidence id"
                    )));
                }
                (id.clone(), None)
            }
            // Found in its source now (written by `commit`, if new).
            Citation::Span { source_id, quote } => {
                let id = match crate::sources::evidence_for(kb, source_id, quote)? {
                    crate::sources::EvidenceFor::Held(r) => r.evidence_id,
                    crate::sources::EvidenceFor::New(_, r) => r.evidence_id,
                };
                (id, Some((source_id.clone(), quote.clone())))
            }
        })
    };
    let (mut c, (evidence_id, mint)) = both(claim(kb, &p.id), cited())?;
    if c.evidence.contains(&evidence_id) {
        return Ok(None);
    }
    let before = c.clone();
    c.evidence.push(evidence_id.clone());
    c.updated_at = kb.now();
    Ok(Some(Plan {
        mint,
        ..Plan::new(
            "claim.cite",
            vec![c.id.clone(), evidence_id],
            json!({}),
            vec![claim_change(&before, c)],
        )
    }))
}

fn revert_plan(ctx: &Ctx, p: RevertParams) -> Result<Plan> {
    let kb = ctx.kb;
    let ev = kb.audit_log().find_id(&p.event_id)?.ok_or_else(|| {
        Error::not_found(format!(
            "no audit event {:?}; `vouch changes` lists recent lifecycle changes with their \
             event ids",
            p.event_id
        ))
    })?;
    let name = ev.get("event").and_then(Value::as_str).unwrap_or("");
    // Undoing someone else's decision is a decision of its own: an agent
    // reverts only its own changes (a person, or a proposal, the rest).
    let by = ev.get("actor").and_then(Value::as_str).unwrap_or("");
    if !ctx.proposing && by != ctx.caller.actor && kb.may_decide(ctx.caller).is_err() {
        return Err(Error::denied(format!(
            "event {} was made by {by:?}; an agent may revert only its own lifecycle \
             changes. Ask a person to run `vouch revert {}`",
            p.event_id, p.event_id
        )));
    }
    let recorded = |key: &str| {
        ev.get("data")
            .and_then(|d| d.get(key))
            .and_then(Value::as_object)
            .filter(|_| crate::audit::is_lifecycle_event(name))
    };
    let (Some(before), Some(after)) = (recorded("before"), recorded("after")) else {
        return Err(Error::invalid(if crate::audit::is_lifecycle_event(name) {
            format!(
                "event {} ({name}) was written by an older vouch and does not record the state \
                 it replaced, so it cannot be reverted automatically",
                p.event_id
            )
        } else {
            format!(
                "event {} is {name:?}, not a lifecycle change; only supersede, contradict, \
                 archive, confirm, cite and revert events can be reverted (approvals are undone \
                 by superseding or archiving)",
                p.event_id
            )
        }));
    };
    let now = kb.now();
    let changed_by = crate::audit::trail::Trail::read(kb.audit_log())?
        .actors
        .changed_by;
    let mut changes = Vec::with_capacity(before.len());
    for (id, state) in before {
        let mut current = if let Some(c) = kb.load::<Claim>(id)? {
            Changed::Claim(c)
        } else if let Some(pg) = kb.load::<Page>(id)? {
            Changed::Page(pg)
        } else {
            return Err(Error::not_found(format!(
                "{id}, changed by event {}, no longer exists",
                p.event_id
            )));
        };
        let was = current.state();
        if Some(&was) != after.get(id) {
            return Err(Error::conflict(format!(
                "{id} changed again after event {} (a later lifecycle change); revert that \
                 change first — `vouch audit` lists them",
                p.event_id
            )));
        }
        // Only what a lifecycle change recorded writing, as the last
        // change of that file, is put back: any other event's `before`
        // (a line anyone can append) is no state this object was in.
        let path = match &current {
            Changed::Claim(_) => kb.layout().inside(&kb.layout().file(Dir::Claims, id)?),
            Changed::Page(_) => kb.layout().inside(&kb.layout().file(Dir::Pages, id)?),
        };
        let last = changed_by.as_ref().and_then(|m| m.get(&path));
        if changed_by.is_some() && last != Some(&p.event_id) {
            return Err(Error::conflict(match last {
                Some(last) => format!(
                    "the last lifecycle change recorded of {id} is event {last}, not event {}; \
                     revert that change first — `vouch audit` lists them",
                    p.event_id
                ),
                None => format!(
                    "event {} did not record writing {path} as the last lifecycle change of it \
                     (an older vouch's event, or another event wrote it since), so it cannot be \
                     reverted automatically",
                    p.event_id
                ),
            }));
        }
        current.restore(state, now)?;
        // The state comes from the log, which a cloned repository can
        // write: what is put back must still hold as knowledge.
        if let Changed::Claim(c) = &current {
            let require = kb.require_citations();
            if c.evidence.is_empty() && c.status.needs_citation(require) {
                return Err(Error::invalid(format!(
                    "reverting event {} would leave claim {id} citing nothing",
                    p.event_id
                )));
            }
            let refs = c
                .evidence
                .iter()
                .filter_map(|e| crate::rules::citation_problem(kb, e))
                .chain(
                    c.supersedes
                        .iter()
                        .chain(&c.contradicts)
                        .chain(c.superseded_by.iter())
                        .filter_map(|o| crate::rules::reference_problem(kb, Dir::Claims, o)),
                )
                .collect::<Vec<_>>();
            if !refs.is_empty() {
                return Err(Error::invalid(format!(
                    "reverting event {} would leave claim {id} with references that do not \
                     resolve: {}",
                    p.event_id,
                    refs.join("; ")
                )));
            }
        }
        changes.push((was, current));
    }
    let mut ids = vec![p.event_id.clone()];
    ids.extend(changes.iter().map(|(_, c)| c.id().to_string()));
    let mut data = reason_data(&p.reason);
    data["reverts"] = json!(p.event_id);
    data["reverted_event"] = json!(name);
    Ok(Plan::new("lifecycle.revert", ids, data, changes))
}

/// `kb.lifecycle_changes`: lifecycle changes made over agent transports in
/// the last `days` days that nobody has reverted, newest first — what a
/// reviewer should look at besides the proposal queue. An event's time is
/// what the event says, which whoever wrote the line chose: one dated
/// before an event earlier in the log (backdated, or from a merged branch)
/// is shown whatever its date, so a forged line cannot date itself out of
/// the window.
pub fn recent_changes(kb: &Kb, p: LifecycleChangesParams) -> Result<Vec<LifecycleChange>> {
    let days = p.days.unwrap_or(7).max(0);
    let since = kb.now().0 - chrono::Duration::days(days);
    let events = kb.audit_log().read_all()?;
    let time = |e: &Value| {
        e.get("created_at")
            .and_then(Value::as_str)
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
    };
    // Events dated before one earlier in the log.
    let mut latest = None;
    let backdated: std::collections::HashSet<usize> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let when = time(e)?;
            let out_of_order = latest.is_some_and(|l| when < l);
            latest = latest.max(Some(when));
            out_of_order.then_some(i)
        })
        .collect();
    let reverted: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| e.get("data")?.get("reverts")?.as_str())
        .collect();
    let mut out: Vec<LifecycleChange> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.get("event")
                .and_then(Value::as_str)
                .is_some_and(crate::audit::is_lifecycle_event)
        })
        .filter(|(_, e)| {
            let via = e
                .get("data")
                .and_then(|d| d.get("via"))
                .and_then(Value::as_str);
            p.all || via.is_some_and(|v| v != Transport::Cli.name())
        })
        .filter_map(|(i, e)| {
            let id = e.get("id")?.as_str()?;
            let at = e.get("created_at")?.as_str()?;
            let when = chrono::DateTime::parse_from_rfc3339(at).ok()?;
            let event = e.get("event")?.as_str()?.to_string();
            let actor = e.get("actor")?.as_str()?.to_string();
            let shown = when >= since || backdated.contains(&i);
            (shown && !reverted.contains(id)).then(|| LifecycleChange {
                event_id: id.to_string(),
                event,
                actor,
                via: e
                    .get("data")
                    .and_then(|d| d.get("via"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                created_at: at.to_string(),
                object_ids: e
                    .get("object_ids")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                reason: e
                    .get("data")
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect();
    out.reverse();
    Ok(out)
}
