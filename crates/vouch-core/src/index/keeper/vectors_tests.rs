//! The vectors kept in step: with writes, outside edits, a background
//! step, and what a model is given to embed (`vectors.rs`).

use super::*;
use crate::kb::Kb;
use crate::methods::dispatch;
use crate::{Caller, Transport};
use serde_json::json;

/// Words hashed into 32 dimensions: texts sharing words are close.
struct Words;

impl Embedder for Words {
    fn model_id(&self) -> &str {
        "words@test/32/0"
    }
    fn dimensions(&self) -> usize {
        32
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let mut v = vec![0f32; 32];
        for w in crate::retrieval::query_terms_unbounded(text) {
            let h = crate::ids::sha256_hex(w.as_bytes());
            v[usize::from_str_radix(&h[..2], 16).unwrap() % 32] += 1.0;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        Ok(v.into_iter().map(|x| x / n).collect())
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        texts
            .iter()
            .map(|t| Ok(vec![self.embed_query(t)?]))
            .collect()
    }
}

/// [`Words`], watched: told of each call's texts before it embeds them.
trait Watching: Send + Sync {
    fn before(&self, texts: &[&str]);
}

impl<W: Watching> Embedder for W {
    fn model_id(&self) -> &str {
        Words.model_id()
    }
    fn dimensions(&self) -> usize {
        Words.dimensions()
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Words.embed_query(text)
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.before(texts);
        Words.embed_documents(texts)
    }
}

pub(super) fn semantic(kb: &Kb, q: &str) -> Vec<String> {
    let caller = Caller::new("agent", Transport::Jsonl);
    dispatch(
        kb,
        &caller,
        "kb.search",
        json!({"query": q, "backend": "embedding", "kinds": ["claim"]}),
    )
    .unwrap()
    .as_array()
    .unwrap()
    .iter()
    .map(|h| h["id"].as_str().unwrap().to_string())
    .collect()
}

/// A background step's round of embedding, waiting for any other: every
/// document gets its vectors.
pub(super) fn embed_all(kb: &Kb, embedder: &Arc<dyn Embedder>) {
    ensure(
        &crate::testing::sqlite(kb).keep(),
        embedder,
        Budget::Unlimited,
        true,
        &mut |_, _| {},
    )
    .unwrap();
}

/// A claim proposed by an agent citing the one source "notes", approved by a
/// person; its id.
pub(super) fn approved_claim(kb: &Kb, text: &str) -> String {
    let src = crate::testing::test_source(kb, "notes");
    crate::testing::test_claim(kb, &src, text)
}

/// Replace `from` with `to` in claim `id`'s file, as an editor would
/// (a moment later, so the file's signature changes); its path.
pub(super) fn edit_by_hand(kb: &Kb, id: &str, from: &str, to: &str) -> std::path::PathBuf {
    let path = kb.layout().file(crate::store::Dir::Claims, id).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&path, text.replace(from, to)).unwrap();
    path
}

/// A long-running process: the vectors follow its own writes (by the
/// keys the write hook names) and edits made outside it (by the keys
/// the index sync names), without looking at every document again.
#[test]
fn vectors_follow_writes_and_outside_edits_by_key() {
    let (_dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Words));
    kb.configure_index(|o| o.sync_interval = Duration::ZERO);
    let claim = |text: &str| approved_claim(&kb, text);
    // Which documents changed since the vectors last looked.
    let changes = || {
        crate::testing::sqlite(&kb)
            .index_state
            .doc_changes
            .lock()
            .unwrap()
            .clone()
    };
    let a = claim("alpha bravo charlie");
    assert_eq!(semantic(&kb, "alpha bravo charlie")[0], a);
    // Looked once at everything; from now on only at what changed.
    assert_eq!(changes(), Some(Vec::new()));
    let b = claim("delta echo foxtrot");
    // The write's own catch-up took the one key the write hook named
    // (`None` would have sent it to every document).
    assert_eq!(changes(), Some(Vec::new()));
    assert_eq!(semantic(&kb, "delta echo foxtrot")[0], b);
    // Edited by hand: the sync names it, and its vector follows.
    let path = edit_by_hand(&kb, &a, "alpha bravo charlie", "golf hotel india");
    assert_eq!(semantic(&kb, "golf hotel india")[0], a);
    // Removed by hand: gone from the vectors.
    std::fs::remove_file(&path).unwrap();
    assert!(!semantic(&kb, "golf hotel india").contains(&a));
    let v = crate::testing::sqlite(&kb)
        .index_state
        .vectors
        .read()
        .unwrap();
    assert_eq!(v.as_ref().unwrap().documents(), 2, "b and the source");
}

