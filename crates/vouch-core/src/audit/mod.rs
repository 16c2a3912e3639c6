//! The append-only, hash-chained audit log (`audit.log.jsonl`).
//!
//! Each line is canonical JSON (sorted keys, compact, non-ASCII escaped as
//! Python's `json.dumps(sort_keys=True, separators=(",", ":"))` does) with
//! `prev_hash` (64 zeros for the first event) and
//! `hash = sha256_hex(prev_hash + canonical_json(event without "hash"))`.
//! The chain verifies with that rule alone. After a git merge the log is
//! a graph whose branches an `audit.merge` event joins ([`graph`]).

pub mod checkpoints;
mod follow;
pub mod graph;
pub mod trail;

use crate::error::{Error, Result};
use crate::ids::sha256_hex;
use crate::model::AuditEvent;
use serde::Serialize;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The `prev_hash` of the first event: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The key, in the data of an event that writes durable objects, of the
/// sha256 of each file it wrote, by its path inside `.vouch/`
/// (`{"claims/x.yaml": sha256}`): what `unaudited` marks, `doctor` and the
/// pull-request check compare the files with.
pub const WRITTEN_KEY: &str = "written";

/// Bytes of the log a scan for heads reads at once.
const HEADS_PIECE: usize = 8 << 20;

/// Lifecycle events that record before/after states (and so can be
/// reverted).
pub fn is_lifecycle_event(name: &str) -> bool {
    matches!(
        name,
        "claim.supersede"
            | "claim.contradict"
            | "claim.archive"
            | "claim.confirm"
            | "claim.cite"
            | "page.archive"
            | "lifecycle.revert"
    )
}

/// Compact JSON with sorted keys and ASCII-only output.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out, true);
    out
}

fn write_canonical(value: &Value, out: &mut String, ascii: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out, ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out, ascii);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out, ascii);
                out.push(':');
                write_canonical(&map[k], out, ascii);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String, ascii: bool) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && (c as u32) >= 0x7f) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The hash of an event given as JSON, computed from its own `prev_hash`.
pub fn event_hash(event: &Value) -> String {
    let mut without = event.clone();
    if let Value::Object(m) = &mut without {
        m.remove("hash");
    }
    let prev = event.get("prev_hash").and_then(Value::as_str).unwrap_or("");
    let mut h = sha256_hex(format!("{prev}{}", canonical_json(&without)).as_bytes());
    if event.get("hash").and_then(Value::as_str) != Some(h.as_str()) {
        // Logs written with non-ASCII kept as UTF-8 verify too.
        let mut utf8 = String::new();
        write_canonical(&without, &mut utf8, false);
        let alt = sha256_hex(format!("{prev}{utf8}").as_bytes());
        if event.get("hash").and_then(Value::as_str) == Some(alt.as_str()) {
            h = alt;
        }
    }
    h
}

/// Result of `vouch audit verify`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VerifyReport {
    /// Whether every line verified.
    pub ok: bool,
    /// Events that verified before the first problem (all, when ok).
    pub events: usize,
    /// 1-based line number of the first bad line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad_line: Option<usize>,
    /// What is wrong with the first bad line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// `audit.merge` events: joins of branches a git merge brought in.
    #[serde(skip_serializing_if = "is_zero")]
    pub merges: usize,
    /// 1-based lines ending a branch that no event joins yet (a git merge
    /// just happened; the next write, or `doctor --fix`, joins them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unjoined: Vec<usize>,
    /// 1-based lines repeating an earlier event exactly (a cherry-pick
    /// merged back); `doctor --fix` keeps one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<usize>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The audit log file (`audit.log.jsonl`): read, verified and appended here.
pub struct AuditLog {
    path: PathBuf,
    /// The append hint ([`crate::store::layout::AUDIT_TIP_FILE`]).
    tip: Option<PathBuf>,
}

