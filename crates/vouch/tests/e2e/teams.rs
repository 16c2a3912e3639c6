//! Git for a team (issue 25), with the real `git`: a fresh clone writes,
//! a write that fails leaves no audit event behind, and branches that
//! each recorded decisions merge, rebase and cherry-pick without hand
//! resolution — with the chain still catching every tampering.

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// `git` with a fixed identity and no user or system config; it may fail
/// (a merge that conflicts).
fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .args(args)
        .output()
        .expect("git runs (scripts/test.sh installs it)")
}

/// `git` that must succeed; its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A KB committed right after `vouch init` (every kind folder empty, so
/// none is in git), cloned: the clone is a project of its own.
fn fresh_clone() -> (Project, Project) {
    let origin = Project::new();
    git(origin.root(), &["init", "-q", "-b", "main"]);
    git(origin.root(), &["add", "-A"]);
    git(origin.root(), &["commit", "-q", "-m", "vouch init"]);
    let clone = Project::beside(&origin);
    std::fs::remove_dir_all(clone.vouch_dir()).unwrap();
    git(
        clone.root(),
        &["clone", "-q", origin.root().to_str().unwrap(), "."],
    );
    let vouch = clone.vouch_dir();
    let mut entries: Vec<String> = std::fs::read_dir(&vouch)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [
            ".gitattributes",
            ".gitignore",
            "audit.log.jsonl",
            "config.yaml"
        ],
        "git kept no empty folder"
    );
    (origin, clone)
}

fn id(v: &Value, key: &str) -> String {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .to_string()
}

/// Every command that writes works in a fresh clone, making the folders
/// it needs; `doctor` finds nothing wrong with a KB whose folders are
/// missing, before or after.
#[test]
fn every_writing_command_works_in_a_fresh_clone() {
    let (origin, p) = fresh_clone();
    assert!(
        !p.doctor_kinds().iter().any(|k| k != "index-stale"),
        "{:?}",
        p.doctor_kinds()
    );
    let src = id(
        &p.ok(
            "agent",
            &[
                "source",
                "add",
                "--text",
                "Deploys are frozen on Fridays.\nRollbacks need two approvals.\n",
                "--locator",
                "notes.md",
            ],
        ),
        "id",
    );
    let ev = id(
        &p.ok("agent", &["quote", &src, "Deploys are frozen on Fridays."]),
        "evidence_id",
    );
    let session = id(
        &p.ok("agent", &["session", "start", "--task", "deploys"]),
        "session_id",
    );
    let approve = |v: Value| {
        id(
            &p.ok("alice", &["approve", &id(&v, "proposal_id")]),
            "object_id",
        )
    };
    let claim = approve(p.ok(
        "agent",
        &[
            "propose-claim",
            "Deploys are frozen on Fridays.",
            "-e",
            &ev,
            "--session",
            &session,
        ],
    ));
    let second = approve(p.ok(
        "agent",
        &["propose-claim", "Rollbacks need two approvals.", "-e", &src],
    ));
    let entity = approve(p.ok(
        "agent",
        &["propose-entity", "Deploy pipeline", "--type", "system"],
    ));
    approve(p.ok(
        "agent",
        &[
            "propose-relation",
            &claim,
            "references",
            &entity,
            "-e",
            &src,
        ],
    ));
    approve(p.ok(
        "agent",
        &[
            "propose-page",
            "Deploys",
            "--body",
            "# Deploys\n",
            "--claim",
            &claim,
        ],
    ));
    let rejected = p.ok("agent", &["propose-claim", "Fridays are fine.", "-e", &src]);
    p.ok(
        "alice",
        &["reject", &id(&rejected, "proposal_id"), "--reason", "wrong"],
    );
    // Lifecycle, each and its revert.
    p.ok("alice", &["confirm", &claim]);
    p.ok("alice", &["cite", &second, &ev]);
    p.ok("alice", &["contradict", &claim, &second]);
    let changes = p.ok("alice", &["changes", "--all"]);
    let last = changes
        .as_array()
        .and_then(|a| a.first())
        .map(|c| id(c, "event_id"))
        .unwrap_or_else(|| panic!("no changes: {changes}"));
    p.ok("alice", &["revert", &last]);
    let third = approve(p.ok(
        "agent",
        &[
            "propose-claim",
            "Rollbacks need two approvals and a ticket.",
            "-e",
            &src,
        ],
    ));
    p.ok("alice", &["supersede", &second, &third]);
    p.ok("alice", &["archive", &third]);
    p.ok("agent", &["crystallize", &session]);
    p.ok("agent", &["session", "end", &session]);
    // Knowledge files and a bundle from the origin, imported here.
    let facts = p.root().join("knowledge");
    std::fs::create_dir_all(facts.join("facts")).unwrap();
    std::fs::write(
        facts.join("index.json"),
        r#"{"version": 1, "last_updated": "2026-01-01", "total_facts": 1, "facts": [
            {"id": "ops:fact:1", "fact": "Staging resets nightly.", "category": "fact",
             "domain": "ops", "confidence": 0.9}]}"#,
    )
    .unwrap();
    let imported = p.run("agent", &["--json", "knowledge", "import", "knowledge"]);
    assert_eq!(imported.code, 0, "{}{}", imported.stdout, imported.stderr);
    let osrc = origin.source("Origin knows the pager rotation.\n");
    origin.claim("Origin knows the pager rotation.", &osrc);
    origin.ok("alice", &["export", "o.tar.gz"]);
    std::fs::copy(origin.root().join("o.tar.gz"), p.root().join("o.tar.gz")).unwrap();
    p.ok("alice", &["import-apply", "o.tar.gz"]);

    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], json!(true));
    let kinds = p.doctor_kinds();
    assert!(
        !kinds.iter().any(|k| k != "index-stale"),
        "doctor after every write: {kinds:?}\n{}",
        p.run("x", &["--json", "doctor"]).stdout
    );
}

