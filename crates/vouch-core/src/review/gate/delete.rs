//! A reviewed delete (`kb.propose_delete`): an agent or a person asks for an
//! approved claim, page, entity or relation to go, and a person or a named
//! reviewer approves it through `kb.approve`; approval removes the object's
//! file. Refused at propose and again at approve while another object
//! refers to it. The approval's audit event records the removed file's path
//! and the sha256 of its bytes, never the bytes; the decided record keeps
//! that hash, not a copy.

use super::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The sha256 a removal event records as what it "wrote" at the removed
/// file's path (`data.written`): no file hashes to it, so a file put back
/// there by hand never reads as reviewed.
pub const REMOVED: &str = crate::audit::trail::REMOVED;

/// The key of an event's (and a decided record's) map of removed files:
/// path inside `.vouch/` → sha256 of the bytes removed.
pub const REMOVED_KEY: &str = "removed";

/// What a delete proposal carries (its payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeletePayload {
    /// The kind of the object to remove.
    pub kind: DeleteKind,
    /// Its id.
    pub id: String,
    /// Why it must go.
    pub reason: String,
    /// The sha256 of its file when the deletion was proposed: approval
    /// removes that version only (one changed since is refused).
    pub sha256: String,
}

impl DeletePayload {
    /// The payload of a delete proposal; `None` for another kind, or a
    /// delete proposal vouch 1.x wrote (another shape).
    pub fn of(p: &Proposal) -> Option<DeletePayload> {
        if p.kind != ProposalKind::Delete {
            return None;
        }
        serde_json::from_value(p.payload.clone()).ok()
    }
}

/// The folder an object of `kind` lives in.
pub fn dir_of(kind: DeleteKind) -> Dir {
    match kind {
        DeleteKind::Claim => Dir::Claims,
        DeleteKind::Page => Dir::Pages,
        DeleteKind::Entity => Dir::Entities,
        DeleteKind::Relation => Dir::Relations,
    }
}

/// The objects that refer to `id` (of `kind`), each named with how: a
/// claim that supersedes, is superseded by or contradicts it, or is about
/// it; a page that draws on it or is about it; a relation that starts from
/// or points to it. Deleting it would leave each of them dangling.
pub fn referrers(kb: &Kb, kind: DeleteKind, id: &str) -> Result<Vec<String>> {
    // One finder for this refusal and for `kb.impact`.
    let kind = match kind {
        DeleteKind::Claim => crate::insight::ObjectKind::Claim,
        DeleteKind::Page => crate::insight::ObjectKind::Page,
        DeleteKind::Entity => crate::insight::ObjectKind::Entity,
        DeleteKind::Relation => crate::insight::ObjectKind::Relation,
    };
    Ok(crate::insight::referring(kb, kind, id)?
        .into_iter()
        .map(|r| format!("{} {} ({})", r.kind, r.id, r.how.join(", ")))
        .collect())
}

/// Why `id` cannot be deleted while `referring` refer to it, and what to
/// do instead.
fn still_referenced(kind: DeleteKind, id: &str, referring: &[String]) -> String {
    let instead = match kind {
        DeleteKind::Claim => format!(
            "supersede it instead (`vouch supersede {id} NEW_ID`, kb.supersede) or archive it \
             (kb.archive): both keep the history that refers to it"
        ),
        _ => format!(
            "supersede or archive what refers to it instead, or delete those first; to retire \
             a claim that refers to it, supersede it (kb.supersede) rather than delete {id}"
        ),
    };
    format!(
        "cannot delete {kind} {id}: {} refer{} to it ({}); {instead}",
        if referring.len() == 1 {
            "another object"
        } else {
            "other objects"
        },
        if referring.len() == 1 { "s" } else { "" },
        referring.join("; ")
    )
}

/// The file of the object to delete, its path inside `.vouch/` and the
/// sha256 of its bytes now; `None` when there is no such object.
fn target_file(kb: &Kb, kind: DeleteKind, id: &str) -> Result<Option<(PathBuf, String, String)>> {
    let path = kb.layout().file(dir_of(kind), id)?;
    Ok(kb.read_file(&path)?.map(|bytes| {
        let inside = kb.layout().inside(&path);
        (path, inside, crate::ids::content_sha256(&bytes))
    }))
}

