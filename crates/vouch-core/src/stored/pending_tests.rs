//! The pending proposals in a queue outside the tree (a team server's
//! database, here a map in memory behind the same trait; the real
//! PostgreSQL is `vouch-postgres`'s tests and the team server's e2e).

use crate::error::{Error, Result};
use crate::kb::{Caller, Kb, Transport};
use crate::methods::dispatch;
use crate::store::Dir;
use crate::store::queue::SharedQueue;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A queue in memory that fails while `down` says so, and refuses to
/// keep while `full` does.
#[derive(Default)]
struct MemoryQueue {
    rows: Mutex<BTreeMap<String, Vec<u8>>>,
    down: AtomicBool,
    full: AtomicBool,
}

impl MemoryQueue {
    fn up(&self) -> Result<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(Error::internal("the test's queue is down"));
        }
        Ok(())
    }
    fn ids_kept(&self) -> Vec<String> {
        self.rows.lock().unwrap().keys().cloned().collect()
    }
    /// The bytes kept for `id`, which must be kept.
    fn kept(&self, id: &str) -> Vec<u8> {
        self.rows.lock().unwrap()[id].clone()
    }
}

impl SharedQueue for MemoryQueue {
    fn describe(&self) -> String {
        "the test's queue".into()
    }
    fn ids(&self) -> Result<Vec<String>> {
        self.up()?;
        Ok(self.ids_kept())
    }
    fn read(&self, ids: &[String]) -> Result<Vec<(String, Vec<u8>)>> {
        self.up()?;
        let rows = self.rows.lock().unwrap();
        Ok(ids
            .iter()
            .filter_map(|id| rows.get(id).map(|b| (id.clone(), b.clone())))
            .collect())
    }
    fn keep(&self, proposals: &[(String, Vec<u8>)]) -> Result<Vec<String>> {
        self.up()?;
        if self.full.load(Ordering::SeqCst) {
            return Err(Error::internal("the test's queue is full"));
        }
        let mut rows = self.rows.lock().unwrap();
        let mut differ = Vec::new();
        for (id, bytes) in proposals {
            match rows.get(id) {
                Some(kept) if kept != bytes => differ.push(id.clone()),
                Some(_) => {}
                None => {
                    rows.insert(id.clone(), bytes.clone());
                }
            }
        }
        Ok(differ)
    }
    fn forget(&self, ids: &[String]) -> Result<()> {
        self.up()?;
        let mut rows = self.rows.lock().unwrap();
        for id in ids {
            rows.remove(id);
        }
        Ok(())
    }
}

fn queued(kb: &Kb) -> Arc<MemoryQueue> {
    let queue = Arc::new(MemoryQueue::default());
    kb.share_lock(Arc::new(crate::testing::TestSharedLock {
        held: Arc::new(AtomicBool::new(true)),
    }));
    kb.share_queue(queue.clone());
    queue
}

/// A knowledge base whose pending proposals are kept in a queue, with
/// `text` registered as a source: the source's id.
fn with_queue(text: &str) -> (tempfile::TempDir, Kb, Arc<MemoryQueue>, String) {
    let (dir, kb) = crate::testing::test_kb();
    let queue = queued(&kb);
    let src = crate::testing::test_source(&kb, text);
    (dir, kb, queue, src)
}

fn agent(kb: &Kb, method: &str, params: Value) -> Result<Value> {
    dispatch(kb, &Caller::new("agent", Transport::Jsonl), method, params)
}

fn person(kb: &Kb, method: &str, params: Value) -> Result<Value> {
    dispatch(kb, &Caller::new("alice", Transport::Cli), method, params)
}

