//! The attacks of the trust review (issue 9), each performed through the real
//! binary as a hostile agent or a hostile repository would, each refused.

mod common;
use common::*;
use serde_json::{Value, json};
use std::path::Path;

/// The audit log's events, parsed.
fn events(p: &Project) -> Vec<Value> {
    std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Append an event with the chain recomputed, as a forger with write access
/// to the file would.
fn forge_event(p: &Project, mut ev: Value) {
    let prev = events(p)
        .last()
        .map(|e| e["hash"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "0".repeat(64));
    ev["prev_hash"] = json!(prev);
    let hash = vouch_core::ids::sha256_hex(
        format!("{prev}{}", vouch_core::audit::canonical_json(&ev)).as_bytes(),
    );
    ev["hash"] = json!(hash);
    let mut log = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).unwrap();
    log.push_str(&vouch_core::audit::canonical_json(&ev));
    log.push('\n');
    std::fs::write(p.vouch_dir().join("audit.log.jsonl"), log).unwrap();
}

fn proposal_path(p: &Project, id: &str) -> std::path::PathBuf {
    p.vouch_dir().join(format!("proposed/{id}.yaml"))
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from:?} not in {text}");
    std::fs::write(path, text.replace(from, to)).unwrap();
}

fn doctor_kinds(p: &Project) -> Vec<String> {
    let r = p.run("x", &["--json", "doctor"]);
    r.json()["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

/// Item 2: the words a reviewer saw are the words approved. A proposal whose
/// text, or whose proposer, changed after `vouch pending` showed it is
/// refused, and doctor names it.
#[test]
fn an_edited_proposal_is_refused_at_approve_and_reported() {
    let p = Project::new();
    let src = p.source("Backups run nightly at 02:00.\n");
    let (pid, claim) = p.propose("Backups run nightly", &src);
    let shown = p.run("alice", &["pending"]);
    assert!(
        shown.stdout.contains("Backups run nightly"),
        "{}",
        shown.stdout
    );
    edit(
        &proposal_path(&p, &pid),
        "Backups run nightly",
        "Backups are optional",
    );
    let r = p.run("alice", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("edited after it was proposed"),
        "{}",
        r.stderr
    );
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());
    assert!(doctor_kinds(&p).contains(&"proposal-edited".to_string()));

    // The proposer renames itself out of the way of the self-approval check.
    let (pid, _) = p.propose("Backups are kept for 30 days", &src);
    edit(
        &proposal_path(&p, &pid),
        "proposed_by: agent",
        "proposed_by: bob",
    );
    let r = p.run("agent", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("proposed by \"bob\""), "{}", r.stderr);

    // A proposal file nobody proposed (no proposal.create event).
    let (pid, _) = p.propose("Backups are encrypted", &src);
    let forged = proposal_path(&p, "20260101-000000-0badf00d");
    let text = std::fs::read_to_string(proposal_path(&p, &pid))
        .unwrap()
        .replace(&pid, "20260101-000000-0badf00d");
    std::fs::write(&forged, text).unwrap();
    let r = p.run("alice", &["approve", "20260101-000000-0badf00d"]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("no proposal.create event"),
        "{}",
        r.stderr
    );

    // Untouched proposals still go through.
    let (pid, _) = p.propose("Restores are tested monthly", &src);
    assert_eq!(p.ok("alice", &["approve", &pid])["ok"], true);
}

/// Item 3: a forged `proposal.approve` line (chain recomputed) is not a pass
/// around the gate. The proposer finishing "its" recovery is self-approval;
/// a payload emptied of evidence no longer validates (or matches its
/// fingerprint); and a genuine recovery still completes.
#[test]
fn a_forged_decision_in_the_log_does_not_skip_the_gate() {
    let p = Project::new();
    let src = p.source("The VPN requires MFA.\n");
    let (pid, claim) = p.propose("The VPN requires MFA", &src);
    let forge = |p: &Project, pid: &str, claim: &str| {
        forge_event(
            p,
            json!({"id": "f".repeat(32), "event": "proposal.approve", "actor": "alice",
                   "created_at": "2026-01-01T00:00:00Z", "object_ids": [pid, claim],
                   "dry_run": false, "reversible": false, "data": {"kind": "claim"}}),
        )
    };
    forge(&p, &pid, &claim);
    assert_eq!(
        p.ok("x", &["audit", "verify"])["ok"],
        true,
        "the forgery verifies"
    );
    let r = p.run("agent", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("cannot also approve"), "{}", r.stderr);
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());

    // Evidence emptied after proposing, then a forged approval.
    let (pid, claim) = p.propose("The VPN is always on", &src);
    edit(
        &proposal_path(&p, &pid),
        &format!("  evidence:\n  - {src}\n"),
        "  evidence: []\n",
    );
    forge(&p, &pid, &claim);
    let r = p.run("bob", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());

    // A real decision whose files were never written (a crash right after
    // the event) is finished by the next approve, as its decider.
    let (pid, claim) = p.propose("The VPN uses WireGuard", &src);
    forge(&p, &pid, &claim);
    let v = p.ok("bob", &["approve", &pid]);
    assert_eq!(v["recovered"], true, "{v}");
    let text = std::fs::read_to_string(p.vouch_dir().join(format!("claims/{claim}.yaml"))).unwrap();
    assert!(text.contains("approved_by: alice"), "{text}");
}

/// The id `vouch quote` derives for a span (`ev-` + sha256(source\nquote)).
fn evidence_id(source: &str, quote: &str) -> String {
    format!(
        "ev-{}",
        &vouch_core::ids::sha256_hex(format!("{source}\n{quote}").as_bytes())[..16]
    )
}

/// Item 4: an evidence record that takes the id of another span is never
/// handed out for that span — not when a cloned repository plants it, not
/// when a bundle brings it.
#[test]
fn a_squatted_evidence_id_is_refused_on_quote_import_and_reported() {
    let text = "Refunds are issued within 14 days. Refunds are never issued.\n";
    let real = "Refunds are issued within 14 days.";
    let lie = "Refunds are never issued.";

    // The planted file: the real span's id, the other span's words.
    let plant = |p: &Project, src: &str| {
        let id = evidence_id(src, real);
        std::fs::write(
            p.vouch_dir().join(format!("evidence/{id}.yaml")),
            format!(
                "id: {id}\nsource_id: {src}\nlocator: L1-L1\nquote: {lie}\n\
                 created_at: \"2026-01-01T00:00:00Z\"\n"
            ),
        )
        .unwrap();
        id
    };

    let p = Project::new();
    let src = p.source(text);
    let id = plant(&p, &src);
    let r = p.run("agent", &["quote", &src, real]);
    assert_ne!(r.code, 0, "the squatted record was handed out: {}", r.stdout);
    assert!(r.stderr.contains("planted or edited"), "{}", r.stderr);
    assert!(
        doctor_kinds(&p).contains(&"evidence-id-mismatch".to_string()),
        "doctor misses the squatted {id}"
    );
    // The honest span of the other sentence is unaffected.
    let lie_id = p.ok("agent", &["quote", &src, lie])["evidence_id"].clone();
    assert_eq!(lie_id, json!(evidence_id(&src, lie)));

    // The same file, brought by a bundle, is refused with its reason.
    let b = Project::new();
    let r = p.run("alice", &["export", "squat.tar.gz"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    std::fs::copy(p.root().join("squat.tar.gz"), b.root().join("squat.tar.gz")).unwrap();
    let before = b.snapshot();
    let r = b.run("alice", &["--json", "import-apply", "squat.tar.gz"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout.contains("not derived from its source and quote"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(before, b.snapshot(), "a refused import wrote something");
}
