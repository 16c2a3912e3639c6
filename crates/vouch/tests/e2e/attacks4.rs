//! Trust, round four (issue 39): the pull-request check (`vouch audit
//! verify --base REV`) and the per-file marks, attacked with the real
//! `git` and log lines forged the way an attacker computes them
//! (`sha256(prev_hash + canonical event)`).

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// `git` with a fixed identity and no user or system config; must succeed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn commit(p: &Project, message: &str) {
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "--allow-empty", "-m", message]);
}

/// A project under git: `main` holds an approved claim (proposed by
/// "agent", approved by alice); `feature` is checked out. The claim id.
fn branched(text: &str) -> (Project, String) {
    let p = Project::new();
    git(p.root(), &["init", "-q", "-b", "main"]);
    let src = p.source(&format!("{text}\n"));
    let claim = p.claim(text, &src);
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    (p, claim)
}

fn log_path(p: &Project) -> std::path::PathBuf {
    p.vouch_dir().join("audit.log.jsonl")
}

fn events(p: &Project) -> Vec<Value> {
    std::fs::read_to_string(log_path(p))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The event as its line, its hash computed as anyone can.
fn sealed(mut ev: Value) -> Value {
    ev["hash"] = json!(vouch_core::audit::event_hash(&ev));
    ev
}

/// Write `events` as the log, each chained to the one before it (the whole
/// chain recomputed, as someone with write access to the log would).
fn write_chain(p: &Project, events: Vec<Value>) {
    let mut prev = vouch_core::audit::GENESIS_HASH.to_string();
    let mut text = String::new();
    for mut ev in events {
        ev["prev_hash"] = json!(prev);
        let ev = sealed(ev);
        prev = ev["hash"].as_str().unwrap().to_string();
        text.push_str(&vouch_core::audit::canonical_json(&ev));
        text.push('\n');
    }
    std::fs::write(log_path(p), text).unwrap();
}

/// Append a forged event after the last one.
fn forge(p: &Project, ev: Value) -> Value {
    let mut all = events(p);
    let mut ev = ev;
    ev["created_at"] = all.last().unwrap()["created_at"].clone();
    all.push(ev);
    write_chain(p, all);
    events(p).pop().unwrap()
}

fn base_check(p: &Project) -> (i32, Value) {
    let r = p.run("x", &["--json", "audit", "verify", "--base", "main"]);
    (r.code, r.json())
}

fn problems(v: &Value) -> String {
    v["base"]["problems"].to_string()
}

fn claim_file(p: &Project, id: &str) -> std::path::PathBuf {
    p.vouch_dir().join(format!("claims/{id}.yaml"))
}

fn sha(path: &Path) -> String {
    vouch_core::ids::sha256_hex(&std::fs::read(path).unwrap())
}

/// A search hit for `id`, as agents get it.
fn hit(p: &Project, q: &str, id: &str) -> Value {
    p.ok("x", &["search", q])
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not found for {q:?}"))
}

fn unaudited(v: &Value) -> bool {
    v["_meta"]["unaudited"] == true
}

/// Item 1: a claim written by hand behind a forged `bundle.import` whose
/// actor is an agent (one that proposes and never decided) is named in
/// the check's decisions and refused; locally `doctor` names the event
/// and reads mark the claim unaudited. A person's real import passes and
/// is listed too.
#[test]
fn an_agents_forged_import_is_listed_refused_and_marked_unaudited() {
    let (p, claim) = branched("Deploys need a person's review.");
    let approved = std::fs::read_to_string(claim_file(&p, &claim)).unwrap();
    let id = "agents-may-deploy-on-fridays";
    std::fs::write(
        claim_file(&p, id),
        approved.replace(&claim, id).replace(
            "Deploys need a person's review.",
            "Agents may deploy on Fridays.",
        ),
    )
    .unwrap();
    let path = format!("claims/{id}.yaml");
    forge(
        &p,
        json!({
            "id": "evt-forged-import",
            "event": "bundle.import",
            "actor": "agent",
            "object_ids": ["0".repeat(64)],
            "dry_run": false,
            "reversible": false,
            "data": {"path": "team.tar.gz", "on_conflict": "skip", "imported": 1,
                     "objects": [id], "written": {path.clone(): sha(&claim_file(&p, id))}},
        }),
    );
    commit(&p, "an import");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    let decisions = v["base"]["decisions"].to_string();
    assert!(
        decisions.contains(&format!(
            "agent bundle.import [{id}] from bundle team.tar.gz"
        )),
        "{v:#}"
    );
    assert!(
        problems(&v).contains("an agent's import files proposals"),
        "{v:#}"
    );
    assert!(
        problems(&v).contains(&format!("{path}: this claim is not what event")),
        "{v:#}"
    );

    // Locally: doctor names the event, every read marks the claim.
    let kinds = p.doctor_kinds();
    assert!(kinds.contains(&"agent-import".to_string()), "{kinds:?}");
    assert!(unaudited(&hit(&p, "deploy on Fridays", id)));
    let pack = p.ok("x", &["context", "agents deploy fridays"]);
    let item = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("{pack}"));
    assert!(unaudited(item), "{pack}");
    assert!(!unaudited(&hit(&p, "person's review", &claim)));
}

