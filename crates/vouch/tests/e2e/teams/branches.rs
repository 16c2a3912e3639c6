//! Branches that each recorded decisions merge, rebase and cherry-pick
//! without hand resolution, and the chain still catches every tampering.

use super::*;

/// Two reviewers approve on two branches; a plain `git merge` succeeds
/// (the union merge `.vouch/.gitattributes` asks for), the log holds both
/// branches' events, verifies as a graph, and the next write joins the
/// branches with an `audit.merge` event naming the other head. Keyed
/// checkpoints made on either branch still verify.
#[test]
fn two_branches_merge_without_hand_resolution_and_still_verify() {
    let p = repo();
    p.ok("x", &["audit", "checkpoint"]);
    commit(&p, "checkpoint");
    git(p.root(), &["checkout", "-q", "-b", "bob"]);
    let bobs = decide(&p, "Bob's service retries three times.", "bob");
    p.ok("x", &["audit", "checkpoint"]);
    commit(&p, "bob approves");
    git(p.root(), &["checkout", "-q", "main"]);
    let alices = decide(&p, "Alice's queue drains nightly.", "alice");
    commit(&p, "alice approves");
    let out = git(p.root(), &["merge", "-q", "bob", "-m", "merge bob"]);
    assert!(!out.contains("CONFLICT"), "{out}");

    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["unjoined"].as_array().map(Vec::len), Some(1), "{v}");
    for claim in [&alices, &bobs] {
        let c = p.call("x", "kb.read_claim", json!({"id": claim})).json();
        assert_eq!(c["status"], json!("working"), "{claim}: {c}");
    }
    assert!(p.doctor_kinds().contains(&"audit-unjoined".to_string()));

    // The next write joins the branches, before its own event.
    p.source("After the merge.\n");
    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["merges"], json!(1), "{v}");
    assert!(v.get("unjoined").is_none(), "{v}");
    let lines = log_lines(&p);
    let merge: Value = serde_json::from_str(&lines[lines.len() - 2]).unwrap();
    assert_eq!(merge["event"], json!("audit.merge"), "{merge}");
    assert_eq!(merge["data"]["parents"].as_array().unwrap().len(), 1);
    // Both checkpoints (main's and bob's) verify in the merged log.
    assert_eq!(v["checkpoints"]["verified"], json!(2), "{v}");
    let kinds = p.doctor_kinds();
    assert!(!kinds.iter().any(|k| k.starts_with("audit")), "{kinds:?}");
}

/// Three branches, merged one after another, and a `git pull --rebase`
/// of a clone whose reviewer approved while main moved on: each succeeds
/// on its own and leaves a log that verifies once joined.
#[test]
fn three_branches_and_a_rebase_merge_on_their_own() {
    let p = repo();
    for who in ["ann", "ben", "cy"] {
        git(p.root(), &["checkout", "-q", "-b", who, "main"]);
        decide(&p, &format!("{who} owns the {who} service."), who);
        commit(&p, who);
    }
    git(p.root(), &["checkout", "-q", "main"]);
    decide(&p, "Main keeps the release notes.", "alice");
    commit(&p, "main");
    for who in ["ann", "ben", "cy"] {
        git(
            p.root(),
            &["merge", "-q", who, "-m", &format!("merge {who}")],
        );
        // Join after each merge, as the next write would.
        p.source(&format!("after {who}\n"));
        commit(&p, &format!("after {who}"));
    }
    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["merges"], json!(3), "{v}");
    assert_eq!(p.ok("x", &["status"])["counts"]["claims"], json!(4));

    // A clone approves while main moves on; pull --rebase replays it.
    let c = Project::beside(&p);
    std::fs::remove_dir_all(c.vouch_dir()).unwrap();
    git(c.root(), &["clone", "-q", p.root().to_str().unwrap(), "."]);
    decide(&c, "The clone's reviewer approved this.", "dana");
    commit(&c, "dana");
    decide(&p, "Main approved this meanwhile.", "alice");
    commit(&p, "main again");
    git(c.root(), &["pull", "-q", "--rebase", "origin", "main"]);
    let v = verify(&c);
    assert_eq!(v["ok"], json!(true), "{v}");
    c.source("after the rebase\n");
    let v = verify(&c);
    assert_eq!(v["ok"], json!(true), "{v}");
    assert!(v.get("unjoined").is_none(), "{v}");
    assert_eq!(c.ok("x", &["status"])["counts"]["claims"], json!(6));
}

