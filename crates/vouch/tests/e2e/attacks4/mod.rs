//! Trust, round four (issue 39): the pull-request check (`vouch audit
//! verify --base REV`) and the per-file marks, attacked with the real
//! `git` and log lines forged the way an attacker computes them
//! (`sha256(prev_hash + canonical event)`). Rounds five and six (the
//! `round5_`, `round6_` tests) attacked the same check again. One file per
//! thing attacked: lifecycle changes, who decides, the files under
//! `.vouch/`.

use crate::common::*;
use crate::teams::git;
use serde_json::{Value, json};
use std::path::Path;

mod deciders;
mod files;
mod lifecycle;

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

/// Commit as `message`; the check must pass. Its answer.
fn passes(p: &Project, message: &str) -> Value {
    commit(p, message);
    let (code, v) = base_check(p);
    assert_eq!(code, 0, "{v:#}");
    v
}

/// The check cannot be made: it exits with an error saying `says`, and
/// never says OK.
fn check_errs(p: &Project, says: &str) {
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, says);
    assert_lacks(&r.stdout, "OK");
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
