//! `kb.neighbors`: the entities, claims, pages and relations around a
//! node, a few hops out. The edges are the relations (either way), a
//! claim or page naming an entity (`about`) and a page drawing on a claim
//! (`draws_on`).

use super::resolve;
use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::{Claim, Entity, Page, Relation};
use crate::params::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The deepest a walk goes: three hops already reach most of a small
/// knowledge base.
const MAX_DEPTH: i64 = 3;
/// Nodes returned when the caller gives no `limit`.
const DEFAULT_NODES: i64 = 100;
/// The most nodes one call returns.
const MAX_NODES: i64 = 1000;
/// A label is cut to this many characters.
const LABEL_CHARS: usize = 120;

/// What the walk knows of one stored node.
struct Node {
    kind: &'static str,
    label: Option<String>,
}

/// `kb.neighbors`: breadth first from `p.id` to `depth` hops, at most
/// `limit` nodes besides the start.
pub fn neighbors(kb: &Kb, p: NeighborsParams) -> Result<NeighborsResult> {
    let depth = p.depth.unwrap_or(1);
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(Error::invalid(format!(
            "depth: {depth} is not between 1 and {MAX_DEPTH}"
        )));
    }
    let limit = p.limit.unwrap_or(DEFAULT_NODES);
    if !(1..=MAX_NODES).contains(&limit) {
        return Err(Error::invalid(format!(
            "limit: {limit} is not between 1 and {MAX_NODES}"
        )));
    }
    let start_kind = resolve(kb, &p.id, None)?;
    let mut nodes: HashMap<String, Node> = HashMap::new();
    let mut edges: Vec<NeighborEdge> = Vec::new();
    let cut = |s: &str| Some(s.chars().take(LABEL_CHARS).collect::<String>());
    for e in kb.load_all::<Entity>()? {
        let label = cut(&e.name);
        nodes.insert(
            e.id,
            Node {
                kind: "entity",
                label,
            },
        );
    }
    for c in kb.load_all::<Claim>()? {
        for e in &c.entities {
            edges.push(edge(&c.id, "about", e, None));
        }
        let label = cut(&c.text);
        nodes.insert(
            c.id,
            Node {
                kind: "claim",
                label,
            },
        );
    }
    for pg in kb.load_all::<Page>()? {
        for e in &pg.entities {
            edges.push(edge(&pg.id, "about", e, None));
        }
        for c in &pg.claims {
            edges.push(edge(&pg.id, "draws_on", c, None));
        }
        let label = cut(&pg.title);
        nodes.insert(
            pg.id,
            Node {
                kind: "page",
                label,
            },
        );
    }
    for r in kb.load_all::<Relation>()? {
        edges.push(edge(&r.source, r.relation.as_str(), &r.target, Some(&r.id)));
        let label = Some(format!("{} {} {}", r.source, r.relation.as_str(), r.target));
        nodes.insert(
            r.id,
            Node {
                kind: "relation",
                label,
            },
        );
    }
    // Each node's edges, either way.
    let mut touching: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in edges.iter().enumerate() {
        touching.entry(&e.source).or_default().push(i);
        if e.target != e.source {
            touching.entry(&e.target).or_default().push(i);
        }
        // From a relation itself, its two ends.
        if let Some(r) = &e.relation_id {
            touching.entry(r).or_default().push(i);
        }
    }
    let describe = |id: &str, depth: u8| -> Neighbor {
        let (kind, label) = match nodes.get(id) {
            Some(n) => (n.kind.to_string(), n.label.clone()),
            None => (
                super::ObjectKind::ALL
                    .into_iter()
                    .filter(|k| !k.gated())
                    .find(|k| super::holds(kb, *k, id))
                    .map_or("unknown", |k| k.as_str())
                    .to_string(),
                None,
            ),
        };
        Neighbor {
            id: id.to_string(),
            kind,
            label,
            depth,
        }
    };
    // Breadth first; each ring in id order, so a cut is the same each time.
    let mut reached: BTreeMap<String, u8> = BTreeMap::new();
    let mut seen: HashSet<&str> = HashSet::from([p.id.as_str()]);
    let mut ring: Vec<&str> = vec![p.id.as_str()];
    let mut truncated = false;
    'walk: for hop in 1..=depth as u8 {
        let mut next: Vec<&str> = ring
            .iter()
            .flat_map(|n| touching.get(n).into_iter().flatten())
            .flat_map(|&i| [edges[i].source.as_str(), edges[i].target.as_str()])
            .filter(|n| !seen.contains(n))
            .collect();
        next.sort_unstable();
        next.dedup();
        for n in &next {
            if reached.len() as i64 >= limit {
                truncated = true;
                break 'walk;
            }
            seen.insert(n);
            reached.insert(n.to_string(), hop);
        }
        ring = next;
    }
    let mut found: Vec<Neighbor> = reached.iter().map(|(id, d)| describe(id, *d)).collect();
    found.sort_by(|a, b| a.depth.cmp(&b.depth).then(a.id.cmp(&b.id)));
    let inside = |id: &str| id == p.id || reached.contains_key(id);
    let mut kept: Vec<NeighborEdge> = edges
        .iter()
        .filter(|e| inside(&e.source) && inside(&e.target))
        .cloned()
        .collect();
    kept.sort_by(|a, b| {
        (&a.source, &a.relation, &a.target).cmp(&(&b.source, &b.relation, &b.target))
    });
    kept.dedup();
    let mut start = describe(&p.id, 0);
    start.kind = start_kind.as_str().into();
    Ok(NeighborsResult {
        start,
        depth: depth as u8,
        nodes: found,
        edges: kept,
        truncated,
    })
}

fn edge(source: &str, relation: &str, target: &str, id: Option<&str>) -> NeighborEdge {
    NeighborEdge {
        source: source.into(),
        relation: relation.into(),
        target: target.into(),
        relation_id: id.map(str::to_string),
    }
}
