//! The FTS index's postings held in memory by a long-running process, so
//! that ranking a query whose words are in thousands of documents costs
//! the best k found over packed lists ([`crate::index::bm25`]: blocks and
//! windows that cannot reach the k-th best are skipped) instead of FTS5's
//! `ORDER BY rank`, which scores every match (each one a statement to
//! read the row's size and a walk of its position lists: ~1 µs a row, 10
//! ms for the 10,000 rows that share a common phrase at 100,000 claims).
//!
//! Exact, not approximate: the postings are read from FTS5's own index
//! (`fts5vocab`, so every token is the one FTS5 made), words are turned
//! into tokens by an FTS5 table with the same tokenizer, and scores are
//! computed with FTS5's bm25 formula in its order of operations, so ranks
//! and ties come out as the SQL path gives them (a test compares them).
//!
//! Current, or unused: every write to the FTS tables bumps
//! `meta.generation` in the same transaction. This process updates its
//! postings with its own writes; a write by another process (or a rebuild)
//! leaves them behind, and searches go through SQL until the next
//! [`refresh`] (the server's background tick) reads them again.

use super::*;
use crate::index::bm25::{Admit, Postings, class_of};
use std::sync::Mutex;

/// Past this many documents changed in one write, the postings are read
/// again rather than patched.
const PATCH_AT_MOST: usize = 256;

/// Which file (`meta.vectors_file`), which generation of it and which
/// schema (tokenizer included) a connection sees. No generation (a file an
/// older vouch wrote) never matches.
type Version = (String, Option<i64>, Option<String>);

/// The postings of one version of the FTS tables.
pub(crate) struct Held {
    version: Version,
    postings: Postings,
}

/// An in-memory FTS5 table with the index's tokenizer: turns words and
/// documents into exactly the tokens FTS5 makes of them.
pub(crate) struct Tokenizer {
    conn: Connection,
}

impl Tokenizer {
    fn new(kb: &Ix) -> Result<Tokenizer> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE tok USING fts5(title, body, tokenize='{}');
             CREATE VIRTUAL TABLE tok_i USING fts5vocab(tok, instance);",
            tokenizer(kb)
        ))?;
        Ok(Tokenizer { conn })
    }

    /// The tokens of each text, in order, with the column each is in.
    fn tokens(&self, rows: &[(&str, &str)]) -> Result<Vec<Vec<(String, u8)>>> {
        self.conn.execute_batch("BEGIN; DELETE FROM tok;")?;
        let res = (|| -> Result<Vec<Vec<(String, u8)>>> {
            let mut insert = self
                .conn
                .prepare_cached("INSERT INTO tok(rowid, title, body) VALUES(?1, ?2, ?3)")?;
            for (i, (title, body)) in rows.iter().enumerate() {
                insert.execute(params![i as i64 + 1, title, body])?;
            }
            let mut out = vec![Vec::new(); rows.len()];
            let mut read = self
                .conn
                .prepare_cached("SELECT doc, term, col FROM tok_i ORDER BY doc, col, offset")?;
            let all = read.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            for row in all {
                let (doc, term, col) = row?;
                let col = u8::from(col != "title");
                if let Some(list) = out.get_mut(doc as usize - 1) {
                    list.push((term, col));
                }
            }
            Ok(out)
        })();
        self.conn.execute_batch("ROLLBACK")?;
        res
    }
}

/// This process's postings and tokenizer (in `Kb`).
#[derive(Default)]
pub(crate) struct Memory {
    pub(crate) postings: std::sync::RwLock<Option<Held>>,
    tokenizer: Mutex<Option<Tokenizer>>,
    /// Word → token, for words that make exactly one token.
    words: Mutex<HashMap<String, Option<Box<str>>>>,
}

