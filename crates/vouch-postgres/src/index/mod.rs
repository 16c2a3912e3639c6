//! The derived index in the team database ([`TeamIndex`]): the
//! documents and their words ([`words`]), each document's vectors
//! ([`vectors`]) and the audit admission rows ([`admission`]), as the
//! keeper's [`vouch_core::index::kept::KeptIndex`] asks for them through
//! [`Tables`]. Every replica reads the same index, so a new replica (or a
//! restarted one) answers its first search from it without reading the
//! files; the replicas' catch-ups take turns keeping it in step with the
//! working tree they share.
//!
//! Derived, as `state.db` is: dropping the tables and catching up builds
//! it again from the files. Whoever can write these tables can change
//! what a search finds among the documents the files hold and how it
//! ranks them: the database is as trusted as the servers
//! (docs/team-server.md, "Secrets").

mod admission;
mod feed;
mod vectors;
mod words;

use crate::{Conns, Database};
use std::sync::Arc;
use vouch_core::Result;
use vouch_core::index::engine::Tables;
use vouch_core::index::{Query, SearchHit};
use vouch_core::model::DocKind;

/// How the words are made, recorded in `vouch_index_meta`: documents made
/// another way are dropped when a replica opens them (derived: the keeper
/// puts them again). Bump when what the words are given changes.
const WORDS_VERSION: &str = "1";

/// The advisory lock the replicas' catch-ups take turns at (not the write
/// lock's: [`crate::lock::WRITE_LOCK_KEY`]).
const CATCH_UP_LOCK_KEY: i64 = 0x766f_7563_6802; // "vouch" 02

/// The advisory lock under which admission rows are recorded.
const ADMISSION_LOCK_KEY: i64 = 0x766f_7563_6803; // "vouch" 03

/// The advisory lock under which documents are put and removed: rowids
/// and the removals' points are taken in the order their writes commit.
const WORDS_LOCK_KEY: i64 = 0x766f_7563_6804; // "vouch" 04

/// The derived index each replica reads, in the team database.
pub struct TeamIndex {
    conns: Conns,
    /// Connections of its own for the catch-ups' lock, held for a whole
    /// catch-up while its statements run on `conns`.
    turns: Conns,
    /// The text search configuration (one of two made by the schema).
    config: &'static str,
    /// The documents were dropped when opened (none yet, or made another
    /// way): the keeper puts every one.
    emptied: bool,
}

impl TeamIndex {
    /// The index kept in `db`, its words stemmed (`stem`:
    /// `retrieval.fts5_porter`) or not. Documents made another way (the
    /// other stemming, an older version) are dropped.
    pub fn open(db: Arc<Database>, stem: bool) -> Result<TeamIndex> {
        let config = if stem { "vouch_words_stem" } else { "simple" };
        let made = format!("{config} {WORDS_VERSION}");
        let conns = Conns::new(db.clone());
        let emptied = conns.with("opening the index", |c| {
            let mut tx = c.transaction()?;
            // One replica at a time decides (another opening at once
            // waits, then finds the stamp it left).
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CATCH_UP_LOCK_KEY])?;
            let held: Option<String> = tx
                .query_opt(
                    "SELECT value FROM vouch_index_meta WHERE key = 'words'",
                    &[],
                )?
                .map(|r| r.get(0));
            if held.as_deref() == Some(made.as_str()) {
                tx.commit()?;
                return Ok(false);
            }
            clear(&mut tx)?;
            tx.execute(
                "INSERT INTO vouch_index_meta (key, value) VALUES ('words', $1)",
                &[&made],
            )?;
            tx.commit()?;
            Ok(true)
        })?;
        Ok(TeamIndex {
            conns,
            turns: Conns::new(db),
            config,
            emptied,
        })
    }

    /// Whether opening dropped every document (none were held, or they
    /// were made another way).
    pub fn emptied(&self) -> bool {
        self.emptied
    }
}

