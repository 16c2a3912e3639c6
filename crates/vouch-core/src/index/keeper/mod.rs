//! The index keeper's explicit steps. Reads never write: a read works on
//! what the keeper last made current. Catching up — the files and the
//! audit log into the index, then the vectors — is one of two calls:
//!
//! - [`catch_up`], taken once by a one-shot command (or a library caller)
//!   before it dispatches, and by the registry's dispatch in a process
//!   without a background step when its last catch-up is older than the
//!   sync interval;
//! - [`Upkeep`], a server's background thread: a round a second, at once
//!   when a read finds documents without vectors.
//!
//! Written once for every engine: both drive a [`DerivedIndex`].

pub(crate) mod scan;
mod state;
pub(crate) mod vectors;
pub(crate) mod watch;
pub(crate) use state::{Keep, KeeperState};

use super::{Budget, DerivedIndex, EmbedStats, SyncStats, Watching};
use crate::error::{Error, Result};
use crate::services::Embedder;
use crate::stored::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one catch-up did.
#[derive(Debug, Default, Clone)]
pub struct CaughtUp {
    /// Files and log lines brought into the index.
    pub synced: SyncStats,
    /// Vectors brought in step, when the step embedded.
    pub vectors: Option<EmbedStats>,
}

/// Bring `index` in step with the files and the audit log, and — given an
/// embedder and `vectors` — embed what is new within that time, so that a
/// read by meaning after it has nothing pending. What the budget leaves
/// pending, the read's answer counts (it never embeds itself).
pub fn catch_up(
    index: &dyn DerivedIndex,
    store: &Store,
    embedder: Option<&Arc<dyn Embedder>>,
    vectors: Option<Duration>,
) -> Result<CaughtUp> {
    let synced = index.catch_up(store)?;
    let vectors = match (embedder, vectors) {
        (Some(embedder), Some(within)) => index.embed(
            store,
            embedder,
            Budget::Until(Instant::now() + within),
            false,
            &mut |_, _| {},
        )?,
        _ => None,
    };
    Ok(CaughtUp { synced, vectors })
}

/// How often a server's keeper re-scans the files for outside edits (git
/// pull, an editor) when no watcher tells it of them.
pub const ROUND_EVERY: Duration = Duration::from_secs(1);

/// A round this long did heavy work (a first catch-up, loading the
/// vectors, a rebuild): what it freed is handed back to the system.
const LONG_ROUND: Duration = Duration::from_secs(1);
/// At most this often, though: without a watcher, a million files' scan
/// may make every round a long one.
const TRIM_AT_MOST_EVERY: Duration = Duration::from_secs(10);

/// Gives back what long rounds freed, at most every [`TRIM_AT_MOST_EVERY`].
#[derive(Default)]
struct Trims(Option<Instant>);

impl Trims {
    /// After a step that began at `began`.
    fn after(&mut self, began: Instant) {
        let due = self
            .0
            .is_none_or(|last| last.elapsed() >= TRIM_AT_MOST_EVERY);
        if began.elapsed() >= LONG_ROUND && due {
            give_back_freed_memory();
            self.0 = Some(Instant::now());
        }
    }
}

/// Hand back to the operating system the memory a long round freed:
/// glibc's allocator keeps freed memory in its arenas for the next
/// allocation, and at a million claims a first catch-up (the listing of
/// 3.6 million files) and the vectors' load free about 100 MiB a server
/// would otherwise hold for good (`vouch-bench memory`, docs/benchmarks.md).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn give_back_freed_memory() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: glibc's `malloc_trim` takes no pointer and releases only
    // memory no allocation holds; it is safe to call from any thread.
    unsafe {
        malloc_trim(0);
    }
}

/// Other allocators give freed memory back themselves, or cannot be asked.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back_freed_memory() {}

/// A read in a process whose index was never made current.
pub(crate) fn not_caught_up() -> Error {
    Error::new(
        crate::error::ErrorKind::Busy,
        "the index has not been brought in step with the files in this process yet: the \
         keeper's catch-up runs before a command dispatches (`Kb::catch_up`) and on a \
         server's background thread; retry in a moment",
    )
}

/// What a keeper round works on, borrowed from whatever holds them (`Kb`,
/// which sits above the index and so is not named here).
pub struct Parts<'a> {
    /// The index kept.
    pub index: &'a dyn DerivedIndex,
    /// The files it derives from.
    pub store: &'a Store,
    /// The model that makes the vectors, if any.
    pub embedder: Option<&'a Arc<dyn Embedder>>,
    /// Where a long step says how far it is, if shown.
    pub progress: Option<&'a Arc<dyn crate::services::Progress>>,
}

