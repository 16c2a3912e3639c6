//! Services the app injects into a knowledge base, defined here below
//! [`crate::kb::Kb`] (as the clock is, in [`crate::clock`]) so that `Kb`
//! holds them without importing the layers that use them: an embedding
//! model for retrieval by meaning, a language model for answers.

use crate::error::Result;
use serde_json::Value;

/// Hybrid search's bonus for a lexical hit that contains every word of
/// the question, on MiniLM's cosine scale (related texts ~0.4–0.8): the
/// default for a model that names none. Chosen on the project's eval set
/// (eval/queries.yaml; see docs/search.md).
pub const LEXICAL_WEIGHT: f32 = 0.3;

/// Text embeddings: `Kb::set_embedder` gives a knowledge base a model,
/// and retrievers that rank by meaning ask `Kb::embedder` for it. No model
/// ships in the core (the app's `vouch-model` crate runs one).
pub trait Embedder: Send + Sync {
    /// Names the model, its revision, dimension and file hashes; stored
    /// beside every vector, so vectors of another model are never compared
    /// with these.
    fn model_id(&self) -> &str;
    /// Length of every vector.
    fn dimensions(&self) -> usize;
    /// One unit-length vector for a search query (cut to the model's input
    /// limit; empty text is allowed).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>>;
    /// For each text, one unit-length vector per chunk (long texts are
    /// split at the model's input limit; the best chunk answers for the
    /// text).
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>>;
    /// Hybrid search's bonus for a lexical hit holding every word of the
    /// question, on this model's cosine scale (see `retrieval::hybrid`).
    fn lexical_weight(&self) -> f32 {
        LEXICAL_WEIGHT
    }
}

/// How far a long step has come, for a person waiting on it: embedding a
/// million documents takes hours on two cores. The app shows it (the core
/// never prints); a step calls it after each batch.
pub trait Progress: Send + Sync {
    /// `done` of `total` documents embedded so far in this step.
    fn embedded(&self, done: usize, total: usize);
}

/// Vectors a team's replicas share by text (a team server's database):
/// what one replica's model made for a text, every other takes instead of
/// running its own model on it — a new replica with an index of its own
/// fills its vectors in minutes, not the hours a million documents take
/// a model on two cores. Keyed by the model's identity and the text's
/// sha256, so a text's vectors are only ever another model's when the
/// model is the same; a vector only ranks by meaning what the files hold.
pub trait SharedVectors: Send + Sync {
    /// Where they are kept, as messages name it (no password).
    fn describe(&self) -> String;
    /// The stored chunks of each of these texts (by sha256) under `model`
    /// of `dim` dimensions, as (sha, chunks); a text not stored, or
    /// stored with other lengths or values that are not finite, is left
    /// out (the model makes it).
    fn fetch(&self, model: &str, dim: usize, shas: &[&str])
    -> Result<Vec<(String, Vec<Vec<f32>>)>>;
    /// Keep what this process's model made for these texts (sha, chunks),
    /// for the others; a text already kept is left as it is.
    fn keep(&self, model: &str, dim: usize, made: &[(&str, &[Vec<f32>])]) -> Result<()>;
    /// Remove the rows of `model` whose text is none of `current` (the
    /// sha256 of every text the knowledge base's documents give a model)
    /// and that were kept longer than `grace` ago — a younger row may be
    /// a text another replica wrote after this one caught up — and, when
    /// `other_models`, every row of another model.
    fn prune(
        &self,
        model: &str,
        current: &[&str],
        grace: std::time::Duration,
        other_models: bool,
    ) -> Result<SharedPruned>;
}

/// What [`SharedVectors::prune`] did, in rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SharedPruned {
    /// Rows of the model whose text no document holds any more, removed.
    pub removed: usize,
    /// Rows of the model left: texts the documents hold, and rows kept
    /// within the grace.
    pub left: usize,
    /// Rows of other models removed (asked for).
    pub other_models_removed: usize,
    /// Rows of other models left (not asked for).
    pub other_models_left: usize,
}

/// How recently kept a shared row must be to be left by a prune whatever
/// its text: a replica that wrote a text after the pruning one caught up
/// with the files may have kept its vectors since.
pub const SHARED_PRUNE_GRACE: std::time::Duration = std::time::Duration::from_secs(3600);

/// How long sharing rests after the shared store failed: the model makes
/// vectors here meanwhile, and a database that is down is not waited for
/// (nor warned about) once a batch.
const SHARING_RESTS: std::time::Duration = std::time::Duration::from_secs(30);

/// A knowledge base's use of [`SharedVectors`]: the store, what this
/// process took from it and kept in it (for `kb.status`), and a rest
/// after a failure.
pub struct VectorSharing {
    store: std::sync::Arc<dyn SharedVectors>,
    taken: std::sync::atomic::AtomicUsize,
    kept: std::sync::atomic::AtomicUsize,
    resting_until: std::sync::Mutex<Option<std::time::Instant>>,
}

