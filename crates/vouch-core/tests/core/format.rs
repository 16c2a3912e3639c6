//! On-disk format: golden files pin the exact bytes vouch writes, and small
//! hand-written vouch 1.x trees must open, list, search and round-trip.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use vouch_core::clock::FixedClock;
use vouch_core::model::*;
use vouch_core::store::yaml;
use vouch_core::stored::Stored;
use vouch_core::{Caller, Kb, Transport};

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Compare with tests/golden/<name>; UPDATE_GOLDEN=1 rewrites it.
// A test's switch, not the core's: the core itself never reads the
// environment (crates/vouch-core/clippy.toml).
#[allow(clippy::disallowed_methods)]
fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(actual, expected, "golden file {} differs", path.display());
}

const SRC: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

#[test]
fn golden_claim() {
    let c = Claim {
        id: "deploys-run-from-main".into(),
        text: "Deploys run from main: never from a tag.".into(),
        claim_type: ClaimType::Workflow,
        status: ClaimStatus::Stable,
        confidence: 0.9,
        evidence: vec![SRC.into(), "ev-0123456789abcdef".into()],
        entities: vec!["ci".into()],
        supersedes: vec!["old-deploys".into()],
        superseded_by: None,
        contradicts: vec![],
        scope: Some(serde_json::json!("project")),
        tags: vec!["no".into(), "2026-01-01".into()],
        created_at: t("2026-05-21T05:52:34.267699Z"),
        updated_at: t("2026-05-21T06:00:00Z"),
        last_confirmed_at: Some(t("2026-05-22T00:00:00Z")),
        approved_by: Some("jane".into()),
        extra: Default::default(),
    };
    golden("claim.yaml", &c.encode().unwrap());
}

#[test]
fn golden_source_evidence_entity_relation_session() {
    let s = Source {
        id: SRC.into(),
        source_type: SourceType::File,
        locator: "docs/hello.txt".into(),
        title: Some("Hello".into()),
        hash: Some(SRC.into()),
        immutable: true,
        scope: None,
        byte_size: Some(6),
        media_type: "text/plain".into(),
        created_at: t("2026-05-21T05:52:34Z"),
        metadata: None,
        tags: vec![],
        extra: Default::default(),
    };
    golden("source.yaml", &yaml::to_yaml(&s).unwrap());
    let e = Evidence {
        id: "ev-0123456789abcdef".into(),
        source_id: SRC.into(),
        source_type: Some(SourceType::File),
        locator: "L1-L1".into(),
        quote: Some("hello".into()),
        hash: Some("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824".into()),
        created_at: t("2026-05-21T05:52:34Z"),
        extra: Default::default(),
    };
    golden("evidence.yaml", &e.encode().unwrap());
    let en = Entity {
        id: "billing-api".into(),
        name: "Billing API".into(),
        entity_type: EntityType::Api,
        aliases: vec!["billing".into()],
        description: Some("Charges customers.\nTwice a month.".into()),
        tags: vec![],
        created_at: t("2026-05-21T05:52:34Z"),
        updated_at: t("2026-05-21T05:52:34Z"),
        approved_by: Some("jane".into()),
        extra: Default::default(),
    };
    golden("entity.yaml", &en.encode().unwrap());
    let r = Relation {
        id: "billing-api-depends-on-postgres".into(),
        source: "billing-api".into(),
        relation: RelationType::DependsOn,
        target: "postgres".into(),
        confidence: 0.7,
        evidence: vec![SRC.into()],
        created_at: t("2026-05-21T05:52:34Z"),
        updated_at: t("2026-05-21T05:52:34Z"),
        approved_by: Some("jane".into()),
        extra: Default::default(),
    };
    golden("relation.yaml", &r.encode().unwrap());
    let se = Session {
        id: "sess-20260521-055234-abcdef".into(),
        task: Some("learn deploys".into()),
        note: None,
        actor: Some("claude-code".into()),
        status: SessionStatus::Ended,
        started_at: t("2026-05-21T05:52:34Z"),
        ended_at: Some(t("2026-05-21T06:52:34Z")),
        proposals: vec!["20260521-055300-0a1b2c3d".into()],
        extra: Default::default(),
    };
    golden("session.yaml", &se.encode().unwrap());
}

#[test]
fn golden_page() {
    let p = Page {
        id: "deploy-runbook".into(),
        title: "Deploy runbook".into(),
        page_type: PageType::Workflow,
        status: PageStatus::Active,
        claims: vec!["deploys-run-from-main".into()],
        entities: vec![],
        sources: vec![],
        tags: vec![],
        created_at: t("2026-05-21T05:52:34Z"),
        updated_at: t("2026-05-21T05:52:34Z"),
        approved_by: Some("jane".into()),
        extra: Default::default(),
        body: "# Deploy\n\n---\n\nRun from `main`.\n".into(),
    };
    let text = p.encode().unwrap();
    golden("page.md", &text);
    let back = Page::decode(Path::new("page.md"), &text).unwrap();
    assert_eq!(
        back, p,
        "page must round-trip, including a body containing ---"
    );
}