/// A write that fails appends no event, and a retry logs exactly one:
/// a folder replaced by a file, and a full disk (a fail point).
#[test]
fn a_failed_write_leaves_no_audit_event() {
    let (_, p) = fresh_clone();
    let events = || p.ok("x", &["audit"]).as_array().unwrap().len();
    assert_eq!(events(), 0);

    // `sessions` is a file where the folder belongs.
    std::fs::write(p.vouch_dir().join("sessions"), "not a folder").unwrap();
    for _ in 0..2 {
        let r = p.run("agent", &["session", "start"]);
        assert_ne!(r.code, 0, "{}", r.stdout);
        assert!(r.stderr.contains("is not a folder"), "{}", r.stderr);
    }
    assert_eq!(events(), 0, "a failed session start left an event");
    std::fs::remove_file(p.vouch_dir().join("sessions")).unwrap();

    // The disk is full when the source's files are written.
    let add = |failing: bool| {
        let mut c = p.command("agent");
        if failing {
            c.env("VOUCH_FAILPOINT", "store.write=enospc");
        }
        Run::from(
            c.args([
                "--json",
                "source",
                "add",
                "--text",
                "Full disks lose nothing.",
                "--locator",
                "t",
            ])
            .output()
            .unwrap(),
        )
    };
    for _ in 0..3 {
        let r = add(true);
        assert_ne!(r.code, 0, "{}", r.stdout);
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(said.contains("No space left"), "{said}");
    }
    assert_eq!(events(), 0, "failed source adds left events");
    let r = add(false);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(p.audit_events("agent"), ["source.register"]);
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], json!(true));
}

/// An event whose object is missing (a crash between the two, or files
/// removed by hand) is reported by `doctor`.
#[test]
fn doctor_reports_an_event_naming_a_missing_object() {
    let p = Project::new();
    let src = p.source("Evidence that will vanish.\n");
    std::fs::remove_dir_all(p.vouch_dir().join("sources").join(&src)).unwrap();
    let kinds = p.doctor_kinds();
    assert!(
        kinds.contains(&"event-without-object".to_string()),
        "{kinds:?}"
    );
}

