//! Text embeddings, injected the way the clock is: `Kb::set_embedder` gives
//! a knowledge base a model, and retrievers that rank by meaning ask
//! `Kb::embedder` for it. No model ships in the core (the app's
//! `vouch-model` crate runs one).

pub use crate::services::Embedder;

pub mod memory;
pub mod vectors;
pub use memory::Vectors;
pub use vectors::{Budget, EmbedStats, ensure, read_with, wait_for_upkeep};
pub(crate) use vectors::{after_write, before_read};
