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
