//! Opening a KB for a command or server: where it is, who is acting, which
//! clock. The only place the app reads VOUCH_* environment variables.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use vouch_core::clock::{Clock, FixedClock, SeededClock, SystemClock};
use vouch_core::model::Timestamp;
use vouch_core::{Caller, Error, ErrorKind, Kb, Result, Transport};

/// `--kb PATH` (or VOUCH_KB_PATH) may name the `.vouch/` folder or the
/// project holding it; otherwise walk up from the current directory like git,
/// stopping at $HOME.
pub fn locate(kb_flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = kb_flag {
        let direct = if p.file_name().is_some_and(|n| n == ".vouch") {
            p.to_path_buf()
        } else if p.join(".vouch").is_dir() {
            p.join(".vouch")
        } else {
            p.to_path_buf()
        };
        if direct.is_dir() {
            return Ok(direct);
        }
        return Err(Error::new(
            ErrorKind::NoKb,
            format!(
                "no knowledge base at {} (from --kb / VOUCH_KB_PATH); run `vouch init` there",
                p.display()
            ),
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| Error::internal(format!("cwd: {e}")))?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Kb::discover(&cwd, home.as_deref())
}

/// Time and ids: VOUCH_TIMESTAMP pins the clock (advancing 1 s per reading),
/// VOUCH_SEED pins the random ids.
pub fn clock() -> Arc<dyn Clock> {
    let seed = std::env::var("VOUCH_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    if let Some(t) = std::env::var("VOUCH_TIMESTAMP")
        .ok()
        .and_then(|s| Timestamp::parse(&s))
    {
        return Arc::new(FixedClock::new(t.0, seed.unwrap_or(0)));
    }
    match seed {
        Some(s) => Arc::new(SeededClock::new(s)),
        None => Arc::new(SystemClock::default()),
    }
}

pub fn open(kb_flag: Option<&Path>) -> Result<Kb> {
    Kb::open(&locate(kb_flag)?, clock())
}

/// Open even with an unparseable config.yaml (for `vouch doctor`).
pub fn open_tolerant(kb_flag: Option<&Path>) -> Result<Kb> {
    Kb::open_tolerant(&locate(kb_flag)?, clock())
}

/// Who is acting. A person at the CLI: --agent, VOUCH_AGENT, $USER, then the
/// config's `agent`. An agent transport: --agent, VOUCH_AGENT, the config's
/// `agent`, then "agent".
pub fn caller(kb: &Kb, agent_flag: Option<&str>, transport: Transport) -> Caller {
    let env = |k: &str| std::env::var(k).ok().filter(|s| !s.trim().is_empty());
    let configured = kb.settings().agent.clone().filter(|s| !s.trim().is_empty());
    let actor = agent_flag
        .map(str::to_string)
        .or_else(|| env("VOUCH_AGENT"))
        .or_else(|| {
            if transport == Transport::Cli {
                env("USER").or(configured.clone())
            } else {
                configured.clone()
            }
        })
        .unwrap_or_else(|| {
            if transport == Transport::Cli {
                "cli".into()
            } else {
                "agent".into()
            }
        });
    Caller::new(actor, transport)
}
