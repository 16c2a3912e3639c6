//! Vectors shared by a team's replicas ([`crate::services::SharedVectors`]):
//! what one replica's model made, another takes instead of running its own.

use super::kept_in_step::{
    Chunked, Counted, approved_claim, edit_by_hand, embed_all, semantic, stored,
};
use super::*;
use crate::kb::Kb;
use crate::services::{SharedPruned, SharedVectors};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Chunks by (model, text sha256).
type Rows = HashMap<(String, String), Vec<Vec<f32>>>;

/// A team's vectors in memory, counting the calls made to it; with
/// `down`, every call fails as a database that went away does.
#[derive(Default)]
struct Team {
    rows: Mutex<Rows>,
    calls: AtomicUsize,
    down: bool,
}

impl SharedVectors for Team {
    fn describe(&self) -> String {
        "the team's memory".into()
    }
    fn fetch(
        &self,
        model: &str,
        dim: usize,
        shas: &[&str],
    ) -> Result<Vec<(String, Vec<Vec<f32>>)>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down {
            return Err(crate::error::Error::invalid("connection refused"));
        }
        let rows = self.rows.lock().unwrap();
        Ok(shas
            .iter()
            .filter_map(|sha| {
                let chunks = rows.get(&(model.to_string(), sha.to_string()))?;
                chunks
                    .iter()
                    .all(|c| c.len() == dim)
                    .then(|| (sha.to_string(), chunks.clone()))
            })
            .collect())
    }
    fn keep(&self, model: &str, _dim: usize, made: &[(&str, &[Vec<f32>])]) -> Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down {
            return Err(crate::error::Error::invalid("connection refused"));
        }
        let mut rows = self.rows.lock().unwrap();
        for (sha, chunks) in made {
            rows.entry((model.to_string(), sha.to_string()))
                .or_insert_with(|| chunks.to_vec());
        }
        Ok(())
    }
    /// Every row counts as kept before the grace (the memory keeps no time).
    fn prune(
        &self,
        model: &str,
        current: &[&str],
        _grace: Duration,
        other_models: bool,
    ) -> Result<SharedPruned> {
        let mut rows = self.rows.lock().unwrap();
        let before = rows.len();
        let others = rows.keys().filter(|(m, _)| m != model).count();
        rows.retain(|(m, sha), _| {
            if m == model {
                current.contains(&sha.as_str())
            } else {
                !other_models
            }
        });
        let left = rows.keys().filter(|(m, _)| m == model).count();
        Ok(SharedPruned {
            removed: before - others - left,
            left,
            other_models_removed: if other_models { others } else { 0 },
            other_models_left: if other_models { 0 } else { others },
        })
    }
}

/// The status's account of sharing: (taken, kept).
fn shared_counts(kb: &Kb) -> (u64, u64) {
    let caller = crate::Caller::new("agent", crate::Transport::Jsonl);
    let status = crate::methods::dispatch(kb, &caller, "kb.status", serde_json::json!({})).unwrap();
    let shared = &status["retrieval"]["vectors"]["shared"];
    assert_eq!(shared["database"], "the team's memory", "{status}");
    (
        shared["taken"].as_u64().unwrap(),
        shared["kept"].as_u64().unwrap(),
    )
}

/// One replica's model embeds every document and keeps the vectors with
/// the team; a second replica with an index of its own (here: the first's
/// index deleted) takes them all and runs its model on none — the same
/// answers by meaning, each document counted as shared.
#[test]
fn a_replica_takes_what_another_replicas_model_made_and_runs_its_model_on_none() {
    let team = Arc::new(Team::default());
    let (dir, mut kb) = crate::testing::test_kb();
    let counted = Arc::new(Counted::default());
    kb.set_embedder(counted.clone());
    kb.share_vectors(team.clone());
    kb.configure_index(|o| o.sync_interval = Duration::ZERO);
    let texts = [
        "alpha bravo",
        "charlie delta echo foxtrot golf",
        "hotel india",
    ];
    let ids: Vec<String> = texts.iter().map(|t| approved_claim(&kb, t)).collect();
    let embedder: Arc<dyn Embedder> = Arc::new(Chunked);
    embed_all(&kb, &embedder);
    let made = counted.embedded.load(Ordering::SeqCst);
    assert_eq!(made, texts.len() + 1, "every claim and the source");
    assert_eq!(
        team.rows.lock().unwrap().len(),
        made,
        "all kept with the team"
    );
    assert_eq!(shared_counts(&kb), (0, made as u64));
    let before: Vec<Vec<String>> = texts.iter().map(|q| semantic(&kb, q)).collect();
    let db = kb.layout().index_db();
    drop(kb);
    for path in [
        db.display().to_string(),
        format!("{}-wal", db.display()),
        format!("{}-shm", db.display()),
        kb_copy(&dir),
    ] {
        let _ = std::fs::remove_file(path);
    }
    let mut other = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(crate::clock::SystemClock::default()),
    )
    .unwrap();
    let refuses: Arc<dyn Embedder> = Arc::new(stored());
    other.set_embedder(refuses.clone());
    other.share_vectors(team.clone());
    crate::index::keeper::catch_up(other.index(), &other, None, None).unwrap();
    let stats = ensure(
        &crate::testing::sqlite(&other).keep(),
        &refuses,
        Budget::Unlimited,
        true,
        &mut |_, _| {},
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        (stats.shared, stats.embedded, stats.pending),
        (made, 0, 0),
        "{stats:?}"
    );
    let after: Vec<Vec<String>> = texts.iter().map(|q| semantic(&other, q)).collect();
    assert_eq!(after, before);
    assert_eq!(after[1][0], ids[1]);
    assert_eq!(shared_counts(&other), (made as u64, 0));
}

