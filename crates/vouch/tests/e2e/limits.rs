//! Limits everywhere a stranger can send bytes (issue 14): nesting, string
//! and array sizes, the `limit` asked for, the JSONL line, the HTTP body,
//! and a read's time over HTTP. Each refusal is `invalid_request` naming
//! the limit and its `limits.*` key in config.yaml; the values are
//! configurable; a person at the command line is not limited.

use crate::common::server::http_server;
use crate::common::stdio::jsonl_session;
use crate::common::{Project, jsonl};
use serde_json::{Value, json};

fn refused(v: &Value, key: &str) {
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    let m = v["error"]["message"].as_str().unwrap();
    assert!(m.contains(&format!("limits.{key}")), "{m}");
}

fn set_limits(p: &Project, yaml: &str) {
    let path = p.vouch_dir().join("config.yaml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("limits:\n{yaml}"));
    std::fs::write(&path, text).unwrap();
}

#[test]
fn agent_params_past_a_limit_are_refused_naming_its_key() {
    let p = Project::new();
    let mut deep = json!("x");
    for _ in 0..40 {
        deep = json!([deep]);
    }
    refused(
        &jsonl(
            &p,
            "agent",
            "kb.search",
            json!({"query": "x", "kinds": deep}),
        ),
        "max_json_depth",
    );
    let long = "a".repeat(1024 * 1024 + 1);
    refused(
        &jsonl(&p, "agent", "kb.search", json!({"query": long})),
        "max_string_bytes",
    );
    let many: Vec<String> = (0..10_001).map(|i| format!("p{i}")).collect();
    refused(
        &jsonl(&p, "agent", "kb.approve", json!({"proposal_id": many})),
        "max_array_items",
    );
    refused(
        &jsonl(
            &p,
            "agent",
            "kb.search",
            json!({"query": "x", "limit": 5000}),
        ),
        "max_results",
    );
    // A source's text is bounded by sources.max_bytes, not the string limit.
    let big = "word ".repeat(300_000);
    let v = jsonl(
        &p,
        "agent",
        "kb.register_source",
        json!({"content": big, "locator": "big.txt"}),
    );
    assert_eq!(
        v["ok"],
        true,
        "{}",
        &v.to_string()[..200.min(v.to_string().len())]
    );
    // A person at the command line is not limited.
    let r = p.run("alice", &["--json", "search", "word", "--limit", "5000"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    // The values are configurable.
    set_limits(&p, "  max_results: 10\n  max_array_items: 2\n");
    let v = jsonl(&p, "agent", "kb.search", json!({"query": "x", "limit": 11}));
    refused(&v, "max_results");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 10"),
        "{v}"
    );
    refused(
        &jsonl(
            &p,
            "agent",
            "kb.approve",
            json!({"proposal_id": ["a", "b", "c"]}),
        ),
        "max_array_items",
    );
    assert_eq!(
        jsonl(&p, "agent", "kb.search", json!({"query": "x", "limit": 10}))["ok"],
        true
    );
}

#[test]
fn a_jsonl_line_past_its_limit_is_refused_and_the_server_keeps_serving() {
    let p = Project::new();
    set_limits(&p, "  jsonl_max_line_bytes: 1000\n");
    let long = json!({"id": 1, "method": "kb.search", "params": {"query": "a".repeat(2000)}});
    let ok = json!({"id": 2, "method": "kb.status"});
    let lines = jsonl_session(&p, "agent", &[long, ok]);
    refused(&lines[0], "jsonl_max_line_bytes");
    assert_eq!(lines[1]["ok"], true, "{}", lines[1]);
}

#[test]
fn http_bodies_and_slow_reads_are_refused_naming_their_keys() {
    let p = Project::new();
    set_limits(&p, "  http_max_body_bytes: 2000\n  request_timeout_ms: 0\n");
    let server = http_server(&p.vouch_dir(), &[], &[]);
    let big = json!({"id": 1, "method": "kb.status", "params": {"pad": "x".repeat(3000)}});
    let r = server.rpc(None, big.to_string().as_bytes());
    assert_eq!(r.status, 413);
    refused(&r.json(), "http_max_body_bytes");
    // A read past the time limit is answered with an error...
    let r = server.rpc(
        None,
        json!({"id": 2, "method": "kb.search", "params": {"query": "anything"}})
            .to_string()
            .as_bytes(),
    );
    refused(&r.json(), "request_timeout_ms");
    assert_eq!(r.json()["id"], 2);
    // ...a write never is: it runs to the end and says what happened.
    let r = server.rpc(
        None,
        json!({"id": 3, "method": "kb.register_source",
               "params": {"content": "a fact", "locator": "l"}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(r.json()["ok"], true, "{}", r.text());
    assert!(server.healthy());
    server.terminate();
}