impl VectorSharing {
    /// Share through `store`.
    pub fn new(store: std::sync::Arc<dyn SharedVectors>) -> VectorSharing {
        VectorSharing {
            store,
            taken: Default::default(),
            kept: Default::default(),
            resting_until: std::sync::Mutex::new(None),
        }
    }

    /// Where the vectors are shared, as messages name it.
    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// Texts whose vectors this process took from the store, and texts
    /// whose vectors it kept there, since it started.
    pub fn counts(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.taken.load(Relaxed), self.kept.load(Relaxed))
    }

    /// Run `f` on the store unless it is resting; a failure starts a rest
    /// and is said once through `warn`.
    fn with<T>(
        &self,
        warn: &dyn Fn(String),
        f: impl FnOnce(&dyn SharedVectors) -> Result<T>,
    ) -> Option<T> {
        let mut rest = self.resting_until.lock().unwrap_or_else(|e| e.into_inner());
        if rest.is_some_and(|until| std::time::Instant::now() < until) {
            return None;
        }
        *rest = None;
        drop(rest);
        match f(self.store.as_ref()) {
            Ok(v) => Some(v),
            Err(e) => {
                *self.resting_until.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(std::time::Instant::now() + SHARING_RESTS);
                warn(format!(
                    "embeddings: the vectors shared in {} could not be used ({}); this process's \
                     model makes them meanwhile",
                    self.store.describe(),
                    e.message
                ));
                None
            }
        }
    }

    /// What the store holds of these texts ([`SharedVectors::fetch`]);
    /// nothing while it is resting or failing.
    pub fn take(
        &self,
        warn: &dyn Fn(String),
        model: &str,
        dim: usize,
        shas: &[&str],
    ) -> Vec<(String, Vec<Vec<f32>>)> {
        let found = self
            .with(warn, |s| s.fetch(model, dim, shas))
            .unwrap_or_default();
        self.taken
            .fetch_add(found.len(), std::sync::atomic::Ordering::Relaxed);
        found
    }

    /// [`SharedVectors::prune`], asked for by a person: its error is
    /// theirs to see, and no rest follows it.
    pub fn prune(
        &self,
        model: &str,
        current: &[&str],
        grace: std::time::Duration,
        other_models: bool,
    ) -> Result<SharedPruned> {
        self.store.prune(model, current, grace, other_models)
    }

    /// Keep what this process's model made ([`SharedVectors::keep`]).
    pub fn keep(
        &self,
        warn: &dyn Fn(String),
        model: &str,
        dim: usize,
        made: &[(&str, &[Vec<f32>])],
    ) {
        if made.is_empty() {
            return;
        }
        if self.with(warn, |s| s.keep(model, dim, made)).is_some() {
            self.kept
                .fetch_add(made.len(), std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A language model the app provides.
pub trait Llm: Send + Sync {
    /// Send the request (see `answer::llm_request`) and return the reply's
    /// text, or why there is none.
    fn complete(&self, request: &Value) -> Result<String, String>;
}

/// Questions whose vectors [`QueryVectors`] keeps.
pub const QUERY_VECTORS_KEPT: usize = 16;

/// The last questions embedded, by (model, text), newest last: a search
/// that asks again for current knowledge only, or an answer that weighs a
/// term, does not run the model a second time. The key holds the model's
/// identity, so another model never gets these vectors.
pub struct QueryVectors {
    kept: std::sync::Mutex<std::collections::VecDeque<(String, String, Vec<f32>)>>,
    capacity: usize,
}

impl Default for QueryVectors {
    fn default() -> Self {
        QueryVectors::with_capacity(QUERY_VECTORS_KEPT)
    }
}

impl QueryVectors {
    /// A cache that keeps the last `capacity` texts' vectors.
    pub fn with_capacity(capacity: usize) -> Self {
        QueryVectors {
            kept: Default::default(),
            capacity: capacity.max(1),
        }
    }

    /// The vector of `text` by `embedder`'s model if kept — never running
    /// the model (a read's lookup).
    pub fn kept(&self, embedder: &dyn Embedder, text: &str) -> Option<Vec<f32>> {
        let model = embedder.model_id();
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(m, t, _)| m == model && t == text)
            .map(|(_, _, v)| v.clone())
    }

    /// The vector of `text` by `embedder`, kept or made now.
    pub fn get(&self, embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>> {
        let model = embedder.model_id();
        let kept = |cache: &std::collections::VecDeque<(String, String, Vec<f32>)>| {
            cache
                .iter()
                .find(|(m, t, _)| m == model && t == text)
                .map(|(_, _, v)| v.clone())
        };
        if let Some(v) = kept(&self.kept.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(v);
        }
        let vector = embedder.embed_query(text)?;
        let mut cache = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept(&cache).is_none() {
            if cache.len() >= self.capacity {
                cache.pop_front();
            }
            cache.push_back((model.to_string(), text.to_string(), vector.clone()));
        }
        Ok(vector)
    }
}