/// The `.vouch/state.db-vectors` copy beside the index.
fn kb_copy(dir: &tempfile::TempDir) -> String {
    dir.path()
        .join(".vouch")
        .join(crate::store::layout::VECTORS_COPY_FILE)
        .display()
        .to_string()
}

/// A team store that fails: the model makes the vectors here, the failure
/// is said once, and the store is left alone for a while rather than
/// asked (and waited for) once a batch.
#[test]
fn a_team_store_that_fails_is_said_once_and_the_model_makes_the_vectors() {
    let team = Arc::new(Team {
        down: true,
        ..Team::default()
    });
    let (_dir, mut kb) = crate::testing::test_kb();
    let counted = Arc::new(Counted::default());
    kb.set_embedder(counted.clone());
    kb.share_vectors(team.clone());
    let ((), warnings) = crate::stored::Store::collecting_warnings(|| {
        for t in ["alpha bravo", "charlie delta", "echo foxtrot"] {
            approved_claim(&kb, t);
        }
        let embedder: Arc<dyn Embedder> = Arc::new(Chunked);
        embed_all(&kb, &embedder);
    });
    assert_eq!(counted.embedded.load(Ordering::SeqCst), 4);
    let said: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("the team's memory could not be used (connection refused)"))
        .collect();
    assert_eq!(said.len(), 1, "{warnings:?}");
    assert_eq!(
        team.calls.load(Ordering::SeqCst),
        1,
        "asked once, then left to rest"
    );
    assert_eq!(shared_counts(&kb), (0, 0));
}

/// Pruning the team's vectors removes the rows of texts no document
/// gives the model any more (a claim edited by hand) and leaves every
/// other: the texts the index hashes for it are the ones the embedding
/// schedule kept (were they hashed otherwise, a prune would empty the
/// table). Other models' rows go only when asked.
#[test]
fn pruning_removes_only_the_texts_no_document_holds() {
    let team = Arc::new(Team::default());
    let (_dir, mut kb) = crate::testing::test_kb();
    let counted = Arc::new(Counted::default());
    kb.set_embedder(counted.clone());
    kb.share_vectors(team.clone());
    kb.configure_index(|o| o.sync_interval = Duration::ZERO);
    let ids: Vec<String> = ["alpha bravo", "charlie delta"]
        .iter()
        .map(|t| approved_claim(&kb, t))
        .collect();
    let embedder: Arc<dyn Embedder> = Arc::new(Chunked);
    embed_all(&kb, &embedder);
    assert_eq!(
        team.rows.lock().unwrap().len(),
        3,
        "two claims and the source"
    );
    let other = ("other@test/8/0".to_string(), "ab".repeat(32));
    team.rows
        .lock()
        .unwrap()
        .insert(other.clone(), vec![vec![1.0; 8]]);

    let (shown, model, done) = kb.prune_shared_vectors(Duration::ZERO, false).unwrap();
    assert_eq!(
        (shown.as_str(), model.as_str()),
        ("the team's memory", Chunked.model_id())
    );
    let nothing_gone = SharedPruned {
        removed: 0,
        left: 3,
        other_models_removed: 0,
        other_models_left: 1,
    };
    assert_eq!(done, nothing_gone);

    edit_by_hand(&kb, &ids[0], "alpha bravo", "alpha bravo charlie");
    let (_, _, done) = kb.prune_shared_vectors(Duration::ZERO, true).unwrap();
    let edited_gone = SharedPruned {
        removed: 1,
        left: 2,
        other_models_removed: 1,
        other_models_left: 0,
    };
    assert_eq!(done, edited_gone);
    let rows = team.rows.lock().unwrap();
    let sha = |t: &str| crate::ids::sha256_hex(t.as_bytes());
    assert!(!rows.contains_key(&(model.clone(), sha("alpha bravo"))));
    assert!(rows.contains_key(&(model.clone(), sha("charlie delta"))));
    assert!(!rows.contains_key(&other));
}

/// Without a team store, or without a model to say which rows are
/// current, there is nothing to prune, and the person is told why.
#[test]
fn pruning_without_a_team_or_a_model_says_why() {
    let (_dir, mut kb) = crate::testing::test_kb();
    let err = kb.prune_shared_vectors(Duration::ZERO, false).unwrap_err();
    assert!(
        err.message.contains("no team database shares vectors here"),
        "{}",
        err.message
    );
    kb.share_vectors(Arc::new(Team::default()));
    let err = kb.prune_shared_vectors(Duration::ZERO, false).unwrap_err();
    assert!(
        err.message.contains("no model is installed here"),
        "{}",
        err.message
    );
    kb.set_embedder(Arc::new(Chunked));
    assert!(kb.prune_shared_vectors(Duration::ZERO, false).is_ok());
}
