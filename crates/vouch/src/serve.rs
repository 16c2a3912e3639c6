//! `vouch serve`: the same registry over MCP (stdio), JSONL (stdio) or HTTP.

use crate::cli::{Cli, ServeArgs, TransportArg, UiArgs};
use crate::context;
use crate::http::TokenSpec;
use std::path::Path;
use std::sync::Arc;
use vouch_core::{Error, Kb, Transport};

/// Every configured token with where it came from: `--token` values (or
/// VOUCH_HTTP_TOKENS), then the lines of `--token-file`.
fn token_specs(args: &ServeArgs) -> Result<Vec<TokenSpec>, Error> {
    let mut specs: Vec<TokenSpec> = args
        .tokens
        .iter()
        .enumerate()
        .map(|(i, raw)| TokenSpec {
            origin: format!("--token #{}", i + 1),
            raw: raw.clone(),
        })
        .collect();
    if let Some(path) = &args.token_file {
        specs.extend(read_token_file(path)?);
    }
    Ok(specs)
}

/// The `SUBJECT=TOKEN` lines of a token file, refusing a file that group or
/// others can read or write.
pub(crate) fn read_token_file(path: &Path) -> Result<Vec<TokenSpec>, Error> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::invalid(format!("--token-file {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(Error::invalid(format!(
            "--token-file {shown}: not a regular file"
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Error::invalid(format!(
                "--token-file {shown}: group or others can access it (mode {mode:03o}); \
                 it holds secrets, so make it yours alone: chmod 600 {shown}"
            )));
        }
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid(format!("--token-file {shown}: {e}")))?;
    let specs: Vec<TokenSpec> = text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim();
            (!line.is_empty() && !line.starts_with('#')).then(|| TokenSpec {
                origin: format!("--token-file {shown} line {}", i + 1),
                raw: line.to_string(),
            })
        })
        .collect();
    if specs.is_empty() {
        return Err(Error::invalid(format!(
            "--token-file {shown}: no tokens in it (expected SUBJECT=TOKEN lines)"
        )));
    }
    Ok(specs)
}

/// Keep the index in step with the files in the background (the core's
/// index keeper: watching the files, or re-scanning them every second, and
/// embedding what is new); requests only read. What a round could not do
/// is said on stderr, for the person running the server.
fn spawn_refresher(kb: Arc<Kb>) {
    // The keeper's thread holds what it needs (the watcher included) for
    // as long as the server runs.
    kb.keep_index(|lines| {
        for line in lines {
            eprintln!("vouch: {line}");
        }
    });
}

