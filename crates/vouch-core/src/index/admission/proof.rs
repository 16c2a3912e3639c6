//! The rows of admission are the audit log read ahead of time, and an
//! engine's storage (`state.db`) is writable by anyone who can write the
//! folder: a row inserted by hand would let a hand-written claim be served
//! as reviewed knowledge. So no row is taken on its word. Each names the
//! byte offset of the log line of the event that let the object in, or
//! recorded writing the file; a read checks that line in the log itself:
//! a line starts there, and it admits that id or recorded that file's
//! sha256.
//!
//! Cost follows the names asked about, not the log: a line is found with
//! `pread`s from its offset, and an import's line (20 MB at 100,000
//! claims) is read without building its JSON, keeping only the names
//! asked ([`super::plain`]). What a line said is kept for the life of the
//! process (every connection) under its offset, and trusted again only
//! while the line there is the same — the same length, ending in the same
//! bytes (which hold its own hash and its parent's) — which costs a
//! `pread` or two. A process that reads a line a second time reads all of
//! it once, so a server answers any name from memory after that.
//!
//! What a row can still point at is a real event: an object some event
//! really admitted, a file's bytes some event really wrote. `doctor`, which
//! reads the whole log, reports a file put back by hand to what an earlier
//! event wrote (`edited-object`).

use super::plain::{self, Item};
use crate::audit::AuditLog;
use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// A line longer than this is read without building its JSON, when plain.
const PLAIN_FROM: usize = 64 * 1024;

/// How much of a line's end identifies it (its own hash and its parent's
/// are in the last few hundred bytes of every line vouch writes).
const TAIL: u64 = 4096;

/// What one event line says: the ids it admits and the files it wrote,
/// each kept as a 64-bit hash under a key this process drew at random (no
/// string of an import's line is kept, and no one outside the process can
/// make two names collide).
pub(crate) struct Said {
    admits: HashSet<u64, Unhashed>,
    /// The hash of each file's path, and of the sha256 recorded for it.
    written: HashMap<u64, u64, Unhashed>,
    /// `None`: all the line says is here. Else only what it says of these
    /// ids and paths, the ones it was read for (of any other it answers
    /// "no", which marks: never a wrong admission).
    asked: Option<Box<(Keys, Keys)>>,
}

/// Names as their keyed hashes.
type Keys = HashSet<u64, Unhashed>;

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
fn keyed(name: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    KEY.get_or_init(Default::default).hash_one(name)
}

/// Names asked about, by length (a few: compared byte for byte).
struct Names<'n>(Vec<Vec<&'n [u8]>>);

