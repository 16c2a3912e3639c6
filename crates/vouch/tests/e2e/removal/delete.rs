//! `kb.propose_delete` and `vouch propose-delete`: proposed on every
//! transport, approved by a person, refused while referenced; doctor and
//! the pull-request check accept it and refuse a delete by hand.

use super::{Call, Who, events, eventually, on_every_transport};
use crate::common::{Project, assert_contains, entity_relation_and_page};
use crate::teams::git;
use serde_json::{Value, json};

const TEXT: &str = "Deploys need a sign-off from the ops rota.";

/// What a delete on one transport left, compared across transports.
#[derive(Debug, PartialEq)]
struct Outcome {
    proposal_valid: Value,
    self_approve_code: String,
    read_after: Value,
    found_after: bool,
    removed: Value,
}

/// On `p` (a claim approved), the agent proposes deleting it over the
/// transport, fails to approve its own proposal, alice approves; then the
/// claim is gone from the files, reads and search, and the log records
/// the file's path and sha256, never its words.
fn delete_over(p: &Project, call: &mut Call) -> Outcome {
    let claim = "deploys-need-a-sign-off-from-the-ops-rota";
    let path = p.vouch_dir().join(format!("claims/{claim}.yaml"));
    let bytes = std::fs::read(&path).expect("the approved claim's file");
    let proposed = call(
        Who::Agent,
        "kb.propose_delete",
        json!({"kind": "claim", "id": claim, "reason": "the rota was retired"}),
    )
    .expect("propose_delete");
    let pid = proposed["proposal_id"].as_str().expect("proposal_id");
    assert!(path.exists(), "a proposal removes nothing");
    let (code, message) = call(Who::Agent, "kb.approve", json!({"proposal_id": pid}))
        .expect_err("an agent approves no delete it proposed");
    assert!(message.starts_with("review_gate:"), "{message}");
    let approved = call(Who::Alice, "kb.approve", json!({"proposal_id": pid})).expect("approve");
    assert_eq!(approved["object_kind"], "delete", "{approved}");
    assert!(!path.exists(), "the approved delete removed the file");
    let mut read_after = Value::Null;
    let mut found_after = true;
    eventually("the deleted claim gone from reads and search", || {
        read_after = call(Who::Agent, "kb.read_claim", json!({"id": claim})).expect("read");
        let hits = call(
            Who::Agent,
            "kb.search",
            json!({"query": "sign-off ops rota"}),
        )
        .expect("search");
        found_after = hits.to_string().contains(claim);
        read_after.is_null() && !found_after
    });
    // The approval records the path and the sha256 of what it removed,
    // and the decided record keeps that hash: never the words.
    let ev = events(p).pop().expect("events");
    assert_eq!(ev["event"], "proposal.approve");
    let inside = format!("claims/{claim}.yaml");
    let removed = ev["data"]["removed"].clone();
    assert_eq!(
        removed[&inside].as_str(),
        Some(vouch_core::ids::content_sha256(&bytes).as_str()),
        "{ev}"
    );
    assert_eq!(ev["data"]["written"][&inside], "removed", "{ev}");
    assert!(!ev.to_string().contains("ops rota"), "{ev}");
    let decided =
        std::fs::read_to_string(p.vouch_dir().join(format!("decided/{pid}.yaml"))).unwrap();
    assert!(
        decided.contains(removed[&inside].as_str().unwrap()),
        "{decided}"
    );
    assert!(!decided.contains("ops rota"), "{decided}");
    Outcome {
        proposal_valid: proposed["valid"].clone(),
        self_approve_code: code,
        read_after,
        found_after,
        removed: json!(removed.as_object().map(|m| m.len())),
    }
}

/// A project with TEXT approved (proposed by "agent", approved by alice).
fn with_claim() -> Project {
    let p = Project::new();
    let src = p.source(&format!("{TEXT}\n"));
    p.claim(TEXT, &src);
    p
}

#[test]
fn an_approved_delete_removes_the_object_alike_on_every_transport() {
    let outcomes = on_every_transport(with_claim, delete_over);
    let jsonl = &outcomes[0].0;
    assert_eq!(jsonl.proposal_valid, true);
    assert_eq!(jsonl.self_approve_code, "invalid_request");
    assert_eq!(jsonl.read_after, Value::Null);
    assert!(!jsonl.found_after);
    for (_, p) in &outcomes {
        assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
    }
    assert_eq!(jsonl, &outcomes[1].0, "JSONL vs MCP");
    assert_eq!(jsonl, &outcomes[2].0, "JSONL vs HTTP");
}

/// The first line of a refused `vouch propose-delete`'s errors.
fn refused(p: &Project, kind: &str, id: &str) -> String {
    let r = p.run(
        "agent",
        &["--json", "propose-delete", kind, id, "--reason", "gone"],
    );
    let v = r.json();
    assert_eq!(v["valid"], false, "{v}");
    assert_ne!(r.code, 0, "{v}");
    v["errors"][0].as_str().unwrap().to_string()
}

fn proposed(p: &Project, kind: &str, id: &str) -> String {
    let v = p.ok(
        "agent",
        &["propose-delete", kind, id, "--reason", "not needed"],
    );
    assert_eq!(v["valid"], true, "{v}");
    v["proposal_id"].as_str().unwrap().to_string()
}