fn version(conn: &Connection) -> Result<Version> {
    let get = |key: &str| -> Result<Option<String>> {
        Ok(conn
            .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    };
    Ok((
        get("vectors_file")?.unwrap_or_default(),
        get("generation")?.and_then(|v| v.parse().ok()),
        get("schema")?,
    ))
}

/// Postings read under `version` may rank for this process: a generation
/// is known, and the schema (so the tokenizer) is this process's.
fn usable(kb: &Ix, version: &Version) -> bool {
    version.1.is_some() && version.2.as_deref() == Some(schema_tag(kb).as_str())
}

impl Index {
    /// Count one more write to the FTS tables; returns the generation
    /// before and after. Called inside the write's transaction.
    pub(crate) fn bump_generation(&self) -> Result<(i64, i64)> {
        let before = version(&self.conn)?.1.unwrap_or(0);
        let after = before + 1;
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES('generation', ?1)",
            [after.to_string()],
        )?;
        Ok((before, after))
    }
}

/// A new schema starts a generation nobody has seen (a file's identity
/// survives a schema change, so counting from zero again could match
/// postings read before it).
pub(crate) fn fresh_generation(conn: &Connection) -> Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(1);
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES('generation', ?1)",
        [now.to_string()],
    )?;
    Ok(())
}

/// A change to one FTS row: its class ([`class_of`]) and text now, or
/// `None` when it went.
pub(crate) type Touched = (i64, Option<(u8, String, String)>);

/// The FTS rows a write changed, while few enough to patch the postings
/// with: past [`PATCH_AT_MOST`] only that they were too many is kept (a
/// rebuild would otherwise hold a second copy of every document's text).
#[derive(Default)]
pub(crate) struct TouchedRows {
    rows: Vec<Touched>,
    too_many: bool,
}

impl TouchedRows {
    /// Row `rowid` changed; `text` is its class and text now (asked only
    /// while the rows are few).
    pub(crate) fn push(&mut self, rowid: i64, text: impl FnOnce() -> Option<(u8, String, String)>) {
        if self.too_many {
            return;
        }
        if self.rows.len() >= PATCH_AT_MOST {
            self.too_many = true;
            self.rows = Vec::new();
            return;
        }
        self.rows.push((rowid, text()));
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.too_many && self.rows.is_empty()
    }
}

/// Read every posting of `conn`'s FTS index, in one read transaction.
fn read(conn: &Connection) -> Result<Held> {
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vouch_fts_i
             USING fts5vocab(main, fts, instance);
         BEGIN;",
    )?;
    let res = (|| -> Result<Held> {
        let version = version(conn)?;
        // Each row's class from its docs row (none: no search returns it),
        // in rowid order (the builder's).
        let docs: Vec<(i64, u8)> = conn
            .prepare(
                "SELECT f.id, d.kind, d.status FROM fts_docsize f \
                 LEFT JOIN docs d ON d.rowid = f.id ORDER BY f.id",
            )?
            .query_map([], |r| {
                let text = |i| -> rusqlite::Result<Option<&str>> {
                    r.get_ref(i)?
                        .as_str_or_null()
                        .map_err(rusqlite::Error::from)
                };
                let class = class_of(text(1)?.unwrap_or(""), text(2)?);
                Ok((r.get(0)?, class))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let (rowids, classes): (Vec<i64>, Vec<u8>) = docs.into_iter().unzip();
        let mut postings = Postings::builder(&rowids, &classes);
        drop((rowids, classes));
        let mut stmt = conn.prepare("SELECT term, doc, col FROM temp.vouch_fts_i")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let term = r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            let doc: i64 = r.get(1)?;
            let title = r.get_ref(2)?.as_str().map_err(rusqlite::Error::from)? == "title";
            postings.push(term, doc, title);
        }
        Ok(Held {
            version,
            postings: postings.finish(),
        })
    })();
    conn.execute_batch("COMMIT")?;
    res
}

