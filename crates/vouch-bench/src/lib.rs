//! The benchmark suite behind `vouch-bench`: realistic generated knowledge
//! bases and drivers that time retrieval in process, through the JSONL, HTTP
//! and MCP servers and as one-shot CLI calls. Everything here prints figures;
//! nothing asserts on timing.

mod drive;
mod generate;
mod scale1x;
mod suites;

pub use drive::*;
pub use generate::*;
pub use scale1x::*;
pub use suites::*;
