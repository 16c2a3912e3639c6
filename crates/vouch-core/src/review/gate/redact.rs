//! Redaction (issue 42), decided by a person: what holds a secret leaves
//! the working tree. A source's content becomes a tombstone (its
//! `meta.yaml` keeps the id and length, and says who redacted it, when and
//! why); a claim's text or a page's body is masked and its status becomes
//! `redacted`, in its file and in the decided record of its approval;
//! evidence quoting a redacted source loses its quote. The one event,
//! `object.redact`, records each file it rewrote or removed with the
//! sha256 of the bytes it took out, never the bytes; the files change in
//! one journaled batch, so a crash leaves the old state or the new.
//!
//! A person redacts directly (`vouch redact`, `kb.redact`); anyone else
//! proposes it (`kb.propose_redact`) and a person or a named reviewer
//! approves it, and the redaction's event is then the decision.

use super::*;
use crate::audit::trail::Trail;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a redacted claim's text, page's body or decided record's words
/// become.
pub const MASK: &str = "[REDACTED]";

/// The key, in a redacted file, of who redacted it, when and why.
pub const REDACTED_KEY: &str = "redacted";

/// The audit event of a redaction.
pub const EVENT: &str = "object.redact";

/// What a redact proposal carries (its payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedactPayload {
    /// What to redact.
    pub kind: RedactKind,
    /// Its id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// What a source's `meta.yaml` and the audit log say of its content.
pub enum Tombstone {
    /// Not redacted.
    None,
    /// Redacted: an `object.redact` event the log holds removed its
    /// content and wrote its `meta.yaml` as it is now.
    Redacted,
    /// Its `meta.yaml` says redacted, but no redaction in the log wrote it
    /// as it is: why, in words.
    ByHand(String),
}

/// Whether the file at `path` holds what the last event that wrote it
/// recorded (`data.written`).
fn as_recorded(kb: &Kb, trail: &Trail, path: &std::path::Path) -> bool {
    let inside = kb.layout().inside(path);
    kb.read_file(path).ok().flatten().is_some_and(|bytes| {
        trail.written.get(&inside) == Some(&crate::ids::content_sha256(&bytes))
    })
}

/// Is source `id` a tombstone a redaction made ([`Tombstone`])?
pub fn tombstone(kb: &Kb, trail: &Trail, id: &str) -> Tombstone {
    let Ok(Some(src)) = kb.load_source(id) else {
        return Tombstone::None;
    };
    if !src.extra.contains_key(REDACTED_KEY) {
        return Tombstone::None;
    }
    let (Ok(content), Ok(meta)) = (kb.layout().source_content(id), kb.layout().source_meta(id))
    else {
        return Tombstone::None;
    };
    let removed = trail
        .written
        .get(&kb.layout().inside(&content))
        .is_some_and(|sha| sha == super::delete::REMOVED);
    if removed && as_recorded(kb, trail, &meta) {
        return Tombstone::Redacted;
    }
    Tombstone::ByHand(
        "its meta.yaml says it was redacted, but no redaction in the audit log (object.redact) \
         removed its content and wrote meta.yaml as it is: a tombstone written by hand; restore \
         the source from git"
            .into(),
    )
}

/// Whether evidence `ev` lost its quote to a redaction the log records:
/// it carries the mark, quotes nothing, and is what the redaction wrote.
pub fn redacted_evidence(kb: &Kb, trail: &Trail, ev: &Evidence) -> bool {
    ev.quote.is_none()
        && ev.extra.contains_key(REDACTED_KEY)
        && kb
            .layout()
            .file(Dir::Evidence, &ev.id)
            .is_ok_and(|path| as_recorded(kb, trail, &path))
}

/// A redaction worked out and not yet written.
struct Plan {
    batch: atomic::Batch,
    /// Path inside `.vouch/` → sha256 of the bytes taken out.
    removed: BTreeMap<String, String>,
    /// Path inside `.vouch/` → sha256 of what it holds now, or
    /// [`super::delete::REMOVED`].
    written: serde_json::Map<String, Value>,
    still_held: Vec<String>,
    announce: Vec<Written>,
}