/// In a process with no background step, a search catches the vectors
/// up before it reads: while another thread is embedding, it waits
/// for it within its budget, and finds the claim that was approved
/// before it started — by meaning, as words would.
#[test]
fn a_search_waits_for_a_refresh_in_progress_and_sees_the_new_claim() {
    let (_dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Words));
    kb.configure_index(|o| o.sync_interval = Duration::ZERO);
    let claim = approved_claim(&kb, "kilo lima mike");
    let kb = Arc::new(kb);
    // The "refresh" holds the embedding lock for a while, as a slow
    // refresh on a busy machine does, then lets go without embedding.
    let releaser = hold_embedding(&kb, Duration::from_millis(300));
    let found = semantic(&kb, "kilo lima mike");
    releaser.join().unwrap();
    assert_eq!(found.first(), Some(&claim), "{found:?}");
}

/// Another step holding the embedding lock for `hold`, as a slow one on a
/// busy machine does, then letting go without embedding; returns once it
/// holds it.
fn hold_embedding(kb: &Arc<Kb>, hold: Duration) -> std::thread::JoinHandle<()> {
    let (locked, is_locked) = std::sync::mpsc::channel();
    let holder = kb.clone();
    let step = std::thread::spawn(move || {
        let held = crate::testing::sqlite(&holder)
            .index_state
            .embedding
            .lock()
            .unwrap();
        locked.send(()).unwrap();
        std::thread::sleep(hold);
        drop(held);
    });
    is_locked.recv().unwrap();
    step
}

/// An embedder that keeps every text it is given to embed.
#[derive(Default)]
struct RecordingWords {
    texts: std::sync::Mutex<Vec<String>>,
}

impl Watching for RecordingWords {
    fn before(&self, texts: &[&str]) {
        let mut kept = self.texts.lock().unwrap();
        kept.extend(texts.iter().map(|t| t.to_string()));
    }
}

/// A claim's tags find it by words but are never embedded (they pull
/// every claim of a topic toward each other): the model is given the
/// claim's text alone, and the snippet words find it by is its text.
#[test]
fn a_claims_tags_are_found_by_words_and_never_embedded() {
    let (_dir, mut kb) = crate::testing::test_kb();
    let recording = Arc::new(RecordingWords::default());
    let embedder: Arc<dyn Embedder> = recording.clone();
    kb.set_embedder(embedder.clone());
    let src = crate::testing::test_source(&kb, "notes");
    let text = "charges are retried three times";
    let proposed = dispatch(
        &kb,
        &Caller::new("agent", Transport::Jsonl),
        "kb.propose_claim",
        json!({"text": text, "evidence": [src], "tags": ["payments", "billing"]}),
    )
    .unwrap();
    dispatch(
        &kb,
        &Caller::new("alice", Transport::Cli),
        "kb.approve",
        json!({"proposal_id": proposed["proposal_id"]}),
    )
    .unwrap();
    embed_all(&kb, &embedder);
    let embedded = recording.texts.lock().unwrap().clone();
    assert!(embedded.iter().any(|t| t == text), "{embedded:?}");
    assert!(
        embedded.iter().all(|t| !t.contains("payments")),
        "a tag was embedded: {embedded:?}"
    );
    let hits = dispatch(
        &kb,
        &Caller::new("agent", Transport::Jsonl),
        "kb.search",
        json!({"query": "payments", "backend": "fts5", "kinds": ["claim"]}),
    )
    .unwrap();
    assert_eq!(hits[0]["id"], proposed["claim_id"], "{hits}");
    assert_eq!(hits[0]["snippet"], text, "{hits}");
}

