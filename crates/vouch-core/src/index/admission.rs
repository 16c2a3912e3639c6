//! Audit admission, kept once for every engine: which objects an approval
//! or an import in the hash-chained audit log let in, and whether each of
//! their files is still what the last event that wrote it recorded — what
//! search, reads and the gate mark `unaudited`.
//!
//! The log is read ahead of time into rows an engine stores through the
//! narrow [`AdmissionStore`] (the SQLite engine's are the `admitted` and
//! `written` tables and a few `audit:` meta keys): [`sync`] appends what
//! the log appended since, and [`unaudited`] answers from the rows plus
//! the unread tail of the log. No row is taken on its word: each names
//! the log line of its event, which a read checks ([`proof`]). Another
//! engine implements the store, nothing else.

mod plain;
pub(crate) mod proof;

use crate::audit::AuditLog;
use crate::audit::trail::{Actors, Admits, Logged};
use crate::error::{Error, Result};
use crate::store::Dir;
use crate::store::layout::id_of_inside;
use crate::stored::Store;
pub(crate) use proof::Proofs;
use std::collections::{BTreeMap, HashMap, HashSet};

/// How much of the audit log past the rows a read parses itself
/// ([`unaudited`]): a few thousand events.
pub(crate) const UNSYNCED_TAIL_LIMIT: u64 = 1 << 20;

/// Where admission keeps how far it read the log (the byte offset just
/// past the last line read).
pub const OFFSET: &str = "audit:offset";
/// The hash of the event whose line ends at [`OFFSET`]: a log cut or
/// rewritten below it is read again from the start.
const ANCHOR: &str = "audit:anchor";
/// Who the log read so far shows proposing and deciding ([`Actors`]).
const ACTORS: &str = "audit:actors";
/// Set while the log holds an import that does not name its objects.
const LEGACY_IMPORT: &str = "audit:legacy_import";

/// What an engine stores for admission: rows by object id, and a few meta
/// values. Only storage: the keeper decides what the rows mean and checks
/// each against the log.
pub trait AdmissionStore {
    /// A value stored under `key` (one of the `audit:` keys).
    fn admission_meta(&self, key: &str) -> Result<Option<String>>;
    /// The rows of each of `ids` that a row admits (in one trip where the
    /// engine can).
    fn admissions(&self, ids: &[&str]) -> Result<HashMap<String, Admitted>>;
    /// Apply `change` in one transaction: all of it or none. Nothing at
    /// all when it is not read from the start and the stored offset is
    /// no longer the one it was read from ([`offset`]): another process
    /// moved the rows meanwhile, and the next [`sync`] reads again.
    fn record_admission(&self, change: Recorded) -> Result<()>;
}

/// What the rows say of one object.
pub struct Admitted {
    /// The byte offset of the line of the event that let it in.
    pub at: u64,
    /// Each of its files some event recorded writing: path inside
    /// `.vouch/`, sha256, and the offset of that event's line.
    pub written: Vec<(String, String, u64)>,
}