/// A whole KB written through the gate with a pinned clock and seed is
/// byte-stable: the proposal, decided record, claim and audit log.
#[test]
fn golden_gate_output_is_byte_stable() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "golden", Some("claude-code")).unwrap();
    let clock = Arc::new(FixedClock::new(t("2026-05-21T05:52:34Z").0, 7));
    let kb = Kb::open(&dir.path().join(".vouch"), clock).unwrap();
    let agent = Caller::new("claude-code", Transport::Jsonl);
    let jane = Caller::new("jane", Transport::Cli);
    let call = |c: &Caller, m: &str, p: serde_json::Value| {
        vouch_core::methods::dispatch(&kb, c, m, p).unwrap()
    };
    let src = call(
        &agent,
        "kb.register_source",
        serde_json::json!({"content": "hello\n", "locator": "docs/hello.txt"}),
    );
    let prop = call(
        &agent,
        "kb.propose_claim",
        serde_json::json!({
        "text": "The greeting is hello", "evidence": [{"source_id": src["id"], "quote": "hello"}],
        "rationale": "seen in docs"}),
    );
    let pid = prop["proposal_id"].as_str().unwrap().to_string();
    let proposed =
        std::fs::read_to_string(dir.path().join(format!(".vouch/proposed/{pid}.yaml"))).unwrap();
    call(&jane, "kb.approve", serde_json::json!({"proposal_id": pid}));
    let root = dir.path().join(".vouch");
    golden("gate-proposed.yaml", &proposed);
    golden(
        "gate-decided.yaml",
        &std::fs::read_to_string(root.join(format!("decided/{pid}.yaml"))).unwrap(),
    );
    golden(
        "gate-claim.yaml",
        &std::fs::read_to_string(root.join("claims/the-greeting-is-hello.yaml")).unwrap(),
    );
    golden(
        "gate-audit.log.jsonl",
        &std::fs::read_to_string(root.join("audit.log.jsonl")).unwrap(),
    );
    golden(
        "gate-config.yaml",
        &std::fs::read_to_string(root.join("config.yaml")).unwrap(),
    );
    assert!(kb.audit_log().verify().unwrap().ok);
}

#[test]
fn vouch_1x_tree_opens_lists_searches_and_keeps_unknown_keys() {
    let kb = Kb::open(
        &fixture("v1-kb/.vouch"),
        Arc::new(FixedClock::new(t("2026-06-01T00:00:00Z").0, 1)),
    )
    .unwrap();
    assert_eq!(kb.settings().kb_name.as_deref(), Some("legacy"));
    assert_eq!(kb.settings().version, serde_json::json!(1));
    let claims: Vec<Claim> = kb.load_all().unwrap();
    assert!(kb.take_warnings().is_empty());
    assert_eq!(claims.len(), 2);
    let a = claims
        .iter()
        .find(|c| c.id == "unquoted-timestamps")
        .unwrap();
    assert_eq!(a.created_at, t("2026-05-21T05:52:34.267699Z"));
    assert_eq!(a.updated_at, t("2026-05-21T05:52:34.267699Z"));
    assert_eq!(a.scope, Some(serde_json::json!("project")));
    assert_eq!(a.extra["proposed_by"], serde_json::json!("claude-code"));
    let b = claims.iter().find(|c| c.id == "scope-map").unwrap();
    assert_eq!(b.scope.as_ref().unwrap()["team"], "billing");
    assert_eq!(b.confidence, 1.0);
    // Unknown keys survive a rewrite.
    let text = a.encode().unwrap();
    assert!(
        text.contains("proposed_by: claude-code")
            && text.contains("review_note: checked against the runbook"),
        "{text}"
    );
    let src = kb.load_source(SRC).unwrap().unwrap();
    assert_eq!(src.scope.unwrap()["level"], "team");
    let page: Page = kb.load("deploy-runbook").unwrap().unwrap();
    assert_eq!(page.body, "# Deploy\n\nRun from main.\n");
    let ent: Entity = kb.load("billing-api").unwrap().unwrap();
    assert_eq!(ent.extra["owner"], "payments-team");
    // Search works over a copy (the index is written beside the files).
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&fixture("v1-kb"), copy.path());
    let kb = Kb::open(
        &copy.path().join(".vouch"),
        Arc::new(FixedClock::new(t("2026-06-01T00:00:00Z").0, 1)),
    )
    .unwrap();
    let hits = vouch_core::retrieval::search(
        &kb,
        serde_json::from_value(serde_json::json!({"query": "deploy main"})).unwrap(),
    )
    .unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert!(
        ids.contains(&"unquoted-timestamps") && ids.contains(&"deploy-runbook"),
        "{ids:?}"
    );
    assert!(
        vouch_core::sources::source_verify(&kb, Default::default())
            .unwrap()
            .ok
    );
}

#[test]
fn seed_shaped_config_with_comments_loads() {
    let kb = Kb::open(
        &fixture("seed-kb/.vouch"),
        Arc::new(FixedClock::new(t("2026-06-01T00:00:00Z").0, 1)),
    )
    .unwrap();
    assert_eq!(kb.settings().agent.as_deref(), Some("claude-code"));
    assert!(kb.settings().review.require_citations);
    assert_eq!(
        kb.settings().review.approver_role,
        vouch_core::settings::ApproverRole::Human
    );
}

#[test]
fn an_unusable_config_value_opens_with_its_default_and_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "x", None).unwrap();
    let cfg = dir.path().join(".vouch/config.yaml");
    std::fs::write(&cfg, "review:\n  approver_role: robot\n").unwrap();
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(FixedClock::new(t("2026-06-01T00:00:00Z").0, 1)),
    )
    .unwrap();
    assert_eq!(
        kb.settings().review.approver_role,
        vouch_core::settings::ApproverRole::Human,
        "the default holds"
    );
    let warnings = kb.take_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("config.yaml") && w.contains("review.approver_role")),
        "{warnings:?}"
    );
}

#[test]
fn malformed_config_is_a_clear_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "x", None).unwrap();
    let cfg = dir.path().join(".vouch/config.yaml");
    std::fs::write(&cfg, "version: \"0.1\"\nreview:\n  approver_role: [robot\n").unwrap();
    let err = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(FixedClock::new(t("2026-06-01T00:00:00Z").0, 1)),
    )
    .err()
    .unwrap();
    assert!(
        err.message.contains("config.yaml") && err.message.contains("line"),
        "{}",
        err.message
    );
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
