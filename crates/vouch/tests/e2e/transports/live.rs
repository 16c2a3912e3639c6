//! A running server keeps up with the files: hand edits are seen, and
//! searches racing a rebuild read the new index.

use super::{envelope_result, eventually, jsonl_server};
use crate::common::output_ok;
use crate::common::server::{http_server, init_kb, vouch};
use crate::common::stdio::StdioServer;
use serde_json::{Value, json};
use std::path::Path;

/// Approve a proposal from the CLI, as a person beside the running server.
fn approve_as_alice(kb: &Path, proposed: &Value) {
    output_ok(
        vouch(kb)
            .env("VOUCH_AGENT", "alice")
            .args(["approve", proposed["proposal_id"].as_str().unwrap()]),
    );
}

/// The ids of a kb.search result, sorted.
fn hit_ids(v: Value) -> Vec<String> {
    let mut ids: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// A running server sees files edited by hand (an editor, a git pull) without
/// a restart or a rebuild: a background scan refreshes its index.
#[test]
fn a_running_server_sees_hand_edits() {
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    let mut n = 0;
    let mut call = |s: &mut StdioServer, method: &str, params: Value| -> Value {
        n += 1;
        s.send_raw(&json!({"id": n, "method": method, "params": params}).to_string());
        envelope_result(s.read()).expect("call succeeds")
    };
    let src = call(
        &mut s,
        "kb.register_source",
        json!({"content": "the ops handbook", "locator": "handbook"}),
    )["id"]
        .clone();
    let proposed = call(
        &mut s,
        "kb.propose_claim",
        json!({"text": "Backups run at midnight", "evidence": [src]}),
    );
    approve_as_alice(kb.path(), &proposed);
    let claim = proposed["claim_id"].as_str().unwrap().to_string();
    // Another process approved it: the server finds it within a few scans.
    eventually("the approval", || {
        hit_ids(call(&mut s, "kb.search", json!({"query": "midnight"}))) == [claim.clone()]
    });
    let file = kb.path().join(format!(".vouch/claims/{claim}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("run at midnight", "run at noon");
    std::fs::write(&file, text).unwrap();
    eventually("the hand edit", || {
        hit_ids(call(&mut s, "kb.search", json!({"query": "noon"}))) == [claim.clone()]
            && hit_ids(call(&mut s, "kb.search", json!({"query": "midnight"}))).is_empty()
    });
    s.finish();
}

/// Concurrent HTTP searches run on read connections beside the main one; a
/// rebuild in the middle (which replaces state.db) must not leave any of
/// them reading the old file: every answer is the full, right one.
#[test]
fn concurrent_http_searches_survive_a_rebuild() {
    let kb = init_kb();
    let server = http_server(kb.path(), &[], &[]);
    let call = |method: &str, params: Value| -> Value {
        let body = json!({"id": 1, "method": method, "params": params}).to_string();
        let v = server.rpc(None, body.as_bytes()).json();
        assert_eq!(v["ok"], true, "{v}");
        v["result"].clone()
    };
    let src = call(
        "kb.register_source",
        json!({"content": "the runbook", "locator": "runbook"}),
    )["id"]
        .clone();
    let mut expected = Vec::new();
    for i in 0..5 {
        let p = call(
            "kb.propose_claim",
            json!({"text": format!("Failover drill number {i} passed"), "evidence": [src]}),
        );
        approve_as_alice(kb.path(), &p);
        expected.push(p["claim_id"].as_str().unwrap().to_string());
    }
    expected.sort();
    let drills = || {
        hit_ids(call(
            "kb.search",
            json!({"query": "failover drill", "kinds": ["claim"]}),
        ))
    };
    // Six clients searching at once, each `rounds` times, beside `also`.
    let hammer = |rounds: usize, expected: &[String], also: &(dyn Fn() + Sync)| {
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..rounds {
                        assert_eq!(drills(), expected, "a reader served a wrong index");
                    }
                });
            }
            s.spawn(also);
        });
    };
    // Wait until the server has seen the CLI's approvals.
    eventually("the approvals", || drills() == expected);
    hammer(30, &expected, &|| {
        for _ in 0..3 {
            call("kb.index_rebuild", json!({}));
        }
    });
    // A claim approved after the rebuild lands in the new file; a read
    // connection still open on the old one would never see it.
    let p = call(
        "kb.propose_claim",
        json!({"text": "Failover drill number 5 passed", "evidence": [src]}),
    );
    approve_as_alice(kb.path(), &p);
    expected.push(p["claim_id"].as_str().unwrap().to_string());
    expected.sort();
    eventually("the new approval", || drills() == expected);
    hammer(20, &expected, &|| {});
}