/// Refused at propose while a relation, a page or a claim refers to the
/// target, naming each and suggesting supersede; refused again at approve
/// when a reference appeared after the proposal.
#[test]
fn a_delete_is_refused_while_other_objects_refer_to_it() {
    let p = Project::new();
    let src = p.source(&format!("{TEXT}\nStaging deploys need nothing.\n"));
    let claim = p.claim(TEXT, &src);
    let (entity, relation, page) = entity_relation_and_page(&p, &claim, &src);
    let why = refused(&p, "claim", &claim);
    assert!(why.contains(&format!("relation {relation}")), "{why}");
    assert!(why.contains(&format!("page {page}")), "{why}");
    assert!(why.contains("supersede"), "{why}");
    let why = refused(&p, "entity", &entity);
    assert!(why.contains(&format!("relation {relation}")), "{why}");
    assert!(p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());
    // Nothing refers to the relation: it goes, and then the entity may.
    let pid = proposed(&p, "relation", &relation);
    p.ok("alice", &["approve", &pid]);
    let pid = proposed(&p, "entity", &entity);
    p.ok("alice", &["approve", &pid]);
    assert!(
        !p.vouch_dir()
            .join(format!("entities/{entity}.yaml"))
            .exists()
    );

    // Proposed while nothing referred to it; superseded before approval.
    let old = p.claim("Staging deploys need nothing.", &src);
    let pid = proposed(&p, "claim", &old);
    let newer = p.claim("Staging deploys need a ticket.", &src);
    p.ok("alice", &["supersede", &old, &newer]);
    let r = p.run("alice", &["approve", &pid]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_contains(&r.stderr, &format!("claim {newer}"));
    assert!(p.vouch_dir().join(format!("claims/{old}.yaml")).exists());
    // A missing object cannot be proposed for deletion.
    assert!(refused(&p, "claim", "no-such-claim").contains("no approved claim"));
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
}

/// The review queue shows what a delete removes, as it reads now.
#[test]
fn the_review_queue_shows_what_a_delete_removes() {
    let p = with_claim();
    proposed(&p, "claim", "deploys-need-a-sign-off-from-the-ops-rota");
    let r = p.run("alice", &["pending"]);
    assert_contains(
        &r.stdout,
        "delete claim deploys-need-a-sign-off-from-the-ops-rota",
    );
    assert_contains(&r.stdout, TEXT);
    assert_contains(&r.stdout, "reason: not needed");
}

/// doctor accepts an approved delete, and names a claim deleted by hand
/// and a deleted claim put back by hand.
#[test]
fn doctor_accepts_an_approved_delete_and_refuses_one_by_hand() {
    let p = Project::new();
    let src = p.source(&format!("{TEXT}\nBackups run nightly.\n"));
    let gone = p.claim(TEXT, &src);
    let kept = p.claim("Backups run nightly.", &src);
    let file = |id: &str| p.vouch_dir().join(format!("claims/{id}.yaml"));
    let bytes = std::fs::read(file(&gone)).unwrap();
    let pid = proposed(&p, "claim", &gone);
    p.ok("alice", &["approve", &pid]);
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
    std::fs::remove_file(file(&kept)).unwrap();
    assert_eq!(p.doctor_kinds(), ["removed-object"]);
    std::fs::write(file(&gone), &bytes).unwrap();
    let kinds = p.doctor_kinds();
    assert!(kinds.contains(&"edited-object".to_string()), "{kinds:?}");
}

fn commit(p: &Project, message: &str) {
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "--allow-empty", "-m", message]);
}

/// The pull-request check passes a branch whose delete was approved and
/// lists it among its decisions; it refuses a branch that deleted a claim
/// by hand.
#[test]
fn the_pull_request_check_lists_an_approved_delete_and_refuses_one_by_hand() {
    let p = Project::new();
    git(p.root(), &["init", "-q", "-b", "main"]);
    let src = p.source(&format!("{TEXT}\nBackups run nightly.\n"));
    let gone = p.claim(TEXT, &src);
    let kept = p.claim("Backups run nightly.", &src);
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "deletes"]);
    let pid = proposed(&p, "claim", &gone);
    p.ok("alice", &["approve", &pid]);
    commit(&p, "an approved delete");
    let r = p.run("x", &["--json", "audit", "verify", "--base", "main"]);
    let v = r.json();
    assert_eq!(r.code, 0, "{v:#}");
    let decisions = v["base"]["decisions"].to_string();
    assert!(
        decisions.contains(&format!("delete claim {gone}")) && decisions.contains(&pid),
        "{decisions}"
    );
    git(p.root(), &["checkout", "-q", "main"]);
    git(p.root(), &["checkout", "-q", "-b", "by-hand"]);
    git(
        p.root(),
        &["rm", "-q", &format!(".vouch/claims/{kept}.yaml")],
    );
    commit(&p, "a delete by hand");
    let r = p.run("x", &["--json", "audit", "verify", "--base", "main"]);
    let v = r.json();
    assert_eq!(r.code, 6, "{v:#}");
    assert!(
        v["base"]["problems"]
            .to_string()
            .contains(&format!("claims/{kept}.yaml: a claim was removed")),
        "{v:#}"
    );
}