impl AuditLog {
    /// The log at `path`, with no append hint.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AuditLog {
            path: path.into(),
            tip: None,
        }
    }

    /// Keep the append hint at `tip`.
    pub fn with_tip(mut self, tip: PathBuf) -> Self {
        self.tip = Some(tip);
        self
    }

    /// `len last-hash`, as the hint records the log.
    /// The hint's record: one fixed length (zero-padded length, a sha256
    /// hex hash), as [`crate::store::atomic::write_hint`] overwrites it in
    /// place.
    fn tip_of(len: u64, last: &str) -> String {
        format!("{len:020} {last}\n")
    }

    /// The branches a git merge left that the next event must join (see
    /// [`graph`]): none when the log is as vouch last left it (the hint),
    /// else found by one scan of the log.
    pub(crate) fn heads_to_join(&self) -> Result<Vec<String>> {
        self.heads(false)
    }

    /// [`AuditLog::heads_to_join`] found by a scan, the hint not consulted
    /// (`doctor --fix`).
    pub(crate) fn heads_scanned(&self) -> Result<Vec<String>> {
        self.heads(true)
    }

    /// The heads the next event must join: none when the hint beside the
    /// index says the log is as this process last left it, else found by
    /// reading the whole log ([`graph::Unjoined`]: after a clone or a pull,
    /// whose first write reads every event).
    fn heads(&self, scan: bool) -> Result<Vec<String>> {
        let mut file = match self.open_read() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        let len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&self.path, e))?;
        let last = last_line(&mut file)
            .map_err(|e| Error::io(&self.path, e))?
            .and_then(|l| serde_json::from_str::<Value>(&l).ok())
            .and_then(|v| v.get("hash").and_then(Value::as_str).map(str::to_string));
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        // The hint is read without following a link and only if small: a
        // clone could plant one pointing anywhere.
        let hint = |tip: &PathBuf| {
            let dir = tip.parent()?;
            let f = crate::store::nofollow::open(dir, tip).ok()?;
            let mut text = String::new();
            f.take(256).read_to_string(&mut text).ok()?;
            Some(text)
        };
        if !scan
            && let Some(tip) = &self.tip
            && hint(tip).as_deref() == Some(Self::tip_of(len, &last).as_str())
        {
            return Ok(Vec::new());
        }
        // A piece at a time: a million events' log is over a gigabyte.
        let mut scan = graph::Unjoined::default();
        let end = self.read_in_pieces(0, HEADS_PIECE, |lines, _| {
            scan.lines(lines);
            Ok(())
        })?;
        // A last line without its newline (a log edited by hand) counts,
        // as it does for the last hash above.
        let mut rest = Vec::new();
        if end < len {
            let mut f = self.open_read().map_err(|e| Error::io(&self.path, e))?;
            f.seek(SeekFrom::Start(end))
                .and_then(|_| f.read_to_end(&mut rest))
                .map_err(|e| Error::io(&self.path, e))?;
        }
        scan.lines(&rest);
        Ok(scan.heads())
    }

    /// Record the log's length and last hash as the hint (best effort: a
    /// missing hint only costs the next append a scan).
    fn note_tip(&self, file: &mut File, last: &str) {
        if let (Some(tip), Ok(len)) = (&self.tip, file.seek(SeekFrom::End(0))) {
            let _ = crate::store::atomic::write_hint(tip, Self::tip_of(len, last).as_bytes());
        }
    }

    /// Where the log file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Open for reading without following a link (`store::nofollow`).
    fn open_read(&self) -> std::io::Result<File> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        crate::store::nofollow::open(dir, &self.path)
    }

    fn read_bytes(&self) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        match self.open_read().and_then(|mut f| f.read_to_end(&mut bytes)) {
            Ok(_) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Append events, filling `prev_hash` and `hash`. The caller holds the
    /// KB lock; all lines go out in one write followed by one fsync.
    pub fn append(&self, events: &mut [AuditEvent]) -> Result<()> {
        self.append_at(events).map(|_| ())
    }

    /// [`AuditLog::append`], answering the log's length before the new
    /// events (for [`AuditLog::take_back`]).
    pub(crate) fn append_at(&self, events: &mut [AuditEvent]) -> Result<u64> {
        if events.is_empty() {
            return self.byte_len();
        }
        let mut opts = OpenOptions::new();
        opts.create(true).read(true).append(true);
        // Never append through a link (a cloned repo's audit.log.jsonl
        // pointing at a dotfile would have its last line cut).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut opts,
            rustix::fs::OFlags::NOFOLLOW.bits() as i32,
        );
        let mut file = opts.open(&self.path).map_err(|e| {
            if crate::store::nofollow::is_link(&self.path) {
                Error::io(
                    &self.path,
                    std::io::Error::other(
                        "is a symbolic link; vouch never writes through links under .vouch/ \
                         (replace it with the real log)",
                    ),
                )
            } else {
                Error::io(&self.path, e)
            }
        })?;
        let mut prev = self.last_hash(&mut file)?;
        let start = file
            .seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&self.path, e))?;
        let mut buf = String::new();
        for ev in events.iter_mut() {
            ev.prev_hash = prev.clone();
            ev.hash = String::new();
            let mut value = serde_json::to_value(&*ev)
                .map_err(|e| Error::internal(format!("audit event encoding: {e}")))?;
            if let Value::Object(m) = &mut value {
                m.remove("hash");
            }
            ev.hash = sha256_hex(format!("{prev}{}", canonical_json(&value)).as_bytes());
            if let Value::Object(m) = &mut value {
                m.insert("hash".into(), Value::String(ev.hash.clone()));
            }
            buf.push_str(&canonical_json(&value));
            buf.push('\n');
            prev = ev.hash.clone();
        }
        file.write_all(buf.as_bytes())
            .map_err(|e| Error::io(&self.path, e))?;
        crate::fail::point("audit.append.written");
        file.sync_data().map_err(|e| Error::io(&self.path, e))?;
        crate::fail::point("audit.append.synced");
        self.note_tip(&mut file, &prev);
        Ok(start)
    }

    fn byte_len(&self) -> Result<u64> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Take back the events appended from byte `start` on, the last of
    /// which hashes to `last`: the write they announced failed, so they
    /// never happened. Only when the log still ends in exactly them (a
    /// `git pull` may have replaced the file meanwhile: then nothing is
    /// cut, and `doctor` reports the event).
    pub(crate) fn take_back(&self, start: u64, last: &str) -> Result<()> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut opts,
            rustix::fs::OFlags::NOFOLLOW.bits() as i32,
        );
        let mut file = opts
            .open(&self.path)
            .map_err(|e| Error::io(&self.path, e))?;
        let mut tail = Vec::new();
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.read_to_end(&mut tail))
            .map_err(|e| Error::io(&self.path, e))?;
        let ends_in_ours = tail.ends_with(b"\n")
            && tail
                .rsplit(|b| *b == b'\n')
                .nth(1)
                .and_then(|l| serde_json::from_slice::<Value>(l).ok())
                .is_some_and(|v| v.get("hash").and_then(Value::as_str) == Some(last));
        if !ends_in_ours {
            return Err(Error::conflict(
                "the log changed since the append (replaced by git?); nothing was cut",
            ));
        }
        if let Some(tip) = &self.tip {
            let _ = std::fs::remove_file(tip);
        }
        file.set_len(start)
            .and_then(|_| file.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Hash of the last event, read from the end of the file. A torn final
    /// line (a writer killed inside `write`, so before its fsync returned and
    /// before anything acted on that event) is cut off first.
    fn last_hash(&self, file: &mut File) -> Result<String> {
        let len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&self.path, e))?;
        let whole = whole_lines_len(file, len).map_err(|e| Error::io(&self.path, e))?;
        if whole < len {
            file.set_len(whole)
                .and_then(|_| file.sync_data())
                .map_err(|e| Error::io(&self.path, e))?;
        }
        match last_line(file).map_err(|e| Error::io(&self.path, e))? {
            None => Ok(GENESIS_HASH.to_string()),
            Some(line) => {
                let v: Value = serde_json::from_str(&line).map_err(|_| {
                    Error::corrupt(
                        &self.path,
                        "the last line is not a JSON event; run `vouch audit verify`",
                    )
                })?;
                v.get("hash")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| Error::corrupt(&self.path, "the last event has no `hash`"))
            }
        }
    }

    /// Every event, oldest first. Unparseable lines are reported as errors
    /// naming the line.
    pub fn read_all(&self) -> Result<Vec<Value>> {
        let text = String::from_utf8(self.read_bytes()?)
            .map_err(|_| Error::corrupt(&self.path, "not valid UTF-8"))?;
        let complete = match text.rfind('\n') {
            Some(i) => &text[..=i],
            None => "",
        };
        complete
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| {
                    Error::corrupt(&self.path, format!("line {}: not JSON ({e})", i + 1))
                })
            })
            .collect()
    }

    /// Every event that parses, oldest first: for reports on a log that a
    /// merge left with conflict markers (verification names those lines).
    pub fn read_parsed(&self) -> Result<Vec<Value>> {
        let bytes = self.read_bytes()?;
        Ok(bytes
            .split(|b| *b == b'\n')
            .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
            .filter(Value::is_object)
            .collect())
    }

    /// The event with this `id`, if it is in the log. Unparseable lines
    /// are skipped.
    pub fn find_id(&self, id: &str) -> Result<Option<Value>> {
        let bytes = self.read_bytes()?;
        let needle = format!("\"{id}\"");
        Ok(bytes
            .split(|b| *b == b'\n')
            .filter(|l| l.windows(needle.len()).any(|w| w == needle.as_bytes()))
            .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
            .find(|ev| ev.get("id").and_then(Value::as_str) == Some(id)))
    }

    /// The last event's id and hash, read from the end of the file.
    pub fn last_head(&self) -> Option<crate::store::lock::ChainHead> {
        let mut head = None;
        self.scan_back(|ev| {
            let field = |k: &str| ev.get(k).and_then(Value::as_str).map(str::to_string);
            let (Some(id), Some(hash)) = (field("id"), field("hash")) else {
                return false;
            };
            head = Some(crate::store::lock::ChainHead { id, hash });
            true
        })
        .ok()?;
        head
    }

    /// Whether the log holds `head`: an event with its id and hash. Read
    /// from the end, so a head near the end costs little.
    pub fn holds(&self, head: &crate::store::lock::ChainHead) -> Result<bool> {
        let mut found = false;
        self.scan_back(|ev| {
            if ev.get("id").and_then(Value::as_str) == Some(&head.id) {
                found = ev.get("hash").and_then(Value::as_str) == Some(&head.hash);
                return true;
            }
            false
        })?;
        Ok(found)
    }

    /// The last event's timestamp, read from the end of the file.
    pub fn last_created_at(&self) -> Option<String> {
        let mut f = self.open_read().ok()?;
        let line = last_line(&mut f).ok()??;
        let v: Value = serde_json::from_str(&line).ok()?;
        v.get("created_at")?.as_str().map(str::to_string)
    }

    /// Verify the chain — a graph after git merges ([`graph`]); name the
    /// first bad line.
    pub fn verify(&self) -> Result<VerifyReport> {
        let bytes = self.read_bytes()?;
        let mut report = VerifyReport {
            ok: true,
            events: 0,
            first_bad_line: None,
            problem: None,
            merges: 0,
            unjoined: Vec::new(),
            duplicates: Vec::new(),
        };
        let text = String::from_utf8_lossy(&bytes);
        let ends_clean = bytes.is_empty() || bytes.ends_with(b"\n");
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        let mut g = graph::Graph::default();
        // Graph position -> 1-based line.
        let mut line_of: Vec<usize> = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            let n = i + 1;
            let mut bad = |problem: String| {
                report.ok = false;
                report.first_bad_line = Some(n);
                report.problem = Some(problem);
            };
            if !ends_clean && n == lines.len() {
                bad("truncated: the last line is incomplete".into());
                break;
            }
            let v: Value = match serde_json::from_str(line) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    bad("not a JSON object".into());
                    break;
                }
            };
            let stored = v.get("hash").and_then(Value::as_str).unwrap_or("");
            if event_hash(&v) != stored {
                bad("hash does not match the event's content (the line was edited)".into());
                break;
            }
            match g.push(&v) {
                Ok(true) => {
                    line_of.push(n);
                    report.events += 1;
                    if !graph::joined(&v).is_empty() {
                        report.merges += 1;
                    }
                }
                Ok(false) => report.duplicates.push(n),
                Err(why) => {
                    bad(why);
                    break;
                }
            }
        }
        if report.ok {
            let mut heads = g.heads();
            heads.pop(); // the last event is the log's head
            report.unjoined = heads.into_iter().map(|i| line_of[i]).collect();
        }
        Ok(report)
    }

    /// Walk events newest first until `stop` returns true; yields each
    /// parsed event to `visit`. Reads the file backwards in blocks, so the
    /// cost is the distance walked, not the log's size.
    pub fn scan_back(&self, mut visit: impl FnMut(&Value) -> bool) -> Result<()> {
        let mut file = match self.open_read() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        let mut pos = file
            .seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&self.path, e))?;
        let mut carry: Vec<u8> = Vec::new();
        const BLOCK: u64 = 64 * 1024;
        while pos > 0 {
            let start = pos.saturating_sub(BLOCK);
            let mut block = vec![0u8; (pos - start) as usize];
            file.seek(SeekFrom::Start(start))
                .and_then(|_| file.read_exact(&mut block))
                .map_err(|e| Error::io(&self.path, e))?;
            block.extend_from_slice(&carry);
            pos = start;
            // Everything after the first newline is whole lines (unless at start of file).
            let cut = if pos == 0 {
                0
            } else {
                match block.iter().position(|b| *b == b'\n') {
                    Some(i) => i + 1,
                    None => {
                        carry = block;
                        continue;
                    }
                }
            };
            carry = block[..cut].to_vec();
            for line in block[cut..].split(|b| *b == b'\n').rev() {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if let Ok(v) = serde_json::from_slice::<Value>(line)
                    && visit(&v)
                {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

impl AuditLog {
    /// The log's length in bytes (0 when it does not exist).
    pub fn len(&self) -> Result<u64> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Whether the log is empty or missing.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The `hash` of the event whose line ends just before byte `offset`:
    /// what a follower checks to know the log was not cut or rewritten
    /// below where it read.
    pub fn hash_before(&self, offset: u64) -> Result<Option<String>> {
        if offset == 0 {
            return Ok(None);
        }
        let mut f = match self.open_read() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        // The last 64 KiB, and further back while the line before `offset`
        // began earlier still (an import naming many objects is long): a
        // window that held no whole line would tell nothing, and a log
        // rewritten below would go unnoticed.
        let mut take = offset.min(64 * 1024);
        loop {
            let mut buf = vec![0u8; take as usize];
            if f.seek(SeekFrom::Start(offset - take))
                .and_then(|_| f.read_exact(&mut buf))
                .is_err()
            {
                return Ok(None);
            }
            if buf.last() != Some(&b'\n') {
                return Ok(None);
            }
            let body = &buf[..buf.len() - 1];
            let line = match body.iter().rposition(|b| *b == b'\n') {
                Some(i) => &body[i + 1..],
                None if take == offset => body,
                None => {
                    take = take.saturating_mul(4).min(offset);
                    continue;
                }
            };
            return Ok(serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| v.get("hash")?.as_str().map(str::to_string)));
        }
    }
}

/// Length of the file up to and including its last newline.
fn whole_lines_len(file: &mut File, len: u64) -> std::io::Result<u64> {
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(4096);
        let mut buf = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        if let Some(i) = buf.iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// The last line of a file, without reading all of it. A file that does not
/// end in a newline (a torn write) yields an empty line, which never parses.
fn last_line(file: &mut File) -> std::io::Result<Option<String>> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(None);
    }
    let mut take = 4096u64.min(len);
    loop {
        let start = len - take;
        let mut buf = vec![0u8; take as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        if buf.last() != Some(&b'\n') {
            return Ok(Some(String::new()));
        }
        let body = &buf[..buf.len() - 1];
        if let Some(i) = body.iter().rposition(|b| *b == b'\n') {
            return Ok(Some(String::from_utf8_lossy(&body[i + 1..]).into_owned()));
        }
        if start == 0 {
            return Ok(Some(String::from_utf8_lossy(body).into_owned()));
        }
        take = (take * 2).min(len);
    }
}

#[cfg(test)]
mod tests {
    use super::trail::Admits;
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_and_escapes_like_python() {
        let v = json!({"b": 1, "a": {"z": [true, null], "y": "é\n\"x\""}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"y":"\u00e9\n\"x\"","z":[true,null]},"b":1}"#
        );
        assert_eq!(canonical_json(&json!("😀")), r#""\ud83d\ude00""#);
    }

    #[test]
    fn hash_of_first_event_follows_the_rule() {
        let ev = json!({"id": "e1", "event": "x.y", "actor": "a", "created_at": "2026-01-01T00:00:00Z",
                        "object_ids": [], "prev_hash": GENESIS_HASH});
        let expected = sha256_hex(format!("{GENESIS_HASH}{}", canonical_json(&ev)).as_bytes());
        let mut with = ev.clone();
        with["hash"] = json!(expected.clone());
        assert_eq!(event_hash(&with), expected);
    }

    /// vouch 1.x's supersede and contradict admit the relation they write,
    /// and only the id that link derives; its log line is not skipped.
    #[test]
    fn a_1x_lifecycle_event_admits_only_its_derived_relation() {
        let admitted = |event: &str, ids: &[&str]| -> Vec<String> {
            let ev = json!({"event": event, "object_ids": ids});
            assert!(Admits::may_admit(ev.to_string().as_bytes()));
            match Admits::of(&ev) {
                Admits::Objects(o) => o,
                _ => vec![],
            }
        };
        assert_eq!(
            admitted("claim.supersede", &["old", "new", "new--supersedes--old"]),
            ["new--supersedes--old"]
        );
        assert_eq!(
            admitted("claim.contradict", &["a", "b", "a--contradicts--b"]),
            ["a--contradicts--b"]
        );
        for (event, ids) in [
            (
                "claim.supersede",
                &["old", "new", "old--supersedes--new"][..],
            ),
            ("claim.supersede", &["old", "new", "some-claim"]),
            ("claim.contradict", &["a", "b", "b--contradicts--a", "x"]),
            ("claim.contradict", &["a", "b"]),
        ] {
            assert!(admitted(event, ids).is_empty(), "{event} {ids:?}");
        }
    }
}

#[cfg(test)]
mod torn_tail {
    use super::*;

    /// A plain event, before the log chains it.
    fn event(id: &str) -> AuditEvent {
        AuditEvent {
            id: id.into(),
            event: "x.y".into(),
            actor: "a".into(),
            created_at: crate::model::Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
            object_ids: vec![],
            dry_run: false,
            reversible: false,
            data: Value::Null,
            prev_hash: String::new(),
            hash: String::new(),
            extra: Default::default(),
        }
    }

    /// The hash before an offset is found however long the line before
    /// it is (an import naming many objects runs past 64 KiB).
    #[test]
    fn the_hash_before_a_long_line_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.log.jsonl"));
        log.append(&mut [event("e1")]).unwrap();
        let mut long = event("e2");
        long.data = serde_json::json!({"pad": "x".repeat(300 * 1024)});
        log.append(&mut [long]).unwrap();
        let events = log.read_all().unwrap();
        let end = std::fs::metadata(log.path()).unwrap().len();
        assert_eq!(
            log.hash_before(end).unwrap().as_deref(),
            events[1]["hash"].as_str()
        );
    }

    #[test]
    fn a_torn_last_line_is_dropped_by_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.log.jsonl"));
        let ev = event;
        log.append(&mut [ev("e1")]).unwrap();
        let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
        f.write_all(b"{\"id\":\"torn").unwrap();
        assert_eq!(
            log.read_all().unwrap().len(),
            1,
            "the torn line is not an event"
        );
        assert!(
            !log.verify().unwrap().ok,
            "verify still reports the truncation"
        );
        log.append(&mut [ev("e2")]).unwrap();
        let report = log.verify().unwrap();
        assert!(report.ok, "{report:?}");
        assert_eq!(report.events, 2);
    }

    /// An append whose write failed is taken back; but not when the log no
    /// longer ends in it (git replaced the file meanwhile): nothing is cut.
    #[test]
    fn take_back_cuts_only_its_own_events() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.log.jsonl"));
        log.append(&mut [event("e1")]).unwrap();
        let mut mine = [event("e2")];
        let start = log.append_at(&mut mine).unwrap();
        log.take_back(start, &mine[0].hash).unwrap();
        assert_eq!(log.read_all().unwrap().len(), 1);
        let mut again = [event("e3")];
        let start = log.append_at(&mut again).unwrap();
        // Another history arrives in place of the file.
        let theirs = std::fs::read(log.path()).unwrap();
        let mut other = theirs.clone();
        other.extend_from_slice(b"{\"id\":\"theirs\",\"hash\":\"x\"}\n");
        std::fs::write(log.path(), &other).unwrap();
        assert!(log.take_back(start, &again[0].hash).is_err());
        assert_eq!(std::fs::read(log.path()).unwrap(), other, "nothing was cut");
    }

    /// Found by the round-trip property test: without serde_json's exact
    /// float parsing, this float read back one unit off, so the hash
    /// recomputed over the parsed event no longer matched.
    #[test]
    fn an_event_with_a_hard_float_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.log.jsonl"));
        let mut ev = event("e1");
        ev.data = serde_json::json!({"x": -228552.23078650562f64});
        log.append(std::slice::from_mut(&mut ev)).unwrap();
        let report = log.verify().unwrap();
        assert!(report.ok, "{report:?}");
    }
}
