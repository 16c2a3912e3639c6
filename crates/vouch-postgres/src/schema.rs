//! vouch's tables, made when missing. Every replica runs this when it
//! connects; a transaction-scoped advisory lock keeps two replicas from
//! racing to make the same table.

use postgres::Client;

/// The advisory lock key the schema's creation takes (not the write
/// lock's: [`crate::lock::WRITE_LOCK_KEY`]).
const SCHEMA_LOCK_KEY: i64 = 0x766f_7563_6801; // "vouch" 01

/// Make the tables if missing.
pub(crate) fn ensure(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK_KEY])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS vouch_chain_head (
             only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
             event_id   text NOT NULL,
             event_hash text NOT NULL,
             written_by text NOT NULL,
             written_at timestamptz NOT NULL DEFAULT now()
         );
         CREATE TABLE IF NOT EXISTS vouch_ui_sessions (
             digest  bytea PRIMARY KEY,
             subject text NOT NULL,
             person  boolean NOT NULL,
             csrf    text NOT NULL,
             started timestamptz NOT NULL DEFAULT now(),
             used    timestamptz NOT NULL DEFAULT now()
         );
         CREATE INDEX IF NOT EXISTS vouch_ui_sessions_subject ON vouch_ui_sessions (subject, started);
         CREATE TABLE IF NOT EXISTS vouch_ui_failed_sign_ins (
             at timestamptz NOT NULL DEFAULT now()
         );
         CREATE INDEX IF NOT EXISTS vouch_ui_failed_sign_ins_at ON vouch_ui_failed_sign_ins (at);
         CREATE TABLE IF NOT EXISTS vouch_vectors (
             model   text NOT NULL,
             sha     text NOT NULL,
             dim     integer NOT NULL,
             chunks  bytea NOT NULL,
             made_at timestamptz NOT NULL DEFAULT now(),
             PRIMARY KEY (model, sha)
         );
         CREATE SEQUENCE IF NOT EXISTS vouch_index_rowids;
         CREATE TABLE IF NOT EXISTS vouch_index_docs (
             rowid      bigint NOT NULL,
             kind       text NOT NULL,
             id         text NOT NULL,
             title      text NOT NULL,
             body       text NOT NULL,
             status     text,
             confidence double precision,
             mtime      bigint NOT NULL,
             size       bigint NOT NULL,
             words      tsvector NOT NULL,
             PRIMARY KEY (kind, id)
         );
         CREATE INDEX IF NOT EXISTS vouch_index_docs_words ON vouch_index_docs USING gin (words);
         CREATE UNIQUE INDEX IF NOT EXISTS vouch_index_docs_rowid ON vouch_index_docs (rowid);
         CREATE TABLE IF NOT EXISTS vouch_index_gone (
             seq   bigserial PRIMARY KEY,
             rowid bigint NOT NULL,
             at    timestamptz NOT NULL DEFAULT now()
         );
         CREATE TABLE IF NOT EXISTS vouch_index_vectors (
             model  text NOT NULL,
             kind   text NOT NULL,
             id     text NOT NULL,
             chunk  integer NOT NULL,
             mtime  bigint NOT NULL,
             size   bigint NOT NULL,
             sha    text NOT NULL,
             vector bytea NOT NULL,
             PRIMARY KEY (model, kind, id, chunk)
         );
         CREATE INDEX IF NOT EXISTS vouch_index_vectors_doc ON vouch_index_vectors (kind, id);
         CREATE INDEX IF NOT EXISTS vouch_index_vectors_sha ON vouch_index_vectors (model, sha);
         CREATE TABLE IF NOT EXISTS vouch_index_admitted (
             id text PRIMARY KEY,
             at bigint NOT NULL
         );
         CREATE TABLE IF NOT EXISTS vouch_index_written (
             path text PRIMARY KEY,
             id   text NOT NULL,
             sha  text NOT NULL,
             at   bigint NOT NULL
         );
         CREATE INDEX IF NOT EXISTS vouch_index_written_id ON vouch_index_written (id);
         CREATE TABLE IF NOT EXISTS vouch_index_meta (
             key   text PRIMARY KEY,
             value text NOT NULL
         );
         -- Documents put and removed in one round trip each: under the
         -- lock that orders rowids (taken before the statement's snapshot,
         -- so it sees every write committed before it).
         -- Made once: a new body takes a new name (`_v2`), so a replica
         -- of another version keeps the one it calls, and a connection
         -- made later does not rewrite the catalog.
         DO $$ BEGIN
             IF to_regproc('vouch_index_put_v1') IS NULL THEN
             CREATE FUNCTION vouch_index_put_v1(
                 lock_key bigint, cfg regconfig, kinds text[], ids text[], titles text[],
                 bodies text[], statuses text[], confidences float8[], mtimes int8[],
                 sizes int8[], title_words text[], body_words text[]) RETURNS void
             LANGUAGE plpgsql AS $f$
             BEGIN
                 PERFORM pg_advisory_xact_lock(lock_key);
                 WITH old AS (
                     SELECT d.kind, d.id, d.rowid FROM vouch_index_docs d
                     JOIN unnest(kinds, ids) AS k(kind, id) ON d.kind = k.kind AND d.id = k.id
                 ), put AS (
                     INSERT INTO vouch_index_docs
                         (rowid, kind, id, title, body, status, confidence, mtime, size, words)
                     SELECT nextval('vouch_index_rowids'), k, i, t, b, s, c, m, z,
                            setweight(to_tsvector(cfg, tw), 'A') || setweight(to_tsvector(cfg, bw), 'B')
                     FROM unnest(kinds, ids, titles, bodies, statuses, confidences, mtimes, sizes,
                                 title_words, body_words) AS u(k, i, t, b, s, c, m, z, tw, bw)
                     ON CONFLICT (kind, id) DO UPDATE SET
                         rowid = CASE WHEN (vouch_index_docs.title, vouch_index_docs.body,
                                            vouch_index_docs.status)
                                      IS DISTINCT FROM (excluded.title, excluded.body, excluded.status)
                                 THEN excluded.rowid ELSE vouch_index_docs.rowid END,
                         title = excluded.title, body = excluded.body, status = excluded.status,
                         confidence = excluded.confidence, mtime = excluded.mtime,
                         size = excluded.size, words = excluded.words
                     -- What another replica put already is left as it is (no new
                     -- row version, no GIN update).
                     WHERE (vouch_index_docs.title, vouch_index_docs.body, vouch_index_docs.status,
                            vouch_index_docs.confidence, vouch_index_docs.mtime, vouch_index_docs.size)
                         IS DISTINCT FROM (excluded.title, excluded.body, excluded.status,
                            excluded.confidence, excluded.mtime, excluded.size)
                     RETURNING kind, id, rowid
                 )
                 INSERT INTO vouch_index_gone (rowid)
                 SELECT old.rowid FROM old JOIN put ON put.kind = old.kind AND put.id = old.id
                 WHERE put.rowid <> old.rowid;
             END $f$;
             END IF;
             IF to_regproc('vouch_index_remove_v1') IS NULL THEN
             CREATE FUNCTION vouch_index_remove_v1(
                 lock_key bigint, kinds text[], ids text[]) RETURNS bigint
             LANGUAGE plpgsql AS $f$
             DECLARE n bigint;
             BEGIN
                 PERFORM pg_advisory_xact_lock(lock_key);
                 WITH gone AS (
                     DELETE FROM vouch_index_docs
                     WHERE (kind, id) IN (SELECT * FROM unnest(kinds, ids))
                     RETURNING rowid
                 )
                 INSERT INTO vouch_index_gone (rowid) SELECT rowid FROM gone;
                 GET DIAGNOSTICS n = ROW_COUNT;
                 -- A replica reads what went within a round; a day's removals
                 -- are kept for one that was paused, and one paused longer
                 -- finds it out by the point let go through (and reads its
                 -- postings again).
                 WITH pruned AS (
                     DELETE FROM vouch_index_gone WHERE at < now() - interval '1 day'
                     RETURNING seq
                 )
                 INSERT INTO vouch_index_meta (key, value)
                 SELECT 'gone_pruned_through', max(seq)::text FROM pruned HAVING count(*) > 0
                 ON CONFLICT (key) DO UPDATE SET value =
                     greatest(vouch_index_meta.value::bigint, excluded.value::bigint)::text;
                 RETURN n;
             END $f$;
             END IF;
         END $$;
         DO $$ BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'vouch_english_stem') THEN
                 -- Snowball's English stemmer without its stop words: a
                 -- word is found whatever it is (as FTS5's porter does).
                 CREATE TEXT SEARCH DICTIONARY vouch_english_stem
                     (TEMPLATE = snowball, Language = english);
             END IF;
             IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'vouch_words_stem') THEN
                 CREATE TEXT SEARCH CONFIGURATION vouch_words_stem (COPY = simple);
                 ALTER TEXT SEARCH CONFIGURATION vouch_words_stem
                     ALTER MAPPING FOR asciiword, word, numword, asciihword, hword,
                         hword_part, hword_asciipart, hword_numpart
                     WITH vouch_english_stem;
             END IF;
         END $$;
         CREATE TABLE IF NOT EXISTS vouch_proposals (
             id      text PRIMARY KEY,
             body    bytea NOT NULL,
             kept_at timestamptz NOT NULL DEFAULT now()
         );
",
    )?;
    tx.commit()
}
