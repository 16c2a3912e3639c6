//! Retrieval: how approved knowledge is found. The derived index
//! (`state.db`, SQLite FTS5) and the substring fallback; only `state.db` is
//! ever written here.

pub mod fts5;
pub(crate) mod substring;

pub use fts5::*;