impl<'n> Names<'n> {
    /// `None` when a name is too long to index by length.
    fn new(names: &[&'n str]) -> Option<Names<'n>> {
        let mut by_len: Vec<Vec<&[u8]>> = Vec::new();
        for n in names {
            if n.len() > 4096 {
                return None;
            }
            if by_len.len() <= n.len() {
                by_len.resize_with(n.len() + 1, Vec::new);
            }
            by_len[n.len()].push(n.as_bytes());
        }
        Some(Names(by_len))
    }
    fn has(&self, name: &[u8]) -> bool {
        // Ids share long prefixes and differ at the end: that end first.
        self.0
            .get(name.len())
            .is_some_and(|v| v.iter().any(|n| n.last() == name.last() && *n == name))
    }
}

impl Said {
    fn empty() -> Said {
        Said {
            admits: HashSet::default(),
            written: HashMap::default(),
            asked: None,
        }
    }

    pub(crate) fn admits(&self, id: &str) -> bool {
        self.admits.contains(&keyed(id.as_bytes()))
    }
    /// Whether it recorded the file at `path` with this sha256.
    pub(crate) fn wrote(&self, path: &str, sha: &str) -> bool {
        self.written.get(&keyed(path.as_bytes())) == Some(&keyed(sha.as_bytes()))
    }
    /// Whether it recorded the file at `path` at all.
    pub(crate) fn records(&self, path: &str) -> bool {
        self.written.contains_key(&keyed(path.as_bytes()))
    }

    /// Whether it answers for these names.
    fn covers(&self, want: &Want) -> bool {
        self.asked.as_ref().is_none_or(|asked| {
            want.ids
                .iter()
                .all(|i| asked.0.contains(&keyed(i.as_bytes())))
                && want
                    .paths
                    .iter()
                    .all(|p| asked.1.contains(&keyed(p.as_bytes())))
        })
    }

    /// All an event line says, read the usual way
    /// ([`crate::audit::trail::Logged::of_line`]).
    fn usual(line: &[u8]) -> Said {
        let logged = crate::audit::trail::Logged::of_line(line);
        let mut said = Said::empty();
        if let crate::audit::trail::Admits::Objects(ids) = &logged.admits {
            said.admits.extend(ids.iter().map(|i| keyed(i.as_bytes())));
        }
        said.written.extend(
            logged
                .written
                .iter()
                .map(|(p, s)| (keyed(p.as_bytes()), keyed(s.as_bytes()))),
        );
        said
    }
}

/// What a plain import line says, gathered as it is read ([`plain`]):
/// all of it, or only what it says of the names asked.
struct Gather<'n> {
    said: Said,
    names: Option<(Names<'n>, Names<'n>)>,
}

impl<'n> Gather<'n> {
    fn new(want: Option<&Want<'n>>) -> Gather<'n> {
        let names = want.and_then(|w| Some((Names::new(&w.ids)?, Names::new(&w.paths)?)));
        let mut said = Said::empty();
        if let (Some(w), Some(_)) = (want, &names) {
            let key = |n: &[&str]| n.iter().map(|n| keyed(n.as_bytes())).collect();
            said.asked = Some(Box::new((key(&w.ids), key(&w.paths))));
        }
        Gather { said, names }
    }

    /// `data.objects` admitted, `data.written` recorded, as the usual
    /// reading reads them.
    fn visit(&mut self, item: Item<'_>) {
        match (item, &self.names) {
            (Item::Object(id), Some((ids, _))) if !ids.has(id) => {}
            (Item::Object(id), _) => {
                self.said.admits.insert(keyed(id));
            }
            (Item::Written(path, _), Some((_, paths))) if !paths.has(path) => {}
            (Item::Written(path, sha), _) => {
                // The last entry for a path stands, as in the log reading.
                self.said.written.insert(keyed(path), keyed(sha));
            }
        }
    }
}

/// The names one log line is asked about.
#[derive(Default)]
pub(crate) struct Want<'a> {
    /// Ids it must admit.
    pub(crate) ids: Vec<&'a str>,
    /// Paths it must have recorded writing.
    pub(crate) paths: Vec<&'a str>,
}

/// A line as it was when read: its length and a keyed hash of its last
/// [`TAIL`] bytes (for a short line, all of it).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Shape {
    len: u64,
    tail: u64,
}

impl Shape {
    fn of(line: &[u8]) -> Shape {
        let from = line.len().saturating_sub(TAIL as usize);
        Shape {
            len: line.len() as u64,
            tail: keyed(&line[from..]),
        }
    }
}

struct Entry {
    shape: Shape,
    said: Arc<Said>,
}

/// What the log lines that rows were checked against say, by offset, for
/// every connection of the process. Locked only to look up and to store:
/// lines are read and checked outside the lock.
#[derive(Default)]
pub(crate) struct Proofs {
    lines: Mutex<HashMap<u64, Arc<Entry>>>,
}

impl Proofs {
    fn lines(&self) -> MutexGuard<'_, HashMap<u64, Arc<Entry>>> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the event whose line starts at each asked offset says (`None`
    /// when no event line starts there), answering at least for the names
    /// asked of it.
    pub(crate) fn read(
        &self,
        log: &AuditLog,
        want: &BTreeMap<u64, Want>,
    ) -> Result<HashMap<u64, Option<Arc<Said>>>> {
        let mut out = HashMap::with_capacity(want.len());
        if want.is_empty() {
            return Ok(out);
        }
        let Some(file) = LogFile::open(log)? else {
            return Ok(want.keys().map(|at| (*at, None)).collect());
        };
        for (&at, w) in want {
            let seen = self.lines().get(&at).cloned();
            if let Some(e) = &seen
                && e.said.covers(w)
                && file.holds(at, e.shape)?
            {
                out.insert(at, Some(e.said.clone()));
                continue;
            }
            // Read before in this process (a long-running one, asked of
            // other names now): all of it, once.
            let whole = seen.is_some();
            let Some((shape, said)) = file.said_at(at, (!whole).then_some(w))? else {
                self.lines().remove(&at);
                out.insert(at, None);
                continue;
            };
            let said = Arc::new(said);
            self.lines().insert(
                at,
                Arc::new(Entry {
                    shape,
                    said: said.clone(),
                }),
            );
            out.insert(at, Some(said));
        }
        Ok(out)
    }
}