/// One background round: catch up with the files (unless a running
/// watcher does), read again the postings another process wrote (this
/// process's own writes patch them), and embed what is new.
pub fn round(parts: &Parts, watched: bool) -> Vec<Error> {
    let mut failed = Vec::new();
    if !watched {
        failed.extend(parts.index.catch_up(parts.store).err());
    }
    failed.extend(parts.index.refresh_postings(parts.store).err());
    if let Some(embedder) = parts.embedder {
        failed.extend(
            parts
                .index
                .embed(
                    parts.store,
                    embedder,
                    Budget::Unlimited,
                    false,
                    &mut |done, total| {
                        if let Some(p) = parts.progress {
                            p.embedded(done, total);
                        }
                    },
                )
                .err(),
        );
    }
    failed
}

/// A server's keeper: the background thread that keeps the index in step
/// with the files — watching them (inotify, which also lets one-shot
/// commands skip their scan) or, where that cannot start, re-scanning
/// every [`ROUND_EVERY`] — reads again the postings another process
/// wrote, and embeds what is new, off every request's path.
pub struct Upkeep {
    /// The watcher, when it started on the caller's thread (`None`:
    /// re-scanning instead, or started on the keeper's thread).
    pub watching: Option<Arc<Watching>>,
}

impl Upkeep {
    /// Make the index current once, then keep it so on a thread of its
    /// own. Where an earlier run built the index here, it answers reads
    /// that waited a second (each saying it is catching up) and the first
    /// catch-up — the
    /// watcher's first full scan, or a round — is the keeper thread's
    /// first step; otherwise it is taken here, so the server answers its
    /// first request from a current index. `watch` starts the watcher;
    /// `also` is the rest of a round that needs more than the index (the
    /// review queue's vectors). `report` hears what went wrong in a round
    /// and what the round noticed (`notices`: e.g. a file that no longer
    /// parses) — the core never prints.
    pub fn start<K: Send + Sync + 'static>(
        kb: Arc<K>,
        parts: for<'a> fn(&'a K) -> Parts<'a>,
        watch: fn(&K) -> Result<Watching>,
        also: fn(&K) -> Result<usize>,
        notices: fn(&K) -> Vec<String>,
        report: impl Fn(Vec<String>) + Send + 'static,
    ) -> Upkeep {
        let say = move |kb: &K, failed: Vec<Error>, mut lines: Vec<String>| {
            lines.extend(
                failed
                    .into_iter()
                    .map(|e| format!("index upkeep failed: {e}")),
            );
            lines.extend(notices(kb));
            if !lines.is_empty() {
                report(lines);
            }
        };
        // The first catch-up: the watcher's first full scan, or where no
        // watcher starts the words (vectors follow on the keeper's
        // thread; a read meanwhile says what is pending).
        let first_catch_up = move |kb: &K| {
            let (watching, lines) = match watch(kb) {
                Ok(w) => (Some(Arc::new(w)), Vec::new()),
                Err(e) => (
                    None,
                    vec![format!(
                        "not watching the files ({e}); re-scanning them every second"
                    )],
                ),
            };
            let mut failed = Vec::new();
            if watching.is_none() {
                let first = parts(kb);
                failed.extend(first.index.catch_up(first.store).err());
            }
            (watching, failed, lines)
        };
        let (opened, failed) = {
            let first = parts(&kb);
            match first.index.open_built(first.store) {
                Ok(opened) => (opened, Vec::new()),
                Err(e) => (false, vec![e]),
            }
        };
        say(&kb, failed, Vec::new());
        // On this thread unless an earlier run's index answers meanwhile;
        // then it is the keeper thread's first step.
        let mut watching = None;
        let mut trims = Trims::default();
        if !opened {
            let began = Instant::now();
            let (started, failed, lines) = first_catch_up(&kb);
            watching = started;
            say(&kb, failed, lines);
            trims.after(began);
        }
        let started_here = watching.clone();
        std::thread::spawn(move || {
            if opened {
                let began = Instant::now();
                let (started, failed, lines) = first_catch_up(&kb);
                watching = started;
                say(&kb, failed, lines);
                trims.after(began);
            }
            loop {
                // A round a second, or at once when a read asks for one.
                parts(&kb).index.wait_for_upkeep(ROUND_EVERY);
                let began = Instant::now();
                // A watcher sees this host's writes only: a change heard of
                // from elsewhere is caught up with by a scan.
                let elsewhere = parts(&kb).index.take_changed_elsewhere();
                let watched = watching.as_ref().is_some_and(|w| w.is_running()) && !elsewhere;
                let mut failed = round(&parts(&kb), watched);
                failed.extend(also(&kb).err());
                say(&kb, failed, Vec::new());
                trims.after(began);
            }
        });
        Upkeep {
            watching: started_here,
        }
    }
}

#[cfg(test)]
mod first_answer {
    use crate::index::IndexUpkeep;
    use crate::kb::Kb;
    use crate::store::Dir;
    use crate::stored::Store;

