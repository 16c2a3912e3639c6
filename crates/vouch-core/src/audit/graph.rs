//! The log as git leaves it after a merge: a graph of events, not a line.
//!
//! Two branches each append to `audit.log.jsonl` from the same last event.
//! git's `union` merge (`.vouch/.gitattributes`, written by `vouch init`)
//! keeps both sides' lines: the base, then one branch's events, then the
//! other's. Every event still names its parent by hash (`prev_hash`), so
//! the log is a tree whose branches end in *heads*. The next write joins
//! them: before its own event it appends an `audit.merge` event whose
//! `prev_hash` is the last line and whose `data.parents` names every other
//! head. Verification then checks the graph: every hash is its content's,
//! and every parent (and every joined head) is an earlier event — so an
//! edited, deleted or reordered event is caught as in a straight chain,
//! and an event deleted from a joined branch is caught by the join that
//! names it. What the graph alone cannot tell from a merged branch is a
//! branch added by hand: a new event whose parent is an old one. That is
//! what `vouch audit verify --base REV` (against git's own history) and
//! keyed checkpoints are for.

use super::{GENESIS_HASH, Value};
use std::collections::{HashMap, HashSet};

/// The event that joins the heads a git merge left.
pub const MERGE_EVENT: &str = "audit.merge";

