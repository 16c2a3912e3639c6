//! Lifecycle after the gate: supersession by one rule, contradict, archive,
//! confirm, cite, a correction that supersedes, and sessions crystallized.

use super::*;

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
    assert_contains(&r.stderr, "only a current claim can be superseded");
    let v = p.refused(
        "agent",
        &["propose-claim", "Claim A2", "-e", &s, "--supersedes", &a],
    );
    assert_contains(&v.stdout, "only a current claim can be superseded");
    // An archived claim takes no other's place either.
    let r = p.run("alice", &["supersede", &b, &a]);
    assert_contains(&r.stderr, "a retired claim cannot replace another");
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
    assert_contains(&r.stderr, "would make a cycle");
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
    assert_contains(&r.stderr, "would make a cycle");
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
    assert_contains(&r.stdout, "claim no-such-claim does not exist");
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
    assert_contains(&r.stderr, "both supersede");
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
    assert_contains(&r.stderr, &format!("already superseded by {new}"));
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