    /// A server process on `dir`'s knowledge base before its keeper's
    /// first round: nothing caught up in this process yet.
    fn server_process(dir: &tempfile::TempDir) -> Kb {
        let kb = Kb::open(
            &dir.path().join(".vouch"),
            std::sync::Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        let mut options = kb.index().options();
        options.upkeep = IndexUpkeep::Background;
        kb.index().configure(options);
        kb
    }

    fn search(kb: &Kb, q: &str) -> (Vec<String>, bool) {
        let (hits, notes) = Store::collecting_notes(|| crate::testing::claim_hits(kb, q));
        (
            hits.into_iter().map(|h| h.id).collect(),
            notes.index_catching_up,
        )
    }

    /// What an earlier run built answers before the first catch-up, and
    /// says so; a claim whose file went while no vouch ran is not served
    /// from its stale row; the catch-up ends the note.
    #[test]
    fn a_built_index_answers_before_the_first_catch_up_and_says_so() {
        let (dir, kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "drills");
        let kept = crate::testing::test_claim(&kb, &src, "Failover drills run monthly");
        let gone = crate::testing::test_claim(&kb, &src, "Failover drills need two people");
        let gone_file = kb.layout().file(Dir::Claims, &gone).unwrap();
        drop(kb);
        std::fs::remove_file(gone_file).unwrap();

        let kb = server_process(&dir);
        assert!(
            kb.index().open_built(&kb).unwrap(),
            "an index was built here"
        );
        assert_eq!(
            search(&kb, "failover"),
            (vec![kept.clone()], true),
            "answered after a second, partial, without the stale row"
        );
        kb.index().catch_up(&kb).unwrap();
        assert_eq!(search(&kb, "failover"), (vec![kept], false));
    }

    /// A built index too large for its first catch-up to end within the
    /// wait answers at once (still saying so); a small one waited.
    #[test]
    fn a_large_built_index_answers_without_waiting() {
        let (dir, kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "drills");
        let kept = crate::testing::test_claim(&kb, &src, "Failover drills run monthly");
        drop(kb);
        // As large as half a million claims' index, sparsely: SQLite reads
        // the pages its header counts and never the zeros past them.
        let index_db = dir.path().join(".vouch/state.db");
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&index_db)
            .unwrap();
        f.set_len(600 * 1024 * 1024).unwrap();
        drop(f);
        let kb = server_process(&dir);
        assert!(kb.index().open_built(&kb).unwrap());
        let started = std::time::Instant::now();
        assert_eq!(search(&kb, "failover"), (vec![kept], true));
        assert!(
            started.elapsed() < std::time::Duration::from_millis(900),
            "answered at once, not after the second's wait: {:?}",
            started.elapsed()
        );
    }

    /// Nothing built: nothing opened early (the first catch-up builds it,
    /// and reads wait for that).
    #[test]
    fn nothing_built_is_not_opened_early() {
        let (dir, kb) = crate::testing::test_kb();
        drop(kb);
        let index_db = dir.path().join(".vouch/state.db");
        let _ = std::fs::remove_file(&index_db);
        let kb = server_process(&dir);
        assert!(!kb.index().open_built(&kb).unwrap());
        assert!(!index_db.exists(), "opening early never creates the file");
    }
}

#[cfg(test)]
mod elsewhere {
    use std::time::{Duration, Instant};

    /// A change heard of from another host wakes the keeper at once and
    /// is taken once: the round after it scans even while a watcher runs.
    #[test]
    fn a_change_elsewhere_wakes_the_keeper_and_is_taken_once() {
        let (_dir, kb) = crate::testing::test_kb();
        let index = kb.index();
        assert!(!index.take_changed_elsewhere());
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                index.changed_elsewhere();
            });
            let start = Instant::now();
            index.wait_for_upkeep(Duration::from_secs(30));
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the keeper slept through it"
            );
        });
        assert!(index.take_changed_elsewhere());
        assert!(!index.take_changed_elsewhere(), "taken once");
    }

    /// A replica's index kept in a folder of its own: built there, and
    /// nothing of it in `.vouch/`.
    #[test]
    fn an_index_placed_elsewhere_is_built_there() {
        let (dir, kb) = crate::testing::test_kb();
        let _ = std::fs::remove_file(dir.path().join(".vouch/state.db"));
        let own = tempfile::tempdir().unwrap();
        kb.place_index(&own.path().join("index")).unwrap();
        kb.index().catch_up(&kb).unwrap();
        assert!(own.path().join("index/state.db").is_file());
        assert!(!dir.path().join(".vouch/state.db").exists());
        assert!(
            kb.place_index(own.path()).is_err(),
            "the place is chosen once"
        );
    }
}