/// Drop every document, admission row and value; the vectors stay, their
/// file signatures forgotten (each document's looked at again by its text).
fn clear(c: &mut impl postgres::GenericClient) -> std::result::Result<(), postgres::Error> {
    // A new epoch: every replica's postings are read again from the start.
    c.batch_execute(
        "TRUNCATE vouch_index_docs, vouch_index_gone, vouch_index_admitted, vouch_index_written;
         DELETE FROM vouch_index_meta;
         INSERT INTO vouch_index_meta (key, value) VALUES ('words_epoch', gen_random_uuid()::text);
         UPDATE vouch_index_vectors SET size = -1 WHERE size <> -1;",
    )
}

/// Store `value` under `key` (`None`: drop it).
fn set_value(
    c: &mut impl postgres::GenericClient,
    key: &str,
    value: Option<&str>,
) -> std::result::Result<(), postgres::Error> {
    match value {
        Some(v) => c.execute(
            "INSERT INTO vouch_index_meta (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &v],
        ),
        None => c.execute("DELETE FROM vouch_index_meta WHERE key = $1", &[&key]),
    }
    .map(|_| ())
}

impl Tables for TeamIndex {
    fn value(&self, key: &str) -> Result<Option<String>> {
        let row = self.conns.with("reading the index's state", |c| {
            c.query_opt("SELECT value FROM vouch_index_meta WHERE key = $1", &[&key])
        })?;
        Ok(row.map(|r| r.get(0)))
    }

    fn set_values(&self, values: &[(String, Option<String>)]) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        self.conns.with("recording the index's state", |c| {
            let mut tx = c.transaction()?;
            for (key, value) in values {
                set_value(&mut tx, key, value.as_deref())?;
            }
            tx.commit()
        })
    }

    fn words(&self, q: &Query) -> Result<Vec<SearchHit>> {
        self.search_words(q)
    }

    fn texts_and_confidence(
        &self,
        keys: &[(DocKind, &str, bool)],
    ) -> Result<Vec<(String, Option<f64>)>> {
        self.texts_of(keys)
    }

    fn held(&self) -> Result<usize> {
        let n: i64 = self.conns.with("counting the indexed documents", |c| {
            c.query_one("SELECT count(*) FROM vouch_index_docs", &[])
                .map(|r| r.get(0))
        })?;
        Ok(n as usize)
    }

    fn forget(&self) -> Result<()> {
        self.conns.with("forgetting what the index read", |c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CATCH_UP_LOCK_KEY])?;
            // The rows in the order a put takes them: after its lock.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WORDS_LOCK_KEY])?;
            tx.batch_execute(
                "UPDATE vouch_index_docs SET size = -1 WHERE size <> -1;
                 DELETE FROM vouch_index_meta WHERE key LIKE 'scan:%' OR key LIKE 'audit:%';
                 UPDATE vouch_index_vectors SET size = -1 WHERE size <> -1;",
            )?;
            tx.commit()
        })
    }

    fn one_at_a_time(&self, wait: bool, f: &mut dyn FnMut() -> Result<()>) -> Result<bool> {
        let doing = "waiting for another replica's catch-up";
        let mut turn = self.turns.lease(doing)?;
        let took = if wait {
            turn.execute("SELECT pg_advisory_lock($1)", &[&CATCH_UP_LOCK_KEY])
                .map(|_| true)
        } else {
            turn.query_one("SELECT pg_try_advisory_lock($1)", &[&CATCH_UP_LOCK_KEY])
                .map(|r| r.get(0))
        };
        if !took.map_err(|e| self.turns.failed(doing, &e))? {
            turn.worked = true;
            return Ok(false);
        }
        let done = f();
        // Kept only when the lock is given back; a connection that cannot
        // give it back is closed, which does.
        turn.worked = turn
            .execute("SELECT pg_advisory_unlock($1)", &[&CATCH_UP_LOCK_KEY])
            .is_ok();
        done.map(|()| true)
    }
}
