//! An import's event line read without building its JSON. An import names
//! every object it brought: its line is 20 MB at 100,000 claims, and
//! parsing it into strings and maps costs ~100 ms, while a search asks
//! about ten of its ids. Read here, it streams through a small window (no
//! copy of the line is held) at about the speed of `memchr`, and each
//! name is handed over as it is met, for the caller to keep or not.
//!
//! Only a line in the plain form vouch writes is read here: no backslash
//! (so no escape, and every `"` delimits a string), no control byte, valid
//! UTF-8, no number but a short integer, nesting under [`MAX_DEPTH`], each
//! top-level field named once, and `data.objects` (strings) and
//! `data.written` (strings by path) each at most once. Any other line —
//! and any that is not JSON, or not a whole line — is not read here
//! ([`read_from`] answers `None`) and the caller reads it the usual way
//! ([`crate::audit::trail::Logged::of_line`]). So both readings agree on
//! every line they both read; a test checks it on generated lines.

use memchr::memchr;
use std::io::Read;

/// Deeper nesting is read the usual way (serde_json stops at 128).
const MAX_DEPTH: u32 = 64;

/// The longest integer read here: every one fits any JSON number type.
const MAX_DIGITS: usize = 18;

/// The most read at once: the window stays in the processor's cache (it
/// grows only for a longer string).
const CHUNK: usize = 256 * 1024;

/// What a plain line says that is read here.
pub(crate) enum Item<'a> {
    /// An id in `data.objects`.
    Object(&'a [u8]),
    /// A path in `data.written` and the sha256 recorded for it.
    Written(&'a [u8], &'a [u8]),
}

/// A plain line, read: its top-level `event` (empty when it has none), its
/// own `hash` (when it has one), and its length in bytes (without the
/// newline).
pub(crate) struct Plain {
    pub(crate) event: Vec<u8>,
    pub(crate) hash: Option<Vec<u8>>,
    pub(crate) len: u64,
}

