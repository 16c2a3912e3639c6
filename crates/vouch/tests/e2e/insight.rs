//! Provenance (`why`, `impact`, `neighbors`) and the gate's health
//! (`stats`, `expire`) through the real binary: the command line and a
//! JSONL agent.

use crate::common::{
    Project, assert_contains, assert_contains_all, entity_relation_and_page, jsonl,
};
use serde_json::{Value, json};

/// The `id` of each item of a list.
fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

/// A source, evidence quoting it and a claim citing the evidence, approved
/// by alice: (source, evidence, claim).
fn cited_claim(p: &Project) -> (String, String, String) {
    let src = p.source("The API allows 100 requests per minute per tenant.");
    let v = p.propose_quoted(
        "The API allows 100 requests a minute",
        &src,
        "100 requests per minute",
    );
    p.ok("alice", &["approve", v["proposal_id"].as_str().unwrap()]);
    let claim = v["claim_id"].as_str().unwrap().to_string();
    let why = p.ok("x", &["why", &claim]);
    let ev = why["citations"][0]["id"].as_str().unwrap().to_string();
    (src, ev, claim)
}

#[test]
fn why_tells_a_claims_story_on_the_command_line_and_over_jsonl() {
    let p = Project::new();
    let (_, ev, claim) = cited_claim(&p);
    let text = p.run("x", &["why", &claim]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_contains_all(
        &text.stdout,
        &[
            "claim, proposed by agent at",
            "(approved)",
            "decided by alice",
            "> 100 requests per minute",
            "proposal.create by agent",
            "proposal.approve by alice",
            "its file is what the gate wrote",
        ],
    );
    let r = jsonl(&p, "agent", "kb.why", json!({"id": claim}));
    let why = &r["result"];
    assert_eq!(why["kind"], "claim", "{r}");
    assert_eq!(why["proposals"][0]["decided_by"], "alice");
    assert_eq!(why["citations"][0]["id"], ev.as_str());
    assert_eq!(why["unaudited"], false);
    // A hand edit shows.
    let path = p.vouch_dir().join("claims").join(format!("{claim}.yaml"));
    let body = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, body.replace("100 requests", "500 requests")).unwrap();
    let after = p.run("x", &["why", &claim]);
    assert_contains(&after.stdout, "UNAUDITED");
    assert_eq!(p.ok("x", &["why", &claim])["unaudited"], true);
}

#[test]
fn impact_and_neighbors_name_what_rests_on_and_lies_around_an_object() {
    let p = Project::new();
    let (src, ev, claim) = cited_claim(&p);
    let (entity, relation, page) = entity_relation_and_page(&p, &claim, &src);
    let of_source = p.ok("x", &["impact", &src]);
    let refs = |v: &Value| -> Vec<String> {
        v["referrers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r["kind"].as_str().unwrap(),
                    r["id"].as_str().unwrap()
                )
            })
            .collect()
    };
    let found = refs(&of_source);
    for want in [
        format!("claim {claim}"),
        format!("relation {relation}"),
        format!("evidence {ev}"),
    ] {
        assert!(found.contains(&want), "{want} not in {found:?}");
    }
    let of_claim = jsonl(&p, "agent", "kb.impact", json!({"id": claim}));
    let found = refs(&of_claim["result"]);
    assert!(found.contains(&format!("page {page}")), "{found:?}");
    assert!(found.contains(&format!("relation {relation}")), "{found:?}");
    let text = p.run("x", &["impact", &claim]);
    assert_contains(&text.stdout, "(draws on it)");

    let around = p.ok("x", &["neighbors", &entity]);
    assert_eq!(ids(&around["nodes"]), vec![claim.clone()], "{around}");
    let two = jsonl(
        &p,
        "agent",
        "kb.neighbors",
        json!({"id": entity, "depth": 2}),
    );
    assert!(ids(&two["result"]["nodes"]).contains(&page), "{two}");
    let r = jsonl(
        &p,
        "agent",
        "kb.neighbors",
        json!({"id": entity, "depth": 9}),
    );
    assert_eq!(r["error"]["code"], "invalid_request", "{r}");
}

