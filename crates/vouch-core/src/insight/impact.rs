//! `kb.impact`: what rests on an object — what cites a source or evidence,
//! what supersedes or contradicts a claim, the pages and relations that
//! name it. The reviewed delete asks the same question before it removes
//! anything (`review::gate::delete::referrers`), through [`referring`].

use super::{ObjectKind, resolve};
use crate::error::Result;
use crate::kb::Kb;
use crate::model::{Claim, Evidence, Page, Relation};
use crate::params::*;
use std::collections::HashSet;

/// `kb.impact`: every stored object that refers to `p.id`.
pub fn impact(kb: &Kb, p: ObjectParams) -> Result<ImpactResult> {
    let kind = resolve(kb, &p.id, p.kind.as_deref())?;
    Ok(ImpactResult {
        kind: kind.as_str().into(),
        referrers: referring(kb, kind, &p.id)?,
        id: p.id,
    })
}

/// The objects that refer to `id` (of `kind`), each with how: a claim that
/// supersedes, is superseded by, contradicts, is about or cites it; a page
/// that draws on, is about or cites it; a relation that starts from, points
/// to or cites it; evidence that quotes a source. Claims first, then pages,
/// relations and evidence, each in id order.
pub fn referring(kb: &Kb, kind: ObjectKind, id: &str) -> Result<Vec<Referrer>> {
    let mut out = Vec::new();
    let has = |list: &[String]| list.iter().any(|x| x == id);
    let push = |out: &mut Vec<Referrer>, what: &str, of: &str, how: Vec<String>| {
        if !how.is_empty() {
            out.push(Referrer {
                kind: what.into(),
                id: of.into(),
                how,
            });
        }
    };
    let cited = matches!(kind, ObjectKind::Evidence | ObjectKind::Source);
    // A source is cited directly or through the evidence that quotes it.
    let quoting: Vec<Evidence> = if kind == ObjectKind::Source {
        kb.load_all::<Evidence>()?
            .into_iter()
            .filter(|e| e.source_id == id)
            .collect()
    } else {
        Vec::new()
    };
    let through: HashSet<&str> = quoting.iter().map(|e| e.id.as_str()).collect();
    let through_evidence = |list: &[String]| -> Vec<String> {
        list.iter()
            .filter(|x| through.contains(x.as_str()))
            .map(|x| format!("cites it through evidence {x}"))
            .collect()
    };
    for c in kb.load_all::<Claim>()? {
        let mut how: Vec<String> = Vec::new();
        match kind {
            ObjectKind::Claim if c.id != id => {
                if has(&c.supersedes) {
                    how.push("supersedes it".into());
                }
                if c.superseded_by.as_deref() == Some(id) {
                    how.push("is superseded by it".into());
                }
                if has(&c.contradicts) {
                    how.push("contradicts it".into());
                }
            }
            ObjectKind::Entity if has(&c.entities) => how.push("is about it".into()),
            _ if cited => {
                if has(&c.evidence) {
                    how.push("cites it".into());
                }
                how.extend(through_evidence(&c.evidence));
            }
            _ => {}
        }
        push(&mut out, "claim", &c.id, how);
    }
    for pg in kb.load_all::<Page>()? {
        let how = match kind {
            ObjectKind::Claim if has(&pg.claims) => "draws on it",
            ObjectKind::Entity if has(&pg.entities) => "is about it",
            ObjectKind::Source if has(&pg.sources) => "cites it",
            _ => continue,
        };
        push(&mut out, "page", &pg.id, vec![how.into()]);
    }
    for r in kb.load_all::<Relation>()? {
        if kind == ObjectKind::Relation && r.id == id {
            continue;
        }
        let mut how: Vec<String> = Vec::new();
        if r.source == id {
            how.push("starts from it".into());
        }
        if r.target == id {
            how.push("points to it".into());
        }
        if cited {
            if has(&r.evidence) {
                how.push("cites it".into());
            }
            how.extend(through_evidence(&r.evidence));
        }
        push(&mut out, "relation", &r.id, how);
    }
    for e in &quoting {
        push(&mut out, "evidence", &e.id, vec!["quotes it".into()]);
    }
    Ok(out)
}