/// One step of [`sync`], stored in one transaction.
#[derive(Default)]
pub struct Recorded {
    /// The log is read from its start: every row before goes first.
    pub from_start: bool,
    /// The offset it was read from.
    pub from: u64,
    /// (id, offset of the line that let it in); where an id has a row
    /// already, that row (the first admission) stays.
    pub admitted: Vec<(String, u64)>,
    /// (path, sha256, offset of the line that recorded it); replaces the
    /// row for that path. The object's id is the path's
    /// ([`id_of_inside`]): not held twice over millions of rows.
    pub written: Vec<(String, String, u64)>,
    /// Meta values set (`Some`) or removed (`None`).
    pub meta: Vec<(&'static str, Option<String>)>,
}

/// How far the stored rows read the log: what a store compares a
/// change's [`Recorded::from`] with, in the change's own transaction.
pub fn offset(rows: &dyn AdmissionStore) -> Result<u64> {
    Ok(rows
        .admission_meta(OFFSET)?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

/// Who the log read so far shows proposing and deciding.
fn actors(rows: &dyn AdmissionStore) -> Result<Actors> {
    Ok(rows
        .admission_meta(ACTORS)?
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or_default())
}

/// Each line of `bytes` (read from byte `from` of the log) that may admit
/// anything or record what it wrote: its offset, and what it says once
/// `actors` took it in (an agent's import or a decision of no open
/// proposal stripped).
fn logged<'a>(
    bytes: &'a [u8],
    from: u64,
    actors: &'a mut Actors,
) -> impl Iterator<Item = (u64, Logged)> + 'a {
    let mut at = from;
    bytes.split(|b| *b == b'\n').filter_map(move |line| {
        let line_at = at;
        at += line.len() as u64 + 1;
        if !Admits::may_admit(line) {
            return None;
        }
        let mut logged = Logged::of_line(line);
        actors.take(&mut logged, true);
        Some((line_at, logged))
    })
}

/// Bytes of the log read at once by [`sync`].
const LOG_PIECE: usize = 8 << 20;

/// Bring the rows (ids that an approval or an import let in, [`Admits`],
/// and the files each event recorded writing) in step with the audit log,
/// reading only what was appended since the last call. A log that shrank
/// or whose event at the last offset changed (cut or rewritten) is read
/// again from the start.
pub(crate) fn sync(rows: &dyn AdmissionStore, log: &AuditLog) -> Result<()> {
    match reading(rows, log)? {
        Some(reading) => rows.record_admission(reading.read(log)?),
        None => Ok(()),
    }
}

/// Where [`sync`]'s next read of the log starts, and what the rows took in
/// before it: taken from the rows, so the read itself needs only the log
/// and can run on another thread while the documents load (a rebuild's
/// read of a 1.3 GB log then costs no wall time of its own).
pub(crate) struct Reading {
    from: u64,
    legacy: bool,
    actors: Actors,
}

/// The read [`sync`] would make now, or none when the rows are in step
/// with the log.
pub(crate) fn reading(rows: &dyn AdmissionStore, log: &AuditLog) -> Result<Option<Reading>> {
    let len = log.len()?;
    let offset = offset(rows)?;
    if offset == len && offset == 0 {
        return Ok(None);
    }
    let anchor = rows.admission_meta(ANCHOR)?;
    // An index from before it kept who proposed and decided reads the
    // log again from the start.
    let from = if offset > len
        || (offset > 0 && proof::hash_before(log, offset)? != anchor)
        || (offset > 0 && rows.admission_meta(ACTORS)?.is_none())
    {
        0
    } else {
        offset
    };
    if from == len && from == offset {
        return Ok(None);
    }
    Ok(Some(Reading {
        from,
        legacy: from > 0 && rows.admission_meta(LEGACY_IMPORT)?.is_some(),
        actors: if from > 0 {
            actors(rows)?
        } else {
            Default::default()
        },
    }))
}

impl Reading {
    /// Read the log from where the rows stopped to its end (as long as it
    /// is now): the rows to store, with how far they reach. Whatever is
    /// appended after is the next read's, and until then the unread tail
    /// a check reads itself ([`unaudited`]).
    pub(crate) fn read(self, log: &AuditLog) -> Result<Recorded> {
        let Reading {
            from,
            mut legacy,
            mut actors,
        } = self;
        let mut change = Recorded {
            from_start: from == 0,
            from,
            ..Default::default()
        };
        // Each row names the byte offset of its event's line, which a read
        // checks ([`proof`]). Read a piece at a time: at a million claims
        // the log is over a gigabyte.
        let end = log.read_in_pieces(from, LOG_PIECE, |bytes, at| {
            for (line_at, logged) in logged(bytes, at, &mut actors) {
                match logged.admits {
                    Admits::Nothing => {}
                    Admits::Objects(ids) => change
                        .admitted
                        .extend(ids.into_iter().map(|id| (id, line_at))),
                    Admits::Unnamed => legacy = true,
                }
                for (path, sha) in logged.written {
                    change.written.push((path, sha, line_at));
                }
            }
            Ok(())
        })?;
        // In key order the engine's inserts append rather than split pages
        // (2.3 million rows at a million claims). The sorts are stable: an
        // id's first admission and a path's last write keep their place.
        change.admitted.sort_by(|a, b| a.0.cmp(&b.0));
        change.written.sort_by(|a, b| a.0.cmp(&b.0));
        let anchor = proof::hash_before(log, end)?.unwrap_or_default();
        let actors =
            serde_json::to_string(&actors).map_err(|e| Error::internal(format!("actors: {e}")))?;
        change.meta = vec![
            (OFFSET, Some(end.to_string())),
            (ANCHOR, Some(anchor)),
            (ACTORS, Some(actors)),
            (LEGACY_IMPORT, legacy.then(|| "1".to_string())),
        ];
        Ok(change)
    }
}

/// What the log past the rows admits and recorded writing, read here
/// without writing; `None` when the index cannot tell (the log was cut or
/// rewritten below the rows, too much of it waits, or an import there does
/// not name its objects).
type Tail = (HashSet<String>, HashMap<String, String>);

fn unread_tail(rows: &dyn AdmissionStore, log: &AuditLog) -> Result<Option<Tail>> {
    let offset = offset(rows)?;
    let len = log.len()?;
    let mut tail: Tail = Default::default();
    if offset == len {
        return Ok(Some(tail));
    }
    let cut = offset > len
        || len - offset > UNSYNCED_TAIL_LIMIT
        || (offset > 0 && proof::hash_before(log, offset)? != rows.admission_meta(ANCHOR)?);
    if cut {
        return Ok(None);
    }
    let (bytes, _) = log.read_from(offset)?;
    let mut actors = actors(rows)?;
    for (_, logged) in logged(&bytes, offset, &mut actors) {
        match logged.admits {
            Admits::Nothing => {}
            Admits::Objects(o) => tail.0.extend(o),
            Admits::Unnamed => return Ok(None),
        }
        tail.1.extend(logged.written);
    }
    Ok(Some(tail))
}

/// One object asked about, and what its rows say.
struct Asked<'a> {
    dir: Dir,
    id: &'a str,
    /// Its own file's path inside `.vouch/`.
    inside: Option<String>,
    rows: Option<&'a Admitted>,
}

