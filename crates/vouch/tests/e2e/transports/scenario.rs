//! The same scenario on every transport, with the same results.

use super::mcp::Mcp;
use super::{WireErr, envelope_result, eventually, jsonl_server};
use crate::common::server::{http_server, init_kb, vouch};
use serde_json::{Value, json};
use std::path::Path;

#[derive(Clone, Copy, Debug)]
enum Who {
    Agent,
    Alice,
}

/// What the scenario produced, compared across transports.
#[derive(Debug, PartialEq)]
struct Outcome {
    source_id: String,
    claim_id: String,
    proposal_id: String,
    self_approve_error: String,
    approved_object: String,
    hit_ids: Vec<String>,
    events: Vec<(String, String)>,
}

fn scenario(call: &mut dyn FnMut(Who, &str, Value) -> Result<Value, WireErr>) -> Outcome {
    let src = call(
        Who::Agent,
        "kb.register_source",
        json!({"content": "Deploys run scripts/deploy.sh and need the staging credentials loaded first.\n",
               "locator": "notes/deploy.md", "title": "deploy notes"}),
    )
    .expect("register_source");
    let source_id = src["id"].as_str().expect("source id").to_string();
    assert_eq!(src["deduplicated"], json!(false));

    let p = call(
        Who::Agent,
        "kb.propose_claim",
        json!({"text": "Deploys need the staging credentials loaded first.",
               "evidence": [source_id], "type": "workflow"}),
    )
    .expect("propose_claim");
    assert_eq!(p["valid"], json!(true), "{p}");
    let claim_id = p["claim_id"].as_str().expect("claim id").to_string();
    let proposal_id = p["proposal_id"].as_str().expect("proposal id").to_string();

    // Not knowledge yet.
    let hits = call(
        Who::Agent,
        "kb.search",
        json!({"query": "staging credentials"}),
    )
    .expect("search");
    assert!(
        !hits.to_string().contains(&claim_id),
        "pending claim found by search: {hits}"
    );

    let (code, message) = call(
        Who::Agent,
        "kb.approve",
        json!({"proposal_id": proposal_id}),
    )
    .expect_err("an agent's approval of its own proposal must be refused");
    assert_eq!(code, "invalid_request", "{message}");
    // No person named it a reviewer (and it proposed this one).
    assert!(message.starts_with("review_gate:"), "{message}");

    let a = call(
        Who::Alice,
        "kb.approve",
        json!({"proposal_id": proposal_id}),
    )
    .expect("approve as alice");
    assert_eq!(a["ok"], json!(true), "{a}");
    let approved_object = a["object_id"].as_str().expect("object_id").to_string();
    assert_eq!(approved_object, claim_id);

    // Alice approved at the command line, outside the server: it sees the
    // new claim once it notices the files changed.
    let mut hit_ids: Vec<String> = Vec::new();
    eventually("the approved claim in search", || {
        let hits = call(
            Who::Agent,
            "kb.search",
            json!({"query": "staging credentials"}),
        )
        .expect("search");
        hit_ids = hits
            .as_array()
            .expect("search answers an array")
            .iter()
            .map(|h| h["id"].as_str().expect("hit id").to_string())
            .collect();
        hit_ids.contains(&claim_id)
    });

    let audit = call(Who::Agent, "kb.audit", json!({})).expect("audit");
    let events: Vec<(String, String)> = audit
        .as_array()
        .expect("audit answers an array")
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap_or_default().to_string(),
                e["actor"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for name in ["source.register", "proposal.create", "proposal.approve"] {
        assert!(
            events.iter().any(|(e, _)| e == name),
            "{name} in {events:?}"
        );
    }
    assert!(events.contains(&("proposal.approve".into(), "alice".into())));
    Outcome {
        source_id,
        claim_id,
        proposal_id,
        self_approve_error: code,
        approved_object,
        hit_ids,
        events,
    }
}

/// Over stdio the actor is fixed per process, and an `approver` param naming
/// anyone else is refused (`impersonation.rs`): alice, a person, approves at
/// the command line beside the running server.
fn as_person(kb: &Path, method: &str, params: Value) -> Result<Value, WireErr> {
    let out = vouch(kb)
        .env("VOUCH_AGENT", "alice")
        .args(["--json", "call", method, &params.to_string()])
        .output()
        .expect("run vouch call");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("vouch call prints JSON"))
    } else {
        Err((
            format!("exit {}", out.status.code().unwrap_or(-1)),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }
}

// ----- JSONL ---------------------------------------------------------------

fn run_jsonl() -> Outcome {
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    let mut n = 0;
    let out = scenario(&mut |who, method, params| {
        if let Who::Alice = who {
            return as_person(kb.path(), method, params);
        }
        n += 1;
        let req = json!({"id": format!("r{n}"), "method": method, "params": params});
        s.send_raw(&req.to_string());
        let v = s.read();
        assert_eq!(v["id"], json!(format!("r{n}")));
        envelope_result(v)
    });
    s.finish();
    out
}

// ----- HTTP ----------------------------------------------------------------

fn run_http() -> Outcome {
    let kb = init_kb();
    // alice approves over HTTP with her token: a reviewer in the person's
    // own config (the server's XDG_CONFIG_HOME, outside the project).
    let person = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(person.path().join("vouch")).unwrap();
    std::fs::write(
        person.path().join("vouch/config.yaml"),
        "review:\n  reviewers: [alice]\n",
    )
    .unwrap();
    let server = http_server(
        kb.path(),
        &[("XDG_CONFIG_HOME", person.path().to_str().unwrap())],
        &["--token", "agent=tok1", "--token", "alice=tok2"],
    );
    let mut n = 0;
    let out = scenario(&mut |who, method, params| {
        n += 1;
        let token = match who {
            Who::Agent => "tok1",
            Who::Alice => "tok2",
        };
        let req = json!({"id": n, "method": method, "params": params});
        let r = server.rpc(Some(token), req.to_string().as_bytes());
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(v["id"], json!(n));
        envelope_result(v)
    });
    server.terminate();
    out
}

// ----- MCP (stdio) ---------------------------------------------------------

fn run_mcp() -> Outcome {
    let kb = init_kb();
    let mut m = Mcp::start(kb.path());
    let out = scenario(&mut |who, method, params| match who {
        Who::Alice => as_person(kb.path(), method, params),
        Who::Agent => m.call(method, params),
    });
    m.server.finish();
    out
}

// ----- the scenario on every transport -------------------------------------

#[test]
fn same_scenario_same_results_on_every_transport() {
    let jsonl = run_jsonl();
    let http = run_http();
    let mcp = run_mcp();
    assert_eq!(jsonl.self_approve_error, "invalid_request");
    assert_eq!(
        jsonl.events,
        vec![
            ("source.register".to_string(), "agent".to_string()),
            ("proposal.create".to_string(), "agent".to_string()),
            ("proposal.approve".to_string(), "alice".to_string()),
        ]
    );
    assert_eq!(jsonl, http, "JSONL vs HTTP");
    assert_eq!(jsonl, mcp, "JSONL vs MCP");
}
