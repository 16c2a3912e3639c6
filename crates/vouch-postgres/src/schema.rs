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
         CREATE TABLE IF NOT EXISTS vouch_proposals (
             id      text PRIMARY KEY,
             body    bytea NOT NULL,
             kept_at timestamptz NOT NULL DEFAULT now()
         );
",
    )?;
    tx.commit()
}
