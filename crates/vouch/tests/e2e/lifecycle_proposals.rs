//! An agent's lifecycle call that becomes a proposal (every `kb.cite`; every
//! lifecycle change under `review.gate_lifecycle`) is checked when it is
//! filed, as applying it would check it: one that could never be approved
//! is refused, never left in the queue. What the person reviews is the
//! claim's text and the quote it would carry, not the call's JSON.

use crate::common::{PLANTED_NOTE, Project, agent_cites_a_planted_note, edit, jsonl};
use serde_json::{Value, json};

fn pending(p: &Project) -> Vec<Value> {
    p.ok("alice", &["pending"]).as_array().unwrap().clone()
}

#[test]
fn an_agents_cite_is_checked_when_it_is_filed() {
    let p = Project::new();
    let src = p.source("The deploy freeze starts Friday at noon.\n");
    let claim = p.claim("The deploy freeze starts Friday at noon.", &src);
    let refused = |params: Value, code: &str, says: &[&str]| {
        let r = jsonl(&p, "agent", "kb.cite", params);
        assert_eq!(r["ok"], false, "filed: {r}");
        assert_eq!(r["error"]["code"], code, "{r}");
        let msg = r["error"]["message"].as_str().unwrap_or("");
        for s in says {
            assert!(msg.contains(s), "{msg:?} does not say {s:?}");
        }
    };
    // A source no one registered.
    let unknown = "f".repeat(64);
    refused(
        json!({"id": claim, "evidence": unknown}),
        "invalid_request",
        &["is not registered"],
    );
    // A path for an id.
    refused(
        json!({"id": claim, "evidence": "../../../etc/passwd"}),
        "invalid_request",
        &["evidence id"],
    );
    // A quote its source does not hold.
    refused(
        json!({"id": claim, "evidence": {"source_id": src, "quote": "deploy whenever"}}),
        "invalid_request",
        &["does not occur"],
    );
    // Every problem at once: no such claim, and no such source.
    refused(
        json!({"id": "no-such-claim", "evidence": unknown}),
        "invalid_request",
        &["no-such-claim", "is not registered"],
    );
    assert_eq!(pending(&p), Vec::<Value>::new(), "a refused cite was filed");
    // A citation the claim already has changes nothing: nothing to review.
    let r = jsonl(
        &p,
        "agent",
        "kb.cite",
        json!({"id": claim, "evidence": src}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert!(r["result"].get("proposal_id").is_none(), "{r}");
    assert_eq!(pending(&p), Vec::<Value>::new());
}

/// Under `review.gate_lifecycle` the other lifecycle calls are checked the
/// same way: an archive of nothing, a supersession of a claim already
/// superseded, a revert of no event.
#[test]
fn gated_lifecycle_calls_are_checked_when_they_are_filed() {
    let p = Project::new();
    let src =
        p.source("Builds run on Linux.\nBuilds run on Linux and macOS.\nBuilds run everywhere.\n");
    let a = p.claim("Builds run on Linux.", &src);
    let b = p.claim("Builds run on Linux and macOS.", &src);
    let c = p.claim("Builds run everywhere.", &src);
    p.ok("alice", &["supersede", &a, &b]);
    let cfg = p.vouch_dir().join("config.yaml");
    edit(&cfg, "review:\n", "review:\n  gate_lifecycle: true\n");
    for (method, params) in [
        ("kb.archive", json!({"id": "nothing-here"})),
        ("kb.supersede", json!({"old_id": a, "new_id": c})),
        ("kb.confirm", json!({"id": "../x"})),
        ("kb.contradict", json!({"a_id": b, "b_id": "nothing-here"})),
        ("kb.revert", json!({"event_id": "0".repeat(32)})),
    ] {
        let r = jsonl(&p, "agent", method, params);
        assert_eq!(r["ok"], false, "{method} was filed: {r}");
        assert_eq!(r["error"]["code"], "invalid_request", "{method}: {r}");
    }
    assert_eq!(pending(&p), Vec::<Value>::new());
    // One that applies is filed.
    let r = jsonl(&p, "agent", "kb.archive", json!({"id": c}));
    assert!(r["result"]["proposal_id"].is_string(), "{r}");
}

/// `vouch pending` shows a cite as the claim's text and the quote it would
/// attach, not as `kb.cite {"id": …, "evidence": …}`; approving it applies it.
#[test]
fn pending_shows_a_cite_as_the_claim_and_the_quote() {
    let p = Project::new();
    let (claim, _, r) = agent_cites_a_planted_note(&p);
    let note = PLANTED_NOTE;
    let pid = r["result"]["proposal_id"].as_str().unwrap().to_string();
    let shown = p.run("alice", &["pending"]).stdout;
    assert!(!shown.contains("{\"id\""), "raw JSON: {shown}");
    assert!(
        shown.contains(&format!("kb.cite: add a citation to claim {claim}")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "claim {claim} (stable): \"The deploy freeze starts Friday at noon.\""
        )) || shown.contains(&format!("claim {claim} (working)")),
        "{shown}"
    );
    assert!(shown.contains(&format!("\"{note}\"")), "the quote: {shown}");
    assert!(shown.contains("notes.md"), "where it comes from: {shown}");
    // Over the wire the same: the change in words, the quote resolved.
    let listed = &pending(&p)[0];
    assert_eq!(listed["_meta"]["change"]["objects"][0]["id"], json!(claim));
    assert_eq!(listed["_meta"]["citations"][0]["quote"], json!(note));
    p.ok("alice", &["approve", &pid]);
    let c = p.call("x", "kb.read_claim", json!({"id": claim})).json();
    assert_eq!(
        c["evidence"][1], listed["_meta"]["citations"][0]["id"],
        "{c}"
    );
}
