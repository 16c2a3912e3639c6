//! Trust, round four (issue 39): the pull-request check (`vouch audit
//! verify --base REV`) and the per-file marks, attacked with the real
//! `git` and log lines forged the way an attacker computes them
//! (`sha256(prev_hash + canonical event)`).

use crate::common::*;
use crate::teams::git;
use serde_json::{Value, json};
use std::path::Path;

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

// ---------------------------------------------------------------------
// Round five: a fresh attack review of the pull-request check.
// ---------------------------------------------------------------------

/// Commit as `message`; the check must pass. Its answer.
fn passes(p: &Project, message: &str) -> Value {
    commit(p, message);
    let (code, v) = base_check(p);
    assert_eq!(code, 0, "{v:#}");
    v
}

/// Commit as `message`; the check must fail naming `expected`.
fn refused(p: &Project, message: &str, expected: &str) -> Value {
    commit(p, message);
    let (code, v) = base_check(p);
    assert_eq!(code, 6, "{v:#}");
    assert!(problems(&v).contains(expected), "{expected}: {v:#}");
    v
}

/// `branched`, with alice archiving the claim on `main` first; `feature`
/// is checked out again. The archive event.
fn archived_at_base(p: &Project, claim: &str) -> Value {
    git(p.root(), &["checkout", "-q", "main"]);
    p.ok("alice", &["archive", claim]);
    commit(p, "archived");
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    events(p)
        .into_iter()
        .rfind(|e| e["event"] == "claim.archive")
        .unwrap()
}

/// A claim's lifecycle state as lifecycle events record it, read from
/// its file.
fn state(p: &Project, claim: &str) -> Value {
    let text = std::fs::read_to_string(claim_file(p, claim)).unwrap();
    let status = text
        .lines()
        .find_map(|l| l.strip_prefix("status: "))
        .unwrap()
        .to_string();
    let evidence: Vec<String> = text
        .lines()
        .skip_while(|l| *l != "evidence:")
        .skip(1)
        .map_while(|l| l.strip_prefix("- "))
        .map(str::to_string)
        .collect();
    json!({"status": status, "evidence": evidence, "last_confirmed_at": null,
           "superseded_by": null, "supersedes": [], "contradicts": []})
}

/// A lifecycle event as an attacker writes it: what it set (`after`),
/// what it found (`before`) and the file it wrote, hashed.
fn lifecycle(p: &Project, name: &str, actor: &str, ids: Value, data: Value) -> Value {
    let mut ev = json!({
        "id": format!("evt-forged-{}", name.replace('.', "-")),
        "event": name,
        "actor": actor,
        "object_ids": ids,
        "dry_run": false,
        "reversible": true,
        "data": data,
    });
    // `data.written`: every claim `data.after` names, hashed as it is now.
    let written: serde_json::Map<String, Value> = ev["data"]["after"]
        .as_object()
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|id| (format!("claims/{id}.yaml"), json!(sha(&claim_file(p, &id)))))
        .collect();
    ev["data"]["written"] = Value::Object(written);
    ev
}

