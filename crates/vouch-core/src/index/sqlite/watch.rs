//! The SQLite side of the keeper's watcher ([`crate::index::keeper::watch`]):
//! applying what it heard of to `state.db`, stamping the file with the
//! watcher's token (`meta.watch`), and — for a one-shot command — checking
//! that the file it has open is the one a live watcher stamped.

use super::*;
use crate::index::engine::WatchTarget;

/// The key in `state.db`'s meta table naming the watcher that keeps it.
const STAMP_KEY: &str = "watch";

pub(crate) use crate::index::keeper::watch::{start, watcher};

/// For a one-shot command about to sync `open`: whether a live watcher
/// has brought this very file in step with every change made so far, so
/// that the scan may be skipped. Never an error: any doubt answers false.
pub(crate) fn answered(kb: &Ix, open: &OpenIndex) -> bool {
    let Some(token) = crate::index::keeper::watch::cookie_answered(kb) else {
        return false;
    };
    // This very file, stamped by that watcher.
    open.identity.is_some()
        && open.identity == file_identity(&kb.layout().index_db())
        && open.index.meta_value(STAMP_KEY).ok().flatten().as_deref() == Some(token.as_str())
}

impl WatchTarget for IndexState {
    fn needs_full(&self, store: &Store, token: &str) -> Result<bool> {
        let kb = &Ix::new(store, self);
        let mut slot = self.index.lock().unwrap_or_else(|e| e.into_inner());
        drop_if_replaced(kb, &mut slot);
        let reopened = slot.is_none();
        let open = open_in(kb, &mut slot)?;
        Ok(reopened || open.index.meta_value(STAMP_KEY)?.as_deref() != Some(token))
    }

    fn apply_watched(
        &self,
        store: &Store,
        full: bool,
        changed: Vec<(&'static str, String)>,
        token: &str,
    ) -> Result<()> {
        let kb = &Ix::new(store, self);
        let mut slot = self.index.lock().unwrap_or_else(|e| e.into_inner());
        drop_if_replaced(kb, &mut slot);
        let full = full || slot.is_none();
        let open = open_in(kb, &mut slot)?;
        if full {
            // Every file stat-ed, whatever `retrieval.freshness` says:
            // in-place edits may be among the lost events.
            open.index.sync_every_file(kb)?;
        }
        // The files the kernel named are re-read even after a full scan,
        // which trusts signatures (an in-place edit may keep its own).
        if !changed.is_empty() {
            open.index.apply_changed(kb, changed)?;
        }
        if full {
            open.index.write(|| {
                open.index.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
                    params![STAMP_KEY, token],
                )?;
                Ok(())
            })?;
        }
        // Another process's approvals admit objects too (`admitted`).
        open.index.sync_admitted(kb)?;
        open.synced_at = std::time::Instant::now();
        mark_ready(kb);
        Ok(())
    }
}