impl Plan {
    fn new(kb: &Kb) -> Plan {
        Plan {
            batch: atomic::Batch::new(kb.layout().root()),
            removed: BTreeMap::new(),
            written: serde_json::Map::new(),
            still_held: Vec::new(),
            announce: Vec::new(),
        }
    }

    /// Rewrite `path` (holding `old`) with `new`.
    fn rewrite(&mut self, kb: &Kb, path: PathBuf, old: &[u8], new: String) {
        let inside = kb.layout().inside(&path);
        self.removed
            .insert(inside.clone(), crate::ids::content_sha256(old));
        self.written
            .insert(inside, json!(crate::ids::content_sha256(new.as_bytes())));
        self.batch.write(path, new.into_bytes());
    }

    /// The paths, from the project folder, whose earlier versions hold
    /// what was taken out; and those of them no longer in the working tree.
    fn purge(&self, kb: &Kb) -> (Vec<String>, Vec<String>) {
        let dir = kb
            .layout()
            .root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| ".vouch".into());
        // A source's meta.yaml held no secret: it is rewritten, not purged.
        let all = self
            .removed
            .keys()
            .filter(|p| !(p.starts_with("sources/") && p.ends_with("/meta.yaml")))
            .map(|p| format!("{dir}/{p}"))
            .collect();
        let gone = self
            .written
            .iter()
            .filter(|(_, sha)| sha.as_str() == Some(super::delete::REMOVED))
            .map(|(p, _)| format!("{dir}/{p}"))
            .collect();
        (all, gone)
    }
}

/// Who redacted, when and why, as a redacted file records it.
fn marker(actor: &str, at: Timestamp, reason: &str) -> Value {
    json!({"by": actor, "at": at, "reason": reason})
}

/// The bytes of a file that must be there.
fn bytes_of(kb: &Kb, path: &std::path::Path, what: &str) -> Result<Vec<u8>> {
    kb.read_file(path)?
        .ok_or_else(|| Error::not_found(format!("{what} has no file to redact")))
}

/// The claim or page (`kind`) `id` whose words a redaction masks, with
/// its file's path and bytes; refused when it does not exist or is
/// `redacted` already.
fn to_mask<T: crate::stored::Stored>(
    kb: &Kb,
    kind: &str,
    id: &str,
    redacted: impl Fn(&T) -> bool,
) -> Result<(T, PathBuf, Vec<u8>)> {
    check_id(&format!("{kind} id"), id)?;
    let object = kb
        .load::<T>(id)?
        .ok_or_else(|| Error::not_found(format!("{kind} {id:?} does not exist")))?;
    if redacted(&object) {
        return Err(Error::conflict(format!("{kind} {id} is redacted already")));
    }
    let path = kb.layout().file(T::DIR, id)?;
    let old = bytes_of(kb, &path, &format!("{kind} {id}"))?;
    Ok((object, path, old))
}