/// A cherry-picked decision merged back verifies; an event a merge kept
/// twice is reported, and `doctor --fix` keeps one. A merge made without the attribute stops
/// with conflict markers; committed as they are, the log is repaired by
/// `doctor --fix` keeping both sides, never by deleting events.
#[test]
fn cherry_picks_and_hand_merges_are_repaired_keeping_every_event() {
    let p = repo();
    git(p.root(), &["checkout", "-q", "-b", "fix"]);
    decide(&p, "The fix branch approved this.", "bob");
    commit(&p, "fix");
    let picked = git(p.root(), &["rev-parse", "HEAD"]);
    git(p.root(), &["checkout", "-q", "main"]);
    decide(&p, "Main approved this.", "alice");
    commit(&p, "main");
    git(p.root(), &["cherry-pick", picked.trim()]);
    git(p.root(), &["merge", "-q", "fix", "-m", "merge fix"]);
    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    // git's merge keeps one copy of a line both sides added; a merge that
    // kept both (another tool, or the lines apart) repeats an event.
    let mut lines = log_lines(&p);
    lines.insert(2, lines[0].clone());
    write_log(&p, &lines);
    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["duplicates"], json!([3]), "{v}");
    let events_before: std::collections::BTreeSet<String> = log_lines(&p).into_iter().collect();
    p.ok("x", &["doctor", "--fix"]);
    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    assert!(v.get("duplicates").is_none(), "{v}");
    let after: std::collections::BTreeSet<String> = log_lines(&p).into_iter().collect();
    assert!(events_before.is_subset(&after), "an event was lost");

    // Without the attribute: a conflict, committed with its markers.
    std::fs::remove_file(p.vouch_dir().join(".gitattributes")).unwrap();
    commit(&p, "drop the attribute");
    git(p.root(), &["checkout", "-q", "-b", "other"]);
    decide(&p, "The other branch approved this.", "bob");
    commit(&p, "other");
    git(p.root(), &["checkout", "-q", "main"]);
    decide(&p, "Main approved that.", "alice");
    commit(&p, "main 2");
    let merged = git_output(p.root(), &["merge", "-q", "other"]);
    assert!(!merged.status.success(), "the merge conflicted");
    let text = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).unwrap();
    assert!(text.contains("<<<<<<<"), "{text}");
    let events: std::collections::BTreeSet<String> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(str::to_string)
        .collect();
    commit(&p, "merge other by hand, markers and all");
    assert_eq!(verify_code(&p), 6, "a log with markers does not verify");
    assert!(
        p.doctor_kinds()
            .contains(&"gitattributes-missing".to_string())
    );
    p.ok("x", &["doctor", "--fix"]);
    let v = verify(&p);
    assert_eq!(v["ok"], json!(true), "{v}");
    let after: std::collections::BTreeSet<String> = log_lines(&p).into_iter().collect();
    assert!(events.is_subset(&after), "doctor --fix dropped an event");
    assert!(p.vouch_dir().join(".gitattributes").is_file());
    let kinds = p.doctor_kinds();
    assert!(
        !kinds
            .iter()
            .any(|k| k.starts_with("audit") || k.starts_with("git")),
        "{kinds:?}"
    );
}

fn verify_code(p: &Project) -> i32 {
    p.run("x", &["audit", "verify"]).code
}

