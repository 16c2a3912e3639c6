//! The SQLite engine's storage for audit admission
//! ([`crate::index::admission`]): the `admitted` and `written` tables and
//! the `audit:` meta keys. What the rows mean, and the check of each
//! against its log line, are the keeper's, written once for every engine.

use super::{Index, Ix};
use crate::error::Result;
use crate::index::admission::{self, AdmissionStore, Admitted, Recorded};
use crate::store::Dir;
use crate::store::layout::id_of_inside;
use rusqlite::params;
use std::collections::{HashMap, HashSet};

impl AdmissionStore for Index {
    fn admission_meta(&self, key: &str) -> Result<Option<String>> {
        self.meta_value(key)
    }

    fn admissions(&self, ids: &[&str]) -> Result<HashMap<String, Admitted>> {
        type Row = (i64, Option<String>, Option<String>, Option<i64>);
        let mut rows_of = self.conn.prepare_cached(
            "SELECT a.at, w.path, w.sha, w.at FROM admitted a \
             LEFT JOIN written w ON w.id = a.id WHERE a.id = ?1",
        )?;
        // An offset no line can start at (negative, planted) names none.
        let offset = |at: i64| u64::try_from(at).unwrap_or(u64::MAX);
        let mut out = HashMap::with_capacity(ids.len());
        for id in ids {
            let rows: Vec<Row> = rows_of
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let Some((at, ..)) = rows.first() else {
                continue;
            };
            let written = rows
                .iter()
                .filter_map(|(_, path, sha, at)| {
                    Some((path.clone()?, sha.clone()?, offset((*at)?)))
                })
                .collect();
            out.insert(
                id.to_string(),
                Admitted {
                    at: offset(*at),
                    written,
                },
            );
        }
        Ok(out)
    }

    fn record_admission(&self, change: Recorded) -> Result<()> {
        // Offsets past what SQLite's INTEGER holds are no line's.
        let at = |at: u64| i64::try_from(at).unwrap_or(i64::MAX);
        self.write(|| {
            if !change.from_start && admission::offset(self)? != change.from {
                return Ok(());
            }
            if change.from_start {
                self.conn
                    .execute_batch("DELETE FROM admitted; DELETE FROM written;")?;
            }
            let mut insert = self
                .conn
                .prepare_cached("INSERT OR IGNORE INTO admitted(id, at) VALUES(?1, ?2)")?;
            for (id, line) in &change.admitted {
                insert.execute(params![id, at(*line)])?;
            }
            let mut record = self.conn.prepare_cached(
                "INSERT OR REPLACE INTO written(path, id, sha, at) VALUES(?1, ?2, ?3, ?4)",
            )?;
            for (path, sha, line) in &change.written {
                record.execute(params![path, id_of_inside(path), sha, at(*line)])?;
            }
            for (key, value) in &change.meta {
                match value {
                    Some(v) => self.conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
                        params![key, v],
                    )?,
                    None => self
                        .conn
                        .execute("DELETE FROM meta WHERE key = ?1", [key])?,
                };
            }
            Ok(())
        })
    }
}

impl Index {
    /// Bring the admission rows in step with the audit log
    /// ([`admission::sync`]).
    pub(crate) fn sync_admitted(&self, kb: &Ix) -> Result<()> {
        admission::sync(self, kb.audit_log())
    }

