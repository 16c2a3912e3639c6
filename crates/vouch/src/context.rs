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
pub(crate) fn locate(kb_flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = kb_flag {
        // A folder of another name is taken as the knowledge base itself
        // only if it holds one: any other folder would be written into
        // (its `state.db`) as if it were.
        let direct = if p.file_name().is_some_and(|n| n == ".vouch") {
            Some(p.to_path_buf())
        } else if p.join(".vouch").is_dir() {
            Some(p.join(".vouch"))
        } else {
            Kb::holds_knowledge(p).then(|| p.to_path_buf())
        };
        if let Some(direct) = direct.filter(|d| d.is_dir()) {
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
    let found = Kb::discover(&cwd, home.as_deref())?;
    check_owner(&found)?;
    Ok(found)
}

/// A `.vouch/` found by walking up must belong to the current user, as git
/// does with `safe.directory`: otherwise anyone who can create a directory
/// above the working directory (`/tmp/.vouch`) would choose the knowledge an
/// agent reads and the place its writes go. VOUCH_SAFE_DIRECTORIES (paths
/// separated by `:`, naming the `.vouch/` or the project holding it, or `*`)
/// trusts others' KBs; so does naming one with --kb / VOUCH_KB_PATH.
#[cfg(unix)]
fn check_owner(found: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = |follow: bool| {
        if follow {
            std::fs::metadata(found)
        } else {
            std::fs::symlink_metadata(found)
        }
        .map_err(|e| Error::internal(format!("{}: {e}", found.display())))
    };
    let me = rustix::process::geteuid().as_raw();
    // A `.vouch` that is a link counts as its own owner's (whoever made
    // the link chose where it points), and its target must be yours too.
    let link = meta(false)?;
    let owner = if link.file_type().is_symlink() && link.uid() != me {
        link.uid()
    } else {
        meta(true)?.uid()
    };
    if owner == me || is_safe_directory(found) {
        return Ok(());
    }
    let project = found.parent().unwrap_or(found);
    Err(Error::new(
        ErrorKind::NoKb,
        format!(
            "refusing the knowledge base at {}: it belongs to {}, not to you ({}); a .vouch/ \
             found by walking up from the current directory must be your own. If you trust \
             it, name it with --kb {} or add it to VOUCH_SAFE_DIRECTORIES \
             (paths separated by `:`, or `*` for any)",
            found.display(),
            user_name(owner),
            user_name(me),
            project.display(),
        ),
    ))
}

#[cfg(not(unix))]
fn check_owner(_found: &Path) -> Result<()> {
    Ok(())
}

/// Is `found` (a `.vouch/`) or the project holding it listed in
/// VOUCH_SAFE_DIRECTORIES?
#[cfg(unix)]
fn is_safe_directory(found: &Path) -> bool {
    let Some(list) = std::env::var_os("VOUCH_SAFE_DIRECTORIES") else {
        return false;
    };
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let found = canon(found);
    let project = found.parent().map(Path::to_path_buf);
    std::env::split_paths(&list).any(|entry| {
        if entry.as_os_str() == "*" {
            return true;
        }
        if entry.as_os_str().is_empty() {
            return false;
        }
        let entry = canon(&entry);
        entry == found || Some(&entry) == project.as_ref()
    })
}

/// `uid 1000 (alice)`, naming the user when /etc/passwd knows it.
#[cfg(unix)]
fn user_name(uid: u32) -> String {
    let name = std::fs::read_to_string("/etc/passwd").ok().and_then(|t| {
        t.lines().find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let id = f.nth(1)?;
            (id.parse::<u32>().ok()? == uid).then(|| name.to_string())
        })
    });
    match name {
        Some(n) => format!("uid {uid} ({n})"),
        None => format!("uid {uid}"),
    }
}

