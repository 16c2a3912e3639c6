//! The `admitted` and `written` tables are the audit log read ahead of
//! time, and `state.db` is writable by anyone who can write the folder: a
//! row inserted by hand (`INSERT INTO admitted VALUES('<id>')`) would let a
//! hand-written claim be served as reviewed knowledge. So no row is taken
//! on its word. Each names the byte offset of the log line of the event
//! that let the object in, or recorded writing the file; a read checks
//! that line in the log itself (it starts a line, it parses, and it admits
//! that id or recorded that file's sha256). The lines read are kept for
//! the life of the process (every connection), while the log below them is unchanged (its
//! event hash where this connection last read it), so a read costs one
//! `pread` of a small line per event it has not seen, never a read of the
//! whole log.
//!
//! What a row can still point at is a real event: an object some event
//! really admitted, a file's bytes some event really wrote. `doctor`, which
//! reads the whole log, reports a file put back by hand to what an earlier
//! event wrote (`edited-object`).

use super::*;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

/// What one event line says: the ids it admits and the files it wrote,
/// each kept as a 64-bit hash under a key this process drew at random (an
/// import's line names every object, 20 MB at 100,000 claims: no string of
/// it is kept, and no one outside the process can make two names collide).
pub(crate) struct Said {
    admits: HashSet<u64, Unhashed>,
    /// The hash of each file's path, and of the sha256 recorded for it.
    written: HashMap<u64, u64, Unhashed>,
}

/// Keys that are hashes already.
type Unhashed = std::hash::BuildHasherDefault<Identity>;

#[derive(Default)]
pub(crate) struct Identity(u64);

impl std::hash::Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A name's hash under this process's key.
fn keyed(name: &str) -> u64 {
    use std::hash::BuildHasher;
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    KEY.get_or_init(Default::default).hash_one(name)
}

impl Said {
    fn new<'a>(
        admits: impl IntoIterator<Item = &'a str>,
        written: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Said {
        let admits = admits.into_iter();
        let mut said = Said {
            admits: HashSet::with_capacity_and_hasher(admits.size_hint().0, Unhashed::default()),
            written: HashMap::default(),
        };
        said.admits.extend(admits.map(keyed));
        // The last entry for a path stands, as in the log reading.
        said.written
            .extend(written.into_iter().map(|(p, s)| (keyed(p), keyed(s))));
        said
    }
    pub(crate) fn admits(&self, id: &str) -> bool {
        self.admits.contains(&keyed(id))
    }
    /// Whether it recorded the file at `path` with this sha256.
    pub(crate) fn wrote(&self, path: &str, sha: &str) -> bool {
        self.written.get(&keyed(path)) == Some(&keyed(sha))
    }
    /// Whether it recorded the file at `path` at all.
    pub(crate) fn records(&self, path: &str) -> bool {
        self.written.contains_key(&keyed(path))
    }
}

impl Said {
    /// What an event line says ([`crate::audit::trail::Logged::of_line`]).
    /// An import's line names every object it brought (20 MB at 100,000
    /// claims): it is read without building its JSON, as the same rule
    /// reads it — `data.objects` admitted, `data.written` recorded — and
    /// any line that does not read so plainly is read the usual way.
    fn of_line(line: &[u8]) -> Said {
        #[derive(serde::Deserialize)]
        struct Import<'a> {
            #[serde(borrow)]
            event: std::borrow::Cow<'a, str>,
            #[serde(borrow)]
            data: ImportData<'a>,
        }
        #[derive(serde::Deserialize)]
        struct ImportData<'a> {
            #[serde(borrow)]
            objects: Vec<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            written: HashMap<std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>>,
        }
        if line.len() > 64 * 1024
            && let Ok(i) = serde_json::from_slice::<Import>(line)
            && i.event == "bundle.import"
        {
            return Said::new(
                i.data.objects.iter().map(|o| o.as_ref()),
                i.data.written.iter().map(|(p, s)| (p.as_ref(), s.as_ref())),
            );
        }
        let logged = crate::audit::trail::Logged::of_line(line);
        let ids = match &logged.admits {
            crate::audit::trail::Admits::Objects(ids) => &ids[..],
            _ => &[],
        };
        Said::new(
            ids.iter().map(String::as_str),
            logged.written.iter().map(|(p, s)| (p.as_str(), s.as_str())),
        )
    }
}

/// The event lines one connection has read, and where the log stood then.
#[derive(Default)]
pub(crate) struct Lines {
    /// The log's length and the hash of its last event when the first line
    /// here was read: a log cut or rewritten below it empties the cache.
    anchor: Option<(u64, Option<String>)>,
    said: HashMap<u64, Option<Arc<Said>>>,
}

