//! The vectors of the knowledge base's embedding model: kept in `state.db`
//! beside the text they were made from (`vectors.rs`) and scanned in
//! memory ([`memory`]).

pub use crate::services::Embedder;

/// The in-memory scan, kept beside the index (where it lived before).
pub use crate::index::memory;
pub(crate) mod vectors;
pub use memory::Vectors;
pub(crate) use vectors::read_with;
pub(crate) use vectors::{after_write, ask_for_upkeep, before_read, ensure, for_read, wait_for_upkeep};