/// An embedder that counts the documents it embeds.
#[derive(Default)]
pub(super) struct CountingWords {
    pub(super) documents: std::sync::atomic::AtomicUsize,
}

/// A fresh knowledge base whose model counts the documents it embeds.
pub(super) fn kb_counting() -> (tempfile::TempDir, Kb, Arc<CountingWords>, Arc<dyn Embedder>) {
    let (dir, mut kb) = crate::testing::test_kb();
    let words = Arc::new(CountingWords::default());
    let embedder: Arc<dyn Embedder> = words.clone();
    kb.set_embedder(embedder.clone());
    (dir, kb, words, embedder)
}

impl Watching for CountingWords {
    fn before(&self, texts: &[&str]) {
        self.documents
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
    }
}

/// Where a background step keeps the vectors (a server), a search only
/// reads: an approval is embedded by the write before it returns, so
/// the next search finds it by meaning without running the model on
/// any document; an edit made outside waits for the background step,
/// its document found by words meanwhile and named in a warning.
#[test]
fn with_a_background_step_searches_never_embed_and_writes_do() {
    use std::sync::atomic::Ordering::SeqCst;
    let (_dir, mut kb, words, embedder) = kb_counting();
    kb.configure_index(|o| o.upkeep = IndexUpkeep::Background);
    kb.configure_index(|o| o.sync_interval = Duration::ZERO);
    // The keeper's step a server's thread takes (none runs here).
    kb.catch_up(None).unwrap();
    let first = approved_claim(&kb, "alpha bravo charlie");
    let background = || embed_all(&kb, &embedder);
    background();
    assert_eq!(semantic(&kb, "alpha bravo charlie")[0], first);
    let embedded = || words.documents.load(SeqCst);
    let before = embedded();
    let second = approved_claim(&kb, "delta echo foxtrot");
    let after_write = embedded();
    assert!(after_write > before, "the approval embedded its claim");
    assert_eq!(semantic(&kb, "delta echo foxtrot")[0], second);
    assert_eq!(embedded(), after_write, "a search embedded");
    kb.take_warnings();
    // Edited by hand: the search reads what it has, embeds nothing,
    // and says so.
    edit_by_hand(&kb, &first, "alpha bravo charlie", "golf hotel india");
    // The keeper's words step (a watcher's event) has seen it; its
    // vectors wait for the next round.
    kb.index().catch_up(&kb).unwrap();
    semantic(&kb, "golf hotel india");
    assert_eq!(embedded(), after_write, "a search embedded");
    let warned = kb.take_warnings();
    assert!(
        warned.iter().any(|w| w.contains("not embedded yet")),
        "{warned:?}"
    );
    // The background step embeds it; searches find it by meaning.
    background();
    assert_eq!(embedded(), after_write + 1);
    assert_eq!(semantic(&kb, "golf hotel india")[0], first);
}