/// Which of `objects` no approval or import in the audit log let in, or
/// whose file is not what the last event that wrote it recorded. The rows
/// answer for the log up to where [`sync`] brought them; what was appended
/// since (a write in flight, here or in another process) is read here,
/// without writing, so marks hold under write load. Nothing is marked when
/// the index cannot tell ([`unread_tail`]): a claim approved a moment ago
/// is never flagged — and when `strict` (a refusal rests on the answer),
/// it says so with an error instead. `file_sha` hashes a file as an event
/// records it (`None`: gone or unreadable); `proofs` keeps the log lines
/// rows were checked against.
pub(crate) fn unaudited(
    rows: &dyn AdmissionStore,
    store: &Store,
    proofs: &Proofs,
    file_sha: &dyn Fn(&str) -> Option<String>,
    objects: &[(Dir, &str)],
    strict: bool,
) -> Result<HashSet<(Dir, String)>> {
    let log = store.audit_log();
    let Some((tail, tail_written)) = unread_tail(rows, log)? else {
        // A mark may be lenient when the index cannot tell; a refusal may
        // not: it is told so, and reads the log itself.
        return if strict {
            Err(Error::internal(
                "the index cannot tell what the audit log admitted",
            ))
        } else {
            Ok(HashSet::new())
        };
    };
    // One trip an id: no row, never admitted; else what each of its files
    // was recorded as (none for an object approved before vouch recorded
    // what it wrote).
    let layout = store.layout();
    let ids: Vec<&str> = objects.iter().map(|(_, id)| *id).collect();
    let admitted = rows.admissions(&ids)?;
    let asked: Vec<Asked> = objects
        .iter()
        .map(|&(dir, id)| Asked {
            dir,
            id,
            inside: layout.file(dir, id).map(|f| layout.inside(&f)).ok(),
            rows: admitted.get(id),
        })
        .collect();
    // No row is taken on its word: each names the log line of its event,
    // which must say the same ([`proof`]). Each line is read once, for
    // every name asked of it.
    let mut want: BTreeMap<u64, proof::Want> = BTreeMap::new();
    for a in &asked {
        let Some(r) = &a.rows else { continue };
        let line = want.entry(r.at).or_default();
        line.ids.push(a.id);
        // What the admitting event wrote of the object's own file.
        line.paths.extend(a.inside.as_deref());
        for (path, _, at) in &r.written {
            want.entry(*at).or_default().paths.push(path);
        }
    }
    let said = proofs.read(log, &want)?;
    let said_at = |at: u64| said.get(&at).cloned().flatten();
    let mut out = HashSet::new();
    for a in asked {
        let Asked {
            dir,
            id,
            inside,
            rows,
        } = a;
        let in_tail = tail.contains(id);
        // What the admitting event wrote of this object's own file stands
        // where no row says otherwise (rows deleted by hand).
        let mut floor = None;
        let mut backed = true;
        if let Some(r) = rows {
            match said_at(r.at) {
                Some(s) if s.admits(id) => {
                    if inside.as_deref().is_some_and(|i| s.records(i)) {
                        floor = Some(s);
                    }
                }
                _ => backed = false,
            }
        }
        if (!backed || rows.is_none()) && !in_tail {
            out.insert((dir, id.to_string()));
            continue;
        }
        // Admitted; but is each of its files still what the last event
        // that wrote it recorded?
        let mut files: HashMap<String, String> = HashMap::new();
        for (path, sha, at) in rows.iter().flat_map(|r| &r.written) {
            // A row no event backs: the file is judged as unrecorded.
            let backed = said_at(*at).is_some_and(|s| s.wrote(path, sha));
            files.insert(
                path.clone(),
                if backed { sha.clone() } else { String::new() },
            );
        }
        files.extend(
            tail_written
                .iter()
                .filter(|(path, _)| id_of_inside(path) == id)
                .map(|(p, s)| (p.clone(), s.clone())),
        );
        if files.is_empty() && floor.is_none() {
            continue; // approved before vouch recorded what it wrote
        }
        // This object's own file must be one an event recorded writing:
        // a page written by hand under an approved entity's id is not.
        let Some(inside) = inside else {
            out.insert((dir, id.to_string()));
            continue;
        };
        let edited = match (files.get(&inside), &floor) {
            (Some(sha), _) => file_sha(&inside).is_some_and(|h| h != *sha),
            (None, Some(said)) => file_sha(&inside).is_some_and(|h| !said.wrote(&inside, &h)),
            (None, None) => {
                std::fs::symlink_metadata(layout.root().join(&inside)).is_ok_and(|m| m.is_file())
            }
        };
        if edited {
            out.insert((dir, id.to_string()));
        }
    }
    Ok(out)
}