/// Read a line whose first bytes are `start` and whose rest `rest` yields
/// (up to and past its newline), if it is plain, handing each item of
/// `data.objects` and `data.written` to `visit` as it is met. `Ok(None)`
/// when it is not plain, not JSON, or has no newline: the caller forgets
/// what `visit` saw and reads the line the usual way.
pub(crate) fn read_from<R: Read>(
    start: Vec<u8>,
    rest: R,
    visit: &mut impl FnMut(Item<'_>),
) -> std::io::Result<Option<Plain>> {
    let mut c = Cursor {
        src: rest,
        end: start.len(),
        buf: start,
        base: 0,
        i: 0,
        keep: usize::MAX,
        chunk: 64 * 1024,
        done: false,
        torn: false,
        odd: false,
        wide: false,
        err: None,
    };
    c.check_from(0);
    let event = c.event_object(visit);
    c.ws();
    if let Some(e) = c.err {
        return Err(e);
    }
    let whole = c.byte(c.i).is_none() && c.done && !c.torn && !c.odd;
    Ok(event.filter(|_| whole).map(|(event, hash)| Plain {
        event,
        hash,
        len: (c.base + c.end) as u64,
    }))
}

/// [`read_from`] a whole line held in memory: its `event`.
#[cfg(test)]
pub(crate) fn read(line: &[u8], visit: &mut impl FnMut(Item<'_>)) -> Option<Vec<u8>> {
    let plain = read_from(Vec::new(), line.chain(&b"\n"[..]), visit).ok()??;
    Some(plain.event)
}

/// A window on the line, moving forward: positions are offsets in the
/// line; bytes before the current token (or a marked one) are dropped as
/// more are read.
struct Cursor<R> {
    src: R,
    /// The window's bytes are `buf[..end]`; the rest is room, written
    /// once (so a refill never clears it again).
    buf: Vec<u8>,
    end: usize,
    /// The line offset of `buf[0]`.
    base: usize,
    /// The next byte to read.
    i: usize,
    /// Kept at a refill from here on, too (`usize::MAX`: only from `i`).
    keep: usize,
    /// How much the next refill reads.
    chunk: usize,
    /// The line's newline (cut off), or the end of the source, was met.
    done: bool,
    /// The source ended with no newline: no whole line.
    torn: bool,
    /// A backslash or a control byte: not plain.
    odd: bool,
    /// A byte past ASCII was met: strings are checked for UTF-8.
    wide: bool,
    err: Option<std::io::Error>,
}

impl<R: Read> Cursor<R> {
    fn window(&self) -> &[u8] {
        &self.buf[..self.end]
    }

    /// Check the bytes read from `had` on (up to the line's newline): no
    /// backslash, no control byte.
    fn check_from(&mut self, had: usize) {
        if let Some(nl) = memchr(b'\n', &self.buf[had..self.end]) {
            self.end = had + nl;
            self.done = true;
        }
        // Passes the compiler or the library vectorise.
        let new = &self.buf[had..self.end];
        let least = new.iter().fold(u8::MAX, |m, b| m.min(*b));
        self.odd |= least < 0x20 || memchr(b'\\', new).is_some();
        self.wide |= !new.is_ascii();
        if self.odd {
            self.done = true;
        }
    }

    /// Read more of the line; `false` when there is no more.
    fn refill(&mut self) -> bool {
        if self.done {
            return false;
        }
        let cut = self.keep.min(self.i) - self.base;
        self.buf.copy_within(cut..self.end, 0);
        self.end -= cut;
        self.base += cut;
        let (had, room) = (self.end, self.end + self.chunk);
        if self.buf.len() < room {
            self.buf.resize(room, 0);
        }
        let got = loop {
            match self.src.read(&mut self.buf[had..room]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                got => break got,
            }
        };
        match got {
            Ok(0) => {
                self.done = true;
                self.torn = true;
                return false;
            }
            Ok(n) => self.end += n,
            Err(e) => {
                self.err = Some(e);
                self.done = true;
                return false;
            }
        }
        self.chunk = (self.chunk * 2).min(CHUNK);
        self.check_from(had);
        !self.odd && self.end > had
    }

    /// The byte at line offset `at`, reading on to it.
    fn byte(&mut self, at: usize) -> Option<u8> {
        while at >= self.base + self.end {
            if !self.refill() {
                return None;
            }
        }
        (!self.odd).then(|| self.buf[at - self.base])
    }

    fn slice(&self, (from, to): (usize, usize)) -> &[u8] {
        &self.buf[from - self.base..to - self.base]
    }

    fn ws(&mut self) {
        while self.byte(self.i) == Some(b' ') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.byte(self.i)
    }

    /// The next byte is `c`: taken.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// An empty object or array ends here (`close` taken).
    fn closes(&mut self, close: u8) -> bool {
        let closed = self.peek() == Some(close);
        self.i += usize::from(closed);
        closed
    }

    /// After a member: `true` at a comma, `false` at `close` (taken).
    fn more(&mut self, close: u8) -> Option<bool> {
        // No space before it, and already in the window: how vouch writes.
        let next = match self.window().get(self.i - self.base) {
            Some(c) if !self.odd && *c != b' ' => *c,
            _ => self.peek()?,
        };
        match next {
            b',' => {
                self.i += 1;
                Some(true)
            }
            c if c == close => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Where a string's bytes are (no backslash: the next quote ends it).
    fn string(&mut self) -> Option<(usize, usize)> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let mut from = start;
        loop {
            if let Some(n) = self
                .window()
                .get(from - self.base..)
                .and_then(|b| memchr(b'"', b))
            {
                let end = from + n;
                if self.wide && std::str::from_utf8(self.slice((start, end))).is_err() {
                    return None;
                }
                self.i = end + 1;
                return Some((start, end));
            }
            from = self.base + self.end;
            if !self.refill() {
                return None;
            }
        }
    }

    /// A string starting right at `at`, with the byte after it, already
    /// in the window (no refill, no space): where its bytes are. `None`
    /// sends the caller the long way ([`Cursor::string`]).
    fn string_here(&self, at: usize) -> Option<(usize, usize)> {
        let w = &self.buf[at - self.base..self.end];
        if w.first() != Some(&b'"') {
            return None;
        }
        let n = memchr(b'"', &w[1..])?;
        if self.wide && std::str::from_utf8(&w[1..1 + n]).is_err() {
            return None;
        }
        Some((at + 1, at + 1 + n))
    }

    /// A container opened by `open` (taken) and closed by `close`:
    /// `member` reads each of its members, the commas between are taken.
    fn each(
        &mut self,
        open: u8,
        close: u8,
        mut member: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        if self.closes(close) {
            return Some(());
        }
        loop {
            member(self)?;
            if !self.more(close)? {
                return Some(());
            }
        }
    }

    /// A member's key and its colon.
    fn key(&mut self) -> Option<(usize, usize)> {
        let key = self.string()?;
        self.eat(b':')?;
        Some(key)
    }

    /// The top-level object: its `event` and its `hash`.
    fn event_object(
        &mut self,
        visit: &mut impl FnMut(Item<'_>),
    ) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        let mut event = Vec::new();
        let mut hash = None;
        let mut seen: Vec<Vec<u8>> = Vec::new();
        self.each(b'{', b'}', |c| {
            let key = c.key()?;
            let key = c.slice(key).to_vec();
            if seen.contains(&key) {
                return None; // a field twice: serde refuses the event
            }
            match &key[..] {
                b"data" => c.data(visit)?,
                b"event" => {
                    let s = c.string()?;
                    event = c.slice(s).to_vec();
                }
                // A hash that is no string is read the usual way.
                b"hash" => {
                    let s = c.string()?;
                    hash = Some(c.slice(s).to_vec());
                }
                // The fields the usual reading takes as strings and a list.
                b"id" | b"actor" => {
                    c.string()?;
                }
                b"object_ids" if c.peek()? != b'[' => return None,
                _ => c.value(1)?,
            }
            seen.push(key);
            Some(())
        })?;
        Some((event, hash))
    }

    /// `data`: an object whose `objects` and `written` are visited (each
    /// named at most once).
    fn data(&mut self, visit: &mut impl FnMut(Item<'_>)) -> Option<()> {
        let (mut objects, mut written) = (false, false);
        self.each(b'{', b'}', |c| {
            let key = c.key()?;
            match c.slice(key) {
                b"objects" if !std::mem::replace(&mut objects, true) => c.objects(visit),
                b"written" if !std::mem::replace(&mut written, true) => c.written(visit),
                b"objects" | b"written" => None,
                _ => c.value(2),
            }
        })
    }

    /// `data.objects`: strings only.
    fn objects(&mut self, visit: &mut impl FnMut(Item<'_>)) -> Option<()> {
        self.each(b'[', b']', |c| {
            // `"id"` in the window as vouch writes it: taken at once.
            let id = match c.string_here(c.i) {
                Some(id) => {
                    c.i = id.1 + 1;
                    id
                }
                None => c.string()?,
            };
            visit(Item::Object(c.slice(id)));
            Some(())
        })
    }

    /// `data.written`: a sha256 string by path.
    fn written(&mut self, visit: &mut impl FnMut(Item<'_>)) -> Option<()> {
        self.each(b'{', b'}', |c| {
            // `"path":"sha"` in the window as vouch writes it: taken at once.
            if let Some(path) = c.string_here(c.i)
                && c.window().get(path.1 + 1 - c.base) == Some(&b':')
                && let Some(sha) = c.string_here(path.1 + 2)
            {
                visit(Item::Written(c.slice(path), c.slice(sha)));
                c.i = sha.1 + 1;
                return Some(());
            }
            let path = c.string()?;
            // The path stays in the window while its sha256 is read.
            c.keep = path.0;
            c.eat(b':')?;
            let sha = c.string()?;
            visit(Item::Written(c.slice(path), c.slice(sha)));
            c.keep = usize::MAX;
            Some(())
        })
    }

    /// Any value, checked and passed over.
    fn value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.each(b'{', b'}', |c| {
                c.key()?;
                c.value(depth + 1)
            }),
            b'[' => self.each(b'[', b']', |c| c.value(depth + 1)),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        for (k, c) in w.iter().enumerate() {
            if self.byte(self.i + k)? != *c {
                return None;
            }
        }
        self.i += w.len();
        Some(())
    }

    /// A short integer (`-?(0|[1-9][0-9]*)`); a fraction, an exponent or
    /// a long one is not plain (what follows it does not parse here).
    fn integer(&mut self) -> Option<()> {
        if self.byte(self.i)? == b'-' {
            self.i += 1;
        }
        let first = self.byte(self.i);
        let mut digits = 0;
        while self.byte(self.i).is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
            digits += 1;
        }
        if digits == 0 || digits > MAX_DIGITS || (digits > 1 && first == Some(b'0')) {
            return None;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Item, read};
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use std::io::Read as _;

    /// What a line says read here: (event, objects, written), or `None`.
    type Read = (String, Vec<String>, Vec<(String, String)>);

    fn read_here(line: &[u8]) -> Option<Read> {
        let (mut objects, mut written) = (Vec::new(), Vec::new());
        let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        let event = read(line, &mut |item| match item {
            Item::Object(id) => objects.push(s(id)),
            Item::Written(p, sha) => written.push((s(p), s(sha))),
        })?;
        Some((s(&event), objects, written))
    }

    /// What the usual reading says of an import line: its objects (when
    /// it names them) and what it wrote, last entry for a path standing.
    fn read_usually(line: &[u8]) -> (Vec<String>, Vec<(String, String)>) {
        let logged = crate::audit::trail::Logged::of_line(line);
        let objects = match logged.admits {
            crate::audit::trail::Admits::Objects(ids) => ids,
            _ => Vec::new(),
        };
        (objects, logged.written)
    }

    fn agree(line: &[u8]) {
        let Some((event, mut objects, written)) = read_here(line) else {
            return;
        };
        let (mut want_objects, want_written) = read_usually(line);
        if event != "bundle.import" {
            return; // read the usual way by every caller
        }
        objects.sort();
        want_objects.sort();
        assert_eq!(objects, want_objects, "{}", String::from_utf8_lossy(line));
        let last: std::collections::BTreeMap<_, _> = written.into_iter().collect();
        let want: std::collections::BTreeMap<_, _> = want_written.into_iter().collect();
        assert_eq!(last, want, "{}", String::from_utf8_lossy(line));
    }

    #[test]
    fn the_line_vouch_writes_is_read_here() {
        let line = serde_json::to_vec(&json!({
            "actor": "alice", "created_at": "2026-01-01T00:00:00Z",
            "data": {"identical": 0, "imported": 2, "objects": ["a", "b"], "path": "/x/é.tar.gz",
                     "proposed": [], "skipped": -1, "written": {"claims/a.yaml": "s1"}},
            "dry_run": false, "event": "bundle.import", "hash": "h", "id": "e",
            "object_ids": ["sha"], "prev_hash": "p", "reversible": null
        }))
        .unwrap();
        let (event, objects, written) = read_here(&line).expect("plain");
        assert_eq!(event, "bundle.import");
        assert_eq!(objects, ["a", "b"]);
        assert_eq!(written, [("claims/a.yaml".into(), "s1".into())]);
        agree(&line);
    }

    #[test]
    fn what_is_not_plain_is_left_to_the_usual_reading() {
        for line in [
            // An escape, a fraction, a long integer, an exponent.
            r#"{"event":"bundle.import","data":{"objects":["a\"b"]}}"#,
            r#"{"event":"bundle.import","data":{"objects":["a"],"n":1.5}}"#,
            r#"{"event":"bundle.import","data":{"objects":["a"],"n":1234567890123456789}}"#,
            r#"{"event":"bundle.import","data":{"objects":["a"],"n":1e400}}"#,
            // A field twice; objects twice; an object that is no string.
            r#"{"event":"bundle.import","event":"x","data":{"objects":["a"]}}"#,
            r#"{"event":"bundle.import","data":{"objects":["a"],"objects":["b"]}}"#,
            r#"{"event":"bundle.import","data":{"objects":["a",7]}}"#,
            // Fields of the wrong type, a tab, trailing bytes, a list.
            r#"{"event":"bundle.import","id":7,"data":{"objects":["a"]}}"#,
            r#"{"event":"bundle.import","object_ids":{},"data":{"objects":["a"]}}"#,
            "{\"event\":\"bundle.import\",\t\"data\":{\"objects\":[\"a\"]}}",
            r#"{"event":"bundle.import","data":{"objects":["a"]}} x"#,
            r#"["e","bundle.import","alice",[],{"objects":["a"]}]"#,
            r#"{"event":"bundle.import","data":{"objects":["a"]}"#,
        ] {
            assert!(read_here(line.as_bytes()).is_none(), "{line}");
        }
    }

    /// However the line falls across the window's refills — a string, a
    /// path and its sha256, a key cut anywhere — it reads the same.
    #[test]
    fn a_long_line_reads_the_same_wherever_the_window_is_cut() {
        let objects: Vec<String> = (0..1500).map(|i| format!("claim-{i}")).collect();
        let written: serde_json::Map<String, Value> = objects
            .iter()
            .map(|o| (format!("claims/{o}.yaml"), json!(format!("{o:0>64}"))))
            .collect();
        let line = serde_json::to_vec(&json!({
            "actor": "alice", "data": {"imported": 1500, "objects": objects, "written": written},
            "event": "bundle.import", "hash": "h", "object_ids": ["s"]
        }))
        .unwrap();
        assert!(line.len() > 100 * 1024, "refilled more than once");
        let whole = read_here(&line).expect("plain");
        assert_eq!(whole.1.len(), 1500);
        for split in (0..400).step_by(3) {
            let (mut objects, mut written) = (Vec::new(), Vec::new());
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            let rest = line[split..].chain(&b"\n{\"next\":1}\n"[..]);
            let plain = super::read_from(line[..split].to_vec(), rest, &mut |item| match item {
                Item::Object(id) => objects.push(s(id)),
                Item::Written(p, sha) => written.push((s(p), s(sha))),
            })
            .unwrap()
            .expect("plain");
            assert_eq!(plain.len, line.len() as u64);
            assert_eq!(
                (s(&plain.event), objects, written),
                whole,
                "split at {split}"
            );
        }
    }

    /// A JSON value of the shapes an event holds, small enough to shrink.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            "[a-z\"\\\\/ é\u{1}]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{0,3}|objects|written", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever line this reads, it says what the usual reading says
        /// — whole, cut short, or with a byte changed.
        #[test]
        fn a_line_read_here_says_what_the_usual_reading_says(
            objects in prop::collection::vec(prop_oneof![
                "[a-z0-9-]{1,8}".prop_map(Value::String), value()], 0..6),
            written in prop::collection::btree_map("[a-z/.]{1,8}", prop_oneof![
                "[0-9a-f]{1,8}".prop_map(Value::String), value()], 0..4),
            extra in prop::collection::btree_map("[a-z_]{1,8}", value(), 0..3),
            event in prop_oneof![Just("bundle.import".to_string()), "[a-z.]{1,12}"],
            cut in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut data = serde_json::Map::new();
            data.insert("objects".into(), Value::Array(objects));
            data.insert("written".into(), Value::Object(written.into_iter().collect()));
            let mut ev = serde_json::Map::new();
            ev.insert("event".into(), Value::String(event));
            ev.insert("data".into(), Value::Object(data));
            ev.extend(extra);
            let line = serde_json::to_vec(&Value::Object(ev)).unwrap();
            agree(&line);
            let at = cut.index(line.len());
            agree(&line[..at]);
            let mut changed = line.clone();
            changed[at] = byte;
            if !changed.contains(&b'\n') {
                agree(&changed);
            }
        }
    }
}
