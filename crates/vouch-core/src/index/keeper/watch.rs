//! Watching the files so that one-shot commands need not scan them —
//! the keeper's watcher, written once for every engine: it hears of each
//! change from the kernel and has the engine apply it ([`WatchTarget`]).
//!
//! A one-shot command must notice edits made outside vouch, which costs one
//! `stat` per file on every run (≈150 ms at 100,000 claims). A long-running
//! process — `vouch serve`, `vouch ui`, `vouch watch` — can instead be told
//! of each change by the kernel (inotify) and keep `state.db` in step as
//! changes happen. A one-shot command then trusts `state.db` after a
//! handshake proving that the watcher has applied every change made before
//! the command started (git's fsmonitor "cookie" protocol):
//!
//! 1. The watcher holds an exclusive lock on `.vouch/watch.lock` for as long
//!    as it runs, with its token written in the file, and stamps the same
//!    token into the `state.db` it keeps in step (`meta.watch`).
//! 2. The command finds the lock held, creates a new file in `.vouch/.watch/`
//!    and waits for it to disappear. The kernel queues a watcher's events in
//!    order, so when the watcher reads the cookie's creation it has read
//!    every earlier change; it applies them, commits, and only then deletes
//!    the cookie.
//! 3. The command checks that the `state.db` it has open is the file at the
//!    path and carries the token (a rebuild by another process leaves a file
//!    without it), and skips the scan.
//!
//! Anything else — no watcher, no answer within [`ANSWER_WITHIN`], another
//! token, a replaced file — and the command scans as before: correctness
//! never rests on the watcher, only speed. A watcher refuses to start on a
//! network file system (another machine's edits raise no event here) and
//! where the kernel's watch limit is too low; a lost event (queue overflow)
//! costs it one full scan before it answers again.

use crate::error::{Error, Result};
use crate::index::engine::WatchTarget;
#[cfg(target_os = "linux")]
use crate::index::keeper::scan::{KINDS, kind_dir};
use crate::index::{Watcher, Watching};
use crate::stored::Store;
#[cfg(target_os = "linux")]
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a one-shot command waits for the watcher's answer before it
/// scans the files itself.
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_millis(500);

/// The live watcher of this knowledge base, if any, with its token.
fn live_watcher(kb: &Store) -> Option<(Watcher, String)> {
    let path = kb.layout().watch_lock();
    let mut file = open_nofollow(&path, false).ok()?;
    match file.try_lock_shared() {
        // Nobody holds it exclusively: no watcher.
        Ok(()) => return None,
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(_)) => return None,
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).ok()?;
    let (pid, token) = text.trim().split_once(' ')?;
    Some((
        Watcher {
            pid: pid.parse().ok()?,
        },
        token.to_string(),
    ))
}

/// The process watching this knowledge base, if one is alive.
pub(crate) fn watcher(kb: &Store) -> Option<Watcher> {
    live_watcher(kb).map(|(w, _)| w)
}