/// HTTP connection limits: the defaults, or VOUCH_HTTP_HEADER_TIMEOUT_MS,
/// VOUCH_HTTP_BODY_TIMEOUT_MS, VOUCH_HTTP_MAX_CONNECTIONS,
/// VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS, VOUCH_HTTP_MAX_CONNECTIONS_PER_ACTOR,
/// VOUCH_HTTP_MAX_WAITING_CONNECTIONS and VOUCH_MCP_MAX_SESSIONS.
pub(crate) fn http_limits() -> Result<crate::http::listen::Limits> {
    let mut limits = crate::http::listen::Limits::default();
    let num = |k: &str| -> Result<Option<u64>> {
        match std::env::var(k) {
            Ok(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| Error::invalid(format!("{k}={v:?}: expected a positive integer"))),
            Err(_) => Ok(None),
        }
    };
    if let Some(ms) = num("VOUCH_HTTP_HEADER_TIMEOUT_MS")? {
        limits.header_read_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = num("VOUCH_HTTP_BODY_TIMEOUT_MS")? {
        limits.body_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(n) = num("VOUCH_HTTP_MAX_CONNECTIONS")? {
        limits.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = num("VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS")? {
        limits.max_connections_per_address = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = num("VOUCH_HTTP_MAX_CONNECTIONS_PER_ACTOR")? {
        limits.max_connections_per_actor = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = num("VOUCH_HTTP_MAX_WAITING_CONNECTIONS")? {
        limits.max_waiting_connections = Some(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(n) = num("VOUCH_MCP_MAX_SESSIONS")? {
        limits.max_mcp_sessions = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Ok(limits)
}

/// Time and ids: VOUCH_TIMESTAMP pins the clock (advancing 1 s per reading),
/// VOUCH_SEED pins the random ids.
pub(crate) fn clock() -> Arc<dyn Clock> {
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

/// Open the knowledge base, with its embedding model when one is installed.
pub(crate) fn open(kb_flag: Option<&Path>) -> Result<Kb> {
    let mut kb = Kb::open(&locate(kb_flag)?, clock())?;
    crate::personal::attach(&mut kb);
    crate::model::attach(&mut kb);
    crate::llm::attach(&mut kb);
    Ok(kb)
}

/// Open even with an unparseable config.yaml (for `vouch doctor`).
pub(crate) fn open_tolerant(kb_flag: Option<&Path>) -> Result<Kb> {
    let mut kb = Kb::open_tolerant(&locate(kb_flag)?, clock())?;
    crate::personal::attach(&mut kb);
    crate::model::attach(&mut kb);
    crate::llm::attach(&mut kb);
    Ok(kb)
}

/// Who is acting. A person at the CLI: --agent, VOUCH_AGENT, then $USER,
/// else `cli`. An agent transport: --agent, VOUCH_AGENT, then "agent".
/// Never the repository's config (`agent:` there is reported by `doctor`
/// and ignored): a cloned repository must not choose who you act as. A
/// name no one could read back ([`vouch_core::ids::actor_name_problem`]) is refused.
pub(crate) fn caller(agent_flag: Option<&str>, transport: Transport) -> Result<Caller> {
    let actor = match named(agent_flag, transport)? {
        Some(actor) => actor,
        None if transport == Transport::Cli => vouch_core::ids::NO_NAME.into(),
        None => NO_NAME_AGENT.into(),
    };
    Ok(Caller::new(actor, transport))
}

/// The actor of an agent transport when nothing names anyone.
const NO_NAME_AGENT: &str = "agent";

/// The person deciding proposals at the command line (or in `vouch ui`),
/// as they named themselves. The `cli` that [`caller`] falls back to when
/// nothing names anyone (no --agent, VOUCH_AGENT or $USER, as in many
/// containers) is no one: a decision it would sign is refused, and so is
/// one signed `cli` by name (`USER=cli`), or by a name that reads as it
/// (`CLI`, fullwidth `ｃｌｉ`, a Cyrillic `сli`:
/// [`vouch_core::ids::reads_as_no_name`]): in the log that stands for "no
/// name".
pub(crate) fn decider(agent_flag: Option<&str>) -> Result<Caller> {
    match named(agent_flag, Transport::Cli)? {
        Some(actor) if !vouch_core::ids::reads_as_no_name(&actor) => {
            Ok(Caller::new(actor, Transport::Cli))
        }
        Some(actor) => {
            let no_name = vouch_core::ids::NO_NAME;
            let reads = if actor == no_name {
                String::new()
            } else {
                format!(", which reads as {no_name:?}")
            };
            Err(Error::denied(format!(
                "review_gate: who is deciding? The name set is {actor:?}{reads}, the name the \
                 audit log uses for \"no name\": a decision is signed with your name: pass \
                 --agent YOUR_NAME, or export VOUCH_AGENT=YOUR_NAME (or USER)"
            )))
        }
        None => Err(Error::denied(
            "review_gate: who is deciding? No name is set: --agent, VOUCH_AGENT and $USER are \
             all empty (usual in a container). A decision is signed with your name: pass \
             --agent YOUR_NAME, or export VOUCH_AGENT=YOUR_NAME (or USER)",
        )),
    }
}

/// The actor someone named: --agent, VOUCH_AGENT, then (at the command
/// line) $USER; blank values name no one, spaces around a name are not
/// part of it, and a name [`vouch_core::ids::actor_name_problem`] refuses is an error
/// naming where it came from.
fn named(agent_flag: Option<&str>, transport: Transport) -> Result<Option<String>> {
    let env = |k: &str| std::env::var(k).ok();
    let given = [
        ("--agent", agent_flag.map(str::to_string)),
        ("VOUCH_AGENT", env("VOUCH_AGENT")),
        (
            "$USER",
            (transport == Transport::Cli).then(|| env("USER")).flatten(),
        ),
    ];
    let Some((from, name)) = given.into_iter().find_map(|(from, v)| {
        v.map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(|v| (from, v))
    }) else {
        return Ok(None);
    };
    match vouch_core::ids::actor_name_problem(&name) {
        None => Ok(Some(name)),
        Some(problem) => Err(Error::invalid(format!(
            "{from} {name:?} {problem}; name yourself in plain letters (--agent NAME or \
             VOUCH_AGENT=NAME)"
        ))),
    }
}
