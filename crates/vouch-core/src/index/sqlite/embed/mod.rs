//! The vectors of the knowledge base's embedding model: kept in `state.db`
//! beside the text they were made from (`vectors.rs`) and scanned in
//! memory ([`memory`]).

pub use crate::services::Embedder;

pub mod memory;
pub(crate) mod vectors;
pub use memory::Vectors;
pub(crate) use vectors::read_with;
pub(crate) use vectors::{after_write, before_read, ensure, for_read, wait_for_upkeep};