/// How long a watcher started in the background runs unless told: a
/// working session, not forever.
pub(crate) const DETACHED_FOR: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// How long starting a background watcher may take to show itself (it
/// takes its lock before its first scan).
const DETACHED_SHOWS_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The live watcher of `kb`, or one started now in the background: a
/// `vouch watch --for` of its own, in its own process group (a Ctrl-C in
/// the terminal that started it does not reach it), stopping by itself.
/// Its pid, and whether it was started now.
pub(crate) fn find_or_start_watcher(
    kb: &vouch_core::Kb,
    for_: std::time::Duration,
) -> Result<(u32, bool), Error> {
    if let Some(w) = kb.index().watcher(kb) {
        return Ok((w.pid, false));
    }
    if !kb.settings().retrieval.watch {
        return Err(Error::invalid(format!(
            "watching is turned off (retrieval.watch: false in {}); nothing was started",
            kb.layout().config().display()
        )));
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::internal(format!("the vouch binary: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--kb")
        .arg(kb.layout().root())
        .arg("watch")
        .arg("--for")
        .arg(format!("{}s", for_.as_secs()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::internal(format!("starting a watcher: {e}")))?;
    let until = std::time::Instant::now() + DETACHED_SHOWS_WITHIN;
    while std::time::Instant::now() < until {
        if let Some(w) = kb.index().watcher(kb) {
            // Another process may have started one at the same moment: ours
            // then finds the lock taken and stops by itself.
            return Ok((w.pid, w.pid == child.id()));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::internal(format!(
                "the watcher stopped at once ({status}); run `vouch watch` to see why"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(Error::internal(format!(
        "the watcher (pid {}) did not take the lock within {} s; it may still start — \
         `vouch status` names the watching process",
        child.id(),
        DETACHED_SHOWS_WITHIN.as_secs()
    )))
}

/// Whether process `pid` holds a lock on the file at `path`: Linux lists
/// every lock's holder and file (by inode) in `/proc/locks`. Where there
/// is no such list, the lock file's word is taken.
#[cfg(unix)]
fn holds_lock(pid: u32, path: &std::path::Path) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    use std::os::unix::fs::MetadataExt;
    let (Ok(meta), Ok(locks)) = (
        std::fs::symlink_metadata(path),
        std::fs::read_to_string("/proc/locks"),
    ) else {
        return false;
    };
    let (pid, inode) = (pid.to_string(), meta.ino().to_string());
    // "1: FLOCK  ADVISORY  WRITE 1234 08:02:5678 0 EOF": the holder's pid,
    // then major:minor:inode (a waiter's line has "->" and shifts these).
    locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 5 && fields[4] == pid && fields[5].rsplit(':').next() == Some(&*inode)
    })
}

/// `vouch watch --stop`: end the watcher of this knowledge base, if one
/// runs; one-shot commands scan the files again from then on.
fn stop_watcher(kb: &vouch_core::Kb) -> Result<serde_json::Value, Error> {
    let Some(w) = kb.index().watcher(kb) else {
        return Ok(serde_json::json!({"stopped": null}));
    };
    #[cfg(unix)]
    {
        // The pid is what the lock file says; only the lock's holder is
        // sent the signal (a watcher in another container sharing the
        // folder names a pid that here is someone else's).
        if !holds_lock(w.pid, &kb.layout().watch_lock()) {
            return Err(Error::invalid(format!(
                "the watcher's lock names pid {}, which does not hold it as this system sees                  it (a watcher in another container?); stop it where it runs",
                w.pid
            )));
        }
        let pid = rustix::process::Pid::from_raw(w.pid as i32)
            .ok_or_else(|| Error::internal(format!("the watcher's pid {} is not valid", w.pid)))?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .map_err(|e| Error::internal(format!("stopping the watcher (pid {}): {e}", w.pid)))?;
        // The lock goes with the process: wait until it is free, so the
        // next command already scans.
        let until = std::time::Instant::now() + DETACHED_SHOWS_WITHIN;
        while kb.index().watcher(kb).is_some() {
            if std::time::Instant::now() > until {
                return Err(Error::internal(format!(
                    "the watcher (pid {}) was asked to stop and still holds its lock after {} s",
                    w.pid,
                    DETACHED_SHOWS_WITHIN.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(serde_json::json!({"stopped": {"pid": w.pid}}))
    }
    #[cfg(not(unix))]
    {
        Err(Error::invalid(format!(
            "stopping a watcher is not supported here; end process {} instead",
            w.pid
        )))
    }
}

/// `vouch recall --watch`: find or start a background watcher; a line on
/// stderr says what happened (stdout is the digest a hook hands the agent),
/// and a watcher that cannot start is a warning, never a failed recall.
pub(crate) fn watch_for_session(kb: &vouch_core::Kb) {
    if !kb.settings().retrieval.watch {
        // The user turned watching off: nothing to start, nothing to say.
        return;
    }
    match find_or_start_watcher(kb, DETACHED_FOR) {
        Ok((pid, true)) => eprintln!(
            "vouch: watching this knowledge base in the background (pid {pid}, for {} h); \
             one-shot commands skip their scan of the files meanwhile",
            DETACHED_FOR.as_secs() / 3600
        ),
        Ok((_, false)) => {}
        Err(e) => eprintln!("vouch: warning: no background watcher: {}", e.message),
    }
}

/// `vouch watch`: keep the index in step with the files until stopped (or
/// for --for); with --detach, find or start one in the background.
pub(crate) fn run_watch(cli: &Cli, args: &crate::cli::WatchArgs) -> Result<i32, Error> {
    let kb = Arc::new(context::open(cli.kb.as_deref())?);
    if args.stop {
        crate::render::print(cli.json, &stop_watcher(&kb)?);
        return Ok(0);
    }
    if args.detach {
        let for_ = args.for_.unwrap_or(DETACHED_FOR);
        let (pid, started) = find_or_start_watcher(&kb, for_)?;
        let mut v = serde_json::json!({"watcher": {"pid": pid}, "started": started});
        if started {
            v["stops_after_seconds"] = serde_json::json!(for_.as_secs());
        }
        crate::render::print(cli.json, &v);
        return Ok(0);
    }
    let watching = kb.start_watching()?;
    crate::render::print_warnings(kb.take_warnings());
    eprintln!(
        "vouch: watching {} (pid {}); one-shot commands skip their scan of the files while \
         this runs; Ctrl-C stops",
        kb.layout().root().display(),
        std::process::id()
    );
    if let Some(for_) = args.for_ {
        // The lock goes with the process: the next one-shot command finds
        // no watcher and scans.
        std::thread::spawn(move || {
            std::thread::sleep(for_);
            std::process::exit(0);
        });
    }
    let printer = kb.clone();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(vouch_core::index::keeper::ROUND_EVERY);
            crate::render::print_warnings(printer.take_warnings());
        }
    });
    watching.join()?;
    Ok(0)
}

/// Say at start who may decide proposals here, and which of the
/// repository's settings were ignored for widening the gate.
fn announce_gate(kb: &vouch_core::Kb) {
    // What opening noticed (a personal config that may not be used, ...).
    crate::render::print_warnings(kb.take_warnings());
    for (key, held) in kb.settings().ignored_widenings() {
        eprintln!(
            "vouch: warning: {}: `{key}: {held}` is ignored; only your own config ({}) may \
             widen the review gate or name the actor",
            kb.layout().config().display(),
            crate::personal::shown()
        );
    }
    let trust = kb.trust();
    if trust.trusted_agent {
        eprintln!(
            "vouch: warning: review.approver_role is trusted-agent in {}: every agent may \
             approve other actors' proposals here",
            crate::personal::shown()
        );
    } else if trust.reviewers.is_empty() {
        eprintln!(
            "vouch: review: only people decide proposals (vouch review, vouch ui); no agent \
             is a reviewer"
        );
    } else {
        eprintln!(
            "vouch: review: reviewers over agent transports: {} (from {})",
            trust.reviewers.join(", "),
            crate::personal::shown()
        );
    }
}

pub(crate) fn run(cli: &Cli, args: &ServeArgs) -> Result<i32, Error> {
    match (&args.team.database, args.transport) {
        (Some(url), TransportArg::Http) => crate::team::choose_by_flag(url)?,
        // A stdio server is one agent's, started with whatever environment
        // the host's config (which a repository may ship) gave it.
        (Some(_), _) => eprintln!(
            "vouch: --database / VOUCH_DATABASE_URL is for HTTP team servers; this stdio \
             server does not use it"
        ),
        (None, _) => {}
    }
    // Its index keeper (`spawn_refresher`, which sets the background
    // upkeep) keeps the index in step; requests only read.
    let mut kb = context::open(cli.kb.as_deref())?;
    if let Some(dir) = &args.index_dir {
        crate::team::keep_index_in(&mut kb, dir)?;
        eprintln!(
            "vouch: the derived index is kept in {}",
            kb.layout().index_dir().display()
        );
    } else if crate::team::index_in_database(&kb)
        && let Some(team) = crate::team::current()
    {
        eprintln!(
            "vouch: the derived index is kept in the team database {}",
            team.shown
        );
    }
    announce_gate(&kb);
    if let Some(lock) = kb.shared_lock() {
        eprintln!("vouch: writes ordered by {}", lock.describe());
    }
    let kb = Arc::new(kb);
    spawn_refresher(kb.clone());
    // Another replica's writes, heard through the team database: a replica
    // keeping its own index (on a host of its own, whose watcher sees only
    // that host's writes) catches up with the files, and one reading the
    // team database's index reads them into its postings and vectors.
    // Only a replica that fell back to the tree's `state.db` (the database
    // was away when it started) leaves it to the host's watcher: a scan by
    // each on every write would only fight over that one file.
    if let Some(team) = crate::team::current()
        && (args.index_dir.is_some() || crate::team::index_in_database(&kb))
    {
        let heard = kb.clone();
        team.lock.follow(move || heard.index().changed_elsewhere());
    }
    let root = kb.layout().root().display().to_string();
    match args.transport {
        TransportArg::Jsonl => {
            let caller = context::caller(cli.agent.as_deref(), Transport::Jsonl)?;
            eprintln!(
                "vouch: serving JSONL on stdio for {root} as {}",
                caller.actor
            );
            crate::jsonl::serve(&kb, &caller)
                .map_err(|e| Error::internal(format!("stdio: {e}")))?;
            Ok(0)
        }
        TransportArg::Mcp => {
            let caller = context::caller(cli.agent.as_deref(), Transport::Mcp)?;
            eprintln!("vouch: serving MCP on stdio for {root} as {}", caller.actor);
            runtime()?
                .block_on(crate::mcp::serve_stdio(kb, caller))
                .map_err(|e| Error::internal(format!("stdio: {e}")))?;
            Ok(0)
        }
        TransportArg::Http => {
            let anonymous = context::caller(cli.agent.as_deref(), Transport::Http)?;
            let tokens = token_specs(args)?;
            let limits = context::http_limits()?;
            runtime()?.block_on(crate::http::listen::serve(
                kb, anonymous, &args.bind, &tokens, limits,
            ))?;
            Ok(0)
        }
    }
}

/// `vouch ui`: the review pages for the person running it.
pub(crate) fn run_ui(cli: &Cli, args: &UiArgs) -> Result<i32, Error> {
    // Its index keeper (`spawn_refresher`, which sets the background
    // upkeep) keeps the index in step; requests only read.
    let kb = context::open(cli.kb.as_deref())?;
    // The approver is whoever the person named, never the `cli` nobody set.
    let person = context::decider(cli.agent.as_deref())?.actor;
    let kb = Arc::new(kb);
    spawn_refresher(kb.clone());
    let root = kb.layout().root().display().to_string();
    let limits = context::http_limits()?;
    let open = args.open;
    let mut opened: Option<std::path::PathBuf> = None;
    let served = runtime()?.block_on(crate::http::listen::serve_review(
        kb,
        &person,
        &args.bind,
        limits,
        |url| {
            use std::io::Write;
            eprintln!(
                "vouch: review pages for {root}, approving as {person}; the link works once; Ctrl-C stops"
            );
            let mut out = std::io::stdout();
            let _ = writeln!(out, "{url}");
            let _ = out.flush();
            if open {
                opened = open_browser(url);
            }
        },
    ));
    if let Some(page) = opened {
        let _ = std::fs::remove_file(page);
    }
    served?;
    Ok(0)
}

/// Hand the sign-in link to the desktop's browser without putting its
/// secret on a command line (which any local user can read in `ps`): the
/// browser opens a page only this user can read that forwards to it.
/// Returns that page, to remove when the server stops.
fn open_browser(url: &str) -> Option<std::path::PathBuf> {
    let page = std::env::temp_dir().join(format!("vouch-ui-{}.html", std::process::id()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let written = opts.open(&page).and_then(|mut f| {
        use std::io::Write;
        let href = crate::ui::pages::esc(url);
        writeln!(
            f,
            "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" \
             content=\"0;url={href}\"><title>vouch</title><a href=\"{href}\">Open the review pages</a>"
        )
    });
    if let Err(e) = written {
        eprintln!(
            "vouch: could not write {} ({e}); open the link above yourself",
            page.display()
        );
        return None;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let started = std::process::Command::new(opener)
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = started {
        eprintln!("vouch: could not start {opener} ({e}); open the link above yourself");
    }
    Some(page)
}

/// The async runtime for the MCP and HTTP servers; the core stays
/// synchronous and runs on its blocking pool.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("tokio runtime: {e}")))
}
