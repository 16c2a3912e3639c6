//! Clients that drive a running `vouch serve` as an agent does, one
//! definition for the end-to-end tests (`crates/vouch/tests/e2e`) and the
//! benchmarks (`vouch-bench`), so what the figures measure is what the
//! tests check.

pub mod stdio;

pub use stdio::StdioServer;
