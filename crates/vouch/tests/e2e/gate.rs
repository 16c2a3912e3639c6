//! The review gate, sources, lifecycle, sessions and audit through the real
//! binary: each bad input gets a clear error and writes nothing.

use crate::common::*;
use serde_json::{Value, json};

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
    assert!(r.stderr.contains("cannot also approve"), "{}", r.stderr);
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
    assert!(r.stderr.contains("already approved"), "{}", r.stderr);
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
    assert!(r.stderr.contains("cannot also approve"), "{}", r.stderr);
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
    assert!(r.stdout.contains("must not be empty"), "{}", r.stdout);
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
            assert!(r.stderr.contains("error:"), "{}", r.stderr);
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
    assert!(r.stderr.contains("does not occur"), "{}", r.stderr);
    let eid = ev["evidence_id"].as_str().unwrap();
    let c = p.claim("Line two has the fact", eid);
    let pend = p.ok("x", &["show", &c]);
    assert_eq!(pend["object"]["evidence"][0], eid);
}

#[test]
fn pending_lists_oldest_first_with_citations_and_quotes() {
    let p = Project::new();
    let s = p.source("alpha beta gamma");
    let first = p.ok(
        "agent",
        &[
            "propose-claim",
            "First",
            "--quote",
            &format!("{s}=beta gamma"),
        ],
    );
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
        assert!(r.stderr.contains("reason"), "{}", r.stderr);
    }
    let r = p.run("alice", &["reject", &prop]);
    assert_eq!(r.code, 2, "clap must require --reason");
    assert_eq!(before, p.snapshot());
}

/// The gate (a correcting proposal) and lifecycle (`vouch supersede`) hold
/// supersession to one rule: only a current claim is superseded, only a
/// current claim replaces it, and no loop is made, even through links a
/// hand edit left one-sided.
#[test]
fn supersession_follows_one_rule_at_the_gate_and_in_lifecycle() {
    let p = Project::new();
    let s = p.source("facts");
    let a = p.claim("Claim A", &s);
    let b = p.claim("Claim B", &s);
    p.ok("alice", &["archive", &a]);
    let before = p.snapshot();
    let r = p.run("alice", &["supersede", &a, &b]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("only a current claim can be superseded"),
        "{}",
        r.stderr
    );
    let v = p.run(
        "agent",
        &[
            "--json",
            "propose-claim",
            "Claim A2",
            "-e",
            &s,
            "--supersedes",
            &a,
        ],
    );
    assert_eq!(v.code, 2, "{}", v.stdout);
    assert!(
        v.stdout.contains("only a current claim can be superseded"),
        "{}",
        v.stdout
    );
    // An archived claim takes no other's place either.
    let r = p.run("alice", &["supersede", &b, &a]);
    assert!(
        r.stderr.contains("a retired claim cannot replace another"),
        "{}",
        r.stderr
    );
    assert_eq!(before, p.snapshot());
    // d lists c as superseded without c saying so: superseding d with c
    // would close a loop.
    let c = p.claim("Claim C", &s);
    let d = p.claim("Claim D", &s);
    edit(
        &p.vouch_dir().join(format!("claims/{d}.yaml")),
        "status: ",
        &format!("supersedes:\n- {c}\nstatus: "),
    );
    let r = p.run("alice", &["supersede", &d, &c]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("would make a cycle"), "{}", r.stderr);
    // Two steps away, beside a loop the files already hold: n ↔ x, and o
    // lists x. Superseding o with n would close o → x → n → o.
    let [n, x, o] = ["Claim N", "Claim X", "Claim O"].map(|t| p.claim(t, &s));
    for (claim, lists) in [(&n, &x), (&x, &n), (&o, &x)] {
        edit(
            &p.vouch_dir().join(format!("claims/{claim}.yaml")),
            "status: ",
            &format!("supersedes:\n- {lists}\nstatus: "),
        );
    }
    let before = p.snapshot();
    let r = p.run("alice", &["supersede", &o, &n]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("would make a cycle"), "{}", r.stderr);
    assert_eq!(before, p.snapshot());
}