/// Work out a redaction of `kind` `id` by `actor`, writing nothing.
fn plan(kb: &Kb, kind: RedactKind, id: &str, actor: &str, reason: &str) -> Result<Plan> {
    let at = kb.now();
    let mark = marker(actor, at, reason);
    let mut plan = Plan::new(kb);
    let already = |what: String| Error::conflict(format!("{what} is redacted already"));
    match kind {
        RedactKind::Source => {
            if !is_source_id(id) {
                return Err(Error::invalid(format!(
                    "id: {id:?} is not a source id (64 lowercase hex digits)"
                )));
            }
            let meta_path = kb.layout().source_meta(id)?;
            let mut src = kb
                .load_source(id)?
                .ok_or_else(|| Error::not_found(format!("source {id} is not registered")))?;
            if src.extra.contains_key(REDACTED_KEY) {
                return Err(already(format!("source {id}")));
            }
            let content_path = kb.layout().source_content(id)?;
            let content = bytes_of(kb, &content_path, &format!("source {id}'s content"))?;
            let old_meta = bytes_of(kb, &meta_path, &format!("source {id}'s meta.yaml"))?;
            src.byte_size = Some(content.len() as u64);
            src.extra.insert(REDACTED_KEY.into(), mark.clone());
            plan.rewrite(kb, meta_path, &old_meta, crate::store::yaml::to_yaml(&src)?);
            let inside = kb.layout().inside(&content_path);
            plan.removed
                .insert(inside.clone(), crate::ids::sha256_hex(&content));
            plan.written.insert(inside, json!(super::delete::REMOVED));
            plan.batch.remove(content_path);
            for ev in kb.load_all::<Evidence>()? {
                if ev.source_id == id && ev.quote.is_some() {
                    unquote(kb, &mut plan, ev, &mark)?;
                }
            }
            plan.announce.push(Written::Removed {
                kind: "source",
                id: id.to_string(),
            });
        }
        RedactKind::Evidence => {
            check_id("evidence id", id)?;
            let ev = kb
                .load::<Evidence>(id)?
                .ok_or_else(|| Error::not_found(format!("no evidence {id:?}")))?;
            let Some(quote) = ev.quote.clone() else {
                return Err(already(format!("evidence {id} (it quotes nothing)")));
            };
            let source_id = ev.source_id.clone();
            unquote(kb, &mut plan, ev, &mark)?;
            if let Ok(Some(content)) = kb.source_content(&source_id)
                && memchr::memmem::find(&content, quote.as_bytes()).is_some()
            {
                plan.still_held.push(format!(
                    "source {source_id} still holds the quoted bytes: redact it too (`vouch \
                     redact source {source_id}`)"
                ));
            }
        }
        RedactKind::Claim => {
            let (mut c, path, old) = to_mask(kb, "claim", id, |c: &Claim| {
                c.status == ClaimStatus::Redacted
            })?;
            let text = std::mem::replace(&mut c.text, MASK.into());
            c.status = ClaimStatus::Redacted;
            c.updated_at = at;
            c.extra.insert(REDACTED_KEY.into(), mark.clone());
            plan.rewrite(kb, path, &old, crate::stored::Stored::encode(&c)?);
            unrecord(kb, &mut plan, ProposalKind::Claim, id, &["text"], &mark)?;
            held_in_pages(kb, &mut plan, &text)?;
            plan.announce.push(Written::Removed {
                kind: "claim",
                id: id.to_string(),
            });
        }
        RedactKind::Page => {
            let (mut pg, path, old) = to_mask(kb, "page", id, |pg: &Page| {
                pg.status == PageStatus::Redacted
            })?;
            pg.body = format!("{MASK}\n");
            pg.status = PageStatus::Redacted;
            pg.updated_at = at;
            pg.extra.insert(REDACTED_KEY.into(), mark.clone());
            plan.rewrite(kb, path, &old, crate::stored::Stored::encode(&pg)?);
            unrecord(kb, &mut plan, ProposalKind::Page, id, &["body"], &mark)?;
            plan.announce.push(Written::Removed {
                kind: "page",
                id: id.to_string(),
            });
        }
    }
    Ok(plan)
}

/// Evidence `ev` without its quote (its id, locator and the quote's hash
/// stay: a claim citing it still resolves, shown as evidence redacted).
fn unquote(kb: &Kb, plan: &mut Plan, mut ev: Evidence, mark: &Value) -> Result<()> {
    let path = kb.layout().file(Dir::Evidence, &ev.id)?;
    let old = bytes_of(kb, &path, &format!("evidence {}", ev.id))?;
    ev.quote = None;
    ev.extra.insert(REDACTED_KEY.into(), mark.clone());
    plan.rewrite(kb, path, &old, crate::stored::Stored::encode(&ev)?);
    Ok(())
}

/// The decided records of `id`'s approval with `fields` of their payload
/// masked: a record keeps what was approved, so it holds the words too.
fn unrecord(
    kb: &Kb,
    plan: &mut Plan,
    kind: ProposalKind,
    id: &str,
    fields: &[&str],
    mark: &Value,
) -> Result<()> {
    for mut d in kb.load_proposals(Dir::Decided)? {
        if d.kind != kind || d.object_id != id {
            continue;
        }
        let path = kb.layout().file(Dir::Decided, &d.id)?;
        let Some(old) = kb.read_file(&path)? else {
            continue;
        };
        for f in fields {
            if let Some(v) = d.payload.get_mut(*f)
                && v.is_string()
            {
                *v = json!(MASK);
            }
        }
        d.extra.insert(REDACTED_KEY.into(), mark.clone());
        plan.rewrite(kb, path, &old, crate::store::yaml::to_yaml(&d)?);
    }
    Ok(())
}

