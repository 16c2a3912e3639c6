use crate::error::ErrorKind;
use crate::kb::{Caller, Kb, Transport};
use crate::methods::dispatch;
use crate::testing::{test_claim, test_kb, test_source};
use serde_json::{Value, json};

fn person() -> Caller {
    Caller::new("alice", Transport::Cli)
}

fn agent() -> Caller {
    Caller::new("agent", Transport::Jsonl)
}

fn call(kb: &Kb, caller: &Caller, method: &str, params: Value) -> Value {
    dispatch(kb, caller, method, params).unwrap()
}

/// An entity proposed by the agent and approved by the person; its id.
fn entity(kb: &Kb, name: &str) -> String {
    let p = call(
        kb,
        &agent(),
        "kb.propose_entity",
        json!({"name": name, "type": "project"}),
    );
    call(
        kb,
        &person(),
        "kb.approve",
        json!({"proposal_id": p["proposal_id"]}),
    );
    p["entity_id"].as_str().unwrap().to_string()
}

fn relation(kb: &Kb, from: &str, to: &str) -> String {
    let p = call(
        kb,
        &agent(),
        "kb.propose_relation",
        json!({"source": from, "relation": "depends_on", "target": to}),
    );
    call(
        kb,
        &person(),
        "kb.approve",
        json!({"proposal_id": p["proposal_id"]}),
    );
    p["relation_id"].as_str().unwrap().to_string()
}

/// Evidence quoting `quote` in source `src`; its id.
fn evidence(kb: &Kb, src: &str, quote: &str) -> String {
    call(
        kb,
        &agent(),
        "kb.register_evidence",
        json!({"source_id": src, "quote": quote}),
    )["evidence_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Two approved claims, the first superseded by the second: (old, new).
fn superseded(kb: &Kb) -> (String, String) {
    let src = test_source(kb, "notes");
    let old = test_claim(kb, &src, "The limit is 100");
    let new = test_claim(kb, &src, "The limit is 200");
    call(
        kb,
        &person(),
        "kb.supersede",
        json!({"old_id": old, "new_id": new, "reason": "raised"}),
    );
    (old, new)
}

#[test]
fn why_tells_proposal_decision_citation_and_events() {
    let (_d, kb) = test_kb();
    let src = test_source(&kb, "The API allows 100 requests per minute per tenant.");
    let ev = evidence(&kb, &src, "100 requests per minute");
    let claim = test_claim(&kb, &ev, "The API allows 100 requests a minute");
    let why = call(&kb, &agent(), "kb.why", json!({"id": claim}));
    assert_eq!(why["kind"], "claim");
    assert_eq!(why["proposals"][0]["proposed_by"], "agent");
    assert_eq!(why["proposals"][0]["decided_by"], "alice");
    assert_eq!(why["proposals"][0]["status"], "approved");
    assert_eq!(why["citations"][0]["quote"], "100 requests per minute");
    let events: Vec<&str> = why["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(events.contains(&"proposal.create"), "{events:?}");
    assert!(events.contains(&"proposal.approve"), "{events:?}");
    assert_eq!(why["unaudited"], false);
}

#[test]
fn why_marks_a_claim_edited_by_hand() {
    let (_d, kb) = test_kb();
    let src = test_source(&kb, "notes");
    let claim = test_claim(&kb, &src, "Deploys happen on Tuesdays");
    let path = kb.layout().file(crate::store::Dir::Claims, &claim).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("Tuesdays", "Fridays")).unwrap();
    kb.index().rebuild(&kb).ok();
    let why = call(&kb, &person(), "kb.why", json!({"id": claim}));
    assert_eq!(why["unaudited"], true);
}

#[test]
fn why_follows_the_supersession_chain() {
    let (_d, kb) = test_kb();
    let (old, new) = superseded(&kb);
    let why = call(&kb, &person(), "kb.why", json!({"id": old}));
    assert_eq!(why["chain"][0]["relation"], "superseded_by");
    assert_eq!(why["chain"][0]["id"], new.as_str());
    let back = call(&kb, &person(), "kb.why", json!({"id": new}));
    assert_eq!(back["chain"][0]["relation"], "supersedes");
    assert_eq!(back["chain"][0]["id"], old.as_str());
}

#[test]
fn why_and_impact_refuse_path_tricks_and_unknown_ids() {
    let (_d, kb) = test_kb();
    for method in ["kb.why", "kb.impact", "kb.neighbors"] {
        for id in ["../config", "claims/../../x", "a\\b", ".hidden"] {
            let e = dispatch(&kb, &agent(), method, json!({"id": id})).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidParams, "{method} {id}: {e:?}");
        }
        let e = dispatch(&kb, &agent(), method, json!({"id": "no-such-thing"})).unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound, "{method}");
    }
}

#[test]
fn impact_lists_what_cites_a_source_directly_and_through_evidence() {
    let (_d, kb) = test_kb();
    let src = test_source(&kb, "Redis holds the sessions. Postgres holds the orders.");
    let ev = evidence(&kb, &src, "Redis holds the sessions.");
    let direct = test_claim(&kb, &src, "Postgres holds the orders");
    let quoted = test_claim(&kb, &ev, "Redis holds the sessions");
    let impact = call(&kb, &agent(), "kb.impact", json!({"id": src}));
    assert_eq!(impact["kind"], "source");
    let refs = impact["referrers"].as_array().unwrap();
    let find = |id: &str| refs.iter().find(|r| r["id"] == id).cloned();
    assert_eq!(find(&direct).unwrap()["how"][0], "cites it");
    assert_eq!(
        find(&quoted).unwrap()["how"][0],
        format!("cites it through evidence {ev}")
    );
    assert_eq!(find(&ev).unwrap()["how"][0], "quotes it");
}

