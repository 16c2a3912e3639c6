//! A black-box conformance kit for servers of the `kb.*` methods, written
//! from the vouch SPEC (draft 0.1) and its companion seeds, not from any
//! implementation. It starts the server under test in empty temporary
//! knowledge bases, drives it over JSONL and MCP over stdio (and MCP over
//! streamable HTTP at a URL, when given one), reads what
//! it writes under `.vouch/`, and reports every check by area and name.
//!
//! The contract with the server under test is in `docs/conformance.md`:
//! for each area the kit makes an empty directory, runs the `--init`
//! command there (if any), then starts the `--server` command with that
//! directory as its working directory; the knowledge base is the
//! `.vouch/` folder inside it. A person's decisions come from the
//! `--approve` / `--reject` hooks, run in the same directory.

mod areas;
mod check;
mod http;
mod kb;
mod mcp;
mod mcp_http;
mod report;
mod server;

use std::time::Duration;

pub use check::{Check, Status};
pub use report::Report;

/// What the kit drives, and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// The JSONL server: a shell command run with cwd = the KB's directory.
    pub server: Option<String>,
    /// The MCP (stdio) server: a shell command, same contract.
    pub mcp_server: Option<String>,
    /// An MCP server already running on streamable HTTP (`http://` only):
    /// the `mcp-http` area drives it as it is, without a fresh KB.
    pub mcp_url: Option<String>,
    /// The bearer token sent to `mcp_url`.
    pub token: Option<String>,
    /// Run once in each new empty directory before any server starts.
    pub init: Option<String>,
    /// A person (or named reviewer) approving proposal `{id}`: exit 0 when
    /// approved, non-zero when refused.
    pub approve: Option<String>,
    /// A person rejecting proposal `{id}` with `{reason}`.
    pub reject: Option<String>,
    /// Only these areas (by name); all when empty.
    pub areas: Vec<String>,
    /// How long to wait for one response.
    pub timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: None,
            mcp_server: None,
            mcp_url: None,
            token: None,
            init: None,
            approve: None,
            reject: None,
            areas: Vec::new(),
            timeout: Duration::from_secs(30),
        }
    }
}

/// Whether the kit can drive `url` (`http://host[:port]/path`; no https).
pub fn check_url(url: &str) -> Result<(), String> {
    http::Url::parse(url).map(|_| ())
}

/// The names of every area, in the order they run.
pub fn area_names() -> Vec<&'static str> {
    areas::ALL.iter().map(|(name, _)| *name).collect()
}

/// Run every selected area and collect the checks.
pub fn run(cfg: &Config) -> Report {
    let mut checks = Vec::new();
    for (name, area) in areas::ALL {
        if !cfg.areas.is_empty() && !cfg.areas.iter().any(|a| a == name) {
            continue;
        }
        let mut ctx = check::Ctx::new(name);
        area(cfg, &mut ctx);
        checks.extend(ctx.into_checks());
    }
    Report { checks }
}