impl Memory {
    fn tokenizer<R>(&self, kb: &Ix, f: impl FnOnce(&Tokenizer) -> Result<R>) -> Result<R> {
        let mut slot = self.tokenizer.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(Tokenizer::new(kb)?);
        }
        f(slot.as_ref().expect("tokenizer just made"))
    }

    /// The token each word makes, or `None` if some word makes none or
    /// several (a phrase the postings cannot answer alone).
    fn tokens_of(&self, kb: &Ix, words: &[&String]) -> Result<Option<Vec<Box<str>>>> {
        let mut known = self.words.lock().unwrap_or_else(|e| e.into_inner());
        let missing: Vec<&String> = words
            .iter()
            .filter(|w| !known.contains_key(w.as_str()))
            .copied()
            .collect();
        if !missing.is_empty() {
            let rows: Vec<(&str, &str)> = missing.iter().map(|w| ("", w.as_str())).collect();
            let made = self.tokenizer(kb, |t| t.tokens(&rows))?;
            if known.len() > 100_000 {
                known.clear();
            }
            for (w, toks) in missing.iter().zip(made) {
                let one = (toks.len() == 1).then(|| toks[0].0.as_str().into());
                known.insert(w.to_string(), one);
            }
        }
        Ok(words
            .iter()
            .map(|w| known.get(w.as_str()).cloned().flatten())
            .collect())
    }
}

/// The current held postings and the phrases `words` make in them, when
/// this process holds postings current for `idx`'s file and every word
/// makes exactly one token. `None`: ask SQL.
fn with_phrases<R>(
    kb: &Ix,
    idx: &Index,
    words: &[&String],
    f: impl FnOnce(&Postings, &[Option<u32>]) -> R,
) -> Result<Option<R>> {
    let memory = &kb.index_state.memory;
    let guard = memory.postings.read().unwrap_or_else(|e| e.into_inner());
    let Some(held) = guard.as_ref() else {
        return Ok(None);
    };
    if !held.postings.exact() || held.version != version(&idx.conn)? {
        return Ok(None);
    }
    // A word the tokenizer could not take is SQL's to rank.
    let Ok(Some(tokens)) = memory.tokens_of(kb, words) else {
        return Ok(None);
    };
    let phrases: Vec<Option<u32>> = tokens.iter().map(|t| held.postings.token(t)).collect();
    Ok(Some(f(&held.postings, &phrases)))
}

/// The best `want` matches of `words` (all of them, or any) that `admit`
/// lets in, in `ORDER BY bm25(fts, 2.0, 1.0), rowid` order, with FTS5's
/// scores — when this process holds postings current for `idx`'s file.
/// `None`: ask SQL.
pub(crate) fn ranked_rows(
    kb: &Ix,
    idx: &Index,
    words: &[&String],
    all: bool,
    (want, admit): (usize, Admit),
) -> Result<Option<Vec<(f64, i64)>>> {
    with_phrases(kb, idx, words, |postings, phrases| {
        postings.top(phrases, all, want, admit)
    })
}

/// How many documents hold `word` now (as `SELECT count(*) ... MATCH`
/// counts them), from the postings when current. `None`: ask SQL.
pub(crate) fn doc_freq(kb: &Ix, idx: &Index, word: &String) -> Result<Option<usize>> {
    with_phrases(kb, idx, &[word], |postings, phrases| {
        phrases[0].map_or(0, |t| postings.live_count(t) as usize)
    })
}

/// After this process committed a write to the FTS tables: patch its
/// postings if they were current just before, or let them go.
pub(crate) fn after_commit(kb: &Ix, generations: (i64, i64), touched: &TouchedRows) {
    let memory = &kb.index_state.memory;
    let current = |p: &Option<Held>| {
        p.as_ref()
            .is_some_and(|p| p.version.1 == Some(generations.0))
    };
    if !current(&memory.postings.read().unwrap_or_else(|e| e.into_inner())) {
        return;
    }
    // Tokenized before the write lock is taken: searches go on meanwhile.
    let texts: Vec<(&str, &str)> = touched
        .rows
        .iter()
        .filter_map(|(_, t)| t.as_ref().map(|(_, a, b)| (a.as_str(), b.as_str())))
        .collect();
    let made = if touched.too_many {
        None
    } else {
        memory.tokenizer(kb, |t| t.tokens(&texts)).ok()
    };
    let mut guard = memory.postings.write().unwrap_or_else(|e| e.into_inner());
    let Some(mut made) = made.filter(|_| current(&guard)) else {
        // Unless a refresh meanwhile read them with this write in.
        if guard
            .as_ref()
            .is_none_or(|p| p.version.1 != Some(generations.1))
        {
            *guard = None;
        }
        return;
    };
    let Some(held) = guard.as_mut() else {
        return;
    };
    let postings = &mut held.postings;
    made.reverse();
    for (rowid, text) in &touched.rows {
        match text {
            Some((class, ..)) => {
                let toks = made.pop().unwrap_or_default();
                postings.insert(*rowid, *class, &toks);
            }
            None => postings.remove(*rowid),
        }
    }
    held.version.1 = Some(generations.1);
    // Mostly tombstones: read afresh on the next refresh.
    let (slots, dead) = held.postings.slots();
    if dead > slots / 4 + 1024 {
        *guard = None;
    }
}

