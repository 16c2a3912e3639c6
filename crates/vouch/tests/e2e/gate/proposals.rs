//! The gate itself: propose, a second actor approves, self-approval refused;
//! bad claims, path tricks and spans; the pending queue, slugs, bulk
//! approval, rejection; relations, entities and pages through the gate.

use super::*;

#[test]
fn main_loop_propose_self_approve_refused_second_actor_approves() {
    let p = Project::new();
    std::fs::write(p.root().join("notes.md"), "Tokens expire after 24 hours.\n").unwrap();
    let src = p.ok("agent", &["source", "add", "notes.md"]);
    let sid = src["id"].as_str().unwrap();
    assert_eq!(src["deduplicated"], false);
    let again = p.ok("agent", &["source", "add", "notes.md"]);
    assert_eq!(again["deduplicated"], true);
    assert_eq!(again["id"], src["id"]);

    let (prop, claim) = p.propose("Tokens expire after 24 hours", sid);
    let before = p.snapshot();
    let r = p.run("agent", &["approve", &prop]);
    assert_eq!(r.code, 5, "self-approval must be refused: {}", r.stderr);
    assert_contains(&r.stderr, "cannot also approve");
    assert_eq!(before, p.snapshot(), "a refused approval wrote something");

    let v = p.ok("alice", &["approve", &prop]);
    assert_eq!(v["object_id"], claim.as_str());
    assert_eq!(v["object_kind"], "claim");
    let shown = p.ok("x", &["show", &claim]);
    assert_eq!(shown["object"]["approved_by"], "alice");
    assert_eq!(shown["object"]["status"], "working");
    assert!(
        p.vouch_dir()
            .join("decided")
            .join(format!("{prop}.yaml"))
            .exists()
    );
    assert!(
        !p.vouch_dir()
            .join("proposed")
            .join(format!("{prop}.yaml"))
            .exists()
    );

    // Decided once only.
    let r = p.run("alice", &["approve", &prop]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert_contains(&r.stderr, "already approved");
    let r = p.run("alice", &["reject", &prop, "--reason", "no"]);
    assert_eq!(r.code, 4, "{}", r.stderr);

    let events: Vec<String> = p
        .ok("x", &["audit"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        events,
        ["source.register", "proposal.create", "proposal.approve"]
    );
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
}

/// Self-approval is refused for everyone: a person's own `trusted-agent`
/// lets agents review each other, never themselves.
#[test]
fn self_approval_is_refused_even_for_a_trusted_agent() {
    let p = Project::new();
    p.person_config("review:\n  approver_role: trusted-agent\n");
    let s = p.source("content");
    let (prop, _) = p.propose("A trusted agent claim", &s);
    let r = p.run("agent", &["approve", &prop]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "cannot also approve");
    p.ok("other-agent", &["approve", &prop]);
}

#[test]
fn bad_claims_are_invalid_with_every_error_and_write_nothing() {
    let p = Project::new();
    let s = p.source("The sky is blue.");
    let before = p.snapshot();
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            json!({"text": "   ", "evidence": [s]}),
            "text: must not be empty",
        ),
        (
            json!({"text": "x", "evidence": ["no-such-evidence"]}),
            "neither a registered source",
        ),
        (
            json!({"text": "x", "evidence": ["a".repeat(64)]}),
            "is not registered",
        ),
        (
            json!({"text": "x", "evidence": []}),
            "must cite at least one",
        ),
        (
            json!({"text": "x", "evidence": [s], "confidence": 1.5}),
            "between 0 and 1",
        ),
        (
            json!({"text": "x", "evidence": [s], "confidence": -0.1}),
            "between 0 and 1",
        ),
        (
            json!({"text": "x", "evidence": [{"source_id": s, "quote": "The sky is green."}]}),
            "does not occur in source",
        ),
        (
            json!({"text": "x", "evidence": ["../../etc/passwd"]}),
            "path separator",
        ),
        (
            json!({"text": "x", "evidence": [s], "entities": ["ghost"]}),
            "does not exist",
        ),
    ];
    for (params, expect) in cases {
        let r = p.call("agent", "kb.propose_claim", params.clone());
        assert_eq!(r.code, 0, "{params}: {}", r.stderr);
        let v = r.json();
        assert_eq!(v["valid"], false, "{params} accepted");
        let errors = v["errors"].to_string();
        assert!(errors.contains(expect), "{params}: {errors}");
    }
    // Every problem at once.
    let v = p
        .call(
            "agent",
            "kb.propose_claim",
            json!({"text": "", "evidence": ["nope"], "confidence": 2}),
        )
        .json();
    assert_eq!(v["errors"].as_array().unwrap().len(), 3, "{v}");
    // The CLI exits 2 on an invalid proposal.
    let r = p.run("agent", &["propose-claim", " ", "--evidence", &s]);
    assert_eq!(r.code, 2);
    assert_contains(&r.stdout, "must not be empty");
    // Wrong types and unknown enums are invalid_request errors.
    for (params, expect) in [
        (
            json!({"text": "x", "evidence": [s], "type": "rumour"}),
            "unknown claim type",
        ),
        (
            json!({"text": "x", "evidence": [s], "confidence": "high"}),
            "invalid type",
        ),
        (json!({"evidence": [s]}), "missing required param `text`"),
        (
            json!({"text": null, "evidence": [s]}),
            "missing required param `text`",
        ),
        (
            json!({"text": "x", "evidence": [s], "bogus": 1}),
            "unknown field `bogus`",
        ),
    ] {
        let r = p.call("agent", "kb.propose_claim", params.clone());
        assert_eq!(r.code, 2, "{params}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(expect), "{params}: {}", r.stderr);
    }
    let r = p.run(
        "agent",
        &[
            "propose-claim",
            "x",
            "--evidence",
            &s,
            "--confidence",
            "NaN",
        ],
    );
    assert_eq!(r.code, 2, "NaN confidence accepted: {}", r.stdout);
    assert_eq!(before, p.snapshot(), "an invalid proposal wrote something");
}

#[test]
fn dry_run_validates_and_writes_nothing() {
    let p = Project::new();
    let s = p.source("abc");
    let before = p.snapshot();
    let v = p.ok(
        "agent",
        &[
            "propose-claim",
            "A dry claim",
            "--evidence",
            &s,
            "--dry-run",
        ],
    );
    assert_eq!(v["valid"], true);
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["proposal_id"], "");
    assert_eq!(before, p.snapshot());
}

