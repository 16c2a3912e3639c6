//! `kb.expire`: a person sweeps the queue of proposals that waited too
//! long, rejecting each through the one reject path (`kb.reject`), so each
//! rejection is audited and recorded with its reason like any other. A dry
//! run unless told otherwise.

use super::parse_age;
use crate::error::{Error, Result};
use crate::kb::{Caller, Kb};
use crate::params::*;

/// `kb.expire`: reject (or, by default, list) every proposal pending
/// longer than `p.older_than`, oldest first. Refused over an agent
/// transport unless the person's own config trusts agents: a sweep decides
/// for many proposals at once, so a person runs it.
pub fn expire(kb: &Kb, caller: &Caller, p: ExpireParams) -> Result<ExpireResult> {
    if kb.gated(caller) {
        return Err(Error::denied(format!(
            "review_gate: expiring proposals is a person's decision; {:?} may not run it over {} \
             (a person runs `vouch expire --older-than 30d`)",
            caller.actor,
            caller.transport.name()
        )));
    }
    kb.may_decide(caller)?;
    let age = parse_age(&p.older_than)
        .map_err(|e| Error::invalid(format!("older_than: {}", e.message)))?;
    let reason = match p.reason.as_deref().map(str::trim) {
        Some("") => return Err(Error::invalid("reason: is empty")),
        Some(r) => r.to_string(),
        None => format!("expired: pending longer than {}", p.older_than.trim()),
    };
    let dry_run = p.dry_run.unwrap_or(true);
    let now = kb.now();
    let cutoff = now.0 - age;
    let stale: Vec<Expired> = crate::review::gate::list_pending(kb)?
        .into_iter()
        .filter(|q| q.created_at.0 < cutoff)
        .map(|q| Expired {
            age_seconds: (now.0 - q.created_at.0).num_seconds().max(0),
            id: q.id,
            kind: q.kind.as_str().into(),
            proposed_by: q.proposed_by,
            created_at: q.created_at.to_string(),
        })
        .collect();
    if !dry_run {
        for q in &stale {
            crate::review::gate::reject(
                kb,
                caller,
                RejectParams {
                    proposal_id: q.id.clone(),
                    reason: reason.clone(),
                },
            )?;
        }
    }
    Ok(ExpireResult {
        dry_run,
        reason,
        expired: stale,
    })
}