/// A search whose vectors are in step with a recently synced index
/// takes no lock a writer holds: it answers while another thread holds
/// the main index connection (as a writer or the watcher does).
#[test]
fn a_search_in_step_does_not_wait_for_the_main_connection() {
    let (_dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Words));
    kb.configure_index(|o| o.sync_interval = Duration::from_secs(600));
    let claim = approved_claim(&kb, "november oscar papa");
    assert_eq!(semantic(&kb, "november oscar papa")[0], claim);
    let kb = Arc::new(kb);
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (locked, is_locked) = std::sync::mpsc::channel();
    let (holder, flag) = (kb.clone(), released.clone());
    let writer = std::thread::spawn(move || {
        let held = crate::testing::sqlite(&holder)
            .index_state
            .index
            .lock()
            .unwrap();
        locked.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(held);
    });
    is_locked.recv().unwrap();
    let found = semantic(&kb, "november oscar papa");
    let waited = released.load(std::sync::atomic::Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(found.first(), Some(&claim), "{found:?}");
    assert!(!waited, "the search waited for the main connection");
}

/// The fast path never trades freshness: with a sync interval of ten
/// minutes, a claim approved after the vectors were in step is found
/// by meaning by the very next search.
#[test]
fn the_fast_path_still_sees_an_approval_made_a_moment_ago() {
    let (_dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Words));
    kb.configure_index(|o| o.sync_interval = Duration::from_secs(600));
    let first = approved_claim(&kb, "quebec romeo sierra");
    assert_eq!(semantic(&kb, "quebec romeo sierra")[0], first);
    // In step now: the next search takes the fast path unless the
    // approval below sends it the slow way.
    assert_eq!(semantic(&kb, "quebec romeo sierra")[0], first);
    let second = approved_claim(&kb, "tango uniform victor");
    let found = semantic(&kb, "tango uniform victor");
    assert_eq!(found.first(), Some(&second), "{found:?}");
}

/// An embedder that records the size of each call and runs one only when
/// the test lets it (a slow model on a loaded machine, made
/// deterministic).
#[derive(Default)]
struct Held {
    /// (calls begun, calls let through, the size of each call)
    state: std::sync::Mutex<(usize, usize, Vec<usize>)>,
    moved: std::sync::Condvar,
}

impl Held {
    /// Let `n` more calls through.
    fn allow(&self, n: usize) {
        self.state.lock().unwrap().1 += n;
        self.moved.notify_all();
    }
    /// Wait until `n` calls have begun.
    fn begun(&self, n: usize) {
        let s = self.state.lock().unwrap();
        drop(self.moved.wait_while(s, |s| s.0 < n).unwrap());
    }
    fn sizes(&self) -> Vec<usize> {
        self.state.lock().unwrap().2.clone()
    }
}

impl Watching for Held {
    fn before(&self, texts: &[&str]) {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        s.2.push(texts.len());
        let call = s.0;
        self.moved.notify_all();
        drop(self.moved.wait_while(s, |s| s.1 < call).unwrap());
    }
}

/// A KB of `n` approved claims (and their one source), with `embedder`
/// set after they were written: every document waits for vectors.
fn kb_waiting_for_vectors(n: usize, embedder: Arc<dyn Embedder>) -> (tempfile::TempDir, Kb) {
    let (dir, mut kb) = crate::testing::test_kb();
    let src = crate::testing::test_source(&kb, "notes");
    for i in 0..n {
        crate::testing::test_claim(&kb, &src, &format!("deploys on fridays, note {i}"));
    }
    kb.set_embedder(embedder);
    kb.configure_index(|o| o.upkeep = IndexUpkeep::Background);
    (dir, kb)
}

/// A hybrid search for the claims of [`kb_waiting_for_vectors`]: how long
/// it took, its hits, and what its call noted.
fn hybrid_search(kb: &Kb) -> (Duration, serde_json::Value, crate::stored::CallNotes) {
    let began = Instant::now();
    let (hits, notes) = crate::stored::Store::collecting_notes(|| {
        dispatch(
            kb,
            &Caller::new("agent", Transport::Jsonl),
            "kb.search",
            json!({"query": "deploys on fridays", "backend": "hybrid", "kinds": ["claim"]}),
        )
        .unwrap()
    });
    (began.elapsed(), hits, notes)
}