#[test]
fn ids_with_path_tricks_are_refused_and_touch_nothing() {
    let p = Project::new();
    let before = p.snapshot();
    let long = "a".repeat(201);
    for id in [
        "../x",
        "../../etc/passwd",
        "a/b",
        "a\\b",
        "a\0b",
        long.as_str(),
    ] {
        for (method, params) in [
            ("kb.read_claim", json!({"id": id})),
            ("kb.approve", json!({"proposal_id": id})),
            ("kb.reject", json!({"proposal_id": id, "reason": "r"})),
            ("kb.archive", json!({"id": id})),
            ("kb.supersede", json!({"old_id": id, "new_id": "b"})),
            ("kb.session_end", json!({"session_id": id})),
        ] {
            let r = p.call("alice", method, params);
            assert_eq!(r.code, 2, "{method} {id:?}: {}{}", r.stdout, r.stderr);
            assert_contains(&r.stderr, "error:");
        }
    }
    assert_eq!(before, p.snapshot());
    assert!(!p.root().join("x.yaml").exists());
}

#[test]
fn spans_are_located_minted_and_deduplicated() {
    let p = Project::new();
    let s = p.source("line one\nline two has the fact\nline three\n");
    let ev = p.ok("agent", &["quote", &s, "the fact\nline three"]);
    assert_eq!(ev["locator"], "L2-L3");
    assert_eq!(ev["deduplicated"], false);
    let again = p.ok("agent", &["quote", &s, "the fact\nline three"]);
    assert_eq!(again["evidence_id"], ev["evidence_id"]);
    assert_eq!(again["deduplicated"], true);
    let r = p.run("agent", &["quote", &s, "not there"]);
    assert_eq!(r.code, 2);
    assert_contains(&r.stderr, "does not occur");
    let eid = ev["evidence_id"].as_str().unwrap();
    let c = p.claim("Line two has the fact", eid);
    let pend = p.ok("x", &["show", &c]);
    assert_eq!(pend["object"]["evidence"][0], eid);
}