/// `kb.propose_delete`: ask for an approved claim, page, entity or
/// relation to be removed. Refused (`valid: false`, every problem listed)
/// while another object refers to it, naming them.
pub fn propose_delete(kb: &Kb, caller: &Caller, p: ProposeDeleteParams) -> Result<ProposeResult> {
    check_actor(&caller.actor)?;
    let mut problems = Problems(Vec::new());
    if let Err(e) = check_id("id", &p.id) {
        problems.push(format!("id: {}", e.message));
    }
    check_text(&mut problems, "reason", &p.reason);
    check_session(kb, &mut problems, &p.session_id);
    let result = |proposal_id: String, errors: Vec<String>| ProposeResult {
        review_url: kb.review_link(&proposal_id),
        proposal_id,
        object: BTreeMap::from([(
            object_key(ProposalKind::Delete).to_string(),
            if errors.is_empty() {
                p.id.clone()
            } else {
                String::new()
            },
        )]),
        valid: errors.is_empty(),
        errors,
        dry_run: p.dry_run,
        meta: ReadMeta::default(),
    };
    if !problems.0.is_empty() {
        return Ok(result(String::new(), problems.0));
    }
    let _lock = kb.lock()?;
    let Some((_, _, sha)) = target_file(kb, p.kind, &p.id)? else {
        return Ok(result(
            String::new(),
            vec![format!("id: no approved {} {:?} to delete", p.kind, p.id)],
        ));
    };
    let referring = referrers(kb, p.kind, &p.id)?;
    if !referring.is_empty() {
        return Ok(result(
            String::new(),
            vec![still_referenced(p.kind, &p.id, &referring)],
        ));
    }
    if p.dry_run {
        return Ok(result(String::new(), Vec::new()));
    }
    let payload = DeletePayload {
        kind: p.kind,
        id: p.id.clone(),
        reason: p.reason.trim().to_string(),
        sha256: sha,
    };
    let payload = serde_json::to_value(&payload)
        .map_err(|e| Error::internal(format!("payload encoding: {e}")))?;
    let proposal_id = file_change_proposal(
        kb,
        caller,
        ProposalKind::Delete,
        &p.id,
        payload,
        p.session_id.clone(),
        json!({"object_kind": p.kind.as_str()}),
    )?;
    Ok(result(proposal_id, Vec::new()))
}

/// Approve a delete proposal (checked for integrity and self-approval by
/// the caller, who holds the lock): the object must still be the version
/// proposed and nothing may refer to it. The approval's event records the
/// file's path and sha256 (`data.removed`, and [`REMOVED`] in
/// `data.written`); then the file goes, then the `decided/` record is
/// filed. A crash after the event is finished by approving again
/// (`decision`: the event a crashed run logged).
pub(super) fn approve_delete(
    kb: &Kb,
    caller: &Caller,
    approver: &str,
    proposal: Proposal,
    decision: Option<Value>,
    reason: Option<String>,
) -> Result<ApproveResult> {
    let Some(d) = DeletePayload::of(&proposal) else {
        return Err(Error::invalid(format!(
            "proposal {} asks vouch 1.x to delete {} in a form this vouch does not read: reject \
             it here (and propose the deletion again with kb.propose_delete), or decide it with \
             vouch 1.x",
            proposal.id, proposal.object_id
        )));
    };
    if d.id != proposal.object_id {
        return Err(Error::denied(format!(
            "proposal {} names {} but asks to delete {}: the file was edited; reject it",
            proposal.id, proposal.object_id, d.id
        )));
    }
    let target = target_file(kb, d.kind, &d.id)?;
    let inside = kb
        .layout()
        .inside(&kb.layout().file(dir_of(d.kind), &d.id)?);
    let (actor, at, hash, recovered) = match decision {
        Some(ev) => {
            // Finishing: the file is gone already, or still the version
            // the event records removing.
            let recorded = ev
                .get("data")
                .and_then(|x| x.get(REMOVED_KEY))
                .and_then(|x| x.get(&inside))
                .and_then(Value::as_str);
            if let Some((_, _, sha)) = &target
                && recorded != Some(sha.as_str())
            {
                return Err(Error::conflict(format!(
                    "{inside} is not the file the interrupted approval of {} removes (it was \
                     written again since); reject {} and propose the deletion again",
                    proposal.id, proposal.id
                )));
            }
            let (actor, at, hash) = logged_approval(kb, &ev, approver, &proposal)?;
            (actor, at, hash, true)
        }
        None => {
            let Some((_, _, sha)) = &target else {
                return Err(Error::not_found(format!(
                    "{} {} no longer exists; reject proposal {}",
                    d.kind, d.id, proposal.id
                )));
            };
            let referring = referrers(kb, d.kind, &d.id)?;
            if !referring.is_empty() {
                return Err(Error::conflict(format!(
                    "proposal {}: {}",
                    proposal.id,
                    still_referenced(d.kind, &d.id, &referring)
                )));
            }
            if *sha != d.sha256 {
                return Err(Error::conflict(format!(
                    "{} {} changed since its deletion was proposed (its file is not the one \
                     the reviewer was asked to remove); reject {} and propose the deletion \
                     again",
                    d.kind, d.id, proposal.id
                )));
            }
            let mut data = json!({
                "kind": ProposalKind::Delete.as_str(),
                "object_kind": d.kind.as_str(),
                REMOVED_KEY: {&inside: sha},
                crate::audit::WRITTEN_KEY: {&inside: REMOVED},
            });
            if let Some(r) = &reason {
                data["reason"] = json!(r);
            }
            if approver != caller.actor {
                data["caller"] = json!(caller.actor);
            }
            let mut ev = kb.event(
                "proposal.approve",
                approver,
                vec![proposal.id.clone(), d.id.clone()],
                data,
            );
            kb.append_audit(std::slice::from_mut(&mut ev))?;
            crate::fail::point("delete.logged");
            (approver.to_string(), ev.created_at, Some(ev.hash), false)
        }
    };
    // The file goes first, the decision is filed after: a crash between
    // the two leaves the proposal pending, and approving it again files
    // the decision; a decision is never filed with the file still there.
    if let Some((path, _, _)) = target {
        atomic::remove(kb.layout().root(), &path)?;
        crate::fail::point("delete.removed");
    }
    let mut decided = decided(&proposal, ProposalStatus::Approved, actor, at, reason, hash);
    // What was removed, by hash: never a copy of it.
    decided
        .extra
        .insert(REMOVED_KEY.into(), json!({&inside: d.sha256}));
    file_decision(kb, &decided)?;
    kb.announce(&[Written::Removed {
        kind: d.kind.as_str(),
        id: d.id.clone(),
    }]);
    Ok(ApproveResult {
        ok: true,
        object_id: d.id,
        object_kind: ProposalKind::Delete.as_str().to_string(),
        proposal_id: proposal.id,
        recovered,
    })
}