fn pending(kb: &Kb) -> usize {
    crate::testing::sqlite(kb)
        .index_state
        .read_vectors()
        .as_ref()
        .map_or(0, |v| v.pending())
}

/// Round six, A7b: while a server's background step embeds (a slow model
/// on a loaded machine), a search answers within its budget from the
/// vectors as they are and says partial, with the count still waiting —
/// which moves after each of the step's batches, not only at its end.
/// When the step is done nothing is pending and nothing is said.
#[test]
fn a_search_while_the_background_step_embeds_answers_in_budget_and_says_partial() {
    let held = Arc::new(Held::default());
    let embedder: Arc<dyn Embedder> = held.clone();
    let (_dir, kb) = kb_waiting_for_vectors(40, embedder.clone());
    let kb = Arc::new(kb);
    let documents = 41;
    let (step_kb, step_embedder) = (kb.clone(), embedder.clone());
    let step = std::thread::spawn(move || {
        ensure(
            &crate::testing::sqlite(&step_kb).keep(),
            &step_embedder,
            Budget::Unlimited,
            false,
            &mut |_, _| {},
        )
        .unwrap()
        .unwrap()
    });
    held.begun(1);
    let search = || hybrid_search(&kb);
    let (took, hits, notes) = search();
    assert!(
        took < SEARCH_BUDGET + Duration::from_secs(2),
        "the search waited {took:?} for the model"
    );
    assert!(
        !hits.as_array().unwrap().is_empty(),
        "found by words: {hits}"
    );
    assert_eq!(notes.vectors_pending, Some(documents), "{notes:?}");
    assert_eq!(notes.meta(kb.layout().root()).unwrap()["partial"], true);
    // One batch later, fewer wait, and a search says how many.
    held.allow(1);
    held.begun(2);
    let first = held.sizes()[0];
    assert_eq!(pending(&kb), documents - first);
    let (_, _, notes) = search();
    assert_eq!(notes.vectors_pending, Some(documents - first), "{notes:?}");
    held.allow(usize::MAX / 2);
    let stats = step.join().unwrap();
    assert_eq!(stats.embedded, documents);
    assert_eq!(stats.pending, 0);
    assert_eq!(pending(&kb), 0);
    let (_, _, notes) = search();
    assert_eq!(notes.vectors_pending, None, "{notes:?}");
}

/// A catch-up with a deadline (a write's after it returns, a one-shot's
/// before a read) gives the model small batches, so it overruns its
/// budget by one small batch at most — never by a batch of 128 documents
/// (minutes on a loaded machine, with the caller waiting).
#[test]
fn a_catch_up_with_a_deadline_gives_the_model_small_batches() {
    let held = Arc::new(Held::default());
    let embedder: Arc<dyn Embedder> = held.clone();
    let (_dir, kb) = kb_waiting_for_vectors(40, embedder.clone());
    held.allow(usize::MAX / 2);
    let ix = crate::testing::sqlite(&kb);
    let stats = ensure(
        &ix.keep(),
        &embedder,
        Budget::Until(Instant::now() + Duration::from_millis(200)),
        false,
        &mut |_, _| {},
    )
    .unwrap()
    .unwrap();
    let sizes = held.sizes();
    assert!(
        sizes.iter().all(|n| *n <= BUDGET_BATCH),
        "batches of {sizes:?} under a deadline"
    );
    assert_eq!(stats.embedded + stats.pending, 41, "{stats:?}");
    // Without a deadline (the background step), larger batches, all done.
    let stats = ensure(
        &ix.keep(),
        &embedder,
        Budget::Unlimited,
        false,
        &mut |_, _| {},
    )
    .unwrap()
    .unwrap();
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert_eq!(pending(&kb), 0);
}

