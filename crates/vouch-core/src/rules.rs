//! What may enter the knowledge base, one rule set: the gate checks a
//! proposal against this KB, a bundle check checks a staged member against
//! the bundle plus this KB, and both ask the same questions of a [`Lookup`].

use crate::ids::{check_id, is_source_id};
use crate::kb::Kb;
use crate::model::{Claim, ClaimStatus, Evidence};
use crate::store::Dir;
use std::collections::{HashMap, HashSet};

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

/// Why `old` cannot be superseded, if it cannot: it is superseded
/// already, or retired (archived or redacted: a superseded claim stays
/// listed, a retired one must stay out of sight). `successor` may already
/// be recorded as its successor: an interrupted approval of that claim
/// marked it before it stopped.
pub fn supersede_problem(old: &Claim, successor: Option<&str>) -> Option<String> {
    match &old.superseded_by {
        Some(other) if Some(other.as_str()) != successor => Some(format!(
            "claim {} is already superseded by {other}; supersede the current claim instead",
            old.id
        )),
        _ if matches!(old.status, ClaimStatus::Redacted | ClaimStatus::Archived) => Some(format!(
            "claim {} is {}; only a current claim can be superseded",
            old.id, old.status
        )),
        _ => None,
    }
}

/// Why `new` cannot take another claim's place, if it cannot: it is
/// superseded itself, or retired.
pub fn replacement_problem(new: &Claim) -> Option<String> {
    match &new.superseded_by {
        Some(by) => Some(format!(
            "claim {} is itself superseded by {by}; supersede with the current claim",
            new.id
        )),
        None if matches!(new.status, ClaimStatus::Redacted | ClaimStatus::Archived) => {
            Some(format!(
                "claim {} is {}; a retired claim cannot replace another",
                new.id, new.status
            ))
        }
        None => None,
    }
}

/// Does `from` reach `to` along `next` ("supersedes" links)? Superseding
/// `old` with `new` adds the link new → old, which closes a loop exactly
/// when `old` already reaches `new`. Each claim is visited once.
pub fn supersedes_reaches(from: &str, to: &str, mut next: impl FnMut(&str) -> Vec<String>) -> bool {
    let mut seen: HashSet<String> = HashSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(at) = stack.pop() {
        if at == to {
            return true;
        }
        if seen.insert(at.clone()) {
            stack.extend(next(&at));
        }
    }
    false
}

/// At most this many loops are reported, each naming at most
/// [`RING_SHOWN`] ids on either side of an ellipsis: a hostile bundle's
/// long or tangled chains cost a bounded report.
const MAX_LOOPS: usize = 100;
const RING_SHOWN: usize = 10;

/// Supersession must not loop (protocol §3). The loops reachable from
/// `roots` along `next` ("supersedes" links), each as the ids around it
/// with the first repeated at the end (a long ring shortened with `…`),
/// at most `MAX_LOOPS`. Depth-first with three colours and each claim's
/// place on the path in a map: linear in claims and links, so a hostile
/// bundle's long chain costs no more than a short one.
pub fn supersession_loops(
    roots: impl IntoIterator<Item = String>,
    mut next: impl FnMut(&str) -> Vec<String>,
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // Where each claim on the current path sits on it; `done`: searched.
    let mut on_path: HashMap<String, usize> = HashMap::new();
    let mut done: HashSet<String> = HashSet::new();
    for root in roots {
        if done.contains(&root) {
            continue;
        }
        let first = next(&root);
        on_path.insert(root.clone(), 0);
        let mut path: Vec<(String, Vec<String>, usize)> = vec![(root, first, 0)];
        while let Some((at, edges, i)) = path.last_mut() {
            let Some(to) = edges.get(*i).cloned() else {
                on_path.remove(at.as_str());
                done.insert(at.clone());
                path.pop();
                continue;
            };
            *i += 1;
            if let Some(&from) = on_path.get(&to) {
                if out.len() < MAX_LOOPS {
                    let len = path.len() - from;
                    let ids = |r: std::ops::Range<usize>| path[r].iter().map(|(n, _, _)| n.clone());
                    let mut ring: Vec<String> = if len <= 2 * RING_SHOWN {
                        ids(from..path.len()).collect()
                    } else {
                        ids(from..from + RING_SHOWN)
                            .chain(std::iter::once("…".to_string()))
                            .chain(ids(path.len() - RING_SHOWN..path.len()))
                            .collect()
                    };
                    ring.push(to);
                    out.push(ring);
                }
            } else if !done.contains(&to) {
                let edges = next(&to);
                on_path.insert(to.clone(), path.len());
                path.push((to, edges, 0));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(links: &[(&str, &str)]) -> impl FnMut(&str) -> Vec<String> {
        let links: Vec<(String, String)> = links
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |id| {
            links
                .iter()
                .filter(|(a, _)| a == id)
                .map(|(_, b)| b.clone())
                .collect()
        }
    }

    #[test]
    fn loops_are_found_and_chains_are_not() {
        let roots = || ["a", "b", "c", "d"].map(String::from);
        let chain = graph(&[("a", "b"), ("b", "c"), ("c", "d")]);
        assert!(supersession_loops(roots(), chain).is_empty());
        let ring = graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "d")]);
        assert_eq!(
            supersession_loops(roots(), ring),
            [vec!["a", "b", "c", "a"], vec!["d", "d"]]
        );
        // A diamond is no loop.
        let diamond = graph(&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]);
        assert!(supersession_loops(roots(), diamond).is_empty());
        // A long chain is walked once, without recursion.
        let n = 200_000;
        let long = |id: &str| {
            let i: usize = id.parse().unwrap();
            if i + 1 < n {
                vec![(i + 1).to_string()]
            } else {
                vec!["0".into()]
            }
        };
        let loops = supersession_loops(["0".to_string()], long);
        assert_eq!(loops.len(), 1);
        // Shortened: ten ids, an ellipsis, ten ids, and the first again.
        assert_eq!(loops[0].len(), 2 * RING_SHOWN + 2);
        assert_eq!(
            (loops[0][0].as_str(), loops[0][RING_SHOWN].as_str()),
            ("0", "…")
        );
        // A chain whose every claim also supersedes the first: n loops,
        // at most MAX_LOOPS reported, each short.
        let n = 50_000;
        let tangled = |id: &str| {
            let i: usize = id.parse().unwrap();
            let mut next = vec!["0".to_string()];
            if i + 1 < n {
                next.push((i + 1).to_string());
            }
            next
        };
        let loops = supersession_loops(["0".to_string()], tangled);
        assert_eq!(loops.len(), MAX_LOOPS);
        assert!(loops.iter().all(|r| r.len() <= 2 * RING_SHOWN + 2));
    }

    #[test]
    fn reachability_follows_every_link_once() {
        // n ↔ x is a loop already; o → x. Superseding o with n adds n → o:
        // o reaches n (through x), so that would close a loop.
        let mut links = graph(&[("n", "x"), ("x", "n"), ("o", "x")]);
        assert!(supersedes_reaches("o", "n", &mut links));
        assert!(!supersedes_reaches("n", "o", &mut links));
        let mut chain = graph(&[("a", "b"), ("b", "c")]);
        assert!(supersedes_reaches("a", "c", &mut chain));
        assert!(!supersedes_reaches("c", "a", &mut chain));
    }
}
