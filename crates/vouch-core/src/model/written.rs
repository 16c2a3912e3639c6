//! What a writer hands the derived index after its files land.

use super::{Claim, Entity, Page, Relation, Source};

/// An artifact just written (or removed) through vouch, for incremental
/// indexing.
pub enum Written {
    /// A claim.
    Claim(Claim),
    /// A page.
    Page(Page),
    /// An entity.
    Entity(Entity),
    /// A relation.
    Relation(Relation),
    /// A source.
    Source(Source),
    /// An object whose file an approved delete removed: the index drops
    /// its row and its vectors.
    Removed {
        /// Its kind as the index names it (`claim`, `page`, `entity`,
        /// `relation`, `source`).
        kind: &'static str,
        /// Its id.
        id: String,
    },
}

impl Written {
    /// (kind, id) as the index names it.
    pub fn key(&self) -> (&'static str, &str) {
        match self {
            Written::Claim(c) => ("claim", &c.id),
            Written::Page(p) => ("page", &p.id),
            Written::Entity(e) => ("entity", &e.id),
            Written::Relation(r) => ("relation", &r.id),
            Written::Source(s) => ("source", &s.id),
            Written::Removed { kind, id } => (kind, id),
        }
    }
}