/// The line of the log starting at byte `at`, if a line starts there.
fn line_at(log: &crate::audit::AuditLog, at: u64) -> Result<Option<Vec<u8>>> {
    let path = log.path();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut f = match crate::store::nofollow::open(dir, path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let io = |e| Error::io(path, e);
    let start = at.saturating_sub(1);
    f.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    let mut first = at > 0;
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            return Ok(None); // no complete line there
        }
        let mut chunk = &buf[..n];
        if first {
            // Byte `at - 1` must end the line before.
            if chunk[0] != b'\n' {
                return Ok(None);
            }
            chunk = &chunk[1..];
            first = false;
        }
        if let Some(end) = memchr::memchr(b'\n', chunk) {
            out.extend_from_slice(&chunk[..end]);
            return Ok(Some(out));
        }
        out.extend_from_slice(chunk);
    }
}

impl Lines {
    /// Forget every line read if the log below where they were read
    /// changed (cut or rewritten).
    pub(crate) fn check(&mut self, log: &crate::audit::AuditLog) -> Result<()> {
        if let Some((len, hash)) = &self.anchor
            && (log.len()? < *len || log.hash_before(*len)? != *hash)
        {
            *self = Lines::default();
        }
        Ok(())
    }

    /// What the event whose line starts at byte `at` says; `None` when no
    /// event line starts there.
    pub(crate) fn at(
        &mut self,
        log: &crate::audit::AuditLog,
        at: u64,
    ) -> Result<Option<Arc<Said>>> {
        if let Some(said) = self.said.get(&at) {
            return Ok(said.clone());
        }
        let len = log.len()?;
        match &self.anchor {
            Some((was, _)) if at < *was => {}
            // A line past the anchor: the log grew; anchor where it is now.
            _ => self.anchor = Some((len, log.hash_before(len)?)),
        }
        let said = line_at(log, at)?.map(|line| Arc::new(Said::of_line(&line)));
        self.said.insert(at, said.clone());
        Ok(said)
    }
}

#[cfg(test)]
mod tests {
    use crate::retrieval::{unaudited, unaudited_strictly};
    use crate::store::Dir;
    use std::collections::HashSet;

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
        let both = [
            (Dir::Claims, approved.as_str()),
            (Dir::Claims, hand.as_str()),
        ];
        assert_eq!(
            unaudited(&kb, &both),
            HashSet::from([(Dir::Claims, hand.clone())])
        );
        let other = rusqlite::Connection::open(dir.path().join(".vouch/state.db")).unwrap();
        (dir, kb, approved, hand, other)
    }

    /// A large import's line read plainly says what the usual reading
    /// says; one that does not read plainly (an object that is not a
    /// string) is read the usual way.
    #[test]
    fn a_large_import_line_reads_as_the_log_reading_does() {
        let mut objects: Vec<serde_json::Value> = (0..5000)
            .map(|i| serde_json::json!(format!("claim-{i}")))
            .collect();
        let written: serde_json::Map<String, serde_json::Value> = (0..5000)
            .map(|i| {
                (
                    format!("claims/claim-{i}.yaml"),
                    serde_json::json!(format!("{i:064}")),
                )
            })
            .collect();
        let line = |objects: &[serde_json::Value]| {
            serde_json::to_vec(&serde_json::json!({
                "id": "e", "event": "bundle.import", "actor": "alice", "object_ids": [],
                "data": {"objects": objects, "written": written, "bundle": "b"}, "hash": "h"
            }))
            .unwrap()
        };
        for l in [line(&objects), {
            objects.push(serde_json::json!(7));
            line(&objects)
        }] {
            assert!(l.len() > 64 * 1024);
            let said = super::Said::of_line(&l);
            let logged = crate::audit::trail::Logged::of_line(&l);
            let crate::audit::trail::Admits::Objects(ids) = logged.admits else {
                panic!("an import names its objects");
            };
            assert_eq!(said.admits.len(), ids.len());
            assert!(ids.iter().all(|id| said.admits(id)));
            assert!(!said.admits("claim-5000"));
            assert_eq!(said.written.len(), logged.written.len());
            for (path, sha) in &logged.written {
                assert!(said.wrote(path, sha) && !said.wrote(path, "0"));
            }
        }
    }

    fn marks(kb: &crate::Kb, id: &str) -> (bool, bool) {
        let o = [(Dir::Claims, id)];
        (
            !unaudited(kb, &o).is_empty(),
            !unaudited_strictly(kb, &o).is_empty(),
        )
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
        for at in [0, 1, real, real + 3, i64::MAX] {
            other
                .execute("DELETE FROM admitted WHERE id = ?1", [&hand])
                .unwrap();
            other
                .execute(
                    "INSERT INTO admitted(id, at) VALUES(?1, ?2)",
                    rusqlite::params![hand, at],
                )
                .unwrap();
            assert_eq!(marks(&kb, &hand), (true, true), "a row pointing at {at}");
        }
        assert_eq!(marks(&kb, &approved), (false, false));
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
