//! Text embeddings, injected the way the clock is: `Kb::set_embedder` gives
//! a knowledge base a model, and retrievers that rank by meaning ask
//! `Kb::embedder` for it. No model ships in the core (the app's
//! `vouch-model` crate runs one).

use crate::error::Result;

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
}

pub mod vectors;
pub use vectors::{Budget, EmbedStats, Vectors, ensure};
