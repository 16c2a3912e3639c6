//! `kb.why`: the whole story of one object in one read — the proposals
//! that made and changed it, who decided them and when, what it cites
//! with the quotes, a claim's supersession and contradiction chain, every
//! audit event naming it, and whether its file is what the gate wrote.

use super::{ObjectKind, resolve};
use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::{Claim, Entity, Evidence, Page, Proposal, Relation};
use crate::params::*;
use crate::store::Dir;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;

/// How many links of a supersession chain are followed each way: a chain
/// written by hand into a loop ends here.
const MAX_CHAIN: usize = 50;

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::internal(format!("encoding: {e}")))
}

/// `kb.why`: how the object `p.id` came to be and what has happened to it.
pub fn why(kb: &Kb, p: ObjectParams) -> Result<WhyResult> {
    let kind = resolve(kb, &p.id, p.kind.as_deref())?;
    let id = p.id;
    let gone = || Error::not_found(format!("{} {id} is no longer stored", kind.as_str()));
    let (object, approved_by, cited, chain) = match kind {
        ObjectKind::Claim => {
            let c = kb.load::<Claim>(&id)?.ok_or_else(gone)?;
            let chain = chain(kb, &c)?;
            (
                to_value(&c)?,
                c.approved_by.clone(),
                c.evidence.clone(),
                chain,
            )
        }
        ObjectKind::Page => {
            let pg = kb.load::<Page>(&id)?.ok_or_else(gone)?;
            let approved_by = pg.approved_by.clone();
            let cited = pg.sources.clone();
            (
                to_value(&PageWithBody::from(pg))?,
                approved_by,
                cited,
                vec![],
            )
        }
        ObjectKind::Entity => {
            let e = kb.load::<Entity>(&id)?.ok_or_else(gone)?;
            (to_value(&e)?, e.approved_by.clone(), vec![], vec![])
        }
        ObjectKind::Relation => {
            let r = kb.load::<Relation>(&id)?.ok_or_else(gone)?;
            (
                to_value(&r)?,
                r.approved_by.clone(),
                r.evidence.clone(),
                vec![],
            )
        }
        ObjectKind::Evidence => {
            let e = kb.load::<Evidence>(&id)?.ok_or_else(gone)?;
            (to_value(&e)?, None, vec![e.source_id.clone()], vec![])
        }
        ObjectKind::Source => {
            let s = kb.load_source(&id)?.ok_or_else(gone)?;
            (to_value(&s)?, None, vec![], vec![])
        }
    };
    let proposals = proposals_of(kb, &id)?;
    let mut named: HashSet<&str> = proposals.iter().map(|p| p.id.as_str()).collect();
    named.insert(&id);
    let audit = crate::reads::audit(kb, AuditParams::default())?
        .into_iter()
        .filter(|ev| names_any(&ev.0, &named))
        .collect();
    let unaudited = kind.dir().filter(|_| kind.gated()).map(|dir| {
        crate::retrieval::unaudited(kb, &[(dir, id.as_str())]).contains(&(dir, id.clone()))
    });
    Ok(WhyResult {
        kind: kind.as_str().into(),
        object,
        approved_by,
        proposals: proposals.into_iter().map(told).collect(),
        citations: crate::reads::resolve_citations(kb, cited),
        chain,
        audit,
        unaudited,
        id,
    })
}

/// Whether an audit event names one of `ids` among its `object_ids`.
fn names_any(ev: &Value, ids: &HashSet<&str>) -> bool {
    ev.get("object_ids")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().filter_map(Value::as_str).any(|x| ids.contains(x)))
}

/// The proposals, pending or decided, that made the object `id` or asked
/// to change it (a lifecycle change, a delete), oldest first.
fn proposals_of(kb: &Kb, id: &str) -> Result<Vec<Proposal>> {
    let changes = |p: &Proposal| {
        let says = |v: Option<&Value>| {
            v.is_some_and(|v| {
                ["id", "old_id", "new_id", "a_id", "b_id"]
                    .iter()
                    .any(|k| v.get(k).and_then(Value::as_str) == Some(id))
            })
        };
        p.object_id == id || says(Some(&p.payload)) || says(p.payload.get("params"))
    };
    let mut out: Vec<Proposal> = Vec::new();
    let decided = kb.load_proposals(Dir::Decided)?;
    let decided_ids: HashSet<String> = decided.iter().map(|p| p.id.clone()).collect();
    out.extend(decided.into_iter().filter(|p| changes(p)));
    // One also in decided/ was decided (a crash interrupted cleanup).
    out.extend(
        kb.load_proposals(Dir::Proposed)?
            .into_iter()
            .filter(|p| !decided_ids.contains(&p.id) && changes(p)),
    );
    out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(out)
}

fn told(p: Proposal) -> WhyProposal {
    WhyProposal {
        id: p.id,
        kind: p.kind.as_str().into(),
        status: p.status.as_str().into(),
        proposed_by: p.proposed_by,
        created_at: p.created_at.to_string(),
        rationale: p.rationale,
        session_id: p.session_id,
        decided_by: p.decided_by,
        decided_at: p.decided_at.map(|t| t.to_string()),
        reason: p.reason,
    }
}

/// A claim's chain: what it supersedes (and what those superseded, back to
/// the first), what supersedes it (forward to the current one), what it
/// contradicts and what contradicts it.
fn chain(kb: &Kb, claim: &Claim) -> Result<Vec<ChainLink>> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::from([claim.id.clone()]);
    let link = |relation: &str, id: &str, c: Option<&Claim>| ChainLink {
        relation: relation.into(),
        id: id.into(),
        text: c.map(|c| c.text.clone()),
        status: c.map(|c| c.status.as_str().into()),
    };
    let load = |id: &str| {
        crate::ids::check_id("claim id", id)
            .ok()
            .and_then(|_| kb.load::<Claim>(id).ok().flatten())
    };
    // Forward: each successor in turn.
    let mut next = claim.superseded_by.clone();
    while let Some(id) = next.take() {
        if out.len() >= MAX_CHAIN || !seen.insert(id.clone()) {
            break;
        }
        let c = load(&id);
        out.push(link("superseded_by", &id, c.as_ref()));
        next = c.and_then(|c| c.superseded_by);
    }
    // Back: what it replaced, breadth first.
    let mut back: Vec<String> = claim.supersedes.clone();
    let mut steps = 0;
    while let Some(id) = (!back.is_empty()).then(|| back.remove(0)) {
        steps += 1;
        if steps > MAX_CHAIN || !seen.insert(id.clone()) {
            continue;
        }
        let c = load(&id);
        out.push(link("supersedes", &id, c.as_ref()));
        if let Some(c) = c {
            back.extend(c.supersedes);
        }
    }
    for id in &claim.contradicts {
        out.push(link("contradicts", id, load(id).as_ref()));
    }
    for c in kb.load_all::<Claim>()? {
        if c.id != claim.id && c.contradicts.contains(&claim.id) {
            out.push(link("contradicted_by", &c.id.clone(), Some(&c)));
        }
    }
    Ok(out)
}
