//! Clients that drive a running `vouch serve` as an agent does (on stdio,
//! and over HTTP with a small HTTP/1.1 client), one
//! definition for the end-to-end tests (`crates/vouch/tests/e2e`) and the
//! benchmarks (`vouch-bench`), so what the figures measure is what the
//! tests check.

#![warn(unreachable_pub, missing_docs)]

pub mod http;
pub mod server;
pub mod stdio;

pub use server::HttpServer;
pub use stdio::StdioServer;