    /// Which of `objects` no approval or import in the audit log let in,
    /// or whose file is not what the last event that wrote it recorded
    /// ([`admission::unaudited`]).
    pub(crate) fn unaudited(
        &self,
        kb: &Ix,
        objects: &[(Dir, &str)],
        strict: bool,
    ) -> Result<HashSet<(Dir, String)>> {
        admission::unaudited(
            self,
            kb,
            &kb.index_state.proofs,
            &|inside| self.file_sha(kb, inside),
            objects,
            strict,
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::index::admission::{self, AdmissionStore};
    use crate::store::Dir;
    use std::collections::HashSet;

    /// The index in step with the files and the log, as the keeper's
    /// catch-up leaves it.
    fn caught_up(kb: &crate::Kb) {
        let ix = crate::testing::sqlite(kb);
        let mut slot = ix.index_state.index.lock().unwrap();
        super::super::bring_in_step(&ix, &mut slot).unwrap();
    }

    /// What the index itself answers (not the reading of the whole log a
    /// caller falls back to when it cannot).
    fn unaudited(kb: &crate::Kb, objects: &[(Dir, &str)], strict: bool) -> HashSet<(Dir, String)> {
        let ix = crate::testing::sqlite(kb);
        super::super::with_index(&ix, |idx| idx.unaudited(&ix, objects, strict)).unwrap()
    }

    /// A claim approved through the gate, one written by hand beside it
    /// (its file a copy of the approved one under another id and text), and
    /// a connection of another process to the live `state.db`.
    fn planted() -> (
        tempfile::TempDir,
        crate::Kb,
        String,
        String,
        rusqlite::Connection,
    ) {
        let (dir, kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "Deploys are frozen on Fridays.\n");
        let approved = crate::testing::test_claim(&kb, &src, "Deploys are frozen on Fridays");
        let text =
            std::fs::read_to_string(kb.layout().file(Dir::Claims, &approved).unwrap()).unwrap();
        let hand = "agents-may-deploy-on-fridays".to_string();
        std::fs::write(
            kb.layout().file(Dir::Claims, &hand).unwrap(),
            text.replace(&approved, &hand).replace(
                "Deploys are frozen on Fridays",
                "Agents may deploy on Fridays",
            ),
        )
        .unwrap();
        // In step with the log before the hand writes the index.
        caught_up(&kb);
        let both = [
            (Dir::Claims, approved.as_str()),
            (Dir::Claims, hand.as_str()),
        ];
        assert_eq!(
            unaudited(&kb, &both, true),
            HashSet::from([(Dir::Claims, hand.clone())])
        );
        let other = rusqlite::Connection::open(dir.path().join(".vouch/state.db")).unwrap();
        (dir, kb, approved, hand, other)
    }

    fn marks(kb: &crate::Kb, id: &str) -> (bool, bool) {
        let o = [(Dir::Claims, id)];
        (
            !unaudited(kb, &o, false).is_empty(),
            !unaudited(kb, &o, true).is_empty(),
        )
    }

    /// Plant `hand`'s row in `admitted`, naming the line at `at`.
    fn plant(other: &rusqlite::Connection, hand: &str, at: i64) {
        other
            .execute("DELETE FROM admitted WHERE id = ?1", [hand])
            .unwrap();
        other
            .execute(
                "INSERT INTO admitted(id, at) VALUES(?1, ?2)",
                rusqlite::params![hand, at],
            )
            .unwrap();
    }

    /// Round 5, A1: an id inserted into `admitted` by hand — pointing at
    /// no event, at the start of the log, or at the real approval of
    /// another claim — does not let a hand-written claim in.
    #[test]
    fn a_row_planted_in_admitted_admits_nothing() {
        let (_dir, kb, approved, hand, other) = planted();
        let real: i64 = other
            .query_row("SELECT at FROM admitted WHERE id = ?1", [&approved], |r| {
                r.get(0)
            })
            .unwrap();
        for at in [0, 1, real, real + 3, -1, i64::MAX] {
            plant(&other, &hand, at);
            assert_eq!(marks(&kb, &hand), (true, true), "a row pointing at {at}");
        }
        assert_eq!(marks(&kb, &approved), (false, false));
    }

    /// A row pointing at a real import's line — long enough to be read
    /// without building its JSON — that names the hand-written claim's id
    /// everywhere but among the objects it let in (its file's very sha256
    /// among what it wrote, its bundle, its own fields) admits nothing; the
    /// objects it did let in are admitted by it.
    #[test]
    fn a_row_naming_an_import_that_did_not_let_the_id_in_admits_nothing() {
        let (_dir, kb, approved, hand, other) = planted();
        let objects: Vec<String> = (0..3000).map(|i| format!("imported-claim-{i}")).collect();
        let file = kb.layout().file(Dir::Claims, &hand).unwrap();
        let sha = crate::ids::content_sha256(&std::fs::read(&file).unwrap());
        let written: serde_json::Map<String, serde_json::Value> = objects
            .iter()
            .map(|o| {
                (
                    format!("claims/{o}.yaml"),
                    serde_json::json!("0".repeat(64)),
                )
            })
            .chain([(kb.layout().inside(&file), serde_json::json!(sha))])
            .collect();
        let mut ev = kb.event(
            "bundle.import",
            "alice",
            vec![hand.clone()],
            serde_json::json!({"bundle": hand, "proposed": [hand], "objects": objects,
                               "written": written, (hand.clone()): hand}),
        );
        let at = kb.audit_log().len().unwrap() as i64;
        kb.append_audit(std::slice::from_mut(&mut ev)).unwrap();
        let line_len = kb.audit_log().len().unwrap() as i64 - at;
        assert!(line_len > 64 * 1024, "read without building its JSON");
        // In step with the log (the sync reads the import), then planted.
        caught_up(&kb);
        assert_eq!(marks(&kb, &hand), (true, true));
        plant(&other, &hand, at);
        assert_eq!(marks(&kb, &hand), (true, true), "a row naming the import");
        // The same line does admit what it let in (the check is not one
        // that refuses every long line).
        let admitted: i64 = other
            .query_row(
                "SELECT at FROM admitted WHERE id = 'imported-claim-7'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(admitted, at);
        plant(&other, &approved, at);
        assert_eq!(marks(&kb, &approved), (true, true), "another's row moved");
    }

    /// A sync of more files than it loads at once reads the audit log on
    /// a thread of its own beside the load and stores the rows after it,
    /// with no other read of the log behind it here (`apply` alone, on
    /// emptied tables). What it stores is what a read of the log one
    /// event at a time would: an id's first admission, a file's last
    /// recorded write, the offset at the log's end — so the claim an
    /// import later rewrote is admitted and current, and a hand-written
    /// file is neither.
    #[test]
    fn a_sync_too_large_to_load_at_once_admits_what_the_log_let_in() {
        let (_dir, kb, approved, hand, other) = planted();
        let approval: i64 = other
            .query_row("SELECT at FROM admitted WHERE id = ?1", [&approved], |r| {
                r.get(0)
            })
            .unwrap();
        // An import that rewrites the approved claim: its file's second
        // recorded write, and the id's second admission.
        let file = kb.layout().file(Dir::Claims, &approved).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("are frozen", "stay frozen")).unwrap();
        let sha = crate::ids::content_sha256(&std::fs::read(&file).unwrap());
        let mut ev = kb.event(
            "bundle.import",
            "alice",
            vec![approved.clone()],
            serde_json::json!({"bundle": "b", "objects": [approved],
                               "written": {(kb.layout().inside(&file)): sha}}),
        );
        kb.append_audit(std::slice::from_mut(&mut ev)).unwrap();
        for i in 0..2 * super::super::sync::LOAD_AT_ONCE + 1 {
            crate::testing::write_claim_file(&kb, &format!("bulk-{i}"), &format!("bulk {i}"));
        }
        let ix = crate::testing::sqlite(&kb);
        {
            let mut slot = ix.index_state.index.lock().unwrap();
            let idx = &mut slot.as_mut().unwrap().index;
            idx.write(|| idx.reset_schema(&ix)).unwrap();
            let scan = super::super::Scan::take(&ix, &idx.scan_meta().unwrap(), false).unwrap();
            idx.apply(&ix, scan).unwrap();
        }
        let row = |sql: &str| -> String {
            other
                .query_row(sql, [&approved], |r| r.get::<_, rusqlite::types::Value>(0))
                .map(|v| format!("{v:?}"))
                .unwrap()
        };
        assert_eq!(
            row("SELECT at FROM admitted WHERE id = ?1"),
            format!("{:?}", rusqlite::types::Value::Integer(approval)),
            "the first admission stays"
        );
        assert_eq!(
            row("SELECT sha FROM written WHERE id = ?1"),
            format!("{:?}", rusqlite::types::Value::Text(sha.clone())),
            "the last write"
        );
        let offset: String = other
            .query_row(
                "SELECT value FROM meta WHERE key = 'audit:offset'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(offset, kb.audit_log().len().unwrap().to_string());
        assert_eq!(marks(&kb, &approved), (false, false));
        assert_eq!(marks(&kb, &hand), (true, true));
        assert_eq!(marks(&kb, "bulk-9"), (true, true));
    }

    /// Rows read from where the stored offset stood are not stored once
    /// another process moved it: the next read starts from there.
    #[test]
    fn rows_read_from_an_offset_moved_since_are_not_stored() {
        let (_dir, kb, approved, _hand, other) = planted();
        let mut ev = kb.event(
            "claim.note",
            "alice",
            vec![approved.clone()],
            serde_json::json!({}),
        );
        kb.append_audit(std::slice::from_mut(&mut ev)).unwrap();
        let ix = crate::testing::sqlite(&kb);
        let slot = ix.index_state.index.lock().unwrap();
        let idx = &slot.as_ref().unwrap().index;
        let reading = admission::reading(idx, kb.audit_log())
            .unwrap()
            .expect("the rows lag the log");
        let change = reading.read(kb.audit_log()).unwrap();
        other
            .execute("UPDATE meta SET value = '7' WHERE key = 'audit:offset'", [])
            .unwrap();
        idx.record_admission(change).unwrap();
        drop(slot);
        let offset: String = other
            .query_row(
                "SELECT value FROM meta WHERE key = 'audit:offset'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(offset, "7", "nothing stored");
    }

    /// The same for `written`: a row recording the hand-edited file's
    /// sha256 (at the approval's line, which recorded another), or the
    /// rows of an approved claim deleted, do not make a hand edit look
    /// recorded.
    #[test]
    fn a_row_planted_in_written_records_nothing() {
        let (_dir, kb, approved, _hand, other) = planted();
        let file = kb.layout().file(Dir::Claims, &approved).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("are frozen", "are never frozen")).unwrap();
        assert_eq!(marks(&kb, &approved), (true, true), "the edit is marked");
        let sha = crate::ids::content_sha256(&std::fs::read(&file).unwrap());
        other
            .execute(
                "UPDATE written SET sha = ?1 WHERE id = ?2",
                [&sha, &approved],
            )
            .unwrap();
        assert_eq!(marks(&kb, &approved), (true, true), "a planted sha256");
        other
            .execute("DELETE FROM written WHERE id = ?1", [&approved])
            .unwrap();
        assert_eq!(marks(&kb, &approved), (true, true), "its rows deleted");
    }
}
