//! Reading proposals, pending (`proposed/`, or a team server's queue:
//! [`SharedQueue`]) and decided (`decided/`), and moving the inbox into
//! the queue.
//!
//! With a queue, `proposed/` is the gate's inbox: each new proposal is
//! written there as before (the crash-safe path is the same), and the
//! holder of the write lock moves what is there into the queue before it
//! gives the lock back — and when it takes it, which also moves what a
//! crash, or a writer without the queue, left there. Reads take the queue
//! plus what the inbox holds, so a proposal is never missed in between.

use super::Store;
use crate::error::{Error, Result};
use crate::model::Proposal;
use crate::store::queue::SharedQueue;
use crate::store::yaml::from_yaml;
use crate::store::{Dir, atomic};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

impl Store {
    /// Keep the pending proposals in `queue` from now on (once per
    /// process; a second call is ignored): a team server's database.
    pub fn share_queue(&self, queue: Arc<dyn SharedQueue>) {
        let _ = self.shared_queue.set(queue);
    }

    /// Where the pending proposals are kept, when not in `proposed/`.
    pub fn shared_queue(&self) -> Option<&dyn SharedQueue> {
        self.shared_queue.get().map(|q| q.as_ref())
    }

    /// Every pending proposal's id, sorted: the queue's, and the inbox's.
    pub(super) fn pending_ids(&self) -> Result<Vec<String>> {
        let (mut ids, queued) = self.pending_ids_apart()?;
        ids.extend(queued);
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The pending proposals' ids where they are: the inbox's files, and
    /// the team's queue (none without one). An id may be in both.
    pub(crate) fn pending_ids_apart(&self) -> Result<(Vec<String>, Vec<String>)> {
        let inbox = self.inbox_ids()?;
        let queued = match self.shared_queue.get() {
            Some(queue) => queue.ids()?,
            None => Vec::new(),
        };
        Ok((inbox, queued))
    }

    /// The ids of the files in `proposed/`.
    fn inbox_ids(&self) -> Result<Vec<String>> {
        self.folder_ids(Dir::Proposed)
    }

    /// Whether a proposal is pending under `id`: a file in `proposed/`,
    /// or a row of the team's queue (its error is this one's).
    pub(crate) fn pending_exists(&self, id: &str) -> Result<bool> {
        let file = self
            .layout
            .file(Dir::Proposed, id)
            .is_ok_and(|p| crate::store::nofollow::is_file(&p));
        match self.shared_queue.get() {
            Some(queue) if !file => Ok(!queue.read(&[id.to_string()])?.is_empty()),
            _ => Ok(file),
        }
    }

    /// The bytes of these proposals, which the queue listed just now (id,
    /// bytes): each read from the queue once per process, since a pending
    /// proposal never changes. What the process remembers is only what
    /// these ids name.
    fn listed_bytes(
        &self,
        queue: &dyn SharedQueue,
        ids: &[String],
    ) -> Result<Vec<(String, Arc<[u8]>)>> {
        let kept = || self.queued_bytes.lock().unwrap_or_else(|e| e.into_inner());
        let unknown: Vec<String> = {
            let mut kept = kept();
            let listed: std::collections::HashSet<&String> = ids.iter().collect();
            kept.retain(|id, _| listed.contains(id));
            ids.iter()
                .filter(|id| !kept.contains_key(*id))
                .cloned()
                .collect()
        };
        // Read with the memory unlocked: a writer forgetting a decided
        // proposal (under the write lock) never waits on this round trip.
        let read = if unknown.is_empty() {
            Vec::new()
        } else {
            queue.read(&unknown)?
        };
        let mut kept = kept();
        for (id, bytes) in read {
            kept.insert(id, Arc::from(bytes));
        }
        Ok(ids
            .iter()
            .filter_map(|id| kept.get(id).map(|b| (id.clone(), b.clone())))
            .collect())
    }

    /// These proposals as the team's queue keeps them, in one round trip:
    /// each read or why it could not be; an id it no longer keeps (decided
    /// since) is left out. Nothing without a queue.
    pub(crate) fn read_queued(&self, ids: &[String]) -> Result<Vec<(String, Result<Proposal>)>> {
        let Some(queue) = self.shared_queue.get() else {
            return Ok(Vec::new());
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(queue
            .read(ids)?
            .into_iter()
            .map(|(id, bytes)| {
                let p = from_queue(queue.as_ref(), &id, &bytes);
                (id, p)
            })
            .collect())
    }

    /// A proposal from `proposed/` (or the queue) or `decided/`. The
    /// queue's copy comes first: a file in the inbox under an id the queue
    /// holds is not the one that was kept ([`Store::move_inbox`]).
    pub fn load_proposal(&self, dir: Dir, id: &str) -> Result<Option<Proposal>> {
        let path = self.layout.file(dir, id)?;
        let Some(queue) = self.shared_queue.get().filter(|_| dir == Dir::Proposed) else {
            return self.read_text(&path)?.map(|t| parse(&path, &t)).transpose();
        };
        // Asked of the queue itself: another replica may have decided it.
        // Then the inbox, then the queue once more: a writer may have
        // moved the file in between.
        let ask = || queue.read(&[id.to_string()]).map(|mut found| found.pop());
        let queued = match ask()? {
            Some(row) => Some(row),
            None => match self.read_text(&path)? {
                Some(text) => return parse_as(&path, &text, id).map(Some),
                None => ask()?,
            },
        };
        queued
            .map(|(_, bytes)| from_queue(queue.as_ref(), id, &bytes))
            .transpose()
    }

    /// Every proposal in `proposed/` (and the queue) or `decided/`, sorted
    /// by id, each read or why it could not be.
    pub fn read_proposals(&self, dir: Dir) -> Result<Vec<(String, Result<Proposal>)>> {
        let Some(queue) = self.shared_queue.get().filter(|_| dir == Dir::Proposed) else {
            return Ok(self
                .ids(dir)?
                .into_iter()
                .filter_map(|id| match self.load_proposal(dir, &id) {
                    Ok(Some(p)) => Some((id, Ok(p))),
                    Ok(None) => None,
                    Err(e) => Some((id, Err(e))),
                })
                .collect());
        };
        // The inbox first: a file moved after it is listed is in the
        // queue's listing that follows.
        let inbox = self.inbox_ids()?;
        let listed = queue.ids()?;
        let mut out: Vec<(String, Result<Proposal>)> = Vec::new();
        for (id, bytes) in self.listed_bytes(queue.as_ref(), &listed)? {
            let p = from_queue(queue.as_ref(), &id, &bytes);
            out.push((id, p));
        }
        let queued: std::collections::HashSet<&String> = listed.iter().collect();
        for id in inbox.iter().filter(|id| !queued.contains(id)) {
            // Moved since the queue was listed, decided, or still here.
            if let Some(p) = self.load_proposal(dir, id).transpose() {
                out.push((id.clone(), p));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Every readable proposal in `proposed/` (and the queue) or
    /// `decided/`, sorted by id; one that does not parse is skipped with a
    /// warning.
    pub fn load_proposals(&self, dir: Dir) -> Result<Vec<Proposal>> {
        if dir == Dir::Proposed && self.shared_queue.get().is_some() {
            let mut out = Vec::new();
            for (id, read) in self.read_proposals(dir)? {
                match read {
                    Ok(p) => out.push(p),
                    // A queued proposal never changes: said once.
                    Err(e) => self.warn_once(
                        PathBuf::from(format!("pending proposal {id}")),
                        (-1, -1),
                        format!("skipped unreadable proposal: {e}"),
                    ),
                }
            }
            return Ok(out);
        }
        let mut out = Vec::new();
        for id in self.ids(dir)? {
            let path = self.layout.file(dir, &id)?;
            if let Some(p) = self.skip_known_unreadable(&path, || self.load_proposal(dir, &id)) {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// Move what the inbox (`proposed/`) holds into the queue, if there is
    /// one. Only a proposal that reads as one under its own id moves: a
    /// file that does not (unreadable, not UTF-8, not a proposal, another
    /// id inside) stays where it is, as it would without a queue, and is
    /// said — never a row every replica's listing would trip on. So does a
    /// file whose id the queue keeps with other bytes. Caller holds the
    /// write lock.
    pub(super) fn move_inbox(&self) -> Result<()> {
        let Some(queue) = self.shared_queue.get() else {
            return Ok(());
        };
        let ids = self.inbox_ids()?;
        if ids.is_empty() {
            return Ok(());
        }
        crate::fail::point("inbox.moving");
        let mut files = Vec::with_capacity(ids.len());
        for id in ids {
            let path = self.layout.file(Dir::Proposed, &id)?;
            if self.exists(Dir::Decided, &id) {
                // Decided already (a decision a crash cut short, or a file
                // whose removal below a crash undid): pending no more.
                atomic::remove(self.layout.root(), &path)?;
                continue;
            }
            let read = self.read_text(&path).and_then(|text| {
                text.map(|t| parse_as(&path, &t, &id).map(|_| t))
                    .transpose()
            });
            match read {
                Ok(Some(text)) => files.push((id, text.into_bytes())),
                Ok(None) => {}
                Err(e) => self.warn_once_for(
                    &path,
                    format!(
                        "{} stays in proposed/, not moved to {}: {}",
                        path.display(),
                        queue.describe(),
                        e.message
                    ),
                ),
            }
        }
        let differ = queue.keep(&files)?;
        for (id, _) in &files {
            let path = self.layout.file(Dir::Proposed, id)?;
            if differ.contains(id) {
                self.warn_once_for(
                    &path,
                    format!(
                        "{} is not the pending proposal {id} kept in {}; it stays in proposed/ and \
                     the kept one is the one listed and reviewed — remove the file if it is not \
                     wanted",
                        path.display(),
                        queue.describe()
                    ),
                );
                continue;
            }
            // Not waited on: should a crash undo the removal, the file is
            // moved again (the queue keeps it as it is) or, decided since,
            // removed on sight (above).
            atomic::remove_unsynced(self.layout.root(), &path)?;
        }
        Ok(())
    }

    /// Say `message` about the file at `path` once while the file stays
    /// as it is: a file left in the inbox is met by every write.
    fn warn_once_for(&self, path: &std::path::Path, message: String) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return self.warn(message);
        };
        let sig = (crate::store::mtime_ns(&meta), meta.len() as i64);
        self.warn_once(path.to_path_buf(), sig, message);
    }

    /// Say `message` about `what` unless it was said of `what` in the
    /// state `sig` already.
    fn warn_once(&self, what: PathBuf, sig: (i64, i64), message: String) {
        let said = self
            .said_once
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(what, sig);
        if said != Some(sig) {
            self.warn(message);
        }
    }

    /// Move every proposal the team's queue keeps back into `proposed/`,
    /// and forget it there: for a team that stops using its database (a
    /// tree without it lists only `proposed/`). A replica still using the
    /// queue moves them back with its next write: stop them first. A row
    /// already decided (`decided/` holds it) is only forgotten. What
    /// stays in the queue, said: a row that is not a proposal under its
    /// own id, and one whose id `proposed/` holds with other bytes.
    /// Returns the ids moved and the ids left.
    pub fn unqueue(&self) -> Result<(Vec<String>, Vec<String>)> {
        let Some(queue) = self.shared_queue.get() else {
            return Err(Error::invalid(
                "no team database is configured: the pending proposals are in proposed/ already",
            ));
        };
        let _lock = self.lock_with(false)?;
        let rows = queue.read(&queue.ids()?)?;
        let folder = self.layout.dir(Dir::Proposed);
        crate::store::nofollow::ensure_dirs(self.layout.root(), &folder)
            .map_err(|e| Error::io(&folder, e))?;
        let (mut gone, mut left) = (Vec::with_capacity(rows.len()), Vec::new());
        let mut moved = Vec::with_capacity(rows.len());
        for (id, bytes) in rows {
            let path = self.layout.file(Dir::Proposed, &id)?;
            if self.exists(Dir::Decided, &id) {
                gone.push(id);
                continue;
            }
            if let Err(e) = from_queue(queue.as_ref(), &id, &bytes) {
                self.warn(format!("{}; it stays there", e.message));
                left.push(id);
                continue;
            }
            let here = atomic::create_new(self.layout.root(), &path, &bytes)?
                || self.read_file(&path)?.as_deref() == Some(&bytes[..]);
            if here {
                moved.push(id);
            } else {
                self.warn(format!(
                    "{} is not the pending proposal {id} kept in {}; that one stays there",
                    path.display(),
                    queue.describe()
                ));
                left.push(id);
            }
        }
        gone.extend(moved.iter().cloned());
        queue.forget(&gone)?;
        Ok((moved, left))
    }

    /// A decided proposal is pending no more: forget the queue's copy, if
    /// there is a queue (the inbox's file goes with the decision's batch).
    /// Caller holds the write lock, and the decision is filed.
    pub(crate) fn forget_pending(&self, ids: &[String]) {
        let Some(queue) = self.shared_queue.get() else {
            return;
        };
        if let Err(e) = queue.forget(ids) {
            // The decision stands: `decided/` holds it. The copy left is
            // reported by `doctor` (proposal-in-both) and removed by the
            // next decision asked of it.
            self.warn(format!(
                "decided, but the pending copy of {} could not be removed from {} ({}); `vouch \
                 doctor` reports it",
                ids.join(", "),
                queue.describe(),
                e.message
            ));
        }
        let mut texts = self.queued_bytes.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            texts.remove(id);
        }
    }
}

/// A proposal the queue keeps as `id`: UTF-8, a proposal, and that one.
fn from_queue(queue: &dyn SharedQueue, id: &str, bytes: &[u8]) -> Result<Proposal> {
    let named = PathBuf::from(format!("{}: pending proposal {id}", queue.describe()));
    let text = std::str::from_utf8(bytes).map_err(|_| Error::corrupt(&named, "not valid UTF-8"))?;
    parse_as(&named, text, id)
}

/// A proposal's text that must be the proposal `id` (a queue's row, or a
/// file about to become one): one that says it is another would be
/// decided under that other id, and stay pending under its own.
fn parse_as(path: &std::path::Path, text: &str, id: &str) -> Result<Proposal> {
    let p = parse(path, text)?;
    if p.id != id {
        return Err(Error::corrupt(
            path,
            format!(
                "holds `id: {}`, but is kept as proposal {id}",
                crate::ids::truncate_for_message(&p.id)
            ),
        ));
    }
    Ok(p)
}

/// A proposal's text, parsed (`path` names it in errors).
fn parse(path: &std::path::Path, text: &str) -> Result<Proposal> {
    let mut p = from_yaml::<Proposal>(path, text)?;
    if p.object_id.is_empty() {
        // vouch 1.x keeps the artifact's id in `payload.id`, or none until
        // approval: derive it the way 1.x does, from the text.
        let hint = p
            .payload
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let seed = ["text", "title", "name"]
            .iter()
            .find_map(|k| p.payload.get(*k).and_then(Value::as_str))
            .unwrap_or("untitled");
        p.object_id = hint
            .filter(|h| crate::ids::check_id("id", h).is_ok())
            .unwrap_or_else(|| crate::ids::slugify(seed));
    }
    Ok(p)
}
