//! What must go, through review (issue 42): a reviewed delete
//! (`kb.propose_delete`, `vouch propose-delete`) on every transport, its
//! refusal while other objects refer to the target, and the integrity
//! checks (doctor, the pull-request check) that accept an approved delete
//! and refuse a delete by hand.
//!
//! - `delete`: the delete on JSONL, MCP and HTTP, the reference refusal,
//!   doctor and the pull-request check.

use crate::common::Project;
use serde_json::{Value, json};

mod delete;

/// A wire error: (code, message).
type WireErr = (String, String);

/// A JSONL or HTTP envelope: its result, or its error as a [`WireErr`].
fn envelope(v: Value) -> Result<Value, WireErr> {
    if v["ok"] == json!(true) {
        return Ok(v["result"].clone());
    }
    Err((
        v["error"]["code"].as_str().unwrap_or_default().to_string(),
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

/// The audit log's events, parsed, oldest first.
fn events(p: &Project) -> Vec<Value> {
    std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Poll `ok` every 100 ms; fail naming `what` after 10 s.
fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "{what} never seen");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
