//! Files as Python vouch 1.x (vouch-kb 1.5.0) writes them open, list and
//! can be reviewed here; what we write carries what 1.x looks for. The
//! shapes follow 1.5.0's `models.py` and `proposals.py`.

use crate::common::*;
use serde_json::{Value, json};

/// Append an event as 1.x logs it (its own chain; ours verifies the same).
fn log_1x(p: &Project, event: &str, actor: &str, object_ids: &[&str]) {
    let path = p.vouch_dir().join("audit.log.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let prev = text
        .lines()
        .last()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["hash"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .unwrap_or_else(|| "0".repeat(64));
    let mut ev = json!({"id": "a".repeat(32), "event": event, "actor": actor,
        "created_at": "2026-05-21T05:52:34.267699Z", "object_ids": object_ids,
        "dry_run": false, "reversible": false, "data": {}, "prev_hash": prev});
    let hash = vouch_core::ids::sha256_hex(
        format!("{prev}{}", vouch_core::audit::canonical_json(&ev)).as_bytes(),
    );
    ev["hash"] = json!(hash);
    std::fs::write(
        &path,
        format!("{text}{}\n", vouch_core::audit::canonical_json(&ev)),
    )
    .unwrap();
}

#[test]
fn a_1x_pending_claim_proposal_is_listed_reviewed_and_approved_here() {
    let p = Project::new();
    let src = p.source("Deploy freezes start on Fridays.\n");
    // 1.x: `proposed_at`, no `object_id`, the slug hint in `payload.id`,
    // and a `proposal.claim.create` event naming only the proposal.
    let pid = "20260521-055234-1a2b3c4d";
    std::fs::write(
        p.vouch_dir().join(format!("proposed/{pid}.yaml")),
        format!(
            "id: {pid}\nkind: claim\nproposed_by: claude-code\nproposed_at: \
             '2026-05-21T05:52:34.267699Z'\npayload:\n  id: deploy-freezes-start-on-fridays\n  \
             text: Deploy freezes start on Fridays\n  type: fact\n  confidence: 0.8\n  \
             evidence:\n  - {src}\nstatus: pending\n"
        ),
    )
    .unwrap();
    log_1x(&p, "proposal.claim.create", "claude-code", &[pid]);
    let pending = p.ok("alice", &["pending"]);
    assert_eq!(pending[0]["id"], pid, "{pending}");
    // Its proposer still cannot approve it here.
    assert_eq!(p.run("claude-code", &["approve", pid]).code, 5);
    let r = p.ok("alice", &["approve", pid]);
    assert_eq!(r["object_id"], "deploy-freezes-start-on-fridays", "{r}");
    // What 1.x's fsck looks for: the artifact at `payload.id`.
    let decided =
        std::fs::read_to_string(p.vouch_dir().join(format!("decided/{pid}.yaml"))).unwrap();
    assert!(
        decided.contains("  id: deploy-freezes-start-on-fridays"),
        "{decided}"
    );
    let hits = p.ok("x", &["search", "deploy freezes"]);
    assert_eq!(hits[0]["id"], "deploy-freezes-start-on-fridays", "{hits}");
}

#[test]
fn relations_of_1x_types_and_to_any_object_load_and_are_proposed() {
    let p = Project::new();
    let src = p.source("The billing service owns invoices.\n");
    let claim = p.claim("The billing service owns invoices", &src);
    // A relation file with a 1.x type, hand-placed as 1.x writes it.
    std::fs::write(
        p.vouch_dir().join("relations/claim-mentions-source.yaml"),
        format!(
            "id: claim-mentions-source\nsource: {claim}\nrelation: mentions\ntarget: {src}\n\
             confidence: 0.7\nevidence: []\ncreated_at: '2026-05-21T05:52:34Z'\n\
             updated_at: '2026-05-21T05:52:34Z'\n"
        ),
    )
    .unwrap();
    let shown = p.ok("x", &["show", "claim-mentions-source"]);
    assert_eq!(shown["object"]["relation"], "mentions", "{shown}");
    let r = p.run("x", &["--json", "doctor"]);
    assert_lacks(&r.stdout, "unparseable-file");
    assert_lacks(&r.stdout, "relation-missing-end");
    // A relation whose ends are a claim and a source is proposed and
    // approved like any other.
    let v = p.ok(
        "agent",
        &[
            "propose-relation",
            &claim,
            "relates_to",
            &src,
            "--evidence",
            &src,
        ],
    );
    assert_eq!(v["valid"], true, "{v}");
    p.ok("alice", &["approve", v["proposal_id"].as_str().unwrap()]);
    // Listed by either end, and shown with the claim.
    let by_end = p.ok(
        "x",
        &[
            "call",
            "kb.list_relations",
            &json!({"filter": {"end": src}}).to_string(),
        ],
    );
    assert_eq!(by_end.as_array().unwrap().len(), 2, "{by_end}");
    let shown = p.ok("x", &["show", &claim]);
    assert_eq!(shown["relations"].as_array().unwrap().len(), 2, "{shown}");
    let text = p.run("x", &["show", &claim]).stdout;
    assert!(
        text.contains("relations:") && text.contains("mentions"),
        "{text}"
    );
    // An end that is nothing is still refused.
    let r = p.run(
        "agent",
        &[
            "--json",
            "propose-relation",
            &claim,
            "uses",
            "no-such-thing",
        ],
    );
    assert_eq!(r.json()["valid"], false, "{}", r.stdout);
}

#[test]
fn a_1x_delete_proposal_is_listed_and_can_only_be_rejected_here() {
    let p = Project::new();
    let src = p.source("Old fact.\n");
    let claim = p.claim("Old fact", &src);
    let pid = "20260521-055234-deadbeef";
    std::fs::write(
        p.vouch_dir().join(format!("proposed/{pid}.yaml")),
        format!(
            "id: {pid}\nkind: delete\nproposed_by: claude-code\nproposed_at: \
             '2026-05-21T05:52:34Z'\npayload:\n  id: {claim}\n  target_kind: claim\n\
             status: pending\n"
        ),
    )
    .unwrap();
    log_1x(&p, "proposal.delete.create", "claude-code", &[pid]);
    assert_eq!(p.ok("alice", &["pending"])[0]["kind"], "delete");
    let r = p.run("alice", &["approve", pid]);
    assert_ne!(r.code, 0);
    assert_contains(
        &r.stderr,
        "propose the deletion again with kb.propose_delete",
    );
    assert!(p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());
    p.ok("alice", &["reject", pid, "--reason", "we archive instead"]);
    assert!(p.vouch_dir().join(format!("decided/{pid}.yaml")).exists());
}

/// Values outside the vocabularies (vouch 1.x and newer versions write
/// some) are read, kept on rewrite, listed and searched, named by doctor;
/// a status nobody here knows is not served as current; new input is still
/// held to the vocabularies.
#[test]
fn values_outside_the_vocabularies_are_kept_and_named_not_dropped() {
    let p = Project::new();
    let s = p.source("Retries back off exponentially. The old queue is retired.");
    let insight = p.claim("Retries back off exponentially", &s);
    let retired = p.claim("The old queue is retired", &s);
    let path = |id: &str| p.vouch_dir().join(format!("claims/{id}.yaml"));
    edit(&path(&insight), "type: observation", "type: insight");
    edit(&path(&retired), "status: working", "status: deprecated");

    // Read, listed and searched — nothing skipped.
    let shown = p.ok("x", &["show", &insight]);
    assert_eq!(shown["object"]["type"], "insight", "{shown:#}");
    let listed = p.ok("x", &["call", "kb.list_claims", "{}"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed:#}");
    let hits = p.ok("x", &["search", "retries exponentially"]);
    assert_eq!(hits[0]["id"], insight.as_str(), "{hits:#}");
    // A rewrite keeps the value as written.
    p.ok("alice", &["confirm", &insight]);
    assert!(
        std::fs::read_to_string(path(&insight))
            .unwrap()
            .contains("type: insight")
    );
    // An unknown status is not current knowledge.
    let pack = p.ok("x", &["context", "old queue retired"]);
    assert!(!pack.to_string().contains(&retired), "{pack:#}");
    // Doctor names both, as warnings.
    let r = p.run("x", &["--json", "doctor"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let non_standard: Vec<String> = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "non-standard-value")
        .map(|i| format!("{} {}", i["severity"], i["message"]))
        .collect();
    assert_eq!(non_standard.len(), 2, "{v:#}");
    assert!(
        non_standard.iter().all(|m| m.starts_with("\"warn\"")),
        "{non_standard:?}"
    );
    // New input keeps to the vocabulary.
    let r = p.run(
        "agent",
        &[
            "propose-claim",
            "A new insight",
            "-e",
            &s,
            "--type",
            "insight",
        ],
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "unknown claim type \"insight\"");
    let r = p.call(
        "agent",
        "kb.register_source",
        serde_json::json!({"content": "x", "locator": "l", "type": "hologram"}),
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_contains(&r.stderr, "unknown source type \"hologram\"");
}
