//! The review pages' sign-in, shared by every replica: sessions (by the
//! sha256 of their cookie, never the cookie) and failed sign-ins. A cookie
//! set by one replica works on the others. One-time links are not here:
//! a link works only on the process that printed it.
//!
//! Whoever can write these tables can sign in to the review pages as
//! anyone: the database is as trusted as the servers' own memory
//! (docs/team-server.md, "Secrets").

use crate::{Conns, Database};
use std::sync::Arc;
use std::time::Duration;
use vouch_core::Error;

/// One signed-in session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// Who is signed in.
    pub subject: String,
    /// Signed in by a one-time link (a person) rather than a token.
    pub person: bool,
    /// The session's CSRF token.
    pub csrf: String,
}

/// The review pages' sessions and links in a team database.
pub struct Sessions {
    conns: Conns,
}

impl Sessions {
    /// The sessions kept in `db`.
    pub fn new(db: Arc<Database>) -> Sessions {
        Sessions {
            conns: Conns::new(db),
        }
    }

    /// Keep a new session under `digest`, then drop the oldest of
    /// `subject`'s past `per_subject`, and the oldest of all past `all`.
    pub fn start(
        &self,
        digest: &[u8; 32],
        row: &SessionRow,
        per_subject: usize,
        all: usize,
    ) -> Result<(), Error> {
        self.conns.with("keeping a review session", |c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "INSERT INTO vouch_ui_sessions (digest, subject, person, csrf) VALUES ($1, $2, $3, $4)",
                &[&&digest[..], &row.subject, &row.person, &row.csrf],
            )?;
            tx.execute(
                "DELETE FROM vouch_ui_sessions WHERE digest IN (SELECT digest FROM \
                 vouch_ui_sessions WHERE subject = $1 ORDER BY started DESC OFFSET $2)",
                &[&row.subject, &(per_subject as i64)],
            )?;
            tx.execute(
                "DELETE FROM vouch_ui_sessions WHERE digest IN (SELECT digest FROM \
                 vouch_ui_sessions ORDER BY started DESC OFFSET $1)",
                &[&(all as i64)],
            )?;
            tx.commit()
        })
    }

    /// The live session under `digest`, marked used now: begun within
    /// `lifetime` and used within `idle`. Expired ones are dropped.
    pub fn find(
        &self,
        digest: &[u8; 32],
        lifetime: Duration,
        idle: Duration,
    ) -> Result<Option<SessionRow>, Error> {
        self.conns.with("reading a review session", |c| {
            c.execute(
                "DELETE FROM vouch_ui_sessions WHERE started < now() - $1 * interval '1 second' \
                 OR used < now() - $2 * interval '1 second'",
                &[&(lifetime.as_secs_f64()), &(idle.as_secs_f64())],
            )?;
            let row = c.query_opt(
                "UPDATE vouch_ui_sessions SET used = now() WHERE digest = $1 \
                 RETURNING subject, person, csrf",
                &[&&digest[..]],
            )?;
            Ok(row.map(|r| SessionRow {
                subject: r.get(0),
                person: r.get(1),
                csrf: r.get(2),
            }))
        })
    }

    /// End the session under `digest`.
    pub fn end(&self, digest: &[u8; 32]) -> Result<(), Error> {
        self.conns.with("ending a review session", |c| {
            c.execute(
                "DELETE FROM vouch_ui_sessions WHERE digest = $1",
                &[&&digest[..]],
            )
            .map(|_| ())
        })
    }

    /// Note a failed sign-in (an unknown token or link), for every
    /// replica's count.
    pub fn sign_in_failed(&self) -> Result<(), Error> {
        self.conns.with("noting a failed sign-in", |c| {
            c.execute("INSERT INTO vouch_ui_failed_sign_ins DEFAULT VALUES", &[])
                .map(|_| ())
        })
    }

    /// Failed sign-ins on any replica in the last minute (older ones are
    /// forgotten): one limit for the whole team server, not one per
    /// replica.
    pub fn failed_sign_ins_last_minute(&self) -> Result<usize, Error> {
        self.conns.with("counting failed sign-ins", |c| {
            c.execute(
                "DELETE FROM vouch_ui_failed_sign_ins WHERE at < now() - interval '1 minute'",
                &[],
            )?;
            let n: i64 = c
                .query_one("SELECT count(*) FROM vouch_ui_failed_sign_ins", &[])?
                .get(0);
            Ok(n.max(0) as usize)
        })
    }
}