fn propose(kb: &Kb, src: &str, text: &str) -> String {
    agent(
        kb,
        "kb.propose_claim",
        json!({"text": text, "evidence": [src]}),
    )
    .unwrap()["proposal_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The names in `proposed/`.
fn inbox(kb: &Kb) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(kb.layout().dir(Dir::Proposed))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn pending(kb: &Kb) -> Vec<String> {
    person(kb, "kb.list_pending", json!({}))
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_proposal_is_kept_in_the_queue_listed_from_it_and_forgotten_when_decided() {
    let (_dir, kb, queue, src) = with_queue("Deploys run from the release branch.");
    let a = propose(&kb, &src, "Deploys run from the release branch");
    let b = propose(&kb, &src, "Deploys run only from the release branch");
    assert_eq!(inbox(&kb), Vec::<String>::new(), "the inbox is emptied");
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    assert_eq!(queue.ids_kept(), both);
    // What is kept is the gate's file, byte for byte.
    let kept = queue.kept(&a);
    let text = String::from_utf8(kept).unwrap();
    assert!(
        text.contains("Deploys run from the release branch"),
        "{text}"
    );
    let mut listed = pending(&kb);
    listed.sort();
    assert_eq!(listed, both);
    let read = agent(&kb, "kb.read_proposal", json!({"id": a})).unwrap();
    assert_eq!(read["status"], json!("pending"), "{read}");

    person(&kb, "kb.approve", json!({"proposal_id": a})).unwrap();
    person(
        &kb,
        "kb.reject",
        json!({"proposal_id": b, "reason": "same"}),
    )
    .unwrap();
    assert_eq!(queue.ids_kept(), Vec::<String>::new(), "both forgotten");
    assert_eq!(pending(&kb), Vec::<String>::new());
    assert!(kb.exists(Dir::Decided, &a) && kb.exists(Dir::Decided, &b));
    let again = person(&kb, "kb.approve", json!({"proposal_id": a})).unwrap_err();
    assert!(
        again.message.contains("already approved"),
        "{}",
        again.message
    );
}

#[test]
fn proposals_left_in_the_inbox_are_listed_and_moved_by_the_next_writer() {
    let (dir, kb) = crate::testing::test_kb();
    let src = crate::testing::test_source(&kb, "Backups run nightly.");
    // Proposed before the queue was there (or by a writer without it).
    let before = propose(&kb, &src, "Backups run nightly");
    drop(kb);
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(crate::clock::SystemClock::default()),
    )
    .unwrap();
    let queue = queued(&kb);
    assert_eq!(inbox(&kb), vec![format!("{before}.yaml")]);
    assert_eq!(pending(&kb), vec![before.clone()], "listed from the inbox");
    assert!(queue.ids_kept().is_empty(), "a read moves nothing");
    crate::testing::test_source(&kb, "Restores are tested monthly.");
    assert_eq!(inbox(&kb), Vec::<String>::new());
    assert_eq!(queue.ids_kept(), vec![before.clone()]);
    assert_eq!(pending(&kb), vec![before.clone()]);
    person(&kb, "kb.approve", json!({"proposal_id": before})).unwrap();
    assert!(queue.ids_kept().is_empty());
}

#[test]
fn a_queue_that_fails_loses_no_proposal() {
    let (_dir, kb, queue, src) = with_queue("The API is rate limited.");
    let logged = kb.audit_log().len().unwrap();
    // Out of reach: proposing is refused before anything is written.
    queue.down.store(true, Ordering::SeqCst);
    let refused = agent(
        &kb,
        "kb.propose_claim",
        json!({"text": "The API is rate limited", "evidence": [src]}),
    )
    .unwrap_err();
    assert!(refused.message.contains("is down"), "{}", refused.message);
    assert_eq!(kb.audit_log().len().unwrap(), logged, "nothing logged");
    assert_eq!(inbox(&kb), Vec::<String>::new());
    let listing = person(&kb, "kb.list_pending", json!({})).unwrap_err();
    assert!(listing.message.contains("is down"), "{}", listing.message);
    queue.down.store(false, Ordering::SeqCst);

    // Failing to keep once the proposal is written: the inbox keeps it.
    queue.full.store(true, Ordering::SeqCst);
    let id = propose(&kb, &src, "The API is rate limited");
    assert_eq!(inbox(&kb), vec![format!("{id}.yaml")]);
    assert!(
        kb.take_warnings()
            .iter()
            .any(|w| w.contains("stay in proposed/") && w.contains("is full")),
        "the failure is said"
    );
    assert_eq!(pending(&kb), vec![id.clone()], "listed from the inbox");
    queue.full.store(false, Ordering::SeqCst);
    crate::testing::test_source(&kb, "Another note.");
    assert_eq!(
        queue.ids_kept(),
        vec![id.clone()],
        "moved by the next writer"
    );
    assert_eq!(inbox(&kb), Vec::<String>::new());
}

#[test]
fn an_inbox_file_unlike_the_kept_proposal_stays_and_the_kept_one_is_read() {
    let (_dir, kb, queue, src) = with_queue("Logs are kept 30 days.");
    let id = propose(&kb, &src, "Logs are kept 30 days");
    let kept = queue.kept(&id);
    let planted = String::from_utf8(kept.clone())
        .unwrap()
        .replace("Logs are kept 30 days", "Logs are kept forever");
    let file = kb.layout().file(Dir::Proposed, &id).unwrap();
    std::fs::write(&file, &planted).unwrap();
    crate::testing::test_source(&kb, "A write.");
    assert!(file.exists(), "left where it is");
    assert!(
        kb.take_warnings()
            .iter()
            .any(|w| w.contains("is not the pending proposal")),
        "and named"
    );
    assert_eq!(queue.kept(&id), kept);
    let read = agent(&kb, "kb.read_proposal", json!({"id": id})).unwrap();
    assert_eq!(
        read["payload"]["text"],
        json!("Logs are kept 30 days"),
        "{read}"
    );
    assert_eq!(pending(&kb), vec![id]);
}

#[test]
fn only_a_proposal_under_its_own_id_moves_and_a_bad_row_trips_no_listing() {
    let (_dir, kb, queue, src) = with_queue("Tokens rotate hourly.");
    let good = propose(&kb, &src, "Tokens rotate hourly");
    let text = String::from_utf8(queue.kept(&good)).unwrap();
    // Dropped in the inbox by hand: not YAML, and a proposal naming
    // another id inside.
    let garbage = "20261129-000000-0000000a";
    let renamed = "20261129-000000-0000000b";
    let file = |id: &str| kb.layout().file(Dir::Proposed, id).unwrap();
    std::fs::write(file(garbage), "kind: [unclosed\n").unwrap();
    std::fs::write(file(renamed), &text).unwrap();
    crate::testing::test_source(&kb, "A write.");
    assert!(
        file(garbage).exists() && file(renamed).exists(),
        "both stay"
    );
    assert_eq!(queue.ids_kept(), vec![good.clone()], "neither is kept");
    let said = kb.take_warnings().join("\n");
    assert!(said.contains("stays in proposed/"), "{said}");
    assert!(said.contains("is kept as proposal"), "{said}");

    // Rows planted in the queue: not UTF-8, and another id's body.
    let rows = [
        ("20261129-000000-0000000c".to_string(), vec![0xff, 0xfe]),
        (
            "20261129-000000-0000000d".to_string(),
            text.clone().into_bytes(),
        ),
    ];
    queue.rows.lock().unwrap().extend(rows.clone());
    assert_eq!(pending(&kb), vec![good.clone()], "listed; the rest skipped");
    for (id, _) in &rows {
        let e = person(&kb, "kb.read_proposal", json!({"id": id})).unwrap_err();
        assert!(
            e.message.contains("UTF-8") || e.message.contains("is kept as proposal"),
            "{}",
            e.message
        );
    }
    // `doctor` names each bad row, with no file to fix.
    let doctor = person(&kb, "kb.doctor", json!({})).unwrap();
    let bad_rows: Vec<&Value> = doctor["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == json!("queued-proposal-unreadable"))
        .collect();
    assert_eq!(bad_rows.len(), 2, "{doctor}");
    assert!(bad_rows.iter().all(|i| i["file"].is_null()), "{doctor}");
    // Proposing and deciding go on.
    let next = propose(&kb, &src, "Tokens rotate every hour on the hour");
    person(&kb, "kb.approve", json!({"proposal_id": next})).unwrap();
    person(&kb, "kb.approve", json!({"proposal_id": good})).unwrap();
}

#[test]
fn a_decided_proposals_file_back_in_the_inbox_is_removed_not_queued() {
    let (_dir, kb, queue, src) = with_queue("Queues drain in order.");
    let id = propose(&kb, &src, "Queues drain in order");
    let kept = queue.kept(&id);
    person(&kb, "kb.approve", json!({"proposal_id": id})).unwrap();
    // The file's removal undone by a crash: it is back in the inbox.
    let file = kb.layout().file(Dir::Proposed, &id).unwrap();
    std::fs::write(&file, &kept).unwrap();
    crate::testing::test_source(&kb, "A write.");
    assert!(!file.exists());
    assert!(queue.ids_kept().is_empty(), "not pending again");
    assert!(pending(&kb).is_empty());
}

#[test]
fn a_file_unlike_its_kept_proposal_hides_no_object_id_from_the_next_proposal() {
    let (_dir, kb, queue, src) = with_queue("Caches expire hourly.");
    let first = agent(
        &kb,
        "kb.propose_claim",
        json!({"text": "Caches expire hourly", "evidence": [src]}),
    )
    .unwrap();
    let (id, object) = (
        first["proposal_id"].as_str().unwrap().to_string(),
        first["claim_id"].as_str().unwrap().to_string(),
    );
    let kept = String::from_utf8(queue.kept(&id)).unwrap();
    let planted = kept.replace(&object, "another-object");
    assert_ne!(planted, kept);
    std::fs::write(kb.layout().file(Dir::Proposed, &id).unwrap(), planted).unwrap();
    let next = agent(
        &kb,
        "kb.propose_claim",
        json!({"text": "Caches expire hourly", "evidence": [src]}),
    )
    .unwrap();
    assert_ne!(next["claim_id"], json!(object), "{next}");
}

#[test]
fn unqueue_moves_what_it_can_and_names_what_it_leaves() {
    let (_dir, kb, queue, src) = with_queue("Workers scale on queue depth.");
    let moved = propose(&kb, &src, "Workers scale on queue depth");
    let decided = propose(&kb, &src, "Workers scale on queue depth alone");
    let differs = propose(&kb, &src, "Workers scale on queue depth and CPU");
    person(&kb, "kb.approve", json!({"proposal_id": decided})).unwrap();
    // The decided one's row left behind (its forgetting failed).
    let decided_row = std::fs::read(kb.layout().file(Dir::Decided, &decided).unwrap()).unwrap();
    queue
        .rows
        .lock()
        .unwrap()
        .insert(decided.clone(), decided_row);
    // A row that is another proposal, and a file in the way of one.
    let moved_row = queue.kept(&moved);
    let wrong = "20261129-000000-0000000e".to_string();
    queue.rows.lock().unwrap().insert(wrong.clone(), moved_row);
    let in_the_way = kb.layout().file(Dir::Proposed, &differs).unwrap();
    std::fs::write(&in_the_way, "kind: claim\n").unwrap();

    let (done, left) = kb.unqueue().unwrap();
    assert_eq!(done, vec![moved.clone()]);
    let mut stays = vec![differs.clone(), wrong.clone()];
    stays.sort();
    assert_eq!(left, stays);
    assert_eq!(
        queue.ids_kept(),
        stays,
        "the decided row forgotten, the rest kept"
    );
    assert!(kb.layout().file(Dir::Proposed, &moved).unwrap().exists());
    assert!(!kb.layout().file(Dir::Proposed, &decided).unwrap().exists());
    assert_eq!(
        std::fs::read_to_string(&in_the_way).unwrap(),
        "kind: claim\n"
    );
    let said = kb.take_warnings().join("\n");
    assert!(
        said.contains("is kept as proposal") && said.contains("that one stays there"),
        "{said}"
    );
}

#[test]
fn a_bundle_deciding_a_queued_proposal_is_refused_and_so_is_one_the_queue_cannot_check() {
    // One knowledge base approves a proposal; its bundle carries the
    // decision.
    let (one_dir, one) = crate::testing::test_kb();
    let src = crate::testing::test_source(&one, "Releases are tagged on Fridays.");
    let id = propose(&one, &src, "Releases are tagged on Fridays");
    let proposal = std::fs::read(one.layout().file(Dir::Proposed, &id).unwrap()).unwrap();
    person(&one, "kb.approve", json!({"proposal_id": id})).unwrap();
    let bundle = one_dir.path().join("one.tar.gz");
    person(&one, "kb.export", json!({"out": bundle})).unwrap();
    // Another keeps the same proposal pending in its queue.
    let (_dir, two, queue, _src) = with_queue("Releases are tagged on Fridays.");
    queue.keep(&[(id.clone(), proposal)]).unwrap();
    let check = person(&two, "kb.import_check", json!({"path": bundle})).unwrap();
    let said = check.to_string();
    assert!(
        said.contains(&format!("proposal {id} is pending review in this KB")),
        "{check:#}"
    );
    assert_eq!(check["ok"], json!(false), "{check:#}");
    // The queue out of reach: refused, saying why, not "pending".
    queue.down.store(true, Ordering::SeqCst);
    let check = person(&two, "kb.import_check", json!({"path": bundle})).unwrap();
    let said = check.to_string();
    assert!(
        said.contains(&format!(
            "whether proposal {id} is pending review in this KB cannot be checked (the test's queue is down)"
        )),
        "{check:#}"
    );
    assert_eq!(check["ok"], json!(false), "{check:#}");
}
