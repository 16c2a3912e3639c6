//! An agent cannot approve by naming someone else as `approver`, on any
//! agent transport.

use super::mcp::Mcp;
use super::{WireErr, envelope_result, jsonl_server};
use crate::common::server::{http_server, init_kb};
use serde_json::{Value, json};
use std::path::Path;

/// Issue 9, item 1: an agent that proposed a claim names a person as
/// `approver`. On every agent transport — JSONL and MCP on stdio, HTTP
/// without tokens — the call is refused, nothing becomes durable and the
/// log records no approval.
#[test]
fn an_agent_cannot_approve_by_naming_someone_else_on_any_transport() {
    let propose = json!({"text": "The deploy key rotates monthly.", "evidence": [{"source_id": "SRC", "quote": "rotates monthly"}]});
    let source = json!({"content": "The deploy key rotates monthly.\n", "locator": "notes"});
    let check = |kb: &Path, answer: Result<Value, WireErr>| {
        let (code, message) = answer.expect_err("impersonation must be refused");
        assert_eq!(code, "invalid_request", "{message}");
        assert!(message.contains("cannot name someone else"), "{message}");
        assert!(
            std::fs::read_dir(kb.join(".vouch/claims"))
                .unwrap()
                .next()
                .is_none(),
            "a claim became durable"
        );
        let log = std::fs::read_to_string(kb.join(".vouch/audit.log.jsonl")).unwrap();
        assert!(!log.contains("proposal.approve"), "{log}");
    };
    let with_source = |src: &Value| {
        let mut p = propose.clone();
        p["evidence"][0]["source_id"] = src["id"].clone();
        p
    };
    let approve =
        |proposed: &Value| json!({"proposal_id": proposed["proposal_id"], "approver": "alice"});

    // JSONL on stdio.
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    let mut call = |method: &str, params: Value| {
        s.send_raw(&json!({"id": 1, "method": method, "params": params}).to_string());
        envelope_result(s.read())
    };
    let src = call("kb.register_source", source.clone()).unwrap();
    let proposed = call("kb.propose_claim", with_source(&src)).unwrap();
    check(kb.path(), call("kb.approve", approve(&proposed)));
    s.finish();

    // MCP on stdio.
    let kb = init_kb();
    let mut m = Mcp::start(kb.path());
    let src = m.call("kb.register_source", source.clone()).unwrap();
    let proposed = m.call("kb.propose_claim", with_source(&src)).unwrap();
    check(kb.path(), m.call("kb.approve", approve(&proposed)));
    m.server.finish();

    // HTTP without tokens (loopback only, acting as the configured agent).
    let kb = init_kb();
    let server = http_server(kb.path(), &[], &["--agent", "claude"]);
    let call = |method: &str, params: Value| {
        let req = json!({"id": 1, "method": method, "params": params});
        envelope_result(server.rpc(None, req.to_string().as_bytes()).json())
    };
    let src = call("kb.register_source", source.clone()).unwrap();
    let proposed = call("kb.propose_claim", with_source(&src)).unwrap();
    check(kb.path(), call("kb.approve", approve(&proposed)));
    // Naming itself is allowed, and then the gate decides: claude is no
    // reviewer in the person's config (and proposed it): refused.
    let (_, message) = call(
        "kb.approve",
        json!({"proposal_id": proposed["proposal_id"], "approver": "claude"}),
    )
    .unwrap_err();
    assert!(message.starts_with("review_gate:"), "{message}");
    server.terminate();
}