/// Pages whose body still holds `text` (a session's summary quoting a
/// claim): named, for the person to redact too.
fn held_in_pages(kb: &Kb, plan: &mut Plan, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Ok(());
    }
    for pg in kb.load_all::<Page>()? {
        if pg.body.contains(text) {
            plan.still_held.push(format!(
                "page {} quotes it in its body: redact it too (`vouch redact page {}`)",
                pg.id, pg.id
            ));
        }
    }
    Ok(())
}

/// Write a planned redaction as `actor`: one `object.redact` event, then
/// the files in one journaled batch (a crash after the event is finished by
/// the next command; before it, nothing changed).
fn commit(
    kb: &Kb,
    caller: &Caller,
    actor: &str,
    p: &RedactParams,
    plan: Plan,
    proposal_id: Option<&str>,
) -> Result<RedactResult> {
    let (purge, gone) = plan.purge(kb);
    let mut data = json!({
        "object_kind": p.kind.as_str(),
        "reason": p.reason,
        super::delete::REMOVED_KEY: plan.removed,
        crate::audit::WRITTEN_KEY: plan.written,
        "purge": purge,
        "via": caller.transport.name(),
    });
    if let Some(pid) = proposal_id {
        data["proposal_id"] = json!(pid);
    }
    let mut ev = kb.event(EVENT, actor, vec![p.id.clone()], data);
    let (staged, batch_sha) = plan.batch.stage_journaled(&ev.id)?;
    ev.data["batch_sha256"] = json!(batch_sha);
    if let Err(e) = kb.append_audit(std::slice::from_mut(&mut ev)) {
        staged.abandon();
        return Err(e);
    }
    crate::fail::point("redact.logged");
    staged.finish()?;
    kb.announce(&plan.announce);
    Ok(report(
        p,
        plan.removed,
        plan.still_held,
        (purge, gone),
        Some(ev.id),
    ))
}

/// What a redaction of `p` reports: the bytes it took out (`removed`),
/// what still holds them, what to purge from git's history and which of
/// those files are gone; `event_id` is the audit event that recorded it,
/// `None` on a dry run (nothing written).
fn report(
    p: &RedactParams,
    removed: BTreeMap<String, String>,
    still_held: Vec<String>,
    (purge, gone): (Vec<String>, Vec<String>),
    event_id: Option<String>,
) -> RedactResult {
    RedactResult {
        ok: true,
        kind: p.kind,
        id: p.id.clone(),
        removed,
        purge,
        gone,
        still_held,
        dry_run: event_id.is_none(),
        event_id: event_id.unwrap_or_default(),
    }
}

/// Refuse an empty reason, a reason with hidden characters, an id that is
/// a path.
fn check_params(p: &RedactParams) -> Result<()> {
    let mut problems = Problems(Vec::new());
    check_text(&mut problems, "reason", &p.reason);
    if let Err(e) = check_id("id", &p.id) {
        problems.push(format!("id: {}", e.message));
    }
    if problems.0.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(problems.0.join("; ")))
    }
}

/// `kb.redact`: a person redacts what holds a secret, now (the command
/// line, the review pages). Over an agent transport it is refused unless
/// the person's own config trusts agents: an agent proposes it
/// ([`propose_redact`]), and a person or a named reviewer approves that.
pub fn redact(kb: &Kb, caller: &Caller, p: RedactParams) -> Result<RedactResult> {
    check_actor(&caller.actor)?;
    if kb.gated(caller) {
        return Err(Error::denied(format!(
            "review_gate: a redaction is decided by a person; {:?} may propose it \
             (kb.propose_redact), and a person approves it",
            caller.actor
        )));
    }
    kb.may_decide(caller)?;
    check_params(&p)?;
    let _lock = kb.lock()?;
    let plan = plan(kb, p.kind, &p.id, &caller.actor, &p.reason)?;
    if p.dry_run {
        let (purge, gone) = plan.purge(kb);
        return Ok(report(
            &p,
            plan.removed,
            plan.still_held,
            (purge, gone),
            None,
        ));
    }
    commit(kb, caller, &caller.actor, &p, plan, None)
}

