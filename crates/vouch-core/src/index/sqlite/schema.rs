//! The tables the index makes, and whether `state.db` still holds exactly
//! them. The file is writable by anyone who can write the folder: a table
//! made again without `UNIQUE(kind, id)` lets a second row stand for an
//! approved claim, a trigger can rewrite what vouch writes. Each open
//! compares the schema with the one this version makes and rebuilds the
//! index when they differ.

use rusqlite::Connection;

/// The index's own tables (`meta` and the vectors are kept across a
/// rebuild and made elsewhere). `admitted` and `written` name, for each
/// row, the byte offset in the audit log of the event line that let the
/// object in or recorded the file ([`crate::index::admission`]).
/// `vector_sigs` holds, for each document with stored vectors, the file
/// signature its vectors were made for: apart from the 1.5 KB rows, so a
/// rebuild forgets every signature by dropping a small table rather than
/// rewriting each vector's row (2.5 GB of writes at a million
/// documents), and a vector found current again by its text costs a small
/// row, not its own again.
pub(super) fn tables(tokenizer: &str) -> String {
    format!(
        "CREATE TABLE admitted(id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
         CREATE TABLE written(path TEXT PRIMARY KEY, id TEXT NOT NULL, sha TEXT NOT NULL,
             at INTEGER NOT NULL) WITHOUT ROWID;
         CREATE INDEX written_by_id ON written(id);
         CREATE TABLE docs(rowid INTEGER PRIMARY KEY, kind TEXT NOT NULL, id TEXT NOT NULL,
             status TEXT, confidence REAL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
             UNIQUE(kind, id));
         CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize='{tokenizer}');
         CREATE TABLE vector_sigs(kind TEXT NOT NULL, id TEXT NOT NULL,
             mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
             PRIMARY KEY(kind, id)) WITHOUT ROWID;"
    )
}

/// Triggers and views: vouch makes none, so any there was made by hand and
/// goes with a rebuild.
pub(super) const EXTRA: &str =
    "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')";

/// The tables a rebuild drops and makes again (FTS5's shadow tables
/// included), in an order `DROP TABLE` accepts.
pub(super) const OWN: &[&str] = &[
    "fts",
    "fts_data",
    "fts_idx",
    "fts_content",
    "fts_docsize",
    "fts_config",
    "docs",
    "admitted",
    "written",
    "vector_sigs",
];

type Object = (String, String, String, String);

/// The schema objects that belong to the index's own tables, and every
/// trigger and view, sorted.
fn objects(conn: &Connection) -> rusqlite::Result<Vec<Object>> {
    let own = OWN
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(",");
    conn.prepare(&format!(
        "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master \
         WHERE tbl_name IN ({own}) OR name IN ({own}) OR type IN ('trigger', 'view') \
         ORDER BY type, name"
    ))?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
    .collect()
}

/// What these tables look like when this version makes them with this
/// tokenizer (made once per process in memory).
fn expected(tokenizer: &str) -> rusqlite::Result<Vec<Object>> {
    static MADE: std::sync::Mutex<Vec<(String, Vec<Object>)>> = std::sync::Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, o)) = made.iter().find(|(t, _)| t == tokenizer) {
        return Ok(o.clone());
    }
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(&tables(tokenizer))?;
    let o = objects(&conn)?;
    made.push((tokenizer.to_string(), o.clone()));
    Ok(o)
}

/// How `conn`'s tables differ from what this version makes, if they do.
pub(super) fn tampered(conn: &Connection, tokenizer: &str) -> rusqlite::Result<Option<String>> {
    let have = objects(conn)?;
    let want = expected(tokenizer)?;
    if have == want {
        return Ok(None);
    }
    let name = |o: &Object| format!("{} {}", o.0, o.1);
    let odd: Vec<String> = have
        .iter()
        .filter(|o| !want.contains(o))
        .map(name)
        .chain(
            want.iter()
                .filter(|o| !have.iter().any(|h| h.0 == o.0 && h.1 == o.1))
                .map(|o| format!("no {}", name(o))),
        )
        .collect();
    Ok(Some(odd.join(", ")))
}