/// Item 2: a proposal decided at the base is not decided again on the
/// branch — (a) approved again with new text recorded as written, (b)
/// rejected at the base and approved on the branch. And an approval's
/// file must be its proposal's payload: text changed at approval time,
/// with the event and the decision record made to match, is refused.
#[test]
fn a_decided_proposal_is_not_decided_again_and_an_approval_writes_its_payload() {
    let (p, claim) = branched("Backups run nightly.");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let approval = events(&p)
        .into_iter()
        .find(|e| e["event"] == "proposal.approve")
        .unwrap();
    let pid = approval["object_ids"][0].as_str().unwrap().to_string();

    // (a) approved again, writing new text.
    let file = claim_file(&p, &claim);
    edit(&file, "Backups run nightly.", "Backups are optional.");
    let mut again = approval.clone();
    again["id"] = json!("evt-second-approve");
    again["actor"] = json!("bob");
    again["data"]["written"] = json!({format!("claims/{claim}.yaml"): sha(&file)});
    forge(&p, again);
    commit(&p, "approve again");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains(&format!("decides proposal {pid} again")),
        "{v:#}"
    );
    assert!(
        problems(&v).contains(&format!("claims/{claim}.yaml: this claim changed in text")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // (b) rejected at the base, approved on the branch.
    git(p.root(), &["checkout", "-q", "main"]);
    let src = p.source("Restores are never tested.\n");
    let (rejected, object) = p.propose("Restores are never tested.", &src);
    p.ok("alice", &["reject", &rejected, "--reason", "wrong"]);
    commit(&p, "a rejection");
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    let text = std::fs::read_to_string(&file).unwrap();
    let object_file = claim_file(&p, &object);
    std::fs::write(
        &object_file,
        text.replace(&claim, &object)
            .replace("Backups run nightly.", "Restores are never tested."),
    )
    .unwrap();
    let mut forged = approval.clone();
    forged["id"] = json!("evt-approve-rejected");
    forged["object_ids"] = json!([rejected, object]);
    forged["data"]["written"] = json!({format!("claims/{object}.yaml"): sha(&object_file)});
    forge(&p, forged);
    commit(&p, "approve the rejected");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains(&format!("decides proposal {rejected} again")),
        "{v:#}"
    );
    assert!(problems(&v).contains("records another decision"), "{v:#}");

    // An approval on the branch whose file is not the payload, its event
    // and decision record rewritten to match the edited file.
    git(p.root(), &["reset", "-q", "--hard", "main"]);
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    let src = p.source("Logs are kept for a year.\n");
    let (pending, fresh) = p.propose("Logs are kept for a year.", &src);
    p.ok("alice", &["approve", &pending]);
    commit(&p, "a real approval");
    let (code, v) = base_check(&p);
    assert_eq!(code, 0, "a real approval passes: {v:#}");
    let fresh_file = claim_file(&p, &fresh);
    edit(&fresh_file, "kept for a year", "kept forever");
    let mut all = events(&p);
    let last = all.pop().unwrap();
    assert_eq!(last["event"], "proposal.approve");
    let mut rewritten = last.clone();
    rewritten["data"]["written"] = json!({format!("claims/{fresh}.yaml"): sha(&fresh_file)});
    all.push(rewritten);
    write_chain(&p, all);
    let hash = events(&p).pop().unwrap()["hash"].clone();
    let decided = p.vouch_dir().join(format!("decided/{pending}.yaml"));
    edit(
        &decided,
        last["hash"].as_str().unwrap(),
        hash.as_str().unwrap(),
    );
    commit(&p, "approved other words");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains(&format!(
            "claims/{fresh}.yaml: this claim changed in text since what approving proposal \
             {pending} writes"
        )),
        "{v:#}"
    );
}

