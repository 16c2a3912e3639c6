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

/// The fields a scan for heads needs, read without parsing the rest (and
/// without copying a string that has no escapes).
#[derive(serde::Deserialize)]
struct Link<'a> {
    #[serde(default, borrow)]
    hash: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    prev_hash: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    event: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    data: Option<LinkData<'a>>,
}

#[derive(serde::Deserialize, Default)]
struct LinkData<'a> {
    #[serde(default, borrow)]
    parents: Vec<std::borrow::Cow<'a, str>>,
}

/// An event's hash as [`Unjoined`] keeps it: the 32 bytes that the 64
/// lowercase hex digits of every hash vouch writes stand for. A
/// million-event log's hashes kept as strings, in three sets, were 2 GB
/// besides the log itself. Any other text (a hand-edited or foreign line)
/// is kept as text, apart: never under a key a hex hash could have.
type HashKey = [u8; 32];

/// What a scan for heads knows of one hash.
#[derive(Clone, Copy)]
struct Slot {
    /// Its event's place among the log's events, duplicates left out;
    /// [`NOT_SEEN`]: only named by another event so far.
    at: u64,
    /// Whether some event names it as its parent or joins it.
    named: bool,
}

const NOT_SEEN: u64 = u64::MAX;

/// The heads of a log that the next event must join — every event no
/// event names, but the last — taken in a piece of the log at a time
/// ([`Unjoined::lines`]), never the whole log at once. Lines that do not
/// parse are skipped (verification reports them); an event twice is
/// counted once.
#[derive(Default)]
pub struct Unjoined {
    slots: HashMap<HashKey, Slot>,
    /// Each hash that is not 64 lowercase hex digits, by its text.
    texts: HashMap<String, Slot>,
    events: u64,
}

impl Unjoined {
    /// What the scan knows of `hash` (nothing yet: a new slot).
    fn slot(&mut self, hash: &str) -> &mut Slot {
        let new = Slot {
            at: NOT_SEEN,
            named: false,
        };
        match lower_hex_32(hash) {
            Some(key) => self.slots.entry(key).or_insert(new),
            None => self.texts.entry(hash.to_string()).or_insert(new),
        }
    }

    fn name(&mut self, hash: &str) {
        if !hash.is_empty() {
            self.slot(hash).named = true;
        }
    }

    /// Take in the log's next lines (whole lines, in the log's order).
    pub fn lines(&mut self, bytes: &[u8]) {
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(link) = serde_json::from_slice::<Link>(line) else {
                continue;
            };
            if link.hash.is_empty() {
                continue;
            }
            let at = self.events;
            let slot = self.slot(&link.hash);
            if slot.at != NOT_SEEN {
                continue;
            }
            slot.at = at;
            self.events += 1;
            self.name(&link.prev_hash);
            if link.event == MERGE_EVENT {
                for parent in link.data.unwrap_or_default().parents {
                    self.name(&parent);
                }
            }
        }
    }

    /// The heads, in the log's order.
    pub fn heads(self) -> Vec<String> {
        let Some(last) = self.events.checked_sub(1) else {
            return Vec::new();
        };
        let head = |s: &Slot| s.at != NOT_SEEN && s.at != last && !s.named;
        let mut heads: Vec<(u64, String)> = self
            .slots
            .iter()
            .filter(|(_, s)| head(s))
            .map(|(key, s)| (s.at, crate::ids::hex(key)))
            .chain(
                self.texts
                    .into_iter()
                    .filter(|(_, s)| head(s))
                    .map(|(text, s)| (s.at, text)),
            )
            .collect();
        heads.sort_unstable();
        heads.into_iter().map(|(_, hash)| hash).collect()
    }
}

/// The 32 bytes `text` spells as exactly 64 lowercase hex digits (so the
/// bytes spell it back the same).
fn lower_hex_32(text: &str) -> Option<HashKey> {
    let digits = text.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = value(pair[0])? << 4 | value(pair[1])?;
    }
    Some(key)
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

#[cfg(test)]
mod unjoined_tests {
    use super::*;
    use serde_json::json;