#[test]
fn pending_lists_oldest_first_with_citations_and_quotes() {
    let p = Project::new();
    let s = p.source("alpha beta gamma");
    let first = p.propose_quoted("First", &s, "beta gamma");
    let second = p.ok("agent", &["propose-claim", "Second", "-e", &s]);
    let list = p.ok("x", &["pending"]);
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            first["proposal_id"].as_str().unwrap(),
            second["proposal_id"].as_str().unwrap()
        ]
    );
    assert_eq!(list[0]["_meta"]["citations"][0]["quote"], "beta gamma");
    let text = p.run("x", &["pending"]).stdout;
    assert!(text.contains("\"beta gamma\""), "{text}");
}

#[test]
fn slugs_get_suffixes_and_bulk_approval_is_all_or_nothing() {
    let p = Project::new();
    let s = p.source("x");
    let (a, ca) = p.propose("Same text", &s);
    let (b, cb) = p.propose("Same text", &s);
    assert_eq!(ca, "same-text");
    assert_eq!(cb, "same-text-2");
    let before = p.snapshot();
    let r = p.run("alice", &["approve", &a, "no-such-proposal"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(
        before,
        p.snapshot(),
        "a failed bulk approval wrote something"
    );
    let v = p.ok("alice", &["approve", &a, &b]);
    assert_eq!(v["approved"].as_array().unwrap().len(), 2);
    let (c, cc) = p.propose("Same text", &s);
    assert_eq!(cc, "same-text-3");
    p.ok("alice", &["reject", &c, "--reason", "duplicate"]);
    let decided = std::fs::read_to_string(p.vouch_dir().join(format!("decided/{c}.yaml"))).unwrap();
    assert!(
        decided.contains("status: rejected") && decided.contains("reason: duplicate"),
        "{decided}"
    );
    assert!(!p.vouch_dir().join(format!("claims/{cc}.yaml")).exists());
}

#[test]
fn reject_requires_a_reason() {
    let p = Project::new();
    let s = p.source("x");
    let (prop, _) = p.propose("Needs a reason", &s);
    let before = p.snapshot();
    for params in [
        json!({"proposal_id": prop}),
        json!({"proposal_id": prop, "reason": "  "}),
    ] {
        let r = p.call("alice", "kb.reject", params);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_contains(&r.stderr, "reason");
    }
    let r = p.run("alice", &["reject", &prop]);
    assert_eq!(r.code, 2, "clap must require --reason");
    assert_eq!(before, p.snapshot());
}

#[test]
fn relations_entities_and_pages_go_through_the_gate() {
    let p = Project::new();
    let s = p.source("x");
    let e1 = p.ok(
        "agent",
        &["propose-entity", "Auth Service", "--type", "system"],
    );
    let e2 = p.ok("agent", &["propose-entity", "Postgres", "--type", "tool"]);
    let r = p.run("agent", &["propose-entity", "X", "--type", "spaceship"]);
    assert_eq!(r.code, 2);
    assert_contains(&r.stderr, "unknown entity type");
    // A relation to entities that are still pending is invalid.
    p.refused(
        "agent",
        &["propose-relation", "auth-service", "depends_on", "postgres"],
    );
    p.ok(
        "alice",
        &[
            "approve",
            e1["proposal_id"].as_str().unwrap(),
            e2["proposal_id"].as_str().unwrap(),
        ],
    );
    let rel = p.ok(
        "agent",
        &[
            "propose-relation",
            "auth-service",
            "depends_on",
            "postgres",
            "-e",
            &s,
        ],
    );
    p.ok("alice", &["approve", rel["proposal_id"].as_str().unwrap()]);
    let c = p.claim("Auth uses Postgres", &s);
    let pg = p.ok(
        "agent",
        &[
            "propose-page",
            "Auth overview",
            "--body",
            "# Auth\n\nUses Postgres.\n",
            "--claim",
            &c,
        ],
    );
    p.ok("alice", &["approve", pg["proposal_id"].as_str().unwrap()]);
    let page = std::fs::read_to_string(p.vouch_dir().join("pages/auth-overview.md")).unwrap();
    assert!(page.starts_with("---\nid: auth-overview\n"), "{page}");
    assert!(page.ends_with("---\n# Auth\n\nUses Postgres.\n"), "{page}");
    assert_eq!(
        p.ok("x", &["show", "auth-overview"])["object"]["body"],
        "# Auth\n\nUses Postgres.\n"
    );
}