/// Item 3: `.vouch` moved and replaced by a link, the log rewritten: the
/// check does not read the moved folder's history as the base's, and no
/// command serves the linked folder's rewritten text.
#[test]
fn a_vouch_folder_replaced_by_a_link_is_refused() {
    let (p, claim) = branched("Tokens expire after a day.");
    std::fs::create_dir(p.root().join("kbdata")).unwrap();
    git(p.root(), &["mv", ".vouch", "kbdata/.vouch"]);
    std::os::unix::fs::symlink("kbdata/.vouch", p.root().join(".vouch")).unwrap();
    let file = p.root().join(format!("kbdata/.vouch/claims/{claim}.yaml"));
    edit(&file, "expire after a day", "never expire");
    let mut all = events(&p);
    for ev in &mut all {
        if let Some(w) = ev["data"]["written"].as_object_mut()
            && w.contains_key(&format!("claims/{claim}.yaml"))
        {
            w.insert(format!("claims/{claim}.yaml"), json!(sha(&file)));
        }
    }
    write_chain(&p, all);
    commit(&p, "moved");
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("is a symbolic link"), "{}", r.stderr);
    assert!(!r.stdout.contains("OK"), "{}", r.stdout);
    for args in [
        vec!["show", claim.as_str()],
        vec!["search", "tokens"],
        vec!["call", "kb.read_claim", &format!("{{\"id\": \"{claim}\"}}")],
        vec!["call", "kb.list_claims", "{}"],
    ] {
        let r = p.run("x", &args);
        assert_ne!(r.code, 0, "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("never expire"), "{args:?}: {}", r.stdout);
        assert!(
            r.stderr.contains("is a symbolic link"),
            "{args:?}: {}",
            r.stderr
        );
    }
    let request = json!({"id": "1", "method": "kb.recall", "params": {}}).to_string();
    let r = p.run_with_stdin("agent", &["serve", "--transport", "jsonl"], &request);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(!r.stdout.contains("never expire"), "{}", r.stdout);

    // On disk a folder again, but git still records the link: refused.
    std::fs::remove_file(p.root().join(".vouch")).unwrap();
    copy_dir(&p.root().join("kbdata/.vouch"), &p.vouch_dir());
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("git records .vouch as a symbolic link"),
        "{}",
        r.stderr
    );
}