#[test]
fn impact_of_a_claim_names_what_supersedes_it() {
    let (_d, kb) = test_kb();
    let (old, new) = superseded(&kb);
    let impact = call(&kb, &agent(), "kb.impact", json!({"id": old}));
    let refs = impact["referrers"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0]["id"], new.as_str());
    assert_eq!(refs[0]["how"][0], "supersedes it");
}

#[test]
fn neighbors_walk_relations_to_the_depth_asked() {
    let (_d, kb) = test_kb();
    let a = entity(&kb, "api");
    let b = entity(&kb, "cache");
    let c = entity(&kb, "disk");
    relation(&kb, &a, &b);
    relation(&kb, &b, &c);
    let one = call(&kb, &agent(), "kb.neighbors", json!({"id": a}));
    let ids = |v: &Value| -> Vec<String> {
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&one), vec![b.clone()]);
    assert_eq!(one["edges"][0]["relation"], "depends_on");
    let two = call(&kb, &agent(), "kb.neighbors", json!({"id": a, "depth": 2}));
    assert_eq!(ids(&two), vec![b.clone(), c.clone()]);
    assert_eq!(two["nodes"][1]["depth"], 2);
    let cut = call(
        &kb,
        &agent(),
        "kb.neighbors",
        json!({"id": a, "depth": 2, "limit": 1}),
    );
    assert_eq!(ids(&cut), vec![b]);
    assert_eq!(cut["truncated"], true);
    for depth in [0, 4] {
        let e = dispatch(
            &kb,
            &agent(),
            "kb.neighbors",
            json!({"id": a, "depth": depth}),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams);
    }
}

#[test]
fn gate_stats_count_the_queue_and_the_decisions() {
    let (_d, kb) = test_kb();
    let src = test_source(&kb, "notes");
    test_claim(&kb, &src, "one approved claim");
    let rejected = call(
        &kb,
        &agent(),
        "kb.propose_claim",
        json!({"text": "a rejected claim", "evidence": [src]}),
    );
    call(
        &kb,
        &person(),
        "kb.reject",
        json!({"proposal_id": rejected["proposal_id"], "reason": "wrong"}),
    );
    let pending = call(
        &kb,
        &agent(),
        "kb.propose_claim",
        json!({"text": "a pending claim", "evidence": [src]}),
    );
    let stats = call(&kb, &agent(), "kb.gate_stats", json!({}));
    assert_eq!(stats["queue"]["pending"], 1);
    assert_eq!(stats["queue"]["oldest_id"], pending["proposal_id"]);
    assert_eq!(stats["proposed"], 3);
    assert_eq!(stats["approved"], 1);
    assert_eq!(stats["rejected"], 1);
    assert_eq!(stats["approval_rate"], 0.5);
    assert_eq!(stats["by_agent"][0]["actor"], "agent");
    assert_eq!(stats["by_agent"][0]["proposed"], 3);
    assert_eq!(stats["by_agent"][0]["pending"], 1);
    assert_eq!(stats["by_reviewer"][0]["actor"], "alice");
    assert_eq!(stats["by_reviewer"][0]["rejected"], 1);
    // A window that starts after everything counts nothing but the queue.
    let later = call(
        &kb,
        &agent(),
        "kb.gate_stats",
        json!({"since": "2999-01-01T00:00:00Z"}),
    );
    assert_eq!(later["proposed"], 0);
    assert_eq!(later["approved"], 0);
    assert_eq!(later["queue"]["pending"], 1);
    let e = dispatch(&kb, &agent(), "kb.gate_stats", json!({"since": "soon"})).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
}

#[test]
fn parse_age_reads_units_and_refuses_the_rest() {
    assert_eq!(super::parse_age("30d").unwrap().num_days(), 30);
    assert_eq!(super::parse_age("2w").unwrap().num_days(), 14);
    assert_eq!(super::parse_age("12h").unwrap().num_hours(), 12);
    for bad in ["", "d", "30", "-1d", "3y", "99999999999w"] {
        assert!(super::parse_age(bad).is_err(), "{bad}");
    }
}

#[test]
fn expire_is_a_dry_run_by_default_and_rejects_through_the_reject_path() {
    let (_d, kb) = test_kb();
    let src = test_source(&kb, "notes");
    let p = call(
        &kb,
        &agent(),
        "kb.propose_claim",
        json!({"text": "a stale claim", "evidence": [src]}),
    );
    // Nothing has waited 30 days.
    let none = call(
        &kb,
        &person(),
        "kb.expire",
        json!({"older_than": "30d", "dry_run": false}),
    );
    assert!(none["expired"].as_array().unwrap().is_empty());
    // Everything has waited longer than 0 seconds.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let dry = call(&kb, &person(), "kb.expire", json!({"older_than": "1s"}));
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["expired"][0]["id"], p["proposal_id"]);
    assert_eq!(
        call(&kb, &person(), "kb.gate_stats", json!({}))["queue"]["pending"],
        1
    );
    let done = call(
        &kb,
        &person(),
        "kb.expire",
        json!({"older_than": "1s", "dry_run": false}),
    );
    assert_eq!(done["dry_run"], false);
    let read = call(
        &kb,
        &person(),
        "kb.read_proposal",
        json!({"id": p["proposal_id"]}),
    );
    assert_eq!(read["status"], "rejected");
    assert_eq!(read["reason"], "expired: pending longer than 1s");
    let e = dispatch(&kb, &agent(), "kb.expire", json!({"older_than": "1s"})).unwrap_err();
    assert_eq!(e.kind, ErrorKind::GateDenied);
}
