//! The attacks of the trust review (issue 9), each performed through the real
//! binary as a hostile agent or a hostile repository would, each refused.

use crate::common::*;
use serde_json::{Value, json};

mod files;
mod gate;
mod tamper;

/// The audit log's events, parsed.
pub(crate) fn events(p: &Project) -> Vec<Value> {
    std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Append an event with the chain recomputed, as a forger with write access
/// to the file would.
fn forge_event(p: &Project, mut ev: Value) {
    let prev = events(p)
        .last()
        .map(|e| e["hash"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "0".repeat(64));
    ev["prev_hash"] = json!(prev);
    let hash = vouch_core::ids::sha256_hex(
        format!("{prev}{}", vouch_core::audit::canonical_json(&ev)).as_bytes(),
    );
    ev["hash"] = json!(hash);
    let mut log = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).unwrap();
    log.push_str(&vouch_core::audit::canonical_json(&ev));
    log.push('\n');
    std::fs::write(p.vouch_dir().join("audit.log.jsonl"), log).unwrap();
}

fn proposal_path(p: &Project, id: &str) -> std::path::PathBuf {
    p.vouch_dir().join(format!("proposed/{id}.yaml"))
}