/// After a merge, every kind of tampering is still caught: an edited
/// event, an event deleted from a branch, a joined head deleted, and two
/// events swapped. (An event added as a new branch is what `--base`
/// catches: see the pull request check.)
#[test]
fn tampering_after_a_merge_is_caught() {
    let p = repo();
    git(p.root(), &["checkout", "-q", "-b", "bob"]);
    decide(&p, "Bob approved one.", "bob");
    decide(&p, "Bob approved two.", "bob");
    commit(&p, "bob");
    git(p.root(), &["checkout", "-q", "main"]);
    decide(&p, "Alice approved one.", "alice");
    commit(&p, "alice");
    git(p.root(), &["merge", "-q", "bob", "-m", "merge"]);
    p.source("joined\n");
    assert_eq!(verify(&p)["ok"], json!(true));
    let good = log_lines(&p);
    let n = good.len();
    let merge_at = good.iter().position(|l| l.contains("audit.merge")).unwrap();
    let bob_line = good
        .iter()
        .position(|l| l.contains("\"actor\":\"bob\""))
        .unwrap();
    let mut cases: Vec<(&str, Vec<String>)> = Vec::new();
    let mut edited = good.clone();
    edited[bob_line] = edited[bob_line].replace("\"actor\":\"bob\"", "\"actor\":\"eve\"");
    cases.push(("edited", edited));
    // Deleting an event inside bob's branch (not its last).
    let bob_events: Vec<usize> = (0..n)
        .filter(|&i| good[i].contains("Bob approved") || good[i].contains("\"actor\":\"bob\""))
        .collect();
    let mut deleted = good.clone();
    deleted.remove(bob_events[0]);
    cases.push(("deleted from a branch", deleted));
    // Deleting the head the merge event joined (the line before it).
    let mut head = good.clone();
    head.remove(merge_at - 1);
    cases.push(("joined head deleted", head));
    let mut swapped = good.clone();
    swapped.swap(1, 2);
    cases.push(("reordered", swapped));
    for (what, lines) in cases {
        write_log(&p, &lines);
        let r = p.run("x", &["--json", "audit", "verify"]);
        assert_eq!(r.code, 6, "{what} was not caught: {}", r.stdout);
        assert_eq!(r.json()["ok"], json!(false), "{what}");
    }
    write_log(&p, &good);
    assert_eq!(verify(&p)["ok"], json!(true));
}

/// The same claim approved on two branches with different content: the
/// audit log merges on its own, the claim file conflicts; `doctor` names
/// the file, the approvals behind each side and how to settle it, and the
/// claim is served by neither side until a person does.
#[test]
fn knowledge_decided_differently_on_two_branches_is_reported_not_served() {
    let p = repo();
    let src = p.source("Deploys are frozen on Fridays.\n");
    commit(&p, "source");
    git(p.root(), &["checkout", "-q", "-b", "bob"]);
    // The same claim proposed on each branch, sure to another degree, and
    // approved there by that branch's reviewer.
    let approved = |confidence: &str, reviewer: &str| {
        let v = p.ok(
            "agent",
            &[
                "propose-claim",
                "Deploys are frozen on Fridays.",
                "-e",
                &src,
                "--confidence",
                confidence,
            ],
        );
        p.ok(reviewer, &["approve", &id(&v, "proposal_id")]);
        commit(&p, reviewer);
        id(&v, "claim_id")
    };
    let claim = approved("0.4", "bob");
    git(p.root(), &["checkout", "-q", "main"]);
    assert_eq!(
        approved("0.9", "alice"),
        claim,
        "the same claim id on both branches"
    );
    let merged = git_output(p.root(), &["merge", "bob"]);
    let said = String::from_utf8_lossy(&merged.stdout);
    assert!(
        said.contains(&format!(
            "CONFLICT (add/add): Merge conflict in .vouch/claims/{claim}.yaml"
        )),
        "{said}"
    );
    assert!(
        !said.contains("Merge conflict in .vouch/audit.log.jsonl"),
        "the log merged on its own: {said}"
    );
    commit(&p, "merge, claim unsettled");

    let doctor = p.run("x", &["--json", "doctor"]).json();
    let found = doctor["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "merge-conflict")
        .unwrap_or_else(|| panic!("{doctor:#}"))
        .clone();
    let msg = found["message"].as_str().unwrap();
    assert!(msg.contains(&format!("claims/{claim}.yaml")), "{msg}");
    assert!(
        msg.contains("proposal.approve by bob") && msg.contains("proposal.approve by alice"),
        "{msg}"
    );
    assert!(msg.contains("git checkout --ours"), "{msg}");
    let hits = p.ok("x", &["search", "frozen Fridays"]);
    assert!(
        !hits.to_string().contains(&claim),
        "a conflicted claim was served: {hits}"
    );
    let ctx = p.ok("x", &["context", "deploy freeze"]);
    assert!(!ctx.to_string().contains(&claim), "{ctx}");
}
