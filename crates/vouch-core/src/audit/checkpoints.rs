//! Keyed checkpoints: a hash chain proves order, not authorship; a
//! checkpoint binds the chain's head to a key kept outside `.vouch/`
//! (HMAC-SHA256), so a rewrite or a cut below one is caught by anyone
//! holding the key. Verifying them needs only the log; appending one takes
//! the knowledge base's lock (`health::checkpoint`).

use super::{AuditLog, GENESIS_HASH, graph};
use crate::error::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A hash chain proves order, not authorship: whoever can write the log
/// can cut it or recompute it. A checkpoint binds the chain's head at a
/// moment to a key kept outside `.vouch/` (HMAC-SHA256), so a rewrite or a
/// cut below a checkpoint is caught by anyone holding the key.
pub const CHECKPOINT_EVENT: &str = "audit.checkpoint";

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.map(|x| x ^ b);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// A checkpoint: the history ending in `head` holds `events` events (in a
/// straight log, the first `events` lines), vouched for by `mac` under the
/// key `key_id` names. After a git merge the same history still ends in
/// `head`, whatever lines the other branch's events took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Checkpoint {
    /// Events in the history ending in `head`.
    pub events: u64,
    /// The hash of the last event the checkpoint vouches for.
    pub head: String,
    /// HMAC-SHA256 of `events` and `head` under the key, in hex.
    pub mac: String,
    /// The key's name ([`key_id`]).
    pub key_id: String,
}

impl Checkpoint {
    /// The checkpoint of the `events` events ending in `head`, under `key`.
    pub fn new(key: &[u8], events: u64, head: &str) -> Checkpoint {
        let msg = format!("vouch-audit-checkpoint\n{events}\n{head}");
        Checkpoint {
            events,
            head: head.to_string(),
            mac: crate::ids::hex(&hmac_sha256(key, msg.as_bytes())),
            key_id: key_id(key),
        }
    }
}

/// Names a key without revealing it.
pub fn key_id(key: &[u8]) -> String {
    crate::ids::sha256_hex(key)[..16].to_string()
}

/// What checking the log against a key found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckpointReport {
    /// Whether no problem was found.
    pub ok: bool,
    /// The key checked against ([`key_id`]).
    pub key_id: String,
    /// Checkpoint events under this key that verified.
    pub verified: usize,
    /// Each checkpoint that did not verify, and why.
    pub problems: Vec<String>,
}

/// The head of `events` (the last line's hash, or genesis) and how many
/// events its history holds, wherever merges put their lines: what a
/// checkpoint records ([`crate::health::checkpoint`] appends one).
pub fn head_and_history(events: &[Value]) -> (String, u64) {
    let head = events
        .last()
        .and_then(|e| e.get("hash"))
        .and_then(Value::as_str)
        .unwrap_or(GENESIS_HASH)
        .to_string();
    let counted = graph_of(events).history_len(&head).unwrap_or(0);
    (head, counted)
}

/// The graph of parsed events (lines that do not fit are left out).
fn graph_of(events: &[Value]) -> graph::Graph {
    let mut g = graph::Graph::default();
    for ev in events {
        let _ = g.push(ev);
    }
    g
}

/// Check every checkpoint under `key` in the log, and `kept` (the last
/// checkpoint, kept outside `.vouch/`) against the log: a checkpoint whose
/// MAC fails, or whose head is no longer the hash of its event, means the
/// log was rewritten; a kept checkpoint the log no longer reaches means it
/// was cut.
pub fn verify_checkpoints(
    log: &AuditLog,
    key: &[u8],
    kept: Option<&Checkpoint>,
) -> Result<CheckpointReport> {
    let events = log.read_all()?;
    let id = key_id(key);
    let g = graph_of(&events);
    let mut report = CheckpointReport {
        ok: true,
        key_id: id.clone(),
        verified: 0,
        problems: Vec::new(),
    };
    let check = |cp: &Checkpoint, what: &str, report: &mut CheckpointReport| {
        if Checkpoint::new(key, cp.events, &cp.head).mac != cp.mac {
            report.problems.push(format!(
                "{what}: its MAC does not verify under key {id}: it was forged or edited"
            ));
        } else if g.history_len(&cp.head) != Some(cp.events) {
            report.problems.push(format!(
                "{what}: the log no longer has the {} events ending in {}: it was cut or \
                 rewritten below this checkpoint",
                cp.events, cp.head
            ));
        } else {
            report.verified += 1;
        }
    };
    for (i, ev) in events.iter().enumerate() {
        if ev.get("event").and_then(Value::as_str) != Some(CHECKPOINT_EVENT) {
            continue;
        }
        let Some(cp) = ev
            .get("data")
            .and_then(|d| serde_json::from_value::<Checkpoint>(d.clone()).ok())
        else {
            continue;
        };
        if cp.key_id == id {
            check(&cp, &format!("checkpoint at line {}", i + 1), &mut report);
        }
    }
    if let Some(cp) = kept {
        let before = report.verified;
        check(cp, "the last checkpoint kept outside .vouch/", &mut report);
        report.verified = before;
    }
    report.ok = report.problems.is_empty();
    Ok(report)
}

#[cfg(test)]
mod checkpoint_tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            crate::ids::hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            crate::ids::hex(&mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