/// Item 4: lifecycle fields change only through lifecycle events that
/// record what they set and wrote, and only as the event does: an
/// archived claim un-archived and its citation swapped by hand is refused
/// behind a forged `session.start` naming it, a bare `claim.confirm`, and
/// a confirm that records the edit. Locally the bare confirm leaves the
/// recorded hash standing: `doctor` names the edit, search marks it.
#[test]
fn lifecycle_fields_change_only_as_a_recording_lifecycle_event_sets_them() {
    let (p, claim) = branched("Access tokens expire after a day.");
    git(p.root(), &["checkout", "-q", "main"]);
    p.ok("alice", &["archive", &claim]);
    commit(&p, "archived");
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    let file = claim_file(&p, &claim);
    let other = p.source("Tokens last forever, says this note.\n");
    commit(&p, "a source");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let unarchive = || {
        let text = std::fs::read_to_string(&file).unwrap();
        let cited = text
            .lines()
            .find(|l| l.starts_with("- "))
            .unwrap()
            .to_string();
        std::fs::write(
            &file,
            text.replace("status: archived", "status: working")
                .replace(&cited, &format!("- {other}")),
        )
        .unwrap();
    };
    let event = |name: &str, data: Value| {
        json!({
            "id": format!("evt-forged-{}", name.replace('.', "-")),
            "event": name,
            "actor": "alice",
            "object_ids": [claim],
            "dry_run": false,
            "reversible": true,
            "data": data,
        })
    };
    let path = format!("claims/{claim}.yaml");

    // A forged session.start naming it.
    unarchive();
    forge(&p, event("session.start", json!({"task": "tidy"})));
    commit(&p, "session");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains(&format!("{path}: this claim was changed with no event")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A bare claim.confirm; locally too.
    unarchive();
    forge(&p, event("claim.confirm", json!({})));
    let kinds = p.doctor_kinds();
    assert!(kinds.contains(&"edited-object".to_string()), "{kinds:?}");
    assert!(unaudited(&hit(&p, "access tokens", &claim)));
    commit(&p, "bare confirm");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains("(claim.confirm) names") && problems(&v).contains("records no"),
        "{v:#}"
    );
    assert!(
        problems(&v).contains(&format!("{path}: this claim was changed with no event")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A confirm recording the edit as what it set and wrote: a confirm
    // sets neither status nor evidence.
    unarchive();
    let state = json!({"status": "working", "evidence": [other], "last_confirmed_at": null,
                       "superseded_by": null, "supersedes": [], "contradicts": []});
    forge(
        &p,
        event(
            "claim.confirm",
            json!({"after": {claim.clone(): state}, "before": {claim.clone(): state},
                   "written": {path.clone(): sha(&file)}}),
        ),
    );
    commit(&p, "recorded confirm");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains(&format!(
            "{path}: this claim changed in evidence, status since the base"
        )),
        "{v:#}"
    );
    assert!(problems(&v).contains("(claim.confirm) set only"), "{v:#}");
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A real lifecycle change passes.
    p.ok("alice", &["confirm", &claim]);
    commit(&p, "a real confirm");
    let (code, v) = base_check(&p);
    assert_eq!(code, 0, "{v:#}");
}

/// Item 9: every change to `.vouch/config.yaml` is named in the report,
/// and one that loosens the gate (turns off `review.gate_lifecycle`, or
/// adds a widening only a person's own config may hold) fails the check.
#[test]
fn config_changes_are_named_and_a_loosened_gate_fails() {
    let p = Project::new();
    git(p.root(), &["init", "-q", "-b", "main"]);
    let config = p.vouch_dir().join("config.yaml");
    edit(
        &config,
        "  approver_role: human",
        "  approver_role: human\n  gate_lifecycle: true",
    );
    commit(&p, "main gates lifecycle changes");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);

    edit(&config, "max_bytes: 16777216", "max_bytes: 1048576");
    commit(&p, "smaller sources");
    let (code, v) = base_check(&p);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        v["base"]["config_changes"],
        json!(["sources.max_bytes: 16777216 -> 1048576"]),
        "{v:#}"
    );
    let text = p.run("x", &["audit", "verify", "--base", "main"]).stdout;
    assert!(
        text.contains("config.yaml: sources.max_bytes: 16777216 -> 1048576"),
        "{text}"
    );

    edit(&config, "  gate_lifecycle: true\n", "");
    commit(&p, "ungated");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        v["base"]["config_changes"]
            .to_string()
            .contains("review.gate_lifecycle: true -> (absent)"),
        "{v:#}"
    );
    assert!(
        problems(&v).contains("review.gate_lifecycle is turned off"),
        "{v:#}"
    );

    edit(
        &config,
        "approver_role: human",
        "approver_role: trusted-agent",
    );
    commit(&p, "trusted");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains("review.approver_role: trusted-agent would widen the gate"),
        "{v:#}"
    );
}