    /// The scan as it was, holding every hash as a string: what the
    /// compact one must answer the same as.
    fn reference(bytes: &[u8]) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut named: HashSet<String> = HashSet::new();
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let hash = text("hash");
            if hash.is_empty() || !seen.insert(hash.clone()) {
                continue;
            }
            named.insert(text("prev_hash"));
            if text("event") == MERGE_EVENT {
                named.extend(joined(&v).into_iter().map(str::to_string));
            }
            order.push(hash);
        }
        if order.pop().is_none() {
            return Vec::new();
        }
        order.retain(|h| !named.contains(h));
        order
    }

    fn line(hash: &str, prev: &str, event: &str, parents: &[&str]) -> String {
        let mut v = json!({"hash": hash, "prev_hash": prev, "event": event, "actor": "a"});
        if !parents.is_empty() {
            v["data"] = json!({"parents": parents});
        }
        format!("{v}\n")
    }

    /// The heads of a whole log, scanned at once.
    fn unjoined(bytes: &[u8]) -> Vec<String> {
        let mut scan = Unjoined::default();
        scan.lines(bytes);
        scan.heads()
    }

    fn hex_hash(n: u64) -> String {
        crate::ids::sha256_hex(&n.to_le_bytes())
    }

    /// Fed a piece at a time, at every line boundary.
    fn in_pieces(bytes: &[u8], every: usize) -> Vec<String> {
        let mut scan = Unjoined::default();
        let mut lines = bytes.split_inclusive(|b| *b == b'\n').peekable();
        while lines.peek().is_some() {
            let piece: Vec<u8> = lines.by_ref().take(every).flatten().copied().collect();
            scan.lines(&piece);
        }
        scan.heads()
    }

    #[test]
    fn a_merged_log_has_the_other_branchs_head_and_a_joined_one_none() {
        let (base, a1, a2, b1) = (hex_hash(0), hex_hash(1), hex_hash(2), hex_hash(3));
        let mut log = String::new();
        log += &line(&base, GENESIS_HASH, "kb.init", &[]);
        log += &line(&a1, &base, "proposal.create", &[]);
        log += &line(&a2, &a1, "proposal.approve", &[]);
        log += &line(&b1, &base, "proposal.create", &[]);
        assert_eq!(unjoined(log.as_bytes()), vec![a2.clone()]);
        // The same lines again (a union merge of both sides): nothing new.
        let twice = format!("{log}{}", line(&a1, &base, "proposal.create", &[]));
        assert_eq!(unjoined(twice.as_bytes()), vec![a2.clone()]);
        log += &line(&hex_hash(4), &b1, MERGE_EVENT, &[&a2]);
        assert_eq!(unjoined(log.as_bytes()), Vec::<String>::new());
    }

    /// A text hash and a hex hash are never one: not even the hex of
    /// the digest an earlier version keyed the text by.
    #[test]
    fn a_text_hash_and_a_hex_hash_are_two_events() {
        use sha2::Digest;
        let planted = crate::ids::hex(
            &sha2::Sha256::new()
                .chain_update(b"vouch audit hash text\0")
                .chain_update(b"foo")
                .finalize(),
        );
        let mut log = String::new();
        log += &line("foo", GENESIS_HASH, "x", &[]);
        log += &line(&planted, GENESIS_HASH, "x", &[]);
        log += &line(&hex_hash(1), "foo", "x", &[]);
        assert_eq!(unjoined(log.as_bytes()), vec![planted.clone()]);
        assert_eq!(unjoined(log.as_bytes()), reference(log.as_bytes()));
    }

    #[test]
    fn hashes_that_are_not_lowercase_hex_come_back_as_written() {
        let upper = hex_hash(7).to_uppercase();
        let mut log = String::new();
        log += &line("genesis-ish", GENESIS_HASH, "kb.init", &[]);
        log += &line(&upper, "genesis-ish", "x", &[]);
        log += &line("a \"quoted\" one", "genesis-ish", "x", &[]);
        log += "not json\n\n{\"hash\": \"\"}\n";
        log += &line(&hex_hash(8), "genesis-ish", "x", &[]);
        assert_eq!(
            unjoined(log.as_bytes()),
            vec![upper, "a \"quoted\" one".to_string()]
        );
    }

    /// Random logs of branches, merges, duplicates, forward references,
    /// odd hashes and broken lines: the compact scan, whole or in
    /// pieces, answers as the one that held every hash as a string.
    #[test]
    fn random_logs_answer_as_the_string_scan_did() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let pool: Vec<String> = (0..40)
            .map(|i| match i % 8 {
                0 => format!("odd-{i}"),
                1 => hex_hash(i).to_uppercase(),
                _ => hex_hash(i),
            })
            .collect();
        for _ in 0..300 {
            let mut log = String::new();
            for _ in 0..next(30) {
                let hash = &pool[next(40) as usize];
                let prev = &pool[next(40) as usize];
                match next(12) {
                    0 => log += "{\"truncated\": \n",
                    1 => log += &line(hash, "", "x", &[]),
                    2 | 3 => {
                        let parents = [
                            pool[next(40) as usize].as_str(),
                            pool[next(40) as usize].as_str(),
                        ];
                        log += &line(hash, prev, MERGE_EVENT, &parents);
                    }
                    4 => log += &line(hash, prev, "x", &[pool[next(40) as usize].as_str()]),
                    _ => log += &line(hash, prev, "proposal.create", &[]),
                }
            }
            let want = reference(log.as_bytes());
            assert_eq!(unjoined(log.as_bytes()), want, "{log}");
            assert_eq!(
                in_pieces(log.as_bytes(), 1 + next(4) as usize),
                want,
                "{log}"
            );
        }
    }
}
