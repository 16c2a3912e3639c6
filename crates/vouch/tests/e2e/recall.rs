//! `vouch recall` (a session-start digest), `vouch completions` and
//! `vouch man` through the real binary.

use crate::common::{Project, assert_contains};

#[test]
fn recall_lists_pending_approved_superseded_and_context_within_budget() {
    let p = Project::new();
    let s = p.source("Deploys run at 09:00. Deploys run at 10:00. Backups run nightly.");
    let old = p.claim("Deploys run at 09:00", &s);
    let fix = p.ok(
        "agent",
        &[
            "propose-claim",
            "Deploys run at 10:00",
            "-e",
            &s,
            "--supersedes",
            &old,
        ],
    );
    p.ok("alice", &["approve", fix["proposal_id"].as_str().unwrap()]);
    p.claim("Backups run nightly", &s);
    let (pending, _) = p.propose("Backups are kept for a week", &s);

    let v = p.ok("x", &["recall", "--task", "when do deploys run"]);
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("## Waiting for review (1;"), "{text}");
    assert!(text.contains(&pending), "{text}");
    // Unreviewed text never reaches an agent's context from here.
    assert!(!text.contains("Backups are kept for a week"), "{text}");
    assert!(
        text.contains("- backups-run-nightly: Backups run nightly"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "- {old} → deploys-run-at-10-00: no longer \"Deploys run at 09:00\""
        )),
        "{text}"
    );
    assert!(
        text.contains("## Context for: when do deploys run"),
        "{text}"
    );
    assert!(text.contains("Deploys run at 10:00"), "{text}");
    assert_eq!(v["left_out"], 0);

    // Whatever the budget, the digest never passes it, and says what it left out.
    for max in [80, 120, 200, 333, 500, 1000] {
        let v = p.ok(
            "x",
            &[
                "recall",
                "--task",
                "deploys",
                "--max-chars",
                &max.to_string(),
            ],
        );
        let chars = v["text"].as_str().unwrap().chars().count();
        assert!(chars <= max, "{chars} > {max}: {v:#}");
        assert_eq!(v["chars"], chars);
        if v["left_out"].as_u64().unwrap() > 0 {
            assert!(
                v["text"]
                    .as_str()
                    .unwrap()
                    .contains("left out for max_chars"),
                "{v:#}"
            );
        }
    }
    let r = p.run("x", &["recall", "--max-chars", "10"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn completions_and_the_man_page_are_generated() {
    let p = Project::new();
    let bash = p.run("x", &["completions", "bash"]);
    assert_eq!(bash.code, 0);
    assert!(bash.stdout.contains("_vouch()") && bash.stdout.contains("install-mcp"));
    let fish = p.run("x", &["completions", "fish"]);
    assert_contains(&fish.stdout, "complete -c vouch");
    let man = p.run("x", &["man"]);
    assert_contains(&man.stdout, ".TH vouch 1");
    assert!(man.stdout.contains("review"), "every command is listed");
}