/// A delete proposal as a reviewer reads it: what approving it does and
/// the object as it reads now. `None` for another kind of proposal.
pub fn view(kb: &Kb, p: &Proposal) -> Option<crate::model::meta::ChangeView> {
    let d = DeletePayload::of(p)?;
    Some(change_view(
        kb,
        d.kind.as_str(),
        &d.id,
        format!(
            "delete {} {} (its file leaves the working tree; earlier commits keep it); reason: {}",
            d.kind, d.id, d.reason
        ),
    ))
}

/// What a proposal to delete or redact `kind` `id` shows a reviewer:
/// `summary`, and the object as it reads now (a claim's text and status, a
/// page's title and status, an entity's name and type, a relation's ends, a
/// source's title, an evidence span's place), when it exists.
pub(super) fn change_view(
    kb: &Kb,
    kind: &str,
    id: &str,
    summary: String,
) -> crate::model::meta::ChangeView {
    let shown = check_id("id", id).ok().and_then(|()| match kind {
        "claim" => kb
            .load::<Claim>(id)
            .ok()?
            .map(|c| (c.text, c.status.as_str().to_string())),
        "page" => kb
            .load::<Page>(id)
            .ok()?
            .map(|x| (x.title, x.status.as_str().to_string())),
        "entity" => kb
            .load::<Entity>(id)
            .ok()?
            .map(|e| (e.name, e.entity_type.as_str().to_string())),
        "relation" => kb.load::<Relation>(id).ok()?.map(|r| {
            (
                format!("{} {} {}", r.source, r.relation, r.target),
                String::new(),
            )
        }),
        "source" => kb
            .load_source(id)
            .ok()?
            .map(|s| (s.title.unwrap_or(s.locator), String::new())),
        "evidence" => kb.load::<Evidence>(id).ok()?.map(|e| {
            (
                format!("{} of source {}", e.locator, e.source_id),
                String::new(),
            )
        }),
        _ => None,
    });
    crate::model::meta::ChangeView {
        summary,
        objects: shown
            .map(|(text, status)| crate::model::meta::ChangedObject {
                kind: kind.into(),
                id: id.to_string(),
                text,
                status,
            })
            .into_iter()
            .collect(),
    }
}