/// `kb.propose_redact`: ask a person to redact a source, evidence, claim or
/// page. Checked as redacting it would be checked (it must exist and not be
/// redacted already); nothing changes until a person or a named reviewer
/// approves it.
pub fn propose_redact(kb: &Kb, caller: &Caller, p: RedactParams) -> Result<ProposeResult> {
    check_actor(&caller.actor)?;
    check_params(&p)?;
    let _lock = kb.lock()?;
    plan(kb, p.kind, &p.id, &caller.actor, &p.reason)?;
    let result = |proposal_id: String| ProposeResult {
        review_url: kb.review_link(&proposal_id),
        proposal_id,
        object: BTreeMap::from([(object_key(ProposalKind::Redact).to_string(), p.id.clone())]),
        valid: true,
        errors: Vec::new(),
        dry_run: p.dry_run,
        meta: ReadMeta::default(),
    };
    if p.dry_run {
        return Ok(result(String::new()));
    }
    let payload = RedactPayload {
        kind: p.kind,
        id: p.id.clone(),
        reason: p.reason.trim().to_string(),
    };
    let payload = serde_json::to_value(&payload)
        .map_err(|e| Error::internal(format!("payload encoding: {e}")))?;
    let proposal_id = file_change_proposal(
        kb,
        caller,
        ProposalKind::Redact,
        &p.id,
        payload,
        None,
        json!({"object_kind": p.kind.as_str()}),
    )?;
    Ok(result(proposal_id))
}

/// The redaction event that carried out (and so decided) a redact
/// proposal, if one did.
pub(super) fn redaction_of(kb: &Kb, proposal_id: &str) -> Result<Option<Value>> {
    let mut found = None;
    kb.audit_log().scan_back(|ev| {
        let hit = ev.get("event").and_then(Value::as_str) == Some(EVENT)
            && ev
                .get("data")
                .and_then(|d| d.get("proposal_id"))
                .and_then(Value::as_str)
                == Some(proposal_id);
        if hit {
            found = Some(ev.clone());
        }
        hit
    })?;
    Ok(found)
}

/// The redaction a redact proposal carries.
pub(super) fn payload_of(proposal: &Proposal) -> Result<RedactPayload> {
    serde_json::from_value(proposal.payload.clone()).map_err(|e| {
        Error::new(
            ErrorKind::Corrupt,
            format!("proposal {} has an unreadable redaction: {e}", proposal.id),
        )
    })
}

/// Redact as the approver of redact proposal `proposal_id`: the
/// redaction's event names the proposal and is the decision (see
/// [`super::approve_change`]).
pub(super) fn redact_as_approver(
    kb: &Kb,
    caller: &Caller,
    approver: &str,
    proposal_id: &str,
    payload: &RedactPayload,
) -> Result<()> {
    let p = RedactParams {
        kind: payload.kind,
        id: payload.id.clone(),
        reason: payload.reason.clone(),
        dry_run: false,
    };
    let plan = plan(kb, p.kind, &p.id, approver, &p.reason).map_err(|e| {
        Error::new(
            e.kind,
            format!(
                "redact proposal {proposal_id} no longer applies: {}",
                e.message
            ),
        )
    })?;
    commit(kb, caller, approver, &p, plan, Some(proposal_id))?;
    Ok(())
}

/// A redact proposal as a reviewer reads it. `None` for another kind.
pub fn view(kb: &Kb, p: &Proposal) -> Option<crate::model::meta::ChangeView> {
    if p.kind != ProposalKind::Redact {
        return None;
    }
    let d: RedactPayload = serde_json::from_value(p.payload.clone()).ok()?;
    let what = match d.kind {
        RedactKind::Source => {
            "its content becomes a tombstone; evidence quoting it loses the quote"
        }
        RedactKind::Claim => "its text is masked and its status becomes redacted",
        RedactKind::Evidence => "its quote goes",
        RedactKind::Page => "its body is masked and its status becomes redacted",
    };
    Some(super::delete::change_view(
        kb,
        d.kind.as_str(),
        &d.id,
        format!(
            "redact {} {} ({what}; earlier git commits keep the bytes until purged); reason: {}",
            d.kind, d.id, d.reason
        ),
    ))
}