/// Round 5, A: a lifecycle event is checked against what its kind means
/// and who may make it, not trusted by its name. An agent's forged revert
/// of a person's archive (a01), a revert that names no event it reverts, an
/// "archive" whose `after` un-archives (a08), an agent's direct cite (a02)
/// and, under the base's `review.gate_lifecycle`, an agent's direct
/// archive are refused; every lifecycle event is listed; a person's real
/// revert passes.
#[test]
fn round5_lifecycle_events_are_checked_by_what_they_mean_and_who_made_them() {
    let (p, claim) = branched("Access tokens expire after a day.");
    let archive = archived_at_base(&p, &claim);
    let archive_id = archive["id"].as_str().unwrap().to_string();
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let file = claim_file(&p, &claim);
    let unarchive = || edit(&file, "status: archived", "status: working");
    let revert = |actor: &str, key: &str| {
        lifecycle(
            &p,
            "lifecycle.revert",
            actor,
            json!([archive_id, claim]),
            json!({key: archive_id, "before": archive["data"]["after"],
                   "after": archive["data"]["before"], "via": "MCP"}),
        )
    };

    // An agent reverts a person's archive.
    unarchive();
    forge(&p, revert("agent", "reverts"));
    let v = refused(
        &p,
        "agent reverts",
        "an agent reverts only its own lifecycle changes",
    );
    assert!(
        v["base"]["lifecycle_changes"]
            .to_string()
            .contains(&format!("agent lifecycle.revert {archive_id}, {claim}")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A person's "revert" that names no event it reverts.
    unarchive();
    forge(&p, revert("alice", "reverted"));
    refused(&p, "revert of nothing", "it names no event it reverts");
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // An "archive" that un-archives.
    unarchive();
    let was = state(&p, &claim);
    let mut before = was.clone();
    before["status"] = json!("archived");
    forge(
        &p,
        lifecycle(
            &p,
            "claim.archive",
            "alice",
            json!([claim]),
            json!({"before": {claim.clone(): before}, "after": {claim.clone(): was}, "via": "command-line"}),
        ),
    );
    refused(
        &p,
        "archive that un-archives",
        &format!(
            "(claim.archive) sets {claim}'s status \\\"working\\\" (it makes it \\\"archived\\\")"
        ),
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A person's real revert passes, and is listed.
    p.ok("alice", &["revert", &archive_id]);
    let v = passes(&p, "a real revert");
    assert!(
        v["base"]["lifecycle_changes"]
            .to_string()
            .contains("alice lifecycle.revert"),
        "{v:#}"
    );
}

/// Round 5, A: what the runtime would have made a proposal, made directly
/// by an agent (one that files proposals at the base and decided nothing):
/// a cite always (a02); an archive when the base sets
/// `review.gate_lifecycle` (a08).
#[test]
fn round5_an_agents_direct_cite_or_gated_lifecycle_change_is_refused() {
    let (p, claim) = gated_changes_refused(
        "agent",
        "an agent's citation is always a proposal a person decides",
        "the base's review.gate_lifecycle makes an agent's lifecycle change",
    );

    // A person's direct archive passes.
    p.ok("alice", &["archive", &claim]);
    commit(&p, "a person archives");
    let (code, v) = base_check(&p);
    assert_eq!(code, 0, "{v:#}");
}

/// Under the base's `review.gate_lifecycle`, `actor`'s direct cite fails
/// the check naming `cite`, and its direct archive naming `archive`. The
/// project, back where the base left it, and its claim.
fn gated_changes_refused(actor: &str, cite: &str, archive: &str) -> (Project, String) {
    let (p, claim) = branched("Deploys happen on Tuesdays only.");
    gate_lifecycle_at_base(&p);
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    forge_cite(&p, &claim, actor);
    refused(&p, "direct cite", cite);
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);
    forge_archive(&p, &claim, actor, None);
    refused(&p, "direct archive", archive);
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);
    (p, claim)
}

/// `review.gate_lifecycle: true` committed on `main`; `feature` checked
/// out again.
fn gate_lifecycle_at_base(p: &Project) {
    git(p.root(), &["checkout", "-q", "main"]);
    edit(
        &p.vouch_dir().join("config.yaml"),
        "  approver_role: human",
        "  approver_role: human\n  gate_lifecycle: true",
    );
    commit(p, "main gates lifecycle changes");
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
}

/// `actor` cites a new source for `claim` directly: the file rewritten and
/// a `claim.cite` forged.
fn forge_cite(p: &Project, claim: &str, actor: &str) {
    let other = p.source("Deploys are fine on Fridays too.\n");
    let was = state(p, claim);
    let cited = was["evidence"][0].as_str().unwrap().to_string();
    edit(
        &claim_file(p, claim),
        &format!("- {cited}\n"),
        &format!("- {cited}\n- {other}\n"),
    );
    let mut after = was.clone();
    after["evidence"] = json!([cited, other]);
    forge(
        p,
        lifecycle(
            p,
            "claim.cite",
            actor,
            json!([claim, other]),
            json!({"before": {claim: was}, "after": {claim: after}, "via": "MCP"}),
        ),
    );
}

/// `actor` archives `claim` directly: the file rewritten and a
/// `claim.archive` forged, recording `said` as the state it was in (what
/// it was, when `None`).
fn forge_archive(p: &Project, claim: &str, actor: &str, said: Option<&Value>) {
    let was = state(p, claim);
    let mut after = was.clone();
    after["status"] = json!("archived");
    edit(&claim_file(p, claim), "status: working", "status: archived");
    forge(
        p,
        lifecycle(
            p,
            "claim.archive",
            actor,
            json!([claim]),
            json!({"before": {claim: said.unwrap_or(&was)}, "after": {claim: after}, "via": "MCP"}),
        ),
    );
}

/// Round 5, B (a06): an approval's `data.written` naming another claim —
/// one the base archived, un-archived by hand — is refused: an approval
/// writes its object and the claims its payload supersedes, nothing else.
#[test]
fn round5_an_approval_does_not_carry_other_files() {
    let (p, claim) = branched("The API uses OAuth2.");
    archived_at_base(&p, &claim);
    let src = p.source("The API uses OAuth2 scopes.\n");
    let (pending, _) = p.propose("The API uses OAuth2 scopes.", &src);
    p.ok("alice", &["approve", &pending]);
    let file = claim_file(&p, &claim);
    edit(&file, "status: archived", "status: working");
    let mut all = events(&p);
    let at = all
        .iter()
        .rposition(|e| e["event"] == "proposal.approve")
        .unwrap();
    let old_hash = all[at]["hash"].as_str().unwrap().to_string();
    all[at]["data"]["written"][format!("claims/{claim}.yaml")] = json!(sha(&file));
    write_chain(&p, all);
    let new_hash = events(&p)[at]["hash"].as_str().unwrap().to_string();
    edit(
        &p.vouch_dir().join(format!("decided/{pending}.yaml")),
        &old_hash,
        &new_hash,
    );
    refused(
        &p,
        "an approval carries an un-archive",
        &format!(
            "records writing claims/{claim}.yaml, which approving the proposal does not write"
        ),
    );
}

/// Round 5, D (a05): a `.vouch` that git records as another repository (a
/// submodule's gitlink), on the branch or at the base, is refused with an
/// error — never read as an empty history.
#[test]
fn round5_a_vouch_gitlink_is_refused() {
    let (p, _) = branched("Backups run nightly.");
    let head = git(p.root(), &["rev-parse", "HEAD"]);
    git(p.root(), &["rm", "-r", "-q", "--cached", ".vouch"]);
    git(
        p.root(),
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},.vouch", head.trim()),
        ],
    );
    git(p.root(), &["commit", "-q", "-m", "a submodule"]);
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("git records .vouch as another repository"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("OK"), "{}", r.stdout);

    // The base's .vouch a gitlink, the branch's a folder again.
    git(p.root(), &["branch", "-q", "-f", "main", "HEAD"]);
    git(p.root(), &["rm", "-q", "--cached", ".vouch"]);
    git(
        p.root(),
        &["add", "-f", ".vouch/audit.log.jsonl", ".vouch/claims"],
    );
    git(p.root(), &["commit", "-q", "-m", "a folder again"]);
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("another repository (a submodule, at main)"),
        "{}",
        r.stderr
    );
}