/// The `hash` of the event whose line ends just before byte `offset`, as
/// [`AuditLog::hash_before`] answers it — but a long line (an import's,
/// when it is the log's last) is read without building its JSON
/// ([`plain`]): every catch-up of a one-shot command asks it.
pub(crate) fn hash_before(log: &AuditLog, offset: u64) -> Result<Option<String>> {
    if let Some(file) = LogFile::open(log)?
        && let Some(start) = file.start_of_line_before(offset)?
        && offset - 1 - start > PLAIN_FROM as u64
    {
        let rest = At {
            log: &file,
            pos: start,
        };
        let plain =
            plain::read_from(Vec::new(), rest, &mut |_| {}).map_err(|e| Error::io(file.path, e))?;
        if let Some(plain) = plain
            && plain.len == offset - 1 - start
        {
            return Ok(plain.hash.and_then(|h| String::from_utf8(h).ok()));
        }
    }
    log.hash_before(offset)
}

/// The audit log, open for reading lines at offsets.
struct LogFile<'a> {
    file: File,
    path: &'a Path,
    /// Its length when opened: no line starts at or past it.
    len: u64,
}

impl<'a> LogFile<'a> {
    /// `None` when there is no log.
    fn open(log: &'a AuditLog) -> Result<Option<LogFile<'a>>> {
        let path = log.path();
        let dir = path.parent().unwrap_or(Path::new("."));
        match crate::store::nofollow::open(dir, path) {
            Ok(file) => {
                let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
                Ok(Some(LogFile { file, path, len }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Fill `buf` from byte `at` as far as the file goes; how much it got.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            let n = read_at(&self.file, at + got as u64, &mut buf[got..])
                .map_err(|e| Error::io(self.path, e))?;
            if n == 0 {
                break;
            }
            got += n;
        }
        Ok(got)
    }

    /// Whether a line can start at byte `at`: before the end, and after
    /// the newline of the line before.
    fn starts_line(&self, at: u64) -> Result<bool> {
        if at >= self.len {
            return Ok(false); // a line ends in a newline, before the end
        }
        let mut before = [0u8; 1];
        Ok(at == 0 || (self.read_at(at - 1, &mut before)? == 1 && before[0] == b'\n'))
    }

    /// What the event whose line starts at `at` says (all of it, or at
    /// least what it says of `want`'s names), and the line's shape; `None`
    /// when no whole line starts there. A short line is read the usual
    /// way; a long one streamed when it is a plain import ([`plain`]), so
    /// no copy of it is held.
    fn said_at(&self, at: u64, want: Option<&Want>) -> Result<Option<(Shape, Said)>> {
        if !self.starts_line(at)? {
            return Ok(None);
        }
        let mut first = vec![0u8; PLAIN_FROM.min((self.len - at) as usize)];
        let n = self.read_at(at, &mut first)?;
        first.truncate(n);
        if let Some(end) = memchr::memchr(b'\n', &first) {
            first.truncate(end);
            return Ok(Some((Shape::of(&first), Said::usual(&first))));
        }
        let mut gather = Gather::new(want);
        let rest = At {
            log: self,
            pos: at + first.len() as u64,
        };
        let plain = plain::read_from(first, rest, &mut |item| gather.visit(item))
            .map_err(|e| Error::io(self.path, e))?;
        if let Some(plain) = plain
            && plain.event == b"bundle.import"
        {
            let shape = Shape {
                len: plain.len,
                tail: keyed(&self.tail(at, plain.len)?),
            };
            return Ok(Some((shape, gather.said)));
        }
        Ok(self
            .line_at(at)?
            .map(|line| (Shape::of(&line), Said::usual(&line))))
    }

    /// Where the line that ends just before byte `offset` (its newline at
    /// `offset - 1`) starts; `None` when no line ends there.
    fn start_of_line_before(&self, offset: u64) -> Result<Option<u64>> {
        let mut newline = [0u8; 1];
        if offset == 0
            || offset > self.len
            || self.read_at(offset - 1, &mut newline)? != 1
            || newline[0] != b'\n'
        {
            return Ok(None);
        }
        let mut end = offset - 1;
        // Most lines are short: the first piece just tells a long one.
        let mut buf = vec![0u8; PLAIN_FROM + 1];
        while end > 0 {
            let from = end.saturating_sub(buf.len() as u64);
            let piece = &mut buf[..(end - from) as usize];
            if self.read_at(from, piece)? != piece.len() {
                return Ok(None);
            }
            if let Some(i) = memchr::memrchr(b'\n', piece) {
                return Ok(Some(from + i as u64 + 1));
            }
            end = from;
            buf.resize(256 * 1024, 0);
        }
        Ok(Some(0))
    }

    /// The last [`TAIL`] bytes (at most) of the `len` bytes from `at`.
    fn tail(&self, at: u64, len: u64) -> Result<Vec<u8>> {
        let take = len.min(TAIL);
        let mut tail = vec![0u8; take as usize];
        let n = self.read_at(at + len - take, &mut tail)?;
        tail.truncate(n);
        Ok(tail)
    }

    /// The line starting at byte `at`, if a whole line starts there. Read
    /// in growing pieces (a long line's log goes on past it).
    fn line_at(&self, at: u64) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        if !self.starts_line(at)? {
            return Ok(None);
        }
        let mut rest = At { log: self, pos: at };
        let mut out: Vec<u8> = Vec::new();
        let mut chunk: u64 = 64 * 1024;
        loop {
            let had = out.len();
            let n = (&mut rest)
                .take(chunk)
                .read_to_end(&mut out)
                .map_err(|e| Error::io(self.path, e))?;
            if n == 0 {
                return Ok(None); // no complete line there
            }
            if let Some(end) = memchr::memchr(b'\n', &out[had..]) {
                out.truncate(had + end);
                return Ok(Some(out));
            }
            chunk = (chunk * 2).min(32 << 20);
        }
    }

    /// Whether the line at `at` is still one of this shape: a line starts
    /// there, ends where it ended, and ends in the same bytes.
    fn holds(&self, at: u64, shape: Shape) -> Result<bool> {
        let Some(end) = at.checked_add(shape.len).filter(|end| *end < self.len) else {
            return Ok(false);
        };
        let mut newline = [0u8; 1];
        Ok(self.starts_line(at)?
            && self.read_at(end, &mut newline)? == 1
            && newline[0] == b'\n'
            && keyed(&self.tail(at, shape.len)?) == shape.tail)
    }
}

/// The log read on from a byte offset.
struct At<'l, 'p> {
    log: &'l LogFile<'p>,
    pos: u64,
}

impl std::io::Read for At<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = read_at(&self.log.file, self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
fn read_at(file: &File, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(at))?;
    file.read(buf)
}

#[cfg(test)]
mod tests {
    use super::{LogFile, Proofs, Said, Want};
    use std::collections::BTreeMap;

    /// What `line` says read from a log (between two short lines), all of
    /// it or for `want`'s names.
    fn said(line: &[u8], want: Option<&Want>) -> Said {
        let dir = tempfile::tempdir().unwrap();
        let log = crate::audit::AuditLog::new(dir.path().join("audit.log.jsonl"));
        let mut bytes = b"{\"event\":\"kb.init\"}\n".to_vec();
        let at = bytes.len() as u64;
        bytes.extend_from_slice(line);
        bytes.extend_from_slice(b"\n{\"event\":\"proposal.create\"}\n");
        std::fs::write(log.path(), bytes).unwrap();
        let file = LogFile::open(&log).unwrap().unwrap();
        let (shape, said) = file.said_at(at, want).unwrap().unwrap();
        assert_eq!(shape.len, line.len() as u64);
        assert!(file.holds(at, shape).unwrap());
        said
    }

    fn import_line(objects: &[serde_json::Value]) -> Vec<u8> {
        let written: serde_json::Map<String, serde_json::Value> = (0..5000)
            .map(|i| {
                (
                    format!("claims/claim-{i}.yaml"),
                    serde_json::json!(format!("{i:064}")),
                )
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "id": "e", "event": "bundle.import", "actor": "alice", "object_ids": [],
            "data": {"objects": objects, "written": written, "bundle": "b"}, "hash": "h"
        }))
        .unwrap()
    }

    /// A large import's line read plainly says what the usual reading
    /// says; one that does not read plainly (an object that is not a
    /// string) is read the usual way.
    #[test]
    fn a_large_import_line_reads_as_the_log_reading_does() {
        let mut objects: Vec<serde_json::Value> = (0..5000)
            .map(|i| serde_json::json!(format!("claim-{i}")))
            .collect();
        for l in [import_line(&objects), {
            objects.push(serde_json::json!(7));
            import_line(&objects)
        }] {
            assert!(l.len() > super::PLAIN_FROM);
            let said = said(&l, None);
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

    /// Read for a few names, a large import's line answers for them —
    /// yes for the ones it admits or recorded, no for the others — and
    /// says no of any name it was not read for.
    #[test]
    fn a_line_read_for_some_names_answers_for_those() {
        let objects: Vec<serde_json::Value> = (0..5000)
            .map(|i| serde_json::json!(format!("claim-{i}")))
            .collect();
        let line = import_line(&objects);
        let sha7 = format!("{:064}", 7);
        let want = Want {
            ids: vec!["claim-7", "claim-5000"],
            paths: vec!["claims/claim-7.yaml", "claims/claim-5000.yaml"],
        };
        let said = said(&line, Some(&want));
        assert!(said.covers(&want));
        assert!(said.admits("claim-7") && !said.admits("claim-5000"));
        assert!(said.wrote("claims/claim-7.yaml", &sha7));
        assert!(!said.records("claims/claim-5000.yaml"));
        // Not read for: answered no (a mark, never an admission).
        assert!(!said.admits("claim-8"));
        let other = Want {
            ids: vec!["claim-8"],
            paths: vec![],
        };
        assert!(!said.covers(&other));
    }

    /// The hash before an offset is the log's own answer, however long
    /// the line before it — read plainly or, with an escape in it, the
    /// usual way — and none where no line ends.
    #[test]
    fn the_hash_before_a_long_line_is_the_logs() {
        let (_dir, kb) = crate::testing::test_kb();
        let objects: Vec<String> = (0..8000).map(|i| format!("claim-{i}")).collect();
        let log = kb.audit_log();
        for pad in ["", "a\\b"] {
            let mut ev = kb.event(
                "bundle.import",
                "alice",
                vec![],
                serde_json::json!({"objects": objects, "pad": pad}),
            );
            kb.append_audit(std::slice::from_mut(&mut ev)).unwrap();
            let end = log.len().unwrap();
            let want = log.hash_before(end).unwrap();
            assert_eq!(want.as_deref(), Some(ev.hash.as_str()), "{pad}");
            assert_eq!(super::hash_before(log, end).unwrap(), want, "{pad}");
            for at in [0, 1, end - 1, end + 5] {
                assert_eq!(
                    super::hash_before(log, at).unwrap(),
                    log.hash_before(at).unwrap()
                );
            }
        }
    }

    /// The process's lines are trusted only while the log holds the same
    /// line at the offset: a line rewritten in place (same length, other
    /// id) is read again, and an offset where no line starts answers none.
    #[test]
    fn a_line_changed_under_the_cache_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = crate::audit::AuditLog::new(dir.path().join("audit.log.jsonl"));
        let line = |id: &str| {
            format!(
                "{{\"event\":\"proposal.approve\",\"object_ids\":[\"p\",\"{id}\"],\"hash\":\"h\"}}\n"
            )
        };
        let first = "{\"event\":\"kb.init\"}\n";
        std::fs::write(log.path(), format!("{first}{}", line("claim-a"))).unwrap();
        let at = first.len() as u64;
        let proofs = Proofs::default();
        let ask = |ids: Vec<&'static str>| {
            BTreeMap::from([
                (at, Want { ids, paths: vec![] }),
                (
                    at + 1,
                    Want {
                        ids: vec!["claim-a"],
                        paths: vec![],
                    },
                ),
            ])
        };
        let read = proofs.read(&log, &ask(vec!["claim-a"])).unwrap();
        assert!(read[&at].as_ref().unwrap().admits("claim-a"));
        assert!(read[&(at + 1)].is_none(), "no line starts mid-line");
        std::fs::write(log.path(), format!("{first}{}", line("claim-b"))).unwrap();
        let read = proofs.read(&log, &ask(vec!["claim-a"])).unwrap();
        let said = read[&at].as_ref().unwrap();
        assert!(!said.admits("claim-a") && said.admits("claim-b"));
    }
}