/// A read that finds no vectors loaded while another step holds them (a
/// rebuild dropped them under a background step that is embedding) waits
/// for the first load only within its budget, then answers by words and
/// says partial, every document counted.
#[test]
fn a_search_with_nothing_loaded_waits_for_the_load_only_within_its_budget() {
    let (_dir, kb) = kb_waiting_for_vectors(3, Arc::new(Words));
    let kb = Arc::new(kb);
    let hold = SEARCH_BUDGET + Duration::from_secs(4);
    let step = hold_embedding(&kb, hold);
    let (took, hits, notes) = hybrid_search(&kb);
    step.join().unwrap();
    assert!(took < hold, "the search waited {took:?} for the step");
    assert!(
        !hits.as_array().unwrap().is_empty(),
        "found by words: {hits}"
    );
    assert_eq!(notes.vectors_pending, Some(4), "{notes:?}");
}

/// [`Words`], with a second chunk for every text of more than three words
/// (its last three words), as long texts get.
pub(super) struct Chunked;

impl Embedder for Chunked {
    fn model_id(&self) -> &str {
        "chunked@test/32/0"
    }
    fn dimensions(&self) -> usize {
        32
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Words.embed_query(text)
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        texts
            .iter()
            .map(|t| {
                let words: Vec<&str> = t.split_whitespace().collect();
                let mut chunks = vec![Words.embed_query(t)?];
                if words.len() > 3 {
                    chunks.push(Words.embed_query(&words[words.len() - 3..].join(" "))?);
                }
                Ok(chunks)
            })
            .collect()
    }
}

