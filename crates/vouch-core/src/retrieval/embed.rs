//! Text embeddings, injected the way the clock is: `Kb::set_embedder` gives
//! a knowledge base a model, and retrievers that rank by meaning ask
//! `Kb::embedder` for it. No model ships in the core.

use crate::error::Result;

pub trait Embedder: Send + Sync {
    /// Names the model and its revision; stored beside vectors, so vectors
    /// of another model are never compared with these.
    fn model_id(&self) -> &str;
    /// Length of every vector `embed` returns.
    fn dimensions(&self) -> usize;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}
