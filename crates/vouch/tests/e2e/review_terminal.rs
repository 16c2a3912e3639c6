//! `vouch review` through a pseudo-terminal (tests/pty/expect.py answers
//! its prompts as a person would): the quote is highlighted in its source
//! line, approve / reject with a reason / open / quit do what they say, the
//! gate holds; `--batch` approves ids from stdin, all or nothing.

use crate::common::Project;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// Run `vouch review` as `person` in a pty, answering `steps`.
fn in_pty(p: &Project, person: &str, steps: Value) -> (i64, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pty/expect.py");
    let mut c = Command::new("python3");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", p.root())
        .env("VOUCH_AGENT", person)
        .env("TERM", "xterm")
        .current_dir(p.root())
        .arg(script)
        .arg(steps.to_string())
        .args([crate::common::bin(), "review"]);
    let out = c.output().expect("python3 runs tests/pty/expect.py");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "expect.py printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let transcript = v["transcript"].as_str().unwrap_or("").to_string();
    assert!(v.get("error").is_none(), "{}\n{transcript}", v["error"]);
    (v["status"].as_i64().unwrap_or(-1), transcript)
}

const PROMPT: &str = "[a,r,s,o,g,q,?]? ";

#[test]
fn a_person_reviews_the_queue_in_a_terminal() {
    let p = Project::new();
    let s = p.source(
        "Runbook.\nThe cache directory is safe to delete between builds.\n\
         Releases are tagged from main.\nThe wiki moved to docs/ in March.\n",
    );
    let propose = |text: &str, quote: &str| -> String {
        p.ok(
            "agent",
            &["propose-claim", text, "--quote", &format!("{s}={quote}")],
        )["proposal_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let a = propose(
        "The cache can be deleted",
        "The cache directory is safe to delete between builds",
    );
    let b = propose(
        "Releases are tagged from dev",
        "Releases are tagged from main",
    );
    let c = propose("The wiki is in docs/", "The wiki moved to docs/ in March");

    // The proposer cannot approve its own: the gate holds here too.
    let (status, t) = in_pty(&p, "agent", json!([[PROMPT, "a\n"], [PROMPT, "q\n"]]));
    assert_eq!(status, 0, "{t}");
    assert!(t.contains("not approved: agent proposed"), "{t}");
    assert_eq!(p.ok("x", &["show", &a])["object"]["status"], "pending");

    let (status, t) = in_pty(
        &p,
        "alice",
        json!([
            [PROMPT, "a\n"],
            [PROMPT, "r\n"],
            ["Reason (required): ", "\n"],
            ["Reason (required): ", "the runbook says main\n"],
            [PROMPT, "o\n"],
            [PROMPT, "q\n"],
        ]),
    );
    assert_eq!(status, 0, "{t}");
    assert!(
        t.contains("3 proposal(s) waiting, oldest first; you review as alice"),
        "{t}"
    );
    // On a terminal the quote is in reverse video inside its source line.
    assert!(
        t.contains("\x1b[7mThe cache directory is safe to delete between builds\x1b[0m."),
        "{t:?}"
    );
    assert!(
        t.contains(&format!("approved {a} → the-cache-can-be-deleted")),
        "{t}"
    );
    assert!(t.contains("a rejection needs a reason"), "{t}");
    assert!(t.contains(&format!("rejected {b}")), "{t}");
    // `o` prints the whole source.
    assert!(
        t.contains("Runbook.") && t.contains("The wiki moved to docs/ in March."),
        "{t}"
    );
    assert!(
        t.contains("approved 1, rejected 1, skipped 0; 1 still pending"),
        "{t}"
    );

    let shown = |id: &str| p.ok("x", &["show", id])["object"].clone();
    assert_eq!(shown(&a)["decided_by"], "alice");
    assert_eq!(shown(&b)["status"], "rejected");
    assert_eq!(shown(&b)["reason"], "the runbook says main");
    assert_eq!(shown(&c)["status"], "pending");
    let events = p.audit_events("alice");
    assert_eq!(events, ["proposal.approve", "proposal.reject"]);
}

/// `o` opens a source cited by id (`-e SOURCE_ID`) as it opens one a
/// quote cites: it answered "(it cites no source)" though the evidence
/// list showed the source.
#[test]
fn o_opens_a_source_cited_by_id() {
    let p = Project::new();
    let s = p.source("Deploy notes.\nThe staging cluster runs in eu-west-1.\n");
    p.propose("Staging runs in eu-west-1", &s);
    let (status, t) = in_pty(&p, "alice", json!([[PROMPT, "o\n"], [PROMPT, "q\n"]]));
    assert_eq!(status, 0, "{t}");
    assert!(!t.contains("(it cites no source)"), "{t}");
    assert!(t.contains(&format!("--- source {s} (test)")), "{t}");
    assert!(t.contains("The staging cluster runs in eu-west-1."), "{t}");
}

/// A session's proposals come together under its task; `g` shows every
/// one of them in full and approves them together, all or nothing; the
/// proposal outside the session is its own group.
#[test]
fn a_session_is_reviewed_together_in_the_terminal() {
    let p = Project::new();
    let s = p.source("Service 1 is owned by team 1.\nService 2 is owned by team 2.\nService 3 is owned by team 3.\n");
    let session = p.start_session("agent", "map service ownership");
    let outside = p.ok(
        "other-agent",
        &[
            "propose-claim",
            "Team 1 owns everything",
            "--quote",
            &format!("{s}=Service 1 is owned by team 1"),
        ],
    )["proposal_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ids = Vec::new();
    for n in 1..=3 {
        let v = p.ok(
            "agent",
            &[
                "propose-claim",
                &format!("Team {n} owns service {n}"),
                "--quote",
                &format!("{s}=Service {n} is owned by team {n}"),
                "--session",
                &session,
            ],
        );
        ids.push(v["proposal_id"].as_str().unwrap().to_string());
    }
    let (status, t) = in_pty(
        &p,
        "alice",
        json!([
            [PROMPT, "s\n"],
            [PROMPT, "g\n"],
            ["all or nothing [y,N]? ", "y\n"],
        ]),
    );
    assert_eq!(status, 0, "{t}");
    assert!(
        t.contains("by other-agent, outside a session · 1 proposal(s)"),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "session {session} · 3 proposal(s) · task: map service ownership"
        )),
        "{t}"
    );
    for n in 1..=3 {
        assert!(t.contains(&format!("Team {n} owns service {n}")), "{t}");
    }
    assert!(
        t.contains("Approve these 3 together, all or nothing"),
        "{t}"
    );
    assert!(t.contains("approved 3 together"), "{t}");
    assert!(
        t.contains("approved 3, rejected 0, skipped 1; 1 still pending"),
        "{t}"
    );
    for id in &ids {
        assert_eq!(p.ok("x", &["show", id])["object"]["status"], "approved");
    }
    assert_eq!(
        p.ok("x", &["show", &outside])["object"]["status"],
        "pending"
    );
}

fn batch(p: &Project, person: &str, stdin: &str) -> crate::common::Run {
    p.run_with_stdin(person, &["--json", "review", "--batch"], stdin)
}

#[test]
fn batch_approves_the_ids_on_stdin_all_or_nothing() {
    let p = Project::new();
    let s = p.source("one fact. another fact.");
    let (a, _) = p.propose("One fact", &s);
    let (b, _) = p.propose("Another fact", &s);
    // One unknown id: nothing is approved.
    let before = p.snapshot();
    let r = batch(&p, "alice", &format!("{a}\nno-such-proposal\n"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(before, p.snapshot());
    let r = batch(&p, "alice", "\n# nothing here\n");
    assert_eq!(r.code, 2, "{}", r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(said.contains("no proposal ids on stdin"), "{said}");
    let r = batch(
        &p,
        "alice",
        &format!("# reviewed in the meeting\n{a}\n\n{b}\n"),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.json()["approved"].as_array().unwrap().len(),
        2,
        "{}",
        r.stdout
    );
    assert_eq!(p.ok("x", &["status"])["pending"], 0);
}