/// Round 5, F: an agent (it files proposals at the base) never decides:
/// its forged rejection on a branch is refused (a15, pull request 1);
/// merged anyway, that rejection does not make it one who decides, so its
/// import stays refused (pull request 2); and an import by a name the base
/// never saw decide is listed for a person to confirm (a07).
#[test]
fn round5_an_agent_never_becomes_a_decider_and_a_new_decider_is_named() {
    let (p, _) = branched("Deploys happen on Tuesdays only.");
    let src = p.source("Cursor thinks so.\n");
    let v = p.ok(
        "cursor",
        &["propose-claim", "Cursor thinks so.", "--evidence", &src],
    );
    let pid = v["proposal_id"].as_str().unwrap().to_string();
    let ev = forge(
        &p,
        json!({"id": "evt-forged-reject", "event": "proposal.reject", "actor": "agent",
               "object_ids": [pid, v["claim_id"]], "dry_run": false, "reversible": false,
               "data": {"kind": "claim", "reason": "dup"}}),
    );
    let proposed = p.vouch_dir().join(format!("proposed/{pid}.yaml"));
    let record = std::fs::read_to_string(&proposed)
        .unwrap()
        .replace("status: pending", "status: rejected")
        + &format!(
            "decided_by: agent\ndecided_at: {}\nreason: dup\ndecision_hash: {}\n",
            ev["created_at"], ev["hash"]
        );
    std::fs::write(p.vouch_dir().join(format!("decided/{pid}.yaml")), record).unwrap();
    std::fs::remove_file(&proposed).unwrap();
    refused(
        &p,
        "pull request 1",
        "(proposal.reject) by \\\"agent\\\", who files proposals",
    );

    // Merged anyway: the agent's import on the next branch is still an
    // agent's.
    git(p.root(), &["branch", "-q", "-f", "main", "HEAD"]);
    let approved = std::fs::read_dir(p.vouch_dir().join("claims"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&approved).unwrap();
    let id = "fridays-are-fine";
    std::fs::write(claim_file(&p, id), text.replace("Tuesdays only", "any day")).unwrap();
    let import = |actor: &str| {
        json!({"id": "evt-forged-import", "event": "bundle.import", "actor": actor,
               "object_ids": ["0".repeat(64)], "dry_run": false, "reversible": false,
               "data": {"path": "team.tar.gz", "objects": [id],
                        "written": {format!("claims/{id}.yaml"): sha(&claim_file(&p, id))}}})
    };
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    forge(&p, import("agent"));
    refused(&p, "pull request 2", "an agent's import files proposals");
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A name the base never saw decide.
    std::fs::write(claim_file(&p, id), text.replace("Tuesdays only", "any day")).unwrap();
    forge(&p, import("vouch-sync"));
    commit(&p, "a new name imports");
    let (_, v) = base_check(&p);
    assert!(
        v["base"]["warnings"]
            .to_string()
            .contains("new decider: vouch-sync decides here (bundle.import"),
        "{v:#}"
    );
    let text = p.run("x", &["audit", "verify", "--base", "main"]).stdout;
    assert!(text.contains("CONFIRM: new decider: vouch-sync"), "{text}");
}

/// Round 5, C (a12): a source's `meta.yaml` and an evidence record are
/// written once: rewritten behind any event that merely names them (here
/// a `session.start`) they are refused; one added with no event that
/// registers it is refused too.
#[test]
fn round5_sources_and_evidence_are_written_once_and_registered() {
    let (p, _) = branched("Backups run nightly at two.");
    let src = std::fs::read_dir(p.vouch_dir().join("sources"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let evidence = std::fs::read_dir(p.vouch_dir().join("evidence"))
        .unwrap()
        .next()
        .map(|e| e.unwrap().path());
    let meta = p.vouch_dir().join(format!("sources/{src}/meta.yaml"));
    edit(&meta, "registered_by: agent", "registered_by: alice");
    let mut named = vec![src.clone()];
    if let Some(ev) = &evidence {
        let t = std::fs::read_to_string(ev).unwrap();
        std::fs::write(ev, t.replace("locator:", "locator: signed off,")).unwrap();
        named.push(ev.file_stem().unwrap().to_string_lossy().into_owned());
    }
    let planted = "ev-0123456789abcdef";
    std::fs::write(
        p.vouch_dir().join(format!("evidence/{planted}.yaml")),
        format!("id: {planted}\nsource_id: {src}\nlocator: L1-L1\nquote: Backups are optional.\ncreated_at: \"2026-01-01T00:00:00Z\"\n"),
    )
    .unwrap();
    named.push(planted.to_string());
    forge(
        &p,
        json!({"id": "evt-forged-session", "event": "session.start", "actor": "agent",
               "object_ids": named, "dry_run": false, "reversible": false, "data": {}}),
    );
    let v = refused(
        &p,
        "provenance rewritten",
        &format!("sources/{src}/meta.yaml: this source file was changed"),
    );
    assert!(
        problems(&v).contains(&format!(
            "evidence/{planted}.yaml: this evidence was added with no event that registers it"
        )),
        "{v:#}"
    );
}

/// Round 5, E (a04, a11, a14): inside `.vouch/`, a link or a gitlink
/// committed on the branch, a path in another case (`.vouch/Claims/`,
/// `.VOUCH/claims/`, which a case-insensitive checkout reads as
/// `.vouch/claims/`) and a path outside the layout are refused.
#[test]
fn round5_links_case_variants_and_unknown_paths_under_vouch_are_refused() {
    let (p, claim) = branched("Tokens expire after a day.");
    let text = std::fs::read_to_string(claim_file(&p, &claim)).unwrap();
    std::fs::create_dir_all(p.vouch_dir().join("Claims")).unwrap();
    std::fs::write(
        p.vouch_dir().join(format!("Claims/{claim}.yaml")),
        text.replace("after a day", "never"),
    )
    .unwrap();
    std::fs::create_dir_all(p.root().join(".VOUCH/claims")).unwrap();
    std::fs::write(p.root().join(".VOUCH/claims/weekends.yaml"), &text).unwrap();
    std::fs::write(p.vouch_dir().join("notes.txt"), "hello").unwrap();
    std::fs::create_dir_all(p.root().join("elsewhere")).unwrap();
    std::fs::remove_dir_all(p.vouch_dir().join("pages")).ok();
    std::os::unix::fs::symlink("../elsewhere", p.vouch_dir().join("pages")).unwrap();
    git(p.root(), &["add", "-A"]);
    let head = git(p.root(), &["rev-parse", "HEAD"]);
    git(
        p.root(),
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},.vouch/entities/planted.yaml", head.trim()),
        ],
    );
    git(p.root(), &["commit", "-q", "-m", "around the layout"]);
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    let found = problems(&v);
    for expected in [
        format!(".vouch/Claims/{claim}.yaml: this path differs only in case"),
        ".VOUCH/claims/weekends.yaml: this path is .vouch/claims/weekends.yaml spelled another \
         way"
        .to_string(),
        ".vouch/notes.txt: not part of a knowledge base's layout".to_string(),
        ".vouch/pages: git records it as a symbolic link".to_string(),
        ".vouch/entities/planted.yaml: git records it as another repository".to_string(),
    ] {
        assert!(found.contains(&expected), "{expected}: {v:#}");
    }
}

/// Round 5, G (a13, a09): locally, an approval lets nothing in unless its
/// proposal was created before it and not decided since: `doctor` names
/// an approval of a proposal nobody created and a second approval of a
/// decided one, and reads mark what they wrote.
#[test]
fn round5_doctor_names_approvals_of_proposals_never_made_or_decided_before() {
    let p = Project::new();
    let src = p.source("Backups run nightly.\n");
    let (pid, claim) = p.propose("Backups run nightly.", &src);
    p.ok("alice", &["approve", &pid]);
    let approval = events(&p)
        .into_iter()
        .rfind(|e| e["event"] == "proposal.approve")
        .unwrap();

    // Approved again, with new text recorded as written.
    let file = claim_file(&p, &claim);
    edit(&file, "Backups run nightly.", "Backups are optional.");
    let mut again = approval.clone();
    again["id"] = json!("evt-second-approve");
    again["actor"] = json!("bob");
    again["data"]["written"] = json!({format!("claims/{claim}.yaml"): sha(&file)});
    forge(&p, again);

    // An approval of a proposal nobody created.
    let id = "fridays-are-fine";
    let forged_file = claim_file(&p, id);
    std::fs::write(
        &forged_file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace(&claim, id)
            .replace("Backups are optional.", "Deploys on Fridays are fine."),
    )
    .unwrap();
    let mut orphan = approval.clone();
    orphan["id"] = json!("evt-orphan-approve");
    orphan["object_ids"] = json!(["20260101-000000-deadbeef", id]);
    orphan["data"]["written"] = json!({format!("claims/{id}.yaml"): sha(&forged_file)});
    forge(&p, orphan);

    let report = p.run("x", &["--json", "doctor"]).json();
    let text = report.to_string();
    assert!(
        text.contains("evt-second-approve") && text.contains("decided proposal"),
        "{report:#}"
    );
    assert!(
        text.contains("evt-orphan-approve") && text.contains("no proposal.create event"),
        "{report:#}"
    );
    assert!(
        issue_kinds(&report).contains(&"unfounded-decision".to_string()),
        "{report:#}"
    );
    assert!(unaudited(&hit(&p, "optional", &claim)));
    assert!(unaudited(&hit(&p, "Fridays", id)));
}

/// Round 5, A (a01b): `vouch changes` shows a lifecycle change dated
/// before an event earlier in the log, whatever the date it claims: a
/// forged line cannot date itself out of the 7-day window.
#[test]
fn round5_a_backdated_lifecycle_change_is_still_shown() {
    let p = Project::new();
    let src = p.source("Access tokens expire after a day.\n");
    let claim = p.claim("Access tokens expire after a day.", &src);
    edit(
        &claim_file(&p, &claim),
        "status: working",
        "status: archived",
    );
    let was = json!({"status": "working", "evidence": [src], "last_confirmed_at": null,
                     "superseded_by": null, "supersedes": [], "contradicts": []});
    let mut after = was.clone();
    after["status"] = json!("archived");
    let mut ev = lifecycle(
        &p,
        "claim.archive",
        "agent",
        json!([claim]),
        json!({"before": {claim.clone(): was}, "after": {claim.clone(): after}, "via": "MCP"}),
    );
    let mut all = events(&p);
    ev["created_at"] = json!("2020-01-01T00:00:00Z");
    all.push(ev);
    write_chain(&p, all);
    let shown = p.ok("alice", &["changes"]).to_string();
    assert!(shown.contains("evt-forged-claim-archive"), "{shown}");
}

// ---------------------------------------------------------------------
// Round six: the pull-request check attacked again.
// ---------------------------------------------------------------------

/// Round 6, C01: a revert puts back only what a lifecycle change recorded
/// writing. A "revert" of an event that is no lifecycle change (an
/// `index.note` whose made-up `data.before` swaps the claim's evidence and
/// makes it `stable`) fails the check, `doctor` names it
/// (`unfounded-revert`) and search marks the claim; the runtime refuses to
/// revert such an event; a revert of a branch's lifecycle change whose
/// own `before` was made up fails too; a person's real revert, and a revert
/// of that revert, pass and are listed with the state they put back.
#[test]
fn round6_a_revert_puts_back_only_what_a_lifecycle_change_recorded() {
    let (p, claim) = branched("The API uses OAuth2.");
    let other = p.source("The API uses API keys.\n");
    commit(&p, "a source");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let file = claim_file(&p, &claim);
    let cur = state(&p, &claim);
    let cited = cur["evidence"][0].as_str().unwrap().to_string();
    let mut evil = cur.clone();
    evil["evidence"] = json!([other]);
    evil["status"] = json!("stable");
    // The file made evil, and a revert of `target` by `actor` that
    // recorded doing it (from `was`).
    let revert_to_evil = |actor: &str, target: &str, was: &Value| {
        edit(&file, &format!("- {cited}\n"), &format!("- {other}\n"));
        edit(&file, "status: working", "status: stable");
        forge(
            &p,
            lifecycle(
                &p,
                "lifecycle.revert",
                actor,
                json!([target, claim]),
                json!({"reverts": target, "reverted_event": "claim.archive",
                       "before": {claim.clone(): was}, "after": {claim.clone(): evil},
                       "via": "MCP"}),
            ),
        );
    };
    let note = json!({"id": "evt-forged-note", "event": "index.note", "actor": "agent",
                      "object_ids": [], "dry_run": false, "reversible": false,
                      "data": {"before": {claim.clone(): evil}, "after": {claim.clone(): cur}}});

    // The attack: a note, then its "revert".
    forge(&p, note.clone());
    revert_to_evil("agent", "evt-forged-note", &cur);
    refused(
        &p,
        "revert of a note",
        "event evt-forged-note (index.note) is not a lifecycle change",
    );
    assert!(
        p.doctor_kinds().contains(&"unfounded-revert".to_string()),
        "{:?}",
        p.doctor_kinds()
    );
    assert!(unaudited(&hit(&p, "OAuth2", &claim)));
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // The runtime does not revert a note either.
    forge(&p, note);
    let r = p.call("agent", "kb.revert", json!({"event_id": "evt-forged-note"}));
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(r.stderr.contains("not a lifecycle change"), "{}", r.stderr);
    assert_eq!(state(&p, &claim), cur);
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // An archive whose `before` was made up, then its revert.
    let mut archived = cur.clone();
    archived["status"] = json!("archived");
    forge_archive(&p, &claim, "alice", Some(&evil));
    edit(&file, "status: archived", "status: working");
    revert_to_evil("alice", "evt-forged-claim-archive", &archived);
    refused(
        &p,
        "revert of a made-up archive",
        &format!("made no change of {claim} that this check found sound"),
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // Real: an archive, its revert and the revert's revert.
    p.ok("alice", &["archive", &claim]);
    let archive = events(&p).pop().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    p.ok("alice", &["revert", &archive]);
    let revert = events(&p).pop().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    p.ok("alice", &["revert", &revert]);
    let v = passes(&p, "real reverts");
    let lines = v["base"]["lifecycle_changes"].to_string();
    assert!(
        lines.contains(&format!("puts {claim} back to")) && lines.contains(r#"\"working\""#),
        "{v:#}"
    );
    assert!(lines.contains(r#"\"archived\""#), "{v:#}");
}

/// Round 6, C02: a name that neither proposed nor decided at the base is
/// unknown. Under the base's `review.gate_lifecycle` its direct cite or
/// archive fails the check; without the gate its cite asks the reviewer to
/// confirm who it is.
#[test]
fn round6_a_made_up_name_makes_no_gated_change() {
    gated_changes_refused(
        "claude-bot",
        "by \\\"claude-bot\\\", a name that neither proposed nor decided at main, makes a citation",
        "makes a lifecycle change of",
    );

    // Without the gate: a CONFIRM line.
    let (p, claim) = branched("Deploys happen on Tuesdays only.");
    forge_cite(&p, &claim, "claude-bot");
    let v = passes(&p, "a cite by a made-up name");
    assert!(
        v["base"]["warnings"]
            .to_string()
            .contains("unknown name: claude-bot makes a citation"),
        "{v:#}"
    );
}

/// Round 6, C09: a person's import of an honestly exported bundle, with
/// the `decided/` records of the KB it came from, passes the check on a
/// branch (each record named by the import); a decision record beside it
/// that the import does not name still fails.
#[test]
fn round6_an_honest_import_on_a_branch_passes() {
    let a = Project::new();
    let src = a.source("Backups run nightly at 02:00.\n");
    a.claim("Backups run nightly at 02:00.", &src);
    let bundle = a.root().join("kb.tar.gz");
    a.ok("alice", &["export", bundle.to_str().unwrap()]);

    let p = Project::beside(&a);
    git(p.root(), &["init", "-q", "-b", "main"]);
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    p.ok("bob", &["import-apply", bundle.to_str().unwrap()]);
    let decided: Vec<_> = std::fs::read_dir(p.vouch_dir().join("decided"))
        .unwrap()
        .collect();
    assert!(!decided.is_empty(), "the bundle brings decided/");
    let v = passes(&p, "import");
    assert!(
        v["base"]["decisions"]
            .to_string()
            .contains("bob bundle.import"),
        "{v:#}"
    );

    let record = decided[0].as_ref().unwrap().path();
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(
        p.vouch_dir().join("decided/20260101-000000-deadbeef.yaml"),
        text,
    )
    .unwrap();
    refused(
        &p,
        "a decision record by hand",
        "decided/20260101-000000-deadbeef.yaml: a decision record with no approval",
    );
}

/// Round 6, C03: a decision by a look-alike of a base decider's name
/// (`\u{430}lice`, a Cyrillic а) is shown escaped and fails the check; an
/// ASCII look-alike (`aIice`) asks the reviewer to confirm it.
#[test]
fn round6_a_look_alike_name_is_shown_escaped_and_named() {
    let (p, _) = branched("Deploys happen on Tuesdays only.");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let src = p.source("Deploys on Fridays need no review.\n");
    let (pid, _) = p.propose("Deploys on Fridays need no review.", &src);
    p.ok("\u{430}lice", &["approve", &pid]);
    commit(&p, "a look-alike approves");
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert!(
        r.stdout.contains("\\u{430}lice, which reads as alice") && !r.stdout.contains('\u{430}'),
        "{}",
        r.stdout
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    let src = p.source("Deploys on Fridays need no review.\n");
    let (pid, _) = p.propose("Deploys on Fridays need no review.", &src);
    p.ok("aIice", &["approve", &pid]);
    let v = passes(&p, "an ASCII look-alike approves");
    assert!(
        v["base"]["warnings"]
            .to_string()
            .contains("look-alike name: event"),
        "{v:#}"
    );
}

/// Round 6, C08: the KB folder spelled as another file system reads it —
/// with a character HFS+ ignores, as Windows' short name, with a trailing
/// dot or space — is refused, as `.git` is.
#[test]
fn round6_the_vouch_folder_spelled_another_way_is_refused() {
    let (p, claim) = branched("Deploys happen on Tuesdays only.");
    let text = std::fs::read(claim_file(&p, &claim)).unwrap();
    let aliases = [".vou\u{200c}ch", "VOUCH~1", ".vouch.", ".vouch "];
    for alias in aliases {
        let dir = p.root().join(alias).join("claims");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agents-may-deploy-on-fridays.yaml"), &text).unwrap();
    }
    let v = refused(&p, "aliases", "spelled another way");
    for shown in [
        r".vou\\u{200c}ch/claims",
        "VOUCH~1/claims",
        ".vouch./claims",
        ".vouch /claims",
    ] {
        assert!(problems(&v).contains(shown), "{shown}: {v:#}");
    }
}
