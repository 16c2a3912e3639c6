//! The audit admission rows in the team database
//! (`vouch_index_admitted`, `vouch_index_written`, and the `audit:` values
//! in `vouch_index_meta`). What the rows mean, and the check of each
//! against its line of the log the replicas share, are the keeper's
//! ([`vouch_core::index::admission`]).

use super::{ADMISSION_LOCK_KEY, TeamIndex};
use std::collections::HashMap;
use vouch_core::Result;
use vouch_core::index::admission::{AdmissionStore, Admitted, OFFSET, Recorded};
use vouch_core::index::engine::Tables;
use vouch_core::store::layout::id_of_inside;

/// An offset as the tables keep it (past `bigint`: no line's).
fn stored(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

/// An offset read back (negative, planted: no line starts there).
fn offset(at: i64) -> u64 {
    u64::try_from(at).unwrap_or(u64::MAX)
}

impl AdmissionStore for TeamIndex {
    fn admission_meta(&self, key: &str) -> Result<Option<String>> {
        self.value(key)
    }

    fn admissions(&self, ids: &[&str]) -> Result<HashMap<String, Admitted>> {
        let rows = self
            .conns
            .with("reading what the audit log admitted", |c| {
                c.query(
                    "SELECT a.id, a.at, w.path, w.sha, w.at FROM vouch_index_admitted a
                 LEFT JOIN vouch_index_written w ON w.id = a.id WHERE a.id = ANY($1)",
                    &[&ids],
                )
            })?;
        let mut out: HashMap<String, Admitted> = HashMap::new();
        for r in &rows {
            let entry = out.entry(r.get(0)).or_insert_with(|| Admitted {
                at: offset(r.get(1)),
                written: Vec::new(),
            });
            let (path, sha, at): (Option<String>, Option<String>, Option<i64>) =
                (r.get(2), r.get(3), r.get(4));
            if let (Some(path), Some(sha), Some(at)) = (path, sha, at) {
                entry.written.push((path, sha, offset(at)));
            }
        }
        Ok(out)
    }

    fn record_admission(&self, change: Recorded) -> Result<()> {
        let (ids, ats): (Vec<&str>, Vec<i64>) = change
            .admitted
            .iter()
            .map(|(id, at)| (id.as_str(), stored(*at)))
            .unzip();
        let paths: Vec<&str> = change.written.iter().map(|(p, _, _)| p.as_str()).collect();
        let owners: Vec<&str> = paths.iter().map(|p| id_of_inside(p)).collect();
        let shas: Vec<&str> = change.written.iter().map(|(_, s, _)| s.as_str()).collect();
        let written_at: Vec<i64> = change.written.iter().map(|(_, _, a)| stored(*a)).collect();
        self.conns
            .with("recording what the audit log admitted", |c| {
                let mut tx = c.transaction()?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&ADMISSION_LOCK_KEY])?;
                if !change.from_start {
                    let at: Option<String> = tx
                        .query_opt(
                            "SELECT value FROM vouch_index_meta WHERE key = $1",
                            &[&OFFSET],
                        )?
                        .map(|r| r.get(0));
                    let at: u64 = at.and_then(|v| v.parse().ok()).unwrap_or(0);
                    if at != change.from {
                        // Another replica moved the rows meanwhile: the next
                        // catch-up reads again.
                        return tx.commit();
                    }
                } else {
                    tx.batch_execute("TRUNCATE vouch_index_admitted, vouch_index_written")?;
                }
                tx.execute(
                    "INSERT INTO vouch_index_admitted (id, at)
                 SELECT DISTINCT ON (id) id, at FROM unnest($1::text[], $2::int8[]) AS u(id, at)
                 ORDER BY id, at
                 ON CONFLICT (id) DO NOTHING",
                    &[&ids, &ats],
                )?;
                tx.execute(
                    "INSERT INTO vouch_index_written (path, id, sha, at)
                 SELECT DISTINCT ON (path) path, id, sha, at
                 FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[]) WITH ORDINALITY
                     AS u(path, id, sha, at, n)
                 ORDER BY path, n DESC
                 ON CONFLICT (path) DO UPDATE SET id = excluded.id, sha = excluded.sha,
                     at = excluded.at",
                    &[&paths, &owners, &shas, &written_at],
                )?;
                for (key, value) in &change.meta {
                    super::set_value(&mut tx, key, value.as_deref())?;
                }
                tx.commit()
            })
    }
}
