//! The secret scan in the gate's batch path (`propose_claims`, which a
//! knowledge import uses): a claim holding a secret is refused alone, as
//! an invalid one is, and the others are proposed.

use std::sync::Arc;
use vouch_core::clock::FixedClock;
use vouch_core::params::ProposeClaimParams;
use vouch_core::{Caller, Kb, Transport};

#[test]
fn a_batch_refuses_only_the_claim_that_holds_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "batch", None).unwrap();
    let at = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z").unwrap();
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(FixedClock::new(at.into(), 1)),
    )
    .unwrap();
    let agent = Caller::new("agent", Transport::Jsonl);
    let source = vouch_core::methods::dispatch(
        &kb,
        &agent,
        "kb.register_source",
        serde_json::json!({"content": "The uploader retries twice.\n", "locator": "notes"}),
    )
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let key = ["AKIA", "IOSFODNN7", "EXAMPLE"].concat();
    let claim = |text: String| -> ProposeClaimParams {
        serde_json::from_value(serde_json::json!({"text": text, "evidence": [source]})).unwrap()
    };
    let results = vouch_core::review::gate::propose_claims(
        &kb,
        &agent,
        vec![
            claim("The uploader retries twice.".into()),
            claim(format!("The uploader signs with {key}.")),
        ],
    )
    .unwrap();
    assert!(results[0].valid, "{:?}", results[0].errors);
    assert!(!results[1].valid);
    let why = results[1].errors.join("; ");
    assert!(
        why.contains("text: line 1, columns 25-44: aws_access_key_id") && !why.contains(&key),
        "{why}"
    );
    let proposed = std::fs::read_dir(dir.path().join(".vouch/proposed"))
        .unwrap()
        .count();
    assert_eq!(proposed, 1);
}