// ----- branches ------------------------------------------------------------

/// A project under git with its KB committed on `main`.
fn repo() -> Project {
    let p = Project::new();
    git(p.root(), &["init", "-q", "-b", "main"]);
    commit(&p, "vouch init");
    p
}

fn commit(p: &Project, message: &str) {
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "--allow-empty", "-m", message]);
}

/// A source and an approved claim citing it, by `reviewer`; the claim id.
fn decide(p: &Project, text: &str, reviewer: &str) -> String {
    let src = p.source(&format!("{text}\n"));
    let (proposal, claim) = p.propose(text, &src);
    p.ok(reviewer, &["approve", &proposal]);
    claim
}

fn verify(p: &Project) -> Value {
    p.ok("x", &["audit", "verify"])
}

fn log_lines(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_log(p: &Project, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(p.vouch_dir().join("audit.log.jsonl"), text).unwrap();
}

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
    let v = p.ok(
        "agent",
        &[
            "propose-claim",
            "Deploys are frozen on Fridays.",
            "-e",
            &src,
            "--confidence",
            "0.4",
        ],
    );
    let claim = id(&v, "claim_id");
    p.ok("bob", &["approve", &id(&v, "proposal_id")]);
    commit(&p, "bob");
    git(p.root(), &["checkout", "-q", "main"]);
    let v = p.ok(
        "agent",
        &[
            "propose-claim",
            "Deploys are frozen on Fridays.",
            "-e",
            &src,
            "--confidence",
            "0.9",
        ],
    );
    assert_eq!(
        id(&v, "claim_id"),
        claim,
        "the same claim id on both branches"
    );
    p.ok("alice", &["approve", &id(&v, "proposal_id")]);
    commit(&p, "alice");
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

// ----- the pull request check ----------------------------------------------

fn base_check(p: &Project, rev: &str) -> (i32, Value) {
    let r = p.run("x", &["--json", "audit", "verify", "--base", rev]);
    (r.code, r.json())
}

fn problems(v: &Value) -> String {
    v["base"]["problems"].to_string()
}

/// `vouch audit verify --base main` passes a branch that only added
/// through the gate, and fails (exit 6), naming each problem, on a
/// hand-written claim, an edited decision record, a rewritten old event,
/// a decision by its own proposer, and a source whose bytes are not its id.
#[test]
fn the_pull_request_check_passes_the_gate_and_names_every_bypass() {
    let p = repo();
    decide(&p, "Main knows this already.", "alice");
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    let claim = decide(&p, "The feature branch approved this.", "bob");
    commit(&p, "feature");
    let (code, v) = base_check(&p, "main");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["base"]["ok"], json!(true), "{v:#}");
    assert!(
        v["base"]["decisions"]
            .to_string()
            .contains(&format!("bob proposal.approve {claim}")),
        "{v:#}"
    );
    let clean = git(p.root(), &["rev-parse", "HEAD"]);

    // A claim written by hand.
    let claims = p.vouch_dir().join("claims");
    let text = std::fs::read_to_string(claims.join(format!("{claim}.yaml"))).unwrap();
    // A copy of the approved claim's file, as `id` saying `said`.
    let by_hand = |id: &str, said: &str| {
        std::fs::write(
            claims.join(format!("{id}.yaml")),
            text.replace(&claim, id)
                .replace("The feature branch approved this.", said),
        )
        .unwrap();
    };
    by_hand(
        "agents-may-deploy-on-fridays",
        "Agents may deploy on Fridays.",
    );
    refused_against_main(
        &p,
        "a claim by hand",
        "claims/agents-may-deploy-on-fridays.yaml: this claim was added with no event",
        Some(clean.trim()),
    );

    // Proposed through the gate, then written by hand: a proposal's
    // creation names the claim but does not write it.
    let src = p.source("Proposed, never approved.\n");
    let (_, proposed) = p.propose("Proposed, never approved.", &src);
    by_hand(&proposed, "Proposed, never approved.");
    refused_against_main(
        &p,
        "a proposed claim written by hand",
        &format!("claims/{proposed}.yaml: this claim was added with no event"),
        Some(clean.trim()),
    );

    // A decision record edited after it was made (one REV already had).
    let decided = p.vouch_dir().join("decided");
    git(p.root(), &["checkout", "-q", "main"]);
    let first = std::fs::read_dir(&decided)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    git(p.root(), &["checkout", "-q", "feature"]);
    edit(
        &first,
        "status: approved",
        "status: approved\nreason: rubber-stamped",
    );
    refused_against_main(
        &p,
        "edit a decision",
        "a decision record was edited",
        Some(clean.trim()),
    );

    // An old event rewritten (a recomputed chain verifies on its own).
    let mut lines = log_lines(&p);
    let mut old: Value = serde_json::from_str(&lines[0]).unwrap();
    old["actor"] = json!("mallory");
    lines[0] = rehash(old);
    for i in 1..lines.len() {
        let mut ev: Value = serde_json::from_str(&lines[i]).unwrap();
        let prev: Value = serde_json::from_str(&lines[i - 1]).unwrap();
        ev["prev_hash"] = prev["hash"].clone();
        lines[i] = rehash(ev);
    }
    write_log(&p, &lines);
    assert_eq!(verify(&p)["ok"], json!(true), "the rewrite verifies alone");
    refused_against_main(
        &p,
        "rewrite history",
        "was removed or changed: history was rewritten",
        Some(clean.trim()),
    );

    // A decision by its own proposer, forged into the log.
    let src = p.source("Forged decisions are caught.\n");
    let (proposal, _) = p.propose("Forged decisions are caught.", &src);
    let mut lines = log_lines(&p);
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let mut forged = last.clone();
    forged["event"] = json!("proposal.approve");
    forged["id"] = json!("evt-forged");
    forged["actor"] = last["actor"].clone();
    forged["object_ids"] = json!([proposal]);
    forged["prev_hash"] = last["hash"].clone();
    lines.push(rehash(forged));
    write_log(&p, &lines);
    refused_against_main(
        &p,
        "self-approval",
        "which they proposed themselves",
        Some(clean.trim()),
    );

    // A source whose bytes are not its id.
    let src = p.source("Sources are content-addressed.\n");
    std::fs::write(
        p.vouch_dir().join("sources").join(&src).join("content"),
        "Sources are whatever I say.\n",
    )
    .unwrap();
    refused_against_main(
        &p,
        "swap a source's bytes",
        "its bytes do not hash to its id",
        None,
    );

    // A revision git does not know is a clear error.
    let r = p.run("x", &["audit", "verify", "--base", "no-such-branch"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("git knows no such revision"),
        "{}",
        r.stderr
    );
}

/// Commit what the test did as `message`, check it against `main`: exit
/// 6 with a problem saying `says`; then back to `reset` if given.
fn refused_against_main(p: &Project, message: &str, says: &str, reset: Option<&str>) {
    commit(p, message);
    let (code, v) = base_check(p, "main");
    assert_eq!(code, 6, "{message}: {v:#}");
    assert!(problems(&v).contains(says), "{message}: {v:#}");
    if let Some(rev) = reset {
        git(p.root(), &["reset", "-q", "--hard", rev]);
    }
}

fn rehash(mut ev: Value) -> String {
    ev["hash"] = json!(vouch_core::audit::event_hash(&ev));
    vouch_core::audit::canonical_json(&ev)
}

/// The check knows what a lifecycle change may touch: a real `confirm`
/// passes, but a claim's text edited by hand riding on a `claim.confirm`
/// event (forged, recording the edit's own sha256 as what it wrote) fails,
/// naming the field. Files `.gitignore` keeps out of git, committed anyway
/// (`git add -f`: a derived `state.db`, a pending proposal), fail too.
#[test]
fn the_pull_request_check_refuses_edits_riding_on_lifecycle_events_and_committed_caches() {
    let p = repo();
    let claim = decide(&p, "Access tokens expire after 24 hours.", "alice");
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    p.ok("alice", &["confirm", &claim]);
    commit(&p, "confirm");
    let (code, v) = base_check(&p, "main");
    assert_eq!(code, 0, "a real confirm: {v:#}");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);

    let file = p.vouch_dir().join(format!("claims/{claim}.yaml"));
    edit(&file, "expire after 24 hours", "never expire");
    let sha = vouch_core::ids::sha256_hex(&std::fs::read(&file).unwrap());
    forge_confirm(
        &p,
        &claim,
        json!({"written": {format!("claims/{claim}.yaml"): sha}}),
    );
    refused_against_main(
        &p,
        "an edit riding on a confirm",
        &format!("claims/{claim}.yaml: this claim changed in text since the base"),
        Some(clean.trim()),
    );

    // Its citations swapped by hand, riding on the real confirm: the
    // lifecycle fields must be what that event recorded setting.
    let other = p.source("Tokens never expire, says this other note.\n");
    let text = std::fs::read_to_string(&file).unwrap();
    let cited = text
        .lines()
        .find(|l| l.starts_with("- "))
        .unwrap()
        .to_string();
    std::fs::write(&file, text.replace(&cited, &format!("- {other}"))).unwrap();
    refused_against_main(
        &p,
        "citations swapped by hand",
        &format!("claims/{claim}.yaml: this claim is not what event"),
        Some(clean.trim()),
    );
    // The same, riding on a lifecycle event that records no bytes (as an
    // older vouch wrote them): it changes nothing (issue 39 item 4).
    git(p.root(), &["checkout", "-q", "-b", "legacy", "main"]);
    let text = std::fs::read_to_string(&file).unwrap();
    let approved_state = json!({
        "status": "working", "superseded_by": null, "supersedes": [], "contradicts": [],
        "evidence": [cited.trim_start_matches("- ")], "last_confirmed_at": null,
    });
    forge_confirm(
        &p,
        &claim,
        json!({"before": {claim.clone(): approved_state}, "after": {claim.clone(): approved_state}}),
    );
    std::fs::write(&file, text.replace(&cited, &format!("- {other}"))).unwrap();
    refused_against_main(
        &p,
        "citations swapped on a legacy event",
        &format!("claims/{claim}.yaml: this claim was changed with no event behind it"),
        None,
    );
    git(p.root(), &["checkout", "-q", "-f", "feature"]);
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // Approved on the branch, then edited before the commit.
    let fresh = decide(&p, "Refresh tokens last a week.", "alice");
    edit(
        &p.vouch_dir().join(format!("claims/{fresh}.yaml")),
        "last a week",
        "last forever",
    );
    refused_against_main(
        &p,
        "an edit after its approval",
        &format!("claims/{fresh}.yaml: this claim is not what event"),
        Some(clean.trim()),
    );

    let src = p.source("Pending things stay local.\n");
    p.propose("Pending things stay local.", &src);
    git(
        p.root(),
        &["add", "-f", ".vouch/state.db", ".vouch/proposed"],
    );
    commit(&p, "caches");
    let (code, v) = base_check(&p, "main");
    assert_eq!(code, 6, "{v:#}");
    for planted in ["state.db: a file vouch keeps out of git", "proposed/"] {
        assert!(problems(&v).contains(planted), "{planted}: {v:#}");
    }
}

/// Append a `claim.confirm` of `claim` with `data`, the chain recomputed,
/// as someone with write access to the log would.
fn forge_confirm(p: &Project, claim: &str, data: Value) {
    let mut lines = log_lines(p);
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let forged = json!({
        "id": format!("evt-forged-confirm-{}", lines.len()),
        "event": "claim.confirm",
        "actor": "alice",
        "created_at": last["created_at"],
        "object_ids": [claim],
        "dry_run": false,
        "reversible": true,
        "data": data,
        "prev_hash": last["hash"],
    });
    lines.push(rehash(forged));
    write_log(p, &lines);
}
