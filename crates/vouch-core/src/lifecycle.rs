//! Lifecycle of reviewed knowledge (seed 001 § lifecycle): supersede,
//! contradict, archive, confirm, cite. These change metadata of durable
//! artifacts, not their assertions, so they bypass the gate — but each is
//! audited, with the event written before the files.

use crate::error::{Error, Result};
use crate::ids::{check_id, is_source_id};
use crate::kb::{Caller, Kb};
use crate::model::{Claim, ClaimStatus, Page, PageStatus};
use crate::params::*;
use crate::store::{Dir, atomic};
use serde_json::{Value, json};

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

/// Audit first, then write the changed claims together.
fn commit(
    kb: &Kb,
    caller: &Caller,
    event: &str,
    object_ids: Vec<String>,
    data: Value,
    claims: Vec<Claim>,
) -> Result<LifecycleResult> {
    let mut ev = kb.event(event, &caller.actor, object_ids, data);
    let mut batch = atomic::Batch::new(kb.layout().root());
    for c in &claims {
        kb.stage(&mut batch, c)?;
    }
    // Journaled: a crash after the event is logged is finished by the next
    // command, so a supersession never lands on one claim but not the other.
    let staged = batch.stage_journaled(&ev.id)?;
    if let Err(e) = kb.append_audit(std::slice::from_mut(&mut ev)) {
        staged.abandon();
        return Err(e);
    }
    staged.finish()?;
    let updated = claims.iter().map(|c| c.id.clone()).collect();
    crate::index::after_write(
        kb,
        &claims
            .into_iter()
            .map(crate::index::Written::Claim)
            .collect::<Vec<_>>(),
    );
    Ok(LifecycleResult { ok: true, updated })
}

pub fn supersede(kb: &Kb, caller: &Caller, p: SupersedeParams) -> Result<LifecycleResult> {
    if p.old_id == p.new_id {
        return Err(Error::invalid(format!(
            "claim {} cannot supersede itself",
            p.old_id
        )));
    }
    let _lock = kb.lock()?;
    let mut old = claim(kb, &p.old_id)?;
    let mut new = claim(kb, &p.new_id)?;
    if let Some(by) = &old.superseded_by {
        return Err(Error::conflict(format!(
            "claim {} is already superseded by {by}",
            old.id
        )));
    }
    if let Some(by) = &new.superseded_by {
        return Err(Error::conflict(format!(
            "claim {} is itself superseded by {by}; supersede with the current claim",
            new.id
        )));
    }
    // A cycle would appear if `old` already (transitively) supersedes `new`.
    let mut stack = old.supersedes.clone();
    let mut seen = std::collections::HashSet::new();
    while let Some(id) = stack.pop() {
        if id == new.id {
            return Err(Error::invalid(format!(
                "superseding {} with {} would make a cycle: {} already supersedes {}",
                old.id, new.id, old.id, new.id
            )));
        }
        if seen.insert(id.clone())
            && let Ok(Some(c)) = kb.load::<Claim>(&id)
        {
            stack.extend(c.supersedes);
        }
    }
    let now = kb.now();
    old.status = ClaimStatus::Superseded;
    old.superseded_by = Some(new.id.clone());
    old.updated_at = now;
    if !new.supersedes.contains(&old.id) {
        new.supersedes.push(old.id.clone());
    }
    new.updated_at = now;
    commit(
        kb,
        caller,
        "claim.supersede",
        vec![old.id.clone(), new.id.clone()],
        reason_data(&p.reason),
        vec![old, new],
    )
}

pub fn contradict(kb: &Kb, caller: &Caller, p: ContradictParams) -> Result<LifecycleResult> {
    if p.a_id == p.b_id {
        return Err(Error::invalid(format!(
            "claim {} cannot contradict itself",
            p.a_id
        )));
    }
    let _lock = kb.lock()?;
    let mut a = claim(kb, &p.a_id)?;
    let mut b = claim(kb, &p.b_id)?;
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
    commit(
        kb,
        caller,
        "claim.contradict",
        vec![a.id.clone(), b.id.clone()],
        reason_data(&p.reason),
        vec![a, b],
    )
}

pub fn archive(kb: &Kb, caller: &Caller, p: ArchiveParams) -> Result<LifecycleResult> {
    check_id("id", &p.id)?;
    let _lock = kb.lock()?;
    if let Some(mut c) = kb.load::<Claim>(&p.id)? {
        c.status = ClaimStatus::Archived;
        c.updated_at = kb.now();
        return commit(
            kb,
            caller,
            "claim.archive",
            vec![c.id.clone()],
            reason_data(&p.reason),
            vec![c],
        );
    }
    if let Some(mut pg) = kb.load::<Page>(&p.id)? {
        pg.status = PageStatus::Archived;
        pg.updated_at = kb.now();
        let mut ev = kb.event(
            "page.archive",
            &caller.actor,
            vec![pg.id.clone()],
            reason_data(&p.reason),
        );
        kb.append_audit(std::slice::from_mut(&mut ev))?;
        kb.store(&pg)?;
        let id = pg.id.clone();
        crate::index::after_write(kb, &[crate::index::Written::Page(pg)]);
        return Ok(LifecycleResult {
            ok: true,
            updated: vec![id],
        });
    }
    Err(Error::not_found(format!(
        "no claim or page {:?} to archive",
        p.id
    )))
}

pub fn confirm(kb: &Kb, caller: &Caller, p: IdParams) -> Result<LifecycleResult> {
    let _lock = kb.lock()?;
    let mut c = claim(kb, &p.id)?;
    let now = kb.now();
    c.last_confirmed_at = Some(now);
    c.updated_at = now;
    commit(
        kb,
        caller,
        "claim.confirm",
        vec![c.id.clone()],
        json!({}),
        vec![c],
    )
}

pub fn cite(kb: &Kb, caller: &Caller, p: CiteParams) -> Result<LifecycleResult> {
    let _lock = kb.lock()?;
    let mut c = claim(kb, &p.id)?;
    let evidence_id = match &p.evidence {
        Citation::Id(id) if is_source_id(id) => {
            if !kb.source_exists(id) {
                return Err(Error::not_found(format!("source {id} is not registered")));
            }
            id.clone()
        }
        Citation::Id(id) => {
            check_id("evidence id", id)?;
            if !kb.exists(Dir::Evidence, id) {
                return Err(Error::not_found(format!(
                    "{id:?} is neither a registered source nor an existing evidence id"
                )));
            }
            id.clone()
        }
        Citation::Span { source_id, quote } => {
            crate::sources::mint_evidence_locked(kb, caller, source_id, quote)?.evidence_id
        }
    };
    if c.evidence.contains(&evidence_id) {
        return Ok(LifecycleResult {
            ok: true,
            updated: Vec::new(),
        });
    }
    c.evidence.push(evidence_id.clone());
    c.updated_at = kb.now();
    commit(
        kb,
        caller,
        "claim.cite",
        vec![c.id.clone(), evidence_id],
        json!({}),
        vec![c],
    )
}