/// A new process loads the stored vectors a slice at a time (two vectors
/// a slice in the unit tests), documents of two chunks across a slice's
/// end included, and finds by meaning what the process that embedded
/// them found, by either chunk — nothing embedded again.
#[test]
fn stored_vectors_load_in_slices_and_answer_as_before() {
    let (dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Chunked));
    let texts = [
        "alpha bravo",
        "charlie delta echo foxtrot golf",
        "hotel india juliet kilo lima",
        "mike november",
        "oscar papa quebec romeo sierra",
    ];
    let ids: Vec<String> = texts.iter().map(|t| approved_claim(&kb, t)).collect();
    let embedder: Arc<dyn Embedder> = Arc::new(Chunked);
    embed_all(&kb, &embedder);
    let asked = [
        "alpha bravo",
        "echo foxtrot golf",
        "kilo lima",
        "quebec romeo sierra",
    ];
    let before: Vec<Vec<String>> = asked.iter().map(|q| semantic(&kb, q)).collect();
    // Each claim's best cosine with each question: a second chunk lost
    // would lower the ones it answers for.
    let cosines = |kb: &Kb| -> Vec<Option<f32>> {
        asked
            .iter()
            .flat_map(|q| {
                let v = Chunked.embed_query(q).unwrap();
                ids.iter()
                    .map(|id| {
                        kb.index()
                            .similarity(crate::model::DocKind::Claim, id, &v)
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let cosines_before = cosines(&kb);
    assert_eq!(before[1][0], ids[1]);
    assert!(
        (cosines_before[ids.len() + 1].unwrap() - 1.0).abs() < 0.01,
        "the second chunk answers exactly"
    );
    let copy = kb.layout().index_vectors();
    drop(kb);
    // From the engine, not from the copy beside it (the next test's).
    std::fs::remove_file(copy).unwrap();
    let mut again = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(crate::clock::SystemClock::default()),
    )
    .unwrap();
    // A model that fails the test if it runs: the vectors come from the
    // engine.
    again.set_embedder(Arc::new(stored()));
    let after: Vec<Vec<String>> = asked.iter().map(|q| semantic(&again, q)).collect();
    assert_eq!(after, before);
    assert_eq!(cosines(&again), cosines_before);
    let v = crate::testing::sqlite(&again)
        .index_state
        .vectors
        .read()
        .unwrap();
    // Every claim and the source, each once.
    assert_eq!(v.as_ref().unwrap().documents(), texts.len() + 1);
}

/// The stamp a copy of the vectors must carry, as the engine says it now.
fn copy_stamp(kb: &Kb) -> Option<String> {
    with_main(&crate::testing::sqlite(kb).keep(), |idx| idx.copy_stamp()).unwrap()
}

/// The copy file's identity: the same file, never written again.
fn identity(path: &std::path::Path) -> (u64, std::time::SystemTime) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    (m.ino(), m.modified().unwrap())
}

/// Once its vectors are all embedded, a step writes a copy of them beside
/// the index; a new process reads that copy in place (not writing it
/// again, and running the model on nothing), finds by meaning what the
/// first found, and takes a claim changed after the copy was made from
/// the engine by its signature. A rebuild stamps the store anew: the old
/// copy is no longer read, and a new one replaces it.
#[cfg(unix)]
#[test]
fn a_new_process_reads_the_copy_beside_the_index_and_takes_later_changes_by_signature() {
    let (dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Chunked));
    kb.configure_index(|o| o.sync_interval = Duration::ZERO);
    let texts = [
        "alpha bravo",
        "charlie delta echo foxtrot golf",
        "hotel india juliet kilo lima",
        "mike november",
    ];
    let ids: Vec<String> = texts.iter().map(|t| approved_claim(&kb, t)).collect();
    let embedder: Arc<dyn Embedder> = Arc::new(Chunked);
    embed_all(&kb, &embedder);
    let copy = kb.layout().index_vectors();
    assert!(copy.is_file(), "a copy is written once nothing is pending");
    let made = identity(&copy);
    // Changed after the copy: one claim, embedded by this process (too
    // few rows changed to write the copy again).
    edit_by_hand(&kb, &ids[3], "mike november", "oscar papa");
    embed_all(&kb, &embedder);
    assert_eq!(
        identity(&copy),
        made,
        "one change does not rewrite the copy"
    );
    let before: Vec<Vec<String>> = ["echo foxtrot golf", "alpha bravo", "oscar papa"]
        .iter()
        .map(|q| semantic(&kb, q))
        .collect();
    assert_eq!(before[2][0], ids[3]);
    drop(kb);
    let open = || {
        let mut kb = Kb::open(
            &dir.path().join(".vouch"),
            Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        kb.set_embedder(Arc::new(stored()));
        kb
    };
    let again = open();
    let after: Vec<Vec<String>> = ["echo foxtrot golf", "alpha bravo", "oscar papa"]
        .iter()
        .map(|q| semantic(&again, q))
        .collect();
    assert_eq!(after, before);
    let state = &crate::testing::sqlite(&again).index_state;
    assert_eq!(
        state.read_vectors().as_ref().unwrap().since_copy,
        Some(2),
        "read from the copy, the changed claim's row replaced since"
    );
    assert_eq!(identity(&copy), made, "read in place, not written again");
    // A new `state.db` (the old one deleted): another stamp, so the copy
    // of the old one is not read — every document is embedded again —
    // and a new copy replaces it.
    let stamp = copy_stamp(&again);
    let db = again.layout().index_db();
    drop(again);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let counted = Arc::new(Counted::default());
    let mut third = open();
    third.set_embedder(counted.clone());
    assert_eq!(semantic(&third, "oscar papa")[0], ids[3]);
    assert_ne!(copy_stamp(&third), stamp);
    assert_eq!(
        counted.embedded.load(std::sync::atomic::Ordering::SeqCst),
        texts.len() + 1,
        "every claim and the source embedded again"
    );
    assert_ne!(identity(&copy), made, "written anew under the new stamp");
}

/// [`Chunked`], counting the documents it embeds; with `refuse`, failing
/// the test if it runs on one (a new process must use the stored vectors).
#[derive(Default)]
pub(super) struct Counted {
    pub(super) embedded: std::sync::atomic::AtomicUsize,
    refuse: bool,
}

/// A model that must not run on a document: the stored vectors serve.
pub(super) fn stored() -> Counted {
    Counted {
        refuse: true,
        ..Counted::default()
    }
}

impl Embedder for Counted {
    fn model_id(&self) -> &str {
        Chunked.model_id()
    }
    fn dimensions(&self) -> usize {
        32
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Chunked.embed_query(text)
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        assert!(!self.refuse, "embedded again: {texts:?}");
        self.embedded
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        Chunked.embed_documents(texts)
    }
}

/// A server's read with no vectors loaded and more documents than a read
/// loads itself (fifty in the unit tests, 250,000 in a build) answers by
/// words at once, says how many documents it could not see, loads
/// nothing and asks the background step; once that step has loaded
/// them, the next search finds by meaning.
#[test]
fn a_servers_read_leaves_a_large_first_load_to_the_background_step() {
    let (dir, kb) = kb_waiting_for_vectors(60, Arc::new(Words));
    let embedder: Arc<dyn Embedder> = Arc::new(Words);
    embed_all(&kb, &embedder);
    drop(kb);
    // A fresh server on the stored vectors.
    let mut kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(crate::clock::SystemClock::default()),
    )
    .unwrap();
    kb.set_embedder(embedder.clone());
    kb.configure_index(|o| o.upkeep = IndexUpkeep::Background);
    kb.catch_up(None).unwrap();
    let (took, hits, notes) = hybrid_search(&kb);
    assert!(took < SEARCH_BUDGET, "{took:?}");
    let hits = hits.as_array().unwrap().clone();
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|h| h["backend"] == "fts5"),
        "by words: {hits:?}"
    );
    assert_eq!(
        notes.vectors_pending,
        Some(61),
        "every claim and the source"
    );
    let state = &crate::testing::sqlite(&kb).index_state;
    assert!(state.read_vectors().is_none(), "the read loaded vectors");
    assert!(
        *state.upkeep_asked.lock().unwrap(),
        "the background step was asked"
    );
    // The background step loads them (embedding nothing).
    embed_all(&kb, &embedder);
    assert_eq!(state.read_vectors().as_ref().unwrap().documents(), 61);
    let (_, hits, notes) = hybrid_search(&kb);
    assert_eq!(notes.vectors_pending, None);
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .any(|h| h["backend"] == "hybrid"),
        "found by meaning too: {hits}"
    );
}

