//! What may enter the knowledge base, one rule set: the gate checks a
//! proposal against this KB, a bundle check checks a staged member against
//! the bundle plus this KB, and both ask the same questions of a [`Lookup`].

use crate::ids::{check_id, is_source_id};
use crate::kb::Kb;
use crate::model::Evidence;
use crate::store::Dir;

/// Where references are resolved: this KB, or a staged set over it.
pub trait Lookup {
    /// Is there an object of this kind with this (valid) id?
    fn has(&self, dir: Dir, id: &str) -> bool;
    /// Is a source with this id registered?
    fn has_source(&self, id: &str) -> bool;
    /// The source an existing evidence record points into.
    fn evidence_source(&self, id: &str) -> Option<String>;
    /// Where the lookup looked, for messages: "" for this KB,
    /// " (neither in the bundle nor here)" for a bundle.
    fn place(&self) -> &'static str;
}

impl Lookup for Kb {
    fn has(&self, dir: Dir, id: &str) -> bool {
        check_id(dir.id_label(), id).is_ok() && self.exists(dir, id)
    }
    fn has_source(&self, id: &str) -> bool {
        is_source_id(id) && self.source_exists(id)
    }
    fn evidence_source(&self, id: &str) -> Option<String> {
        self.load::<Evidence>(id)
            .ok()
            .flatten()
            .map(|e| e.source_id)
    }
    fn place(&self) -> &'static str {
        ""
    }
}

/// Why a citation id (a source id, or an evidence id) cannot back a claim,
/// if it cannot.
pub fn citation_problem(l: &dyn Lookup, id: &str) -> Option<String> {
    let place = l.place();
    if is_source_id(id) {
        return (!l.has_source(id)).then(|| format!("source {id} is not registered{place}"));
    }
    if let Err(e) = check_id("evidence id", id) {
        return Some(e.to_string());
    }
    if !l.has(Dir::Evidence, id) {
        return Some(format!(
            "{id:?} is neither a registered source id (64-hex sha256) nor an existing evidence \
             id{place}"
        ));
    }
    match l.evidence_source(id) {
        Some(src) if !l.has_source(&src) => Some(format!(
            "evidence {id} points at source {src}, which is not registered{place}"
        )),
        _ => None,
    }
}

/// Why a reference to an object of kind `dir` does not resolve, if it does
/// not.
pub fn reference_problem(l: &dyn Lookup, dir: Dir, id: &str) -> Option<String> {
    if let Err(e) = check_id(dir.id_label(), id) {
        return Some(e.to_string());
    }
    (!l.has(dir, id)).then(|| format!("{} {id:?} does not exist{}", dir.id_label(), l.place()))
}

/// Why a relation end does not resolve, if it does not. A relation
/// connects any approved objects — claims, entities, pages, relations,
/// evidence — or sources (protocol §10).
pub fn endpoint_problem(l: &dyn Lookup, id: &str) -> Option<String> {
    if is_source_id(id) {
        return (!l.has_source(id)).then(|| format!("source {id} is not registered{}", l.place()));
    }
    let dirs = [
        Dir::Claims,
        Dir::Entities,
        Dir::Pages,
        Dir::Relations,
        Dir::Evidence,
    ];
    if dirs.iter().any(|d| l.has(*d, id)) {
        return None;
    }
    if let Err(e) = check_id("id", id) {
        return Some(e.to_string());
    }
    Some(format!(
        "{id:?} is no approved claim, entity, page, relation, evidence or registered source{}",
        l.place()
    ))
}