/// Read the postings again if they are missing or behind the file (the
/// server's background tick; never on a request's path), unless
/// `retrieval.postings_in_memory: false`. Reads through a
/// connection of its own, so searches go on meanwhile.
pub(crate) fn refresh(kb: &Ix) -> Result<()> {
    if !kb.settings().retrieval.postings_in_memory {
        return Ok(());
    }
    let _lease = Lease::own(kb);
    let path = kb.layout().index_db();
    if !path.exists() {
        return Ok(());
    }
    let conn = open_db(
        kb,
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let now = version(&conn)?;
    if !usable(kb, &now) {
        *kb.index_state
            .memory
            .postings
            .write()
            .unwrap_or_else(|e| e.into_inner()) = None;
        return Ok(());
    }
    {
        let guard = kb
            .index_state
            .memory
            .postings
            .read()
            .unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_some_and(|p| p.version == now) {
            return Ok(());
        }
    }
    let fresh = read(&conn)?;
    *kb.index_state
        .memory
        .postings
        .write()
        .unwrap_or_else(|e| e.into_inner()) = Some(fresh);
    Ok(())
}

/// Bytes the postings hold (approximately), for benchmarks.
pub(crate) fn postings_bytes(state: &IndexState) -> usize {
    let guard = state
        .memory
        .postings
        .read()
        .unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or(0, |held| held.postings.bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::Kb;
    use crate::model::*;
    use crate::store::Dir;
    use crate::stored::Stored;

    const WORDS: &[&str] = &[
        "retries",
        "retry",
        "queue",
        "billing",
        "service",
        "owns",
        "payments",
        "schema",
        "migration",
        "locked",
        "table",
        "audit",
        "record",
        "every",
        "change",
        "the",
        "a",
        "deploy",
        "approval",
        "requests",
        "per",
        "second",
        "Zürich",
        "naïve",
        "42",
    ];

    use crate::clock::SeededRng as Rng;

    /// `len` words of the test vocabulary.
    fn text(rng: &mut Rng, len: usize) -> String {
        (0..len)
            .map(|_| *rng.pick(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn write_claim(kb: &Kb, id: &str, text: &str) {
        crate::testing::write_claim_file(kb, id, text);
    }

    /// A claim of `status` (its text may be one already indexed: only the
    /// status changed).
    fn write_claim_of(kb: &Kb, id: &str, text: &str, status: crate::model::ClaimStatus) {
        crate::testing::write_claim_file_of(kb, id, text, status);
    }

    fn write_page(kb: &Kb, id: &str, title: &str, body: &str) {
        let now = kb.now();
        let page = Page {
            id: id.into(),
            title: title.into(),
            page_type: PageType::Workflow,
            status: PageStatus::Active,
            claims: vec![],
            entities: vec![],
            sources: vec![],
            tags: vec![],
            created_at: now,
            updated_at: now,
            approved_by: Some("alice".into()),
            extra: Default::default(),
            body: body.into(),
        };
        let path = kb.layout().file(Dir::Pages, id).unwrap();
        std::fs::write(path, page.encode().unwrap()).unwrap();
    }

    /// Every match of `words` as SQL ranks it: `(bm25, rowid)`.
    fn by_sql(idx: &Index, words: &[&String], all: bool) -> Vec<(f64, i64)> {
        let q = words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(if all { " AND " } else { " OR " });
        idx.conn
            .prepare("SELECT bm25(fts, 2.0, 1.0) AS r, rowid FROM fts WHERE fts MATCH ?1 ORDER BY r, rowid")
            .unwrap()
            .query_map([q], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// The filters a check tries: every kind and status, and what context
    /// packs and claim searches ask for.
    fn filters() -> [(Vec<DocKind>, Currency); 3] {
        [
            (DocKind::ALL.to_vec(), Currency::Any),
            (vec![DocKind::Claim, DocKind::Page], Currency::Current),
            (vec![DocKind::Claim], Currency::Current),
        ]
    }

    /// SQL's rows that the docs table says pass a filter, by the rule the
    /// SQL path of `ranked` applies (not the postings' classes).
    fn passing(
        idx: &Index,
        rows: &[(f64, i64)],
        kinds: &[DocKind],
        currency: Currency,
    ) -> Vec<(f64, i64)> {
        let mut doc = idx
            .conn
            .prepare("SELECT kind, status FROM docs WHERE rowid = ?1")
            .unwrap();
        rows.iter()
            .copied()
            .filter(|(_, rowid)| {
                let (kind, status): (String, Option<String>) = doc
                    .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
                    .unwrap();
                DocKind::parse(&kind).is_some_and(|k| kinds.contains(&k))
                    && currency.admits(status.as_deref())
            })
            .collect()
    }

    /// For many queries, the postings give exactly SQL's rows, scores (to
    /// the bit) and order, unfiltered and filtered by kind and status;
    /// returns how many queries had matches.
    fn same_as_sql(kb: &Kb, rng: &mut Rng) -> usize {
        let queries: Vec<(Vec<String>, bool)> = (0..120)
            .map(|round| {
                let n = 1 + rng.below(4);
                let words: Vec<String> = (0..n)
                    .map(|_| rng.pick(WORDS).to_lowercase())
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect();
                (words, round % 2 == 0)
            })
            .collect();
        with_index(&crate::testing::sqlite(kb), |idx| {
            let mut matched = 0;
            for (words, all) in &queries {
                let words: Vec<&String> = words.iter().collect();
                let all = *all;
                let every = by_sql(idx, &words, all);
                matched += usize::from(!every.is_empty());
                for (kinds, currency) in filters() {
                    let want = passing(idx, &every, &kinds, currency);
                    let admit = Admit::new(&kinds, currency);
                    // The best k for several k (ties at the k-th place
                    // included), and every match.
                    for k in [1, 3, 10, usize::MAX] {
                        let got =
                            ranked_rows(&crate::testing::sqlite(kb), idx, &words, all, (k, admit))?
                                .unwrap_or_else(|| panic!("postings not used for {words:?}"));
                        let want = &want[..want.len().min(k)];
                        let case = format!("{words:?} all={all} k={k} {kinds:?} {currency:?}");
                        assert_eq!(got.len(), want.len(), "{case}");
                        for (g, w) in got.iter().zip(want) {
                            assert_eq!(g.1, w.1, "{case}: order differs");
                            assert_eq!(g.0.to_bits(), w.0.to_bits(), "{case}: score differs");
                        }
                    }
                }
            }
            Ok(matched)
        })
        .unwrap()
    }

    /// No current postings: searches are ranked by SQL.
    fn assert_sql_answers(kb: &Kb) {
        let w = "queue".to_string();
        let unused = with_index(&crate::testing::sqlite(kb), |idx| {
            let admit = Admit::new(DocKind::ALL, Currency::Any);
            Ok(ranked_rows(&crate::testing::sqlite(kb), idx, &[&w], true, (10, admit))?.is_none())
        });
        assert!(unused.unwrap());
    }

    /// The postings mirror the file's current generation.
    fn assert_current(kb: &Kb, why: &str) {
        let now = with_index(&crate::testing::sqlite(kb), |idx| version(&idx.conn)).unwrap();
        let held = crate::testing::sqlite(kb)
            .index_state
            .memory
            .postings
            .read()
            .unwrap();
        assert_eq!(held.as_ref().map(|p| p.version.clone()), Some(now), "{why}");
    }

    #[test]
    fn postings_rank_exactly_as_fts5_bm25_and_follow_writes() {
        let (_dir, kb) = crate::testing::test_kb();
        let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
        for i in 0..300 {
            let len = 3 + rng.below(12);
            write_claim(&kb, &format!("c-{i}"), &text(&mut rng, len));
        }
        for i in 0..20 {
            let (title, body) = (text(&mut rng, 3), text(&mut rng, 40));
            write_page(&kb, &format!("p-{i}"), &title, &body);
        }
        for i in 0..30 {
            let len = 3 + rng.below(12);
            let status = [
                ClaimStatus::Superseded,
                ClaimStatus::Archived,
                ClaimStatus::Stable,
            ][i % 3];
            write_claim_of(&kb, &format!("s-{i}"), &text(&mut rng, len), status);
        }
        kb.index().catch_up(&kb).unwrap();
        // No postings yet: SQL answers.
        assert_sql_answers(&kb);
        refresh(&crate::testing::sqlite(&kb)).unwrap();
        assert!(same_as_sql(&kb, &mut rng) > 60);

        // Edits, additions and deletions seen by a sync patch the postings
        // (no refresh in between) and keep them exact. First out of the
        // sync's 2 s "racy" window, so it re-reads only what changes.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        for i in 0..40 {
            let len = 3 + rng.below(12);
            write_claim(&kb, &format!("c-{i}"), &text(&mut rng, len));
        }
        for i in 300..320 {
            let len = 3 + rng.below(12);
            write_claim(&kb, &format!("c-{i}"), &text(&mut rng, len));
        }
        for i in 280..300 {
            std::fs::remove_file(kb.layout().file(Dir::Claims, &format!("c-{i}")).unwrap())
                .unwrap();
        }
        // Statuses changed, texts kept: the claims leave current knowledge
        // (and one comes back).
        let restatus = |id: &str, status| {
            let path = kb.layout().file(Dir::Claims, id).unwrap();
            let claim = Claim::decode(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
            write_claim_of(&kb, id, &claim.text, status);
        };
        for i in 200..230 {
            restatus(&format!("c-{i}"), ClaimStatus::Superseded);
        }
        restatus("s-0", ClaimStatus::Working);
        kb.index().catch_up(&kb).unwrap();
        assert_current(&kb, "the postings were patched, not dropped");
        assert!(same_as_sql(&kb, &mut rng) > 60);

        // A write through vouch in this process (an approval) patches them.
        let src = crate::testing::test_source(&kb, "billing queue retries");
        crate::testing::test_claim(&kb, &src, "The billing queue retries twice");
        assert_current(&kb, "the approval patched the postings");
        assert!(same_as_sql(&kb, &mut rng) > 60);

        // A write by another process (another connection): behind, unused.
        let other = Connection::open(kb.layout().index_db()).unwrap();
        other
            .execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'",
                [],
            )
            .unwrap();
        assert_sql_answers(&kb);
        refresh(&crate::testing::sqlite(&kb)).unwrap();
        assert!(same_as_sql(&kb, &mut rng) > 60);
    }
}

#[cfg(test)]
mod setting_tests {
    use crate::kb::Kb;

    /// Whether the postings are in memory after a background round.
    fn postings_held_after_refresh(kb: &Kb) -> bool {
        kb.index().catch_up(kb).unwrap();
        kb.index().refresh_postings(kb).unwrap();
        let ix = crate::testing::sqlite(kb);
        ix.index_state.memory.postings.read().unwrap().is_some()
    }

    #[test]
    fn postings_in_memory_false_keeps_servers_on_sql() {
        let (dir, kb) = crate::testing::test_kb();
        let config = kb.layout().config();
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.contains("retrieval:\n"), "{text}");
        std::fs::write(
            &config,
            text.replace("retrieval:\n", "retrieval:\n  postings_in_memory: false\n"),
        )
        .unwrap();
        let kb = Kb::open(
            &dir.path().join(".vouch"),
            std::sync::Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        assert!(!postings_held_after_refresh(&kb));
        // And on by default.
        let (_dir, kb) = crate::testing::test_kb();
        assert!(postings_held_after_refresh(&kb));
    }
}
