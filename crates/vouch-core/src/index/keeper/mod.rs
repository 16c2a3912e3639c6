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

/// What a keeper round works on, borrowed from whatever holds them (`Kb`,
/// which sits above the index and so is not named here).
pub struct Parts<'a> {
    /// The index kept.
    pub index: &'a dyn DerivedIndex,
    /// The files it derives from.
    pub store: &'a Store,
    /// The model that makes the vectors, if any.
    pub embedder: Option<&'a Arc<dyn Embedder>>,
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
                    &mut |_, _| {},
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
    /// The watcher, while it runs (`None`: re-scanning instead).
    pub watching: Option<Arc<Watching>>,
}

impl Upkeep {
    /// Make the index current once (a server answers its first request
    /// from a current index), then keep it so on a thread of its own.
    /// `watching` is the watcher the caller started (or why it could not);
    /// `also` is the rest of a round that needs more than the index (the
    /// review queue's vectors).
    /// `report` hears what went wrong in a round and what the round noticed
    /// (`notices`: e.g. a file that no longer parses) — the core never
    /// prints.
    pub fn start<K: Send + Sync + 'static>(
        kb: Arc<K>,
        parts: for<'a> fn(&'a K) -> Parts<'a>,
        watching: Result<Watching>,
        also: fn(&K) -> Result<usize>,
        notices: fn(&K) -> Vec<String>,
        report: impl Fn(Vec<String>) + Send + 'static,
    ) -> Upkeep {
        let watching = match watching {
            Ok(w) => Some(Arc::new(w)),
            Err(e) => {
                report(vec![format!(
                    "not watching the files ({e}); re-scanning them every second"
                )]);
                None
            }
        };
        let watched = watching.clone();
        let watched = move || watched.as_ref().is_some_and(|w| w.is_running());
        let say = move |kb: &K, failed: Vec<Error>| {
            let mut lines: Vec<String> = failed
                .into_iter()
                .map(|e| format!("index upkeep failed: {e}"))
                .collect();
            lines.extend(notices(kb));
            if !lines.is_empty() {
                report(lines);
            }
        };
        // The words on this thread, first: the server answers its first
        // request from a current index (vectors follow on the keeper's
        // thread; a read meanwhile says what is pending).
        if !watched() {
            let first = parts(&kb);
            say(
                &kb,
                first
                    .index
                    .catch_up(first.store)
                    .err()
                    .into_iter()
                    .collect(),
            );
        }
        std::thread::spawn(move || {
            loop {
                // A round a second (the first a second after the words
                // above), or at once when a read asks for one.
                parts(&kb).index.wait_for_upkeep(ROUND_EVERY);
                let mut failed = round(&parts(&kb), watched());
                failed.extend(also(&kb).err());
                say(&kb, failed);
            }
        });
        Upkeep { watching }
    }
}