/// The heads `event` joins besides its parent (`data.parents` of a merge
/// event; none for any other).
pub fn joined(event: &Value) -> Vec<&str> {
    if event.get("event").and_then(Value::as_str) != Some(MERGE_EVENT) {
        return Vec::new();
    }
    event
        .get("data")
        .and_then(|d| d.get("parents"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The log's events as a graph, built from parsed events in file order.
#[derive(Default)]
pub struct Graph {
    /// Each event's hash, by position (duplicates left out).
    pub hashes: Vec<String>,
    /// Position of each hash.
    pub index: HashMap<String, usize>,
    /// Each event's parents (its `prev_hash`, and the heads it joins), by
    /// position; a parent not in the log is left out (verify reports it).
    pub parents: Vec<Vec<usize>>,
    /// Positions some later event names as a parent.
    pub referenced: HashSet<usize>,
}

impl Graph {
    /// Add the next event; `Err` says why it does not fit (a duplicate is
    /// `Ok(false)`: the same event twice is a merge artefact, not harm).
    pub fn push(&mut self, event: &Value) -> Result<bool, String> {
        let hash = event.get("hash").and_then(Value::as_str).unwrap_or("");
        if self.index.contains_key(hash) {
            return Ok(false);
        }
        let prev = event.get("prev_hash").and_then(Value::as_str).unwrap_or("");
        let mut parents = Vec::new();
        // Branches made from an empty log each start from the genesis
        // hash, so more than one event may.
        if prev != GENESIS_HASH {
            match self.index.get(prev) {
                Some(&p) => parents.push(p),
                None => {
                    return Err(
                        "prev_hash names no earlier event (a line was deleted, reordered \
                                or inserted)"
                            .into(),
                    );
                }
            }
        }
        for head in joined(event) {
            match self.index.get(head) {
                Some(&p) => parents.push(p),
                None => {
                    return Err(format!(
                        "this merge event joins {head}, which is not an earlier event: an event \
                         was deleted"
                    ));
                }
            }
        }
        self.referenced.extend(parents.iter().copied());
        self.index.insert(hash.to_string(), self.hashes.len());
        self.hashes.push(hash.to_string());
        self.parents.push(parents);
        Ok(true)
    }

    /// Events no later event names: the last one, and any branch not
    /// joined yet. In file order.
    pub fn heads(&self) -> Vec<usize> {
        (0..self.hashes.len())
            .filter(|i| !self.referenced.contains(i))
            .collect()
    }

    /// How many events the history ending in `head` holds (itself and
    /// every ancestor): what a checkpoint of that head counted, wherever a
    /// merge has since put its lines.
    pub fn history_len(&self, head: &str) -> Option<u64> {
        if head == GENESIS_HASH {
            return Some(0);
        }
        let start = *self.index.get(head)?;
        let mut seen = HashSet::from([start]);
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            for &p in &self.parents[i] {
                if seen.insert(p) {
                    stack.push(p);
                }
            }
        }
        Some(seen.len() as u64)
    }
}

/// The fields a scan for heads needs, read without parsing the rest.
#[derive(serde::Deserialize)]
struct Link {
    #[serde(default)]
    hash: String,
    #[serde(default)]
    prev_hash: String,
    #[serde(default)]
    event: String,
    #[serde(default)]
    data: Option<LinkData>,
}

#[derive(serde::Deserialize, Default)]
struct LinkData {
    #[serde(default)]
    parents: Vec<String>,
}

/// The heads of a log (its bytes) that the next event must join: every
/// event no later one names, but the last. Lines that do not parse are
/// skipped (verification reports them).
pub fn unjoined(bytes: &[u8]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut named: HashSet<String> = HashSet::new();
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(link) = serde_json::from_slice::<Link>(line) else {
            continue;
        };
        if link.hash.is_empty() || !seen.insert(link.hash.clone()) {
            continue;
        }
        named.insert(link.prev_hash);
        if link.event == MERGE_EVENT {
            named.extend(link.data.unwrap_or_default().parents);
        }
        order.push(link.hash);
    }
    let last = order.pop();
    order.retain(|h| !named.contains(h));
    if last.is_none() {
        return Vec::new();
    }
    order
}

/// A log that a person merged by hand, put back in order: conflict marker
/// lines dropped (both sides kept), an event present twice kept once, and
/// every event after its parents (stable otherwise). Nothing else is
/// removed: a line that is not an event stays, for verification to name.
pub fn repair(bytes: &[u8]) -> (Vec<u8>, Repair) {
    let mut report = Repair::default();
    let mut lines: Vec<(&[u8], Option<Value>)> = Vec::new();
    let mut seen = HashSet::new();
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = serde_json::from_slice::<Value>(line).ok();
        if parsed.is_none() && is_conflict_marker(line) {
            report.markers += 1;
            continue;
        }
        // Only a line repeated byte for byte is the same event twice: a
        // different line claiming a known hash (forged) is kept, for
        // verification to name.
        if parsed.is_some() && !seen.insert(line.to_vec()) {
            report.duplicates += 1;
            continue;
        }
        lines.push((line, parsed));
    }
    // Kahn's order, stable: each pass emits every line whose parents are
    // out; a parent that is nowhere in the log does not hold a line back.
    let hash_of = |v: &Option<Value>| {
        v.as_ref()
            .and_then(|v| v.get("hash"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let present: HashSet<String> = lines.iter().filter_map(|(_, v)| hash_of(v)).collect();
    let mut out_hashes: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(bytes.len());
    let mut pending: Vec<usize> = (0..lines.len()).collect();
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|&i| {
            let (line, v) = &lines[i];
            let ready = v.as_ref().is_none_or(|v| {
                let prev = v.get("prev_hash").and_then(Value::as_str).unwrap_or("");
                std::iter::once(prev)
                    .chain(joined(v))
                    .all(|p| !present.contains(p) || out_hashes.contains(p))
            });
            if ready {
                out.extend_from_slice(line);
                out.push(b'\n');
                if let Some(h) = hash_of(v) {
                    out_hashes.insert(h);
                }
            }
            !ready
        });
        if pending.len() == before {
            // A cycle cannot come from hashes; emit the rest as they are.
            for &i in &pending {
                out.extend_from_slice(lines[i].0);
                out.push(b'\n');
            }
            break;
        }
    }
    report.reordered = out != bytes;
    (out, report)
}

/// What [`repair`] changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Repair {
    /// Conflict marker lines dropped.
    pub markers: usize,
    /// Events present twice, kept once.
    pub duplicates: usize,
    /// Whether the bytes changed at all.
    pub reordered: bool,
}

fn is_conflict_marker(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    [&b"<<<<<<<"[..], b"=======", b">>>>>>>", b"|||||||"]
        .iter()
        .any(|m| line.starts_with(m) && (line.len() == 7 || line[7] == b' '))
}
