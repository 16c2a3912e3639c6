//! Provenance and the gate's health, read from the files and the audit log:
//! how an object came to be (`kb.why`), what rests on it (`kb.impact`),
//! what lies around it (`kb.neighbors`), how the review queue fares
//! (`kb.gate_stats`) and the person's sweep of stale proposals
//! (`kb.expire`). All but the sweep read only.

use crate::error::{Error, Result};
use crate::ids::{check_id, is_source_id, truncate_for_message};
use crate::kb::Kb;
use crate::store::Dir;

mod expire;
mod impact;
mod neighbors;
mod stats;
mod why;

pub use expire::expire;
pub use impact::{impact, referring};
pub use neighbors::neighbors;
pub use stats::{gate_stats, parse_age};
pub use why::why;

/// The kinds of object these reads tell about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// An approved claim.
    Claim,
    /// An approved page.
    Page,
    /// An approved entity.
    Entity,
    /// An approved relation.
    Relation,
    /// An evidence record (a quoted span).
    Evidence,
    /// A registered source.
    Source,
}

impl ObjectKind {
    /// Every kind, in the order an id is looked up.
    pub const ALL: [ObjectKind; 6] = [
        ObjectKind::Claim,
        ObjectKind::Page,
        ObjectKind::Entity,
        ObjectKind::Relation,
        ObjectKind::Evidence,
        ObjectKind::Source,
    ];

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Claim => "claim",
            ObjectKind::Page => "page",
            ObjectKind::Entity => "entity",
            ObjectKind::Relation => "relation",
            ObjectKind::Evidence => "evidence",
            ObjectKind::Source => "source",
        }
    }

    /// The folder its files live in (sources have their own).
    pub fn dir(self) -> Option<Dir> {
        match self {
            ObjectKind::Claim => Some(Dir::Claims),
            ObjectKind::Page => Some(Dir::Pages),
            ObjectKind::Entity => Some(Dir::Entities),
            ObjectKind::Relation => Some(Dir::Relations),
            ObjectKind::Evidence => Some(Dir::Evidence),
            ObjectKind::Source => None,
        }
    }

    /// Claims, pages, entities and relations pass the review gate.
    pub fn gated(self) -> bool {
        !matches!(self, ObjectKind::Evidence | ObjectKind::Source)
    }

    fn parse(s: &str) -> Result<ObjectKind> {
        ObjectKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "kind {:?} is not one of claim, page, entity, relation, evidence, source",
                    truncate_for_message(s)
                ))
            })
    }
}

/// Whether an object of `kind` with `id` is stored.
fn holds(kb: &Kb, kind: ObjectKind, id: &str) -> bool {
    match kind.dir() {
        Some(dir) => kb.exists(dir, id),
        None => is_source_id(id) && kb.load_source(id).ok().flatten().is_some(),
    }
}

/// The kind of the object `id` names (of `kind`, when given). An id that
/// could walk out of its folder is refused before any file is read; an id
/// nothing holds is `not_found`.
pub fn resolve(kb: &Kb, id: &str, kind: Option<&str>) -> Result<ObjectKind> {
    let kind = kind.map(ObjectKind::parse).transpose()?;
    if is_source_id(id) {
        if kind.is_none_or(|k| k == ObjectKind::Source) && holds(kb, ObjectKind::Source, id) {
            return Ok(ObjectKind::Source);
        }
    } else {
        check_id("id", id)?;
    }
    let candidates: Vec<ObjectKind> = match kind {
        Some(k) => vec![k],
        None => ObjectKind::ALL.to_vec(),
    };
    candidates
        .into_iter()
        .find(|k| holds(kb, *k, id))
        .ok_or_else(|| {
            Error::not_found(format!(
                "no {} with id {:?}",
                kind.map_or("claim, page, entity, relation, evidence or source", |k| k
                    .as_str()),
                truncate_for_message(id)
            ))
        })
}

#[cfg(test)]
mod tests;