fn open_nofollow(path: &Path, write: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    if write {
        options.write(true).create(true).truncate(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link; never blocking on a FIFO planted there.
        options.custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32,
        );
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// For a one-shot command about to sync: the token of a live watcher that
/// has applied every change made so far (the cookie handshake) — the
/// engine then checks that the index it has open is the one that watcher
/// stamped. Never an error: any doubt answers `None`.
pub(crate) fn cookie_answered(kb: &Store) -> Option<String> {
    if !kb.settings().retrieval.watch {
        return None;
    }
    let (watcher, token) = live_watcher(kb)?;
    let dir = kb.layout().watch_cookies();
    if !crate::store::nofollow::is_dir(&dir) {
        return None;
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let cookie = dir.join(format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    // `create_new` (O_EXCL) never follows a link.
    if std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&cookie)
        .is_err()
    {
        return None;
    }
    let started = std::time::Instant::now();
    let mut pause = Duration::from_micros(50);
    // Only "gone" is an answer; any other failure to look is a doubt.
    let gone = |cookie: &Path| matches!(std::fs::symlink_metadata(cookie), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    while !gone(&cookie) {
        if started.elapsed() >= ANSWER_WITHIN {
            let _ = std::fs::remove_file(&cookie);
            kb.warn(format!(
                "index: the watcher (process {}) did not answer within {} ms; scanned the \
                 files instead",
                watcher.pid,
                ANSWER_WITHIN.as_millis()
            ));
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
    // The same watcher still (one that started meanwhile may have answered
    // before its first sync).
    live_watcher(kb)
        .filter(|(_, now)| *now == token)
        .map(|_| token)
}

/// Start watching `kb`'s files on a thread of its own, keeping this
/// process's index in step with every change. Refused when another process
/// watches already (`Busy`), on a network file system, on a platform
/// without inotify, or when the kernel will not add enough watches.
pub(crate) fn start(store: Arc<Store>, target: Arc<dyn WatchTarget>) -> Result<Watching> {
    imp::start(store, target)
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;
    pub(super) fn start(_: Arc<Store>, _: Arc<dyn WatchTarget>) -> Result<Watching> {
        Err(Error::internal(
            "watching files is built for Linux (inotify) only; one-shot commands scan the files",
        ))
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use rustix::fs::inotify::{self, ReadFlags, WatchFlags};
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;

    /// What a watch descriptor watches.
    enum Watched {
        Root,
        Kind(&'static str),
        /// One source's folder (`sources/<id>/`), for edits of its files.
        Source(String),
        Cookies,
    }

    /// What one read of the queue asks for.
    #[derive(Default)]
    struct Batch {
        changed: HashSet<(&'static str, String)>,
        cookies: Vec<String>,
        /// Events were lost, or a folder was replaced: scan everything.
        full: bool,
    }

    struct Watcher {
        kb: Arc<Store>,
        target: Arc<dyn WatchTarget>,
        fd: OwnedFd,
        wds: HashMap<i32, Watched>,
        token: String,
        /// Held (locked) for as long as the watcher runs.
        _lock: std::fs::File,
    }

    /// For `.vouch/` itself and the cookie folder: names coming and going
    /// only (not writes, or every command closing `state.db` would count).
    const NAME_EVENTS: WatchFlags = WatchFlags::CREATE
        .union(WatchFlags::DELETE)
        .union(WatchFlags::MOVED_FROM)
        .union(WatchFlags::MOVED_TO)
        .union(WatchFlags::DELETE_SELF)
        .union(WatchFlags::MOVE_SELF)
        .union(WatchFlags::ONLYDIR)
        .union(WatchFlags::DONT_FOLLOW)
        .union(WatchFlags::EXCL_UNLINK);

    /// For the folders documents live in: every change to a file in them.
    const DIR_EVENTS: WatchFlags = NAME_EVENTS
        .union(WatchFlags::CLOSE_WRITE)
        .union(WatchFlags::MODIFY);

    /// File systems whose changes may come from another machine, which
    /// inotify never hears of (statfs magic numbers).
    const REMOTE: &[(u32, &str)] = &[
        (0x6969, "NFS"),
        (0x517B, "SMB"),
        (0xFF53_4D42, "CIFS"),
        (0xFE53_4D42, "SMB2"),
        (0x0102_1997, "9p"),
        (0x5346_414F, "AFS"),
        (0x00C3_6400, "Ceph"),
        (0x6573_5546, "FUSE"),
        (0x786F_4256, "VirtualBox shared folder"),
        (0x0BD0_0BD0, "Lustre"),
        (0x4750_4653, "GPFS"),
        (0x0116_1970, "GFS2"),
        (0x7461_636F, "OCFS2"),
        (0x1983_0326, "BeeGFS"),
    ];

    fn fail(what: &str, e: impl std::fmt::Display) -> Error {
        Error::internal(format!("watch: {what}: {e}"))
    }

    pub(super) fn start(kb: Arc<Store>, target: Arc<dyn WatchTarget>) -> Result<Watching> {
        let root = kb.layout().root().to_path_buf();
        if !kb.settings().retrieval.watch {
            return Err(Error::invalid(format!(
                "watching is turned off (retrieval.watch: false in {})",
                kb.layout().config().display()
            )));
        }
        let fs = rustix::fs::statfs(&root).map_err(|e| fail("statfs", e))?;
        // Magic numbers are 32 bits; `f_type` is wider on some targets.
        if let Some((_, name)) = REMOTE.iter().find(|(m, _)| *m == fs.f_type as u32) {
            return Err(Error::invalid(format!(
                "{} is on a {name} file system, where edits made from another machine raise \
                 no event here; one-shot commands scan the files",
                root.display()
            )));
        }
        let lock_path = kb.layout().watch_lock();
        let lock = open_nofollow(&lock_path, true).map_err(|e| Error::io(&lock_path, e))?;
        // A command checking for a watcher holds a shared lock for a moment.
        let mut tries = 0;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if tries < 20 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    let pid = std::fs::read_to_string(&lock_path)
                        .ok()
                        .and_then(|t| t.split_whitespace().next().map(str::to_string))
                        .unwrap_or_else(|| "?".into());
                    return Err(Error::new(
                        crate::error::ErrorKind::Busy,
                        format!(
                            "another process (pid {pid}) watches {} already",
                            root.display()
                        ),
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
            }
        }
        // Unique per start; not from the KB's clock, which tests pin.
        let token = crate::ids::sha256_hex(
            format!(
                "{}:{:?}:{:?}",
                std::process::id(),
                std::time::SystemTime::now(),
                std::thread::current().id()
            )
            .as_bytes(),
        )[..16]
            .to_string();
        // The new token at once: a command that read a dead watcher's
        // token finds it changed, and `state.db` carries this one only
        // after the first full sync below.
        let mut lock = lock;
        lock.set_len(0).map_err(|e| Error::io(&lock_path, e))?;
        std::io::Write::write_all(
            &mut lock,
            format!("{} {token}\n", std::process::id()).as_bytes(),
        )
        .map_err(|e| Error::io(&lock_path, e))?;
        let cookies = kb.layout().watch_cookies();
        match std::fs::create_dir(&cookies) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(&cookies, e)),
        }
        if !crate::store::nofollow::is_dir(&cookies) {
            return Err(Error::invalid(format!(
                "{} is not a folder (a link?); remove it and start again",
                cookies.display()
            )));
        }
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(|e| fail("inotify_init", e))?;
        let mut w = Watcher {
            kb,
            target,
            fd,
            wds: HashMap::new(),
            token,
            _lock: lock,
        };
        w.watch_all()?;
        // Changes made during this first sync are queued and applied again,
        // which is harmless.
        w.apply(Batch {
            full: true,
            ..Batch::default()
        })?;
        let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = running.clone();
        let thread = std::thread::Builder::new()
            .name("vouch-watch".into())
            .spawn(move || {
                // Cleared however the thread ends, a panic included.
                struct Stopped(Arc<std::sync::atomic::AtomicBool>);
                impl Drop for Stopped {
                    fn drop(&mut self) {
                        self.0.store(false, Ordering::SeqCst);
                    }
                }
                let _stopped = Stopped(flag);
                let r = w.run();
                if let Err(e) = &r {
                    w.kb.warn(format!(
                        "watch: stopped ({e}); one-shot commands scan the files again"
                    ));
                }
                r
            })
            .map_err(|e| fail("thread", e))?;
        Ok(Watching {
            running,
            thread: Some(thread),
        })
    }

    impl Watcher {
        fn add(&mut self, path: &Path, what: Watched) -> Result<()> {
            let mask = match &what {
                Watched::Root | Watched::Cookies => NAME_EVENTS,
                Watched::Kind(_) | Watched::Source(_) => DIR_EVENTS,
            };
            match inotify::add_watch(&self.fd, path, mask) {
                Ok(wd) => {
                    self.wds.insert(wd, what);
                    Ok(())
                }
                // Gone already, or not a folder: its parent's event covers it.
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(()),
                // A source's folder nobody may read: its documents cannot be
                // loaded either; watching the rest matters more.
                Err(rustix::io::Errno::ACCESS) if matches!(what, Watched::Source(_)) => Ok(()),
                Err(rustix::io::Errno::NOSPC) => Err(fail(
                    "the kernel's inotify watch limit is reached",
                    format!(
                        "{} folders watched; raise it with `sysctl fs.inotify.max_user_watches=524288`",
                        self.wds.len()
                    ),
                )),
                Err(e) => Err(fail(&format!("watching {}", path.display()), e)),
            }
        }

        /// Watch the root, each kind's folder, each source's folder and the
        /// cookie folder.
        fn watch_all(&mut self) -> Result<()> {
            let layout = self.kb.layout().clone();
            // The root may be a link (a user's choice): watch what it names.
            let root = std::fs::canonicalize(layout.root())
                .unwrap_or_else(|_| layout.root().to_path_buf());
            self.add(&root, Watched::Root)?;
            let cookies = layout.watch_cookies();
            if crate::store::nofollow::is_dir(&cookies) {
                self.add(&cookies, Watched::Cookies)?;
            }
            // Blind without these: stop, so a server scans again, rather
            // than go on saying it is in step.
            let has = |w: &Self, f: fn(&Watched) -> bool| w.wds.values().any(f);
            if !has(self, |w| matches!(w, Watched::Root))
                || !has(self, |w| matches!(w, Watched::Cookies))
            {
                return Err(fail(
                    "cannot watch",
                    format!("{} or its cookie folder is gone", layout.root().display()),
                ));
            }
            for (kind, dir) in KINDS {
                let path = kind_dir(&self.kb, *dir);
                // A link is never followed, nor watched through.
                if crate::store::nofollow::is_dir(&path) {
                    self.add(&path, Watched::Kind(kind))?;
                }
            }
            if crate::store::nofollow::is_dir(&layout.sources_dir())
                && let Ok(entries) = std::fs::read_dir(layout.sources_dir())
            {
                for e in entries.flatten() {
                    if let Some(id) = e.file_name().to_str()
                        && crate::ids::is_source_id(id)
                    {
                        self.add(&e.path(), Watched::Source(id.to_string()))?;
                    }
                }
            }
            Ok(())
        }

        /// Read events and apply them. A failed apply (say, `state.db`
        /// locked by another process for longer than the busy timeout) is
        /// retried as a full sync, every 50 ms for a while; a watcher that
        /// keeps failing (it cannot watch `.vouch/` any more, say) stops,
        /// so its server goes back to scanning. A failing inotify stops it
        /// at once.
        fn run(&mut self) -> Result<()> {
            const GIVE_UP_AFTER: u32 = 100;
            let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
            let mut retry = false;
            let mut failures = 0u32;
            loop {
                let mut fds = [rustix::event::PollFd::new(
                    &self.fd,
                    rustix::event::PollFlags::IN,
                )];
                // Once a second with nothing to do; soon after a failure.
                let timeout = if retry {
                    rustix::event::Timespec {
                        tv_sec: 0,
                        tv_nsec: 50_000_000,
                    }
                } else {
                    rustix::event::Timespec {
                        tv_sec: 1,
                        tv_nsec: 0,
                    }
                };
                match rustix::event::poll(&mut fds, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(fail("poll", e)),
                }
                let mut batch = self.read(&mut buf)?;
                batch.full |= retry;
                retry = false;
                match self.apply(batch) {
                    Ok(()) => failures = 0,
                    Err(e) if failures + 1 >= GIVE_UP_AFTER => return Err(e),
                    Err(e) => {
                        if failures == 0 {
                            self.kb
                                .warn(format!("watch: could not apply changes ({e}); retrying"));
                        }
                        failures += 1;
                        retry = true;
                    }
                }
            }
        }

        /// Drain the queue into one batch.
        fn read(&mut self, buf: &mut [MaybeUninit<u8>]) -> Result<Batch> {
            let mut batch = Batch::default();
            let mut new_sources: Vec<String> = Vec::new();
            let mut stale: Vec<i32> = Vec::new();
            let mut reader = inotify::Reader::new(&self.fd, buf);
            loop {
                let event = match reader.next() {
                    Ok(e) => e,
                    Err(rustix::io::Errno::WOULDBLOCK) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(fail("reading events", e)),
                };
                let flags = event.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    self.kb.warn(
                        "watch: the kernel's event queue overflowed (changes came faster than \
                         they were read); scanning every file once"
                            .to_string(),
                    );
                    batch.full = true;
                    continue;
                }
                let name = event
                    .file_name()
                    .and_then(|n| n.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                let gone = flags
                    .intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF);
                if flags.contains(ReadFlags::IGNORED) {
                    // The watch is gone (its folder was deleted or moved);
                    // a folder watched again gets a new descriptor.
                    match self.wds.remove(&event.wd()) {
                        None | Some(Watched::Source(_)) => {}
                        Some(_) => batch.full = true,
                    }
                    continue;
                }
                if flags.contains(ReadFlags::MOVE_SELF)
                    && !matches!(self.wds.get(&event.wd()), Some(Watched::Source(_)) | None)
                {
                    // A watched folder moved away: the watch follows it, not
                    // the path. Drop it, so the full scan watches the path
                    // again — or finds `.vouch/` gone and stops.
                    stale.push(event.wd());
                    batch.full = true;
                    continue;
                }
                // In `.vouch/` itself only these names matter: state.db, a
                // kind's folder or the cookie folder replaced means watching
                // afresh and scanning everything.
                let root_name_matters = || {
                    gone || name == crate::store::layout::INDEX_FILE
                        || name == crate::store::layout::WATCH_COOKIE_DIR
                        || KINDS.iter().any(|(_, d)| {
                            kind_dir(&self.kb, *d).file_name() == Some(std::ffi::OsStr::new(&name))
                        })
                };
                match self.wds.get(&event.wd()) {
                    None => {}
                    Some(Watched::Root) if root_name_matters() => batch.full = true,
                    Some(Watched::Root) => {}
                    Some(Watched::Cookies) => {
                        if gone {
                            batch.full = true;
                        } else if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                            batch.cookies.push(name);
                        }
                    }
                    Some(Watched::Kind(kind)) => {
                        let kind = *kind;
                        if gone {
                            batch.full = true;
                        } else if kind == "source" {
                            if crate::ids::is_source_id(&name) {
                                if flags.contains(ReadFlags::ISDIR)
                                    && flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
                                {
                                    new_sources.push(name.clone());
                                }
                                batch.changed.insert((kind, name));
                            }
                        } else if let Some(dir) = KINDS.iter().find(|(k, _)| *k == kind)
                            && let Some(dir) = dir.1
                            && let Some(id) = crate::store::layout::id_from_file_name(dir, &name)
                            && crate::ids::check_id("id", &id).is_ok()
                        {
                            batch.changed.insert((kind, id));
                        }
                    }
                    Some(Watched::Source(id)) => {
                        batch.changed.insert(("source", id.clone()));
                        if flags.contains(ReadFlags::MOVE_SELF) {
                            // Moved away, it is no longer this source's
                            // folder: stop watching it (a folder moved back
                            // is watched again when `sources/` says so).
                            stale.push(event.wd());
                        }
                    }
                }
            }
            for wd in stale {
                self.wds.remove(&wd);
                let _ = inotify::remove_watch(&self.fd, wd);
            }
            for id in new_sources {
                if let Ok(path) = self.kb.layout().source_dir(&id) {
                    self.add(&path, Watched::Source(id))?;
                }
            }
            Ok(batch)
        }

        /// Have the engine bring the index in step with what the batch says
        /// changed (and stamp it), then answer its cookies.
        fn apply(&mut self, batch: Batch) -> Result<()> {
            let cookie_dir = self.kb.layout().watch_cookies();
            // Never listed or deleted through a link (a clone could plant
            // one pointing at the user's files).
            let cookies_real = || crate::store::nofollow::is_dir(&cookie_dir);
            let mut cookies = batch.cookies;
            // Not carrying this watcher's token (reset in place by a
            // rebuild, or another file), or opened just now: in step only
            // after a full scan.
            let full = batch.full || self.target.needs_full(&self.kb, &self.token)?;
            if full {
                // Lost events may include cookies: answer every cookie made
                // before the scan starts (later ones raise events).
                if let Ok(entries) = std::fs::read_dir(&cookie_dir)
                    && cookies_real()
                {
                    cookies.extend(
                        entries
                            .flatten()
                            .filter_map(|e| e.file_name().to_str().map(str::to_string)),
                    );
                }
                // Folders may have been replaced, and sources added unseen:
                // watch whatever is there now (a folder watched already
                // keeps its descriptor).
                if !cookie_dir.exists() {
                    let _ = std::fs::create_dir(&cookie_dir);
                }
                self.watch_all()?;
            }
            self.target.apply_watched(
                &self.kb,
                full,
                batch.changed.into_iter().collect(),
                &self.token,
            )?;
            if cookies_real() {
                for name in cookies {
                    // Only names a command makes; nothing else is deleted.
                    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                        let _ = std::fs::remove_file(cookie_dir.join(name));
                    }
                }
            }
            Ok(())
        }
    }
}
