//! The benchmark suite behind `vouch-bench`: realistic generated knowledge
//! bases and drivers that time retrieval in process, through the JSONL, HTTP
//! and MCP servers, the review pages and as one-shot CLI calls. Everything
//! here prints figures; nothing asserts on timing. It drives the real
//! `vouch` binary for everything a user meets through it, and uses the
//! library crates (`vouch-core`, `vouch-model`) in process, never the app's
//! own modules.

#![warn(unreachable_pub, missing_docs)]

mod drive;
mod fill;
mod generate;
mod memory;
mod pages;
mod scale1x;
mod suites;
mod writes;

pub use fill::fill_vectors;
pub use generate::{Generated, generate};
pub use memory::memory;
pub use pages::ui;
pub use scale1x::{growth, on_kb, scale_1x};
pub use suites::{
    audit, embeddings, knowledge, retrieval, scan, scan_recall, synthesize, transports, typed,
};
pub use writes::{bundle, gate, write_bomb};
