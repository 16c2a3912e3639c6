//! The `vouch` app: the CLI for people and the transports for agents. All
//! knowledge-base logic lives in `vouch-core`; this crate parses input,
//! picks the actor, dispatches through the registry and renders output.

pub mod auth;
pub mod catalog;
pub mod checkpoint;
pub mod cli;
pub mod context;
pub mod errors;
pub mod gitbase;
pub mod http;
pub mod human;
pub mod install;
pub mod jsonl;
pub mod llm;
pub mod mcp;
pub mod model;
pub mod personal;
pub mod render;
pub mod review;
pub mod serve;
pub mod ui;

/// Transports this build serves (reported by kb.capabilities).
pub const TRANSPORTS: &[&str] = &["mcp", "jsonl", "http"];
