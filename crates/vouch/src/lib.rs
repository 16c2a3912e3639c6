//! The `vouch` app: the CLI for people and the transports for agents. All
//! knowledge-base logic lives in `vouch-core`; this crate parses input,
//! picks the actor, dispatches through the registry and renders output.
//!
//! What is `pub` here is what the `vouch` binary (`main.rs`) and the app's
//! own end-to-end tests (`tests/e2e`) call: the command line ([`cli`]), one
//! JSONL request ([`jsonl::handle_line`]), the MCP schemas and
//! instructions ([`mcp`]) and a review page's renderer ([`ui::pages`]).
//! Everything else is the crate's own; other crates use the library crates
//! (`vouch-core`, `vouch-model`) or run the binary.

pub(crate) mod auth;
pub(crate) mod capture;
pub(crate) mod catalog;
pub(crate) mod checkpoint;
pub mod cli;
pub(crate) mod context;
pub(crate) mod errors;
pub(crate) mod gitbase;
pub(crate) mod http;
pub(crate) mod human;
pub(crate) mod install;
pub mod jsonl;
pub(crate) mod llm;
pub mod mcp;
pub(crate) mod model;
pub(crate) mod personal;
pub(crate) mod render;
pub(crate) mod review;
pub(crate) mod serve;
pub(crate) mod team;
pub mod ui;

/// Transports this build serves (reported by kb.capabilities).
pub(crate) const TRANSPORTS: &[&str] = &["mcp", "jsonl", "http"];