#[test]
fn hostile_ids_are_refused_with_a_clear_error() {
    let p = Project::new();
    for id in [
        "../config",
        "../../etc/passwd",
        "claims/x",
        "a\\b",
        ".vouch",
    ] {
        for cmd in ["why", "impact", "neighbors"] {
            let r = p.run("x", &[cmd, id]);
            assert_eq!(r.code, 2, "{cmd} {id}: {}{}", r.stdout, r.stderr);
            assert!(
                r.stderr.contains("path separator") || r.stderr.contains("path components"),
                "{cmd} {id}: {}",
                r.stderr
            );
        }
        for method in ["kb.why", "kb.impact", "kb.neighbors"] {
            let r = jsonl(&p, "agent", method, json!({"id": id}));
            assert_eq!(r["error"]["code"], "invalid_request", "{method} {id}: {r}");
        }
    }
    let r = p.run("x", &["why", "no-such-claim"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_contains(&r.stderr, "no-such-claim");
}

#[test]
fn stats_count_the_queue_and_decisions_by_agent_and_reviewer() {
    let p = Project::new();
    let src = p.source("notes");
    p.claim("One approved claim", &src);
    let (rejected, _) = p.propose("One rejected claim", &src);
    p.ok("bob", &["reject", &rejected, "--reason", "wrong"]);
    let (waiting, _) = p.propose("One waiting claim", &src);
    let s = p.ok("x", &["stats"]);
    assert_eq!(s["queue"]["pending"], 1, "{s}");
    assert_eq!(s["queue"]["oldest_id"], waiting.as_str());
    // The pinned clock moves an hour a command: it has waited at least one.
    assert!(
        s["queue"]["oldest_age_seconds"].as_i64().unwrap() >= 3600,
        "{s}"
    );
    assert_eq!(s["proposed"], 3);
    assert_eq!(s["approved"], 1);
    assert_eq!(s["rejected"], 1);
    assert_eq!(s["rejection_rate"], 0.5);
    let reviewers: Vec<&str> = s["by_reviewer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["actor"].as_str().unwrap())
        .collect();
    assert_eq!(reviewers.len(), 2, "{s}");
    assert!(reviewers.contains(&"alice") && reviewers.contains(&"bob"));
    let over = jsonl(&p, "agent", "kb.gate_stats", json!({"since": "1h"}));
    assert_eq!(over["result"]["proposed"], 0, "{over}");
    assert_eq!(over["result"]["queue"]["pending"], 1);
    let text = p.run("x", &["stats"]);
    assert_contains(&text.stdout, "Queue: 1 pending");
    assert_contains(&text.stdout, "By reviewer:");
    let bad = p.run("x", &["stats", "--since", "yesterday"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn expire_lists_first_rejects_on_apply_and_is_a_persons_decision() {
    let p = Project::new();
    let src = p.source("notes");
    let (old, _) = p.propose("An old claim", &src);
    // Each command is an hour later: `old` has waited longer than the
    // one proposed after these.
    for _ in 0..8 {
        p.ok("x", &["status"]);
    }
    let (fresh, _) = p.propose("A fresh claim", &src);
    let dry = p.ok("alice", &["expire", "--older-than", "6h"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(ids(&dry["expired"]), vec![old.clone()], "{dry}");
    assert_eq!(p.ok("x", &["stats"])["queue"]["pending"], 2);
    // An agent may not sweep the queue.
    let r = jsonl(
        &p,
        "agent",
        "kb.expire",
        json!({"older_than": "6h", "dry_run": false}),
    );
    assert_eq!(r["error"]["code"], "invalid_request", "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("person"),
        "{r}"
    );
    let done = p.run("alice", &["expire", "--older-than", "6h", "--apply"]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_contains(&done.stdout, "Rejected 1 proposal(s)");
    let read = &p.ok("x", &["show", &old])["object"];
    assert_eq!(read["status"], "rejected", "{read}");
    assert_eq!(read["decided_by"], "alice");
    assert!(
        read["reason"].as_str().unwrap().starts_with("expired"),
        "{read}"
    );
    let events = p.audit_events("alice");
    assert!(
        events.contains(&"proposal.reject".to_string()),
        "{events:?}"
    );
    assert_eq!(ids(&p.ok("x", &["pending"])), vec![fresh]);
}
