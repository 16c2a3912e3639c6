//! The core's test harness: a knowledge base in a temp dir, and the steps
//! most tests start from (a source registered, a claim proposed by an
//! agent and approved by a person), through the same `kb.*` methods every
//! transport calls. Compiled for tests only.

use crate::kb::{Caller, Kb, Transport};
use crate::methods::dispatch;
use std::sync::Arc;

/// A fresh KB in a temp dir, on the system clock.
pub(crate) fn test_kb() -> (tempfile::TempDir, Kb) {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "t", None).unwrap();
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(crate::clock::SystemClock::default()),
    )
    .unwrap();
    (dir, kb)
}

/// Register `content` as a source (as an agent); its id.
pub(crate) fn test_source(kb: &Kb, content: &str) -> String {
    dispatch(
        kb,
        &Caller::new("agent", Transport::Jsonl),
        "kb.register_source",
        serde_json::json!({"content": content, "locator": "notes"}),
    )
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A claim citing `src`, proposed by an agent and approved by a person;
/// its id.
pub(crate) fn test_claim(kb: &Kb, src: &str, text: &str) -> String {
    let proposed = dispatch(
        kb,
        &Caller::new("agent", Transport::Jsonl),
        "kb.propose_claim",
        serde_json::json!({"text": text, "evidence": [src]}),
    )
    .unwrap();
    dispatch(
        kb,
        &Caller::new("alice", Transport::Cli),
        "kb.approve",
        serde_json::json!({"proposal_id": proposed["proposal_id"]}),
    )
    .unwrap();
    proposed["claim_id"].as_str().unwrap().to_string()
}

/// A test knowledge base's SQLite index at work, for the tests of
/// `index::sqlite` that look inside it.
pub(crate) fn sqlite(kb: &Kb) -> crate::index::sqlite::Ix<'_> {
    let index = kb
        .index()
        .as_any()
        .downcast_ref::<crate::index::sqlite::SqliteIndex>()
        .expect("the SQLite index");
    crate::index::sqlite::Ix::new(kb, index.state())
}

/// Claims found by words for `q`, through the search every transport
/// calls (the index as the keeper last made it current).
pub(crate) fn claim_hits(kb: &Kb, q: &str) -> Vec<crate::index::SearchHit> {
    crate::retrieval::search(
        kb,
        crate::retrieval::SearchParams {
            query: q.into(),
            limit: None,
            kinds: Some(vec!["claim".into()]),
            backend: None,
        },
    )
    .unwrap()
}

/// Write an approved claim's file by hand, as a pull or a teammate's
/// editor would (no proposal, no audit event).
pub(crate) fn write_claim_file(kb: &Kb, id: &str, text: &str) {
    write_claim_file_of(kb, id, text, crate::model::ClaimStatus::Working);
}

/// [`write_claim_file`], of `status`.
pub(crate) fn write_claim_file_of(
    kb: &Kb,
    id: &str,
    text: &str,
    status: crate::model::ClaimStatus,
) {
    use crate::model::*;
    use crate::stored::Stored;
    let now = kb.now();
    let claim = Claim {
        id: id.into(),
        text: text.into(),
        claim_type: ClaimType::Fact,
        status,
        confidence: 0.7,
        evidence: vec!["ev-x".into()],
        entities: vec![],
        supersedes: vec![],
        superseded_by: None,
        contradicts: vec![],
        scope: None,
        tags: vec![],
        created_at: now,
        updated_at: now,
        last_confirmed_at: None,
        approved_by: Some("alice".into()),
        extra: Default::default(),
    };
    let path = kb.layout().file(crate::store::Dir::Claims, id).unwrap();
    std::fs::write(path, claim.encode().unwrap()).unwrap();
}

/// A shared lock (what a team server's database takes before the file
/// lock) that is taken at once and held while `held` says so.
pub(crate) struct TestSharedLock {
    pub(crate) held: Arc<std::sync::atomic::AtomicBool>,
}

struct TestHold;

impl crate::store::lock::SharedHold for TestHold {
    fn head(&self) -> Option<crate::store::lock::ChainHead> {
        None
    }
    fn release(self: Box<Self>, _: crate::store::lock::ChainHead) {}
}

impl crate::store::lock::SharedLock for TestSharedLock {
    fn describe(&self) -> String {
        "a test's lock".into()
    }
    fn acquire(&self) -> crate::Result<Box<dyn crate::store::lock::SharedHold>> {
        Ok(Box::new(TestHold))
    }
    fn peek_head(&self) -> crate::Result<Option<crate::store::lock::ChainHead>> {
        Ok(None)
    }
    fn still_held(&self) -> crate::Result<bool> {
        Ok(self.held.load(std::sync::atomic::Ordering::SeqCst))
    }
}