/// Vectors of another model are dropped before a load (one scan, then
/// the engine remembers whose vectors it holds), and looked for again once
/// a vector of another model was stored since.
#[test]
fn vectors_of_another_model_are_dropped_and_looked_for_again_after_another_models_put() {
    let (_dir, mut kb) = crate::testing::test_kb();
    kb.set_embedder(Arc::new(Chunked));
    let id = approved_claim(&kb, "alpha bravo");
    let embedder: Arc<dyn Embedder> = Arc::new(Chunked);
    embed_all(&kb, &embedder);
    let model = Chunked.model_id();
    let count = |idx: &dyn EngineConn, model: &str| -> usize {
        let mut n = 0;
        idx.vectors_of(model, 32, (None, usize::MAX), &mut |_| n += 1)
            .unwrap();
        n
    };
    with_main(&crate::testing::sqlite(&kb).keep(), |idx| {
        assert_eq!(count(idx, model), 2, "the claim and the source");
        idx.keep_only(model)?;
        assert_eq!(count(idx, model), 2, "its own model's are kept");
        idx.keep_only("other")?;
        assert_eq!(count(idx, model), 0, "another model's are dropped");
        let chunks = Chunked.embed_documents(&["alpha bravo"])?.remove(0);
        idx.put(model, &("claim", id.clone()), (1, 1), "sha", &chunks)?;
        assert_eq!(count(idx, model), 1);
        idx.keep_only("other")?;
        assert_eq!(count(idx, model), 0, "a put of another model is looked for");
        Ok(())
    })
    .unwrap();
}
