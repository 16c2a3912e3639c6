//! One scenario over every transport — register a source, propose a claim as
//! "agent", fail to self-approve, approve as "alice", find it by search, see
//! it in the audit log — against the real binary, demanding the same
//! results. Plus the error paths of each transport.
//!
//! - `scenario`: the same scenario on JSONL, HTTP and MCP, same results;
//! - `bad_requests`: malformed JSONL and HTTP requests, HTTP auth and binds;
//! - `mcp`: the MCP client, its tools and errors on stdio, MCP over HTTP;
//! - `live`: a running server sees hand edits and survives a rebuild;
//! - `impersonation`: no agent approves by naming someone else.

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

use crate::common::server::vouch;
use crate::common::stdio::StdioServer;

mod bad_requests;
mod impersonation;
mod live;
pub(crate) mod mcp;
mod scenario;

/// A wire error: (code, message).
pub(crate) type WireErr = (String, String);

/// `vouch serve --transport jsonl` on `kb`, as "agent".
fn jsonl_server(kb: &Path) -> StdioServer {
    let mut cmd = vouch(kb);
    cmd.env("VOUCH_AGENT", "agent")
        .args(["serve", "--transport", "jsonl"]);
    StdioServer::spawn(cmd)
}

/// A JSONL or HTTP envelope: its result, or its error as a WireErr.
pub(crate) fn envelope_result(v: Value) -> Result<Value, WireErr> {
    if v["ok"] == json!(true) {
        Ok(v["result"].clone())
    } else {
        Err((
            v["error"]["code"].as_str().unwrap_or_default().to_string(),
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ))
    }
}

/// Poll `ok` every 100 ms; fail naming `what` after 10 s.
pub(crate) fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "{what} never seen");
        std::thread::sleep(Duration::from_millis(100));
    }
}