#[test]
fn lifecycle_supersede_contradict_archive_confirm_cite() {
    let p = Project::new();
    let s = p.source("facts");
    let s2 = p.source("more facts");
    let a = p.claim("Claim A", &s);
    let b = p.claim("Claim B", &s);
    let c = p.claim("Claim C", &s);
    let r = p.run("alice", &["supersede", &a, &a]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    p.ok("alice", &["supersede", &a, &b]);
    let va = p.ok("x", &["show", &a])["object"].clone();
    assert_eq!(va["status"], "superseded");
    assert_eq!(va["superseded_by"], b.as_str());
    assert_eq!(
        p.ok("x", &["show", &b])["object"]["supersedes"][0],
        a.as_str()
    );
    // b supersedes a; a superseding b would be a cycle (and a is already superseded).
    let before = p.snapshot();
    let r = p.run("alice", &["supersede", &b, &a]);
    assert_ne!(r.code, 0);
    assert_eq!(before, p.snapshot());
    // A longer cycle: c supersedes b is fine; then b cannot supersede c.
    p.ok("alice", &["supersede", &b, &c]);
    let r = p.run("alice", &["supersede", &c, &a]);
    assert_ne!(r.code, 0, "{}", r.stdout);

    let d = p.claim("Claim D", &s);
    let e = p.claim("Claim E", &s);
    p.ok("alice", &["contradict", &d, &e]);
    for (x, y) in [(&d, &e), (&e, &d)] {
        let v = p.ok("x", &["show", x])["object"].clone();
        assert_eq!(v["status"], "contested");
        assert_eq!(v["contradicts"][0], y.as_str());
    }
    p.ok("alice", &["confirm", &d]);
    assert!(p.ok("x", &["show", &d])["object"]["last_confirmed_at"].is_string());
    p.ok("alice", &["cite", &d, &s2]);
    let again = p.ok("alice", &["cite", &d, &s2]);
    assert_eq!(
        again["updated"].as_array().unwrap().len(),
        0,
        "cite must be idempotent"
    );
    assert_eq!(
        p.ok("x", &["show", &d])["object"]["evidence"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    p.ok("alice", &["archive", &e]);
    assert_eq!(p.ok("x", &["show", &e])["object"]["status"], "archived");
    let events = p.audit_events("alice");
    for ev in [
        "claim.supersede",
        "claim.contradict",
        "claim.confirm",
        "claim.cite",
        "claim.archive",
    ] {
        assert!(
            events.contains(&ev.to_string()),
            "{ev} missing from {events:?}"
        );
    }
    let tail = p.ok("x", &["audit", "--tail", "1"]);
    assert_eq!(tail.as_array().unwrap().len(), 1);
    assert_eq!(tail[0]["event"], "claim.archive");
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
}

#[test]
fn a_correction_supersedes_the_claim_it_names_when_approved() {
    let p = Project::new();
    let s = p.source("Deploys run at 09:00. Deploys run at 10:00.");
    let old = p.claim("Deploys run at 09:00", &s);
    let propose = |text: &str, supersedes: &str| {
        p.run(
            "agent",
            &[
                "--json",
                "propose-claim",
                text,
                "--evidence",
                &s,
                "--supersedes",
                supersedes,
            ],
        )
    };
    // Only an existing claim can be named.
    let r = propose("Deploys run at 10:00", "no-such-claim");
    assert_eq!(r.json()["valid"], false, "{}", r.stdout);
    assert!(
        r.stdout.contains("claim no-such-claim does not exist"),
        "{}",
        r.stdout
    );
    let r = propose("Deploys run at 10:00", "../claims/x");
    assert_eq!(r.json()["valid"], false, "{}", r.stdout);

    let first = propose("Deploys run at 10:00", &old).json();
    assert_eq!(first["valid"], true, "{first}");
    let second = propose("Deploys run at 10:30", &old).json();
    assert_eq!(second["valid"], true, "{second}");
    let (p1, new) = (
        first["proposal_id"].as_str().unwrap(),
        first["claim_id"].as_str().unwrap(),
    );
    let p2 = second["proposal_id"].as_str().unwrap();
    // Nothing changes until a reviewer approves; the gate still holds.
    assert_eq!(p.ok("x", &["show", &old])["object"]["status"], "working");
    assert_eq!(p.run("agent", &["approve", p1]).code, 5);
    // Two corrections of one claim cannot be approved together.
    let before = p.snapshot();
    let r = p.run("alice", &["approve", p1, p2]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("both supersede"), "{}", r.stderr);
    assert_eq!(before, p.snapshot());

    p.ok("alice", &["approve", p1]);
    let o = p.ok("x", &["show", &old])["object"].clone();
    assert_eq!(o["status"], "superseded");
    assert_eq!(o["superseded_by"], new);
    assert_eq!(
        p.ok("x", &["show", new])["object"]["supersedes"][0],
        old.as_str()
    );
    let hits = p.ok("x", &["search", "deploys run"]);
    let claims: Vec<&Value> = hits
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "claim")
        .collect();
    // The current claim first; the replaced one is marked as such.
    assert_eq!(claims[0]["id"], new, "{hits:#}");
    assert_eq!(claims[1]["id"], old.as_str());
    assert_eq!(claims[1]["status"], "superseded");
    // The other correction now names a claim that is no longer current.
    let r = p.run("alice", &["approve", p2]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("already superseded by {new}")),
        "{}",
        r.stderr
    );
    let r = propose("Deploys run at 11:00", &old).json();
    assert_eq!(r["valid"], false, "{r}");
    // A retired claim is not brought back as "superseded".
    let gone = p.claim("Deploys ran on Sundays once", &s);
    p.ok("alice", &["archive", &gone]);
    let r = propose("Deploys never run on Sundays", &gone).json();
    assert_eq!(r["valid"], false, "{r}");
    assert!(r.to_string().contains("is archived"), "{r}");
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
    assert_eq!(p.run("x", &["doctor"]).code, 0);
}

#[test]
fn sessions_and_crystallize() {
    let p = Project::new();
    let s = p.source("session facts");
    let sess = p.ok("agent", &["session", "start", "--task", "learn auth"])["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sess.starts_with("sess-"));
    let a = p.ok(
        "agent",
        &[
            "propose-claim",
            "Session claim one",
            "-e",
            &s,
            "--session",
            &sess,
        ],
    );
    let b = p.ok(
        "agent",
        &[
            "propose-claim",
            "Session claim two",
            "-e",
            &s,
            "--session",
            &sess,
        ],
    );
    p.ok("alice", &["approve", a["proposal_id"].as_str().unwrap()]);
    let end = p.ok("agent", &["session", "end", &sess]);
    assert_eq!(end["proposals"], 2);
    let r = p.run(
        "agent",
        &["propose-claim", "late", "-e", &s, "--session", &sess],
    );
    assert_eq!(r.code, 2, "proposing into an ended session must fail");
    let cr = p.ok("agent", &["crystallize", &sess]);
    assert_eq!(cr["claims_promoted"], 1);
    assert_eq!(cr["promotable"][0], b["proposal_id"]);
    let page_prop = cr["proposal_id"].as_str().unwrap();
    let shown = p.ok("x", &["show", page_prop])["object"].clone();
    assert_eq!(shown["kind"], "page");
    let body = shown["payload"]["body"].as_str().unwrap();
    assert!(
        body.contains("Session claim one") && body.contains("Awaiting review"),
        "{body}"
    );
    assert_eq!(shown["payload"]["claims"][0], "session-claim-one");
}

#[test]
fn sources_from_path_stay_inside_the_project() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), p.root().join("link.txt"))
        .unwrap();
    std::fs::create_dir(p.root().join("sub")).unwrap();
    let before = p.snapshot();
    for (path, expect) in [
        (
            outside.path().join("secret.txt").display().to_string(),
            "outside the project",
        ),
        ("link.txt".to_string(), "symbolic link"),
        ("../".to_string(), "outside the project"),
        ("sub".to_string(), "not a regular file"),
        ("/dev/null".to_string(), "outside the project"),
        (".vouch/config.yaml".to_string(), "inside .vouch"),
        ("missing.txt".to_string(), "No such file"),
    ] {
        let r = p.run("agent", &["source", "add", &path]);
        assert_eq!(r.code, 2, "{path}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(expect), "{path}: {}", r.stderr);
    }
    // Size limit with a clear message.
    let cfg = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("max_bytes: 16777216", "max_bytes: 10");
    std::fs::write(&cfg, &text).unwrap();
    std::fs::write(p.root().join("big.txt"), "01234567890").unwrap();
    let r = p.run("agent", &["source", "add", "big.txt"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("over the 10-byte limit"), "{}", r.stderr);
    let mut after = p.snapshot();
    after.retain(|(f, _)| f != "config.yaml");
    let mut before = before;
    before.retain(|(f, _)| f != "config.yaml");
    assert_eq!(before, after);
}

#[test]
fn source_verify_reports_drift_and_missing_content() {
    let p = Project::new();
    let s = p.source("original");
    assert_eq!(p.ok("x", &["source", "verify"])["ok"], true);
    let content = p.vouch_dir().join(format!("sources/{s}/content"));
    std::fs::write(&content, "tampered").unwrap();
    let r = p.run("x", &["--json", "source", "verify"]);
    assert_eq!(r.code, 6);
    assert_eq!(r.json()["issues"][0]["kind"], "drifted");
    std::fs::remove_file(&content).unwrap();
    assert_eq!(
        p.run("x", &["--json", "source", "verify", &s]).json()["issues"][0]["kind"],
        "missing"
    );
}

#[test]
fn corrupt_claim_files_are_skipped_with_a_warning() {
    let p = Project::new();
    let s = p.source("x");
    p.claim("A good claim", &s);
    std::fs::write(
        p.vouch_dir().join("claims/broken.yaml"),
        "id: broken\ntext: [unclosed\n",
    )
    .unwrap();
    std::fs::write(p.vouch_dir().join("claims/truncated.yaml"), "id: trunc").unwrap();
    let r = p.run("x", &["--json", "call", "kb.list_claims"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert!(r.stderr.contains("claims/broken.yaml"), "{}", r.stderr);
    assert!(r.stderr.contains("claims/truncated.yaml"), "{}", r.stderr);
    let r = p.run("x", &["search", "good"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("a-good-claim"));
    let r = p.run("x", &["show", "broken"]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("broken.yaml"));
}

#[test]
fn reads_return_null_and_lists_page_and_filter() {
    let p = Project::new();
    let s = p.source("x");
    for i in 0..5 {
        p.claim(&format!("Claim number {i}"), &s);
    }
    assert!(
        p.call("x", "kb.read_claim", json!({"id": "nope"}))
            .json()
            .is_null()
    );
    let page = p
        .call("x", "kb.list_claims", json!({"limit": 2, "offset": 1}))
        .json();
    let ids: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["claim-number-1", "claim-number-2"]);
    let f = p
        .call(
            "x",
            "kb.list_claims",
            json!({"filter": {"id": "claim-number-3"}}),
        )
        .json();
    assert_eq!(f.as_array().unwrap().len(), 1);
    assert_eq!(p.call("x", "kb.list_claims", json!({"limit": 0})).code, 2);
    assert_eq!(p.call("x", "kb.list_claims", json!({"offset": -1})).code, 2);
    let caps = p.call("x", "kb.capabilities", json!({})).json();
    assert_eq!(caps["review_gated"], true);
    assert_eq!(caps["spec"], "vouch-0.1");
    assert!(
        caps["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "kb.propose_claim")
    );
    let st = p.ok("x", &["status"]);
    assert_eq!(st["counts"]["claims"], 5);
    assert_eq!(st["pending"], 0);
    assert_eq!(p.call("x", "kb.nope", json!({})).code, 2);
}

#[test]
fn audit_verify_names_the_first_bad_line() {
    let p = Project::new();
    let s = p.source("x");
    for i in 0..3 {
        p.claim(&format!("Audited {i}"), &s);
    }
    let log = p.vouch_dir().join("audit.log.jsonl");
    let good = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    assert_eq!(lines.len(), 7);
    let check = |text: String, line: usize, what: &str| {
        std::fs::write(&log, text).unwrap();
        let r = p.run("x", &["--json", "audit", "verify"]);
        assert_eq!(r.code, 6, "{what}: {}", r.stdout);
        let v = r.json();
        assert_eq!(v["first_bad_line"], line, "{what}: {v}");
        let human = p.run("x", &["audit", "verify"]);
        assert!(
            human.stdout.contains(&format!("line {line}")),
            "{}",
            human.stdout
        );
    };
    check(
        good.replacen("Audited", "Edited", 0).replacen(
            "\"actor\":\"alice\"",
            "\"actor\":\"mallory\"",
            1,
        ),
        3,
        "edited",
    );
    let mut re = lines.clone();
    re.swap(3, 4);
    check(re.join("\n") + "\n", 4, "reordered");
    let mut del = lines.clone();
    del.remove(2);
    check(del.join("\n") + "\n", 3, "deleted");
    check(good[..good.len() - 20].to_string(), 7, "truncated");
    std::fs::write(&log, &good).unwrap();
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
}

#[test]
fn init_never_overwrites_and_discovery_walks_up() {
    let p = Project::new();
    let cfg = p.vouch_dir().join("config.yaml");
    std::fs::write(&cfg, "version: \"0.1\"\nkb_name: mine\n").unwrap();
    let r = p.run("x", &["init"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("Already initialized"), "{}", r.stdout);
    // A first init ends by saying what to do next: connect an agent,
    // review, and (in a git work tree) share.
    let repo = p.root().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(git.success());
    let r = p.run("x", &["init", repo.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let next = r.stdout.split("Next:").nth(1).unwrap_or_default();
    for step in ["vouch install-mcp", "vouch review", "git add .vouch"] {
        assert!(next.contains(step), "{}", r.stdout);
    }
    assert_eq!(
        std::fs::read_to_string(&cfg).unwrap(),
        "version: \"0.1\"\nkb_name: mine\n"
    );
    let deep = p.root().join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    let out = p
        .command("x")
        .current_dir(&deep)
        .args(["--json", "status"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kb_name"], "mine");
    // --kb and VOUCH_KB_PATH name it from elsewhere; nothing found is exit 7.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = p
        .command("x")
        .current_dir(elsewhere.path())
        .env("HOME", elsewhere.path())
        .args(["status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vouch init"));
    let out = p
        .command("x")
        .current_dir(elsewhere.path())
        .env("VOUCH_KB_PATH", p.root())
        .args(["status"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = p
        .command("x")
        .current_dir(elsewhere.path())
        .args(["--kb", p.vouch_dir().to_str().unwrap(), "status"])
        .output()
        .unwrap();
    assert!(out.status.success());
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
    assert!(r.stderr.contains("unknown entity type"), "{}", r.stderr);
    // A relation to entities that are still pending is invalid.
    let r = p.run(
        "agent",
        &[
            "--json",
            "propose-relation",
            "auth-service",
            "depends_on",
            "postgres",
        ],
    );
    assert_eq!(r.code, 2);
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
