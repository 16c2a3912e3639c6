//! The review queue every replica reads: the pending proposals, by id, as
//! the bytes of the YAML file the gate wrote. Each replica's gate writes a
//! new proposal into the tree's `proposed/` first (its crash-safe path)
//! and moves it here before it gives the write lock back
//! (`vouch_core::store::queue`); a decision forgets it here once
//! `decided/` holds it.
//!
//! A row planted here by someone who can write the table is shown in the
//! queue, but it cannot be approved: approval checks every proposal
//! against its `proposal.create` event in the audit log (and `doctor`
//! reports one without). The database is as trusted as the servers
//! (docs/team-server.md, "Secrets").

use crate::{Conns, Database};
use std::sync::Arc;
use vouch_core::Result;
use vouch_core::store::queue::SharedQueue;

/// The pending proposals in a team database.
pub struct TeamQueue {
    conns: Conns,
}

impl TeamQueue {
    /// The queue kept in `db` (connections of its own: listing the queue
    /// never waits behind the write lock's).
    pub fn new(db: Arc<Database>) -> TeamQueue {
        TeamQueue {
            conns: Conns::new(db),
        }
    }
}

impl SharedQueue for TeamQueue {
    fn describe(&self) -> String {
        format!("the team database {}", self.conns.shown())
    }

    fn ids(&self) -> Result<Vec<String>> {
        self.conns.with("listing the pending proposals", |c| {
            Ok(c.query("SELECT id FROM vouch_proposals ORDER BY id", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
    }

    fn read(&self, ids: &[String]) -> Result<Vec<(String, Vec<u8>)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.conns.with("reading pending proposals", |c| {
            Ok(c.query(
                "SELECT id, body FROM vouch_proposals WHERE id = ANY($1) ORDER BY id",
                &[&ids],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        })
    }

    fn keep(&self, proposals: &[(String, Vec<u8>)]) -> Result<Vec<String>> {
        if proposals.is_empty() {
            return Ok(Vec::new());
        }
        self.conns.with("keeping pending proposals", |c| {
            let mut tx = c.transaction()?;
            let insert = tx.prepare(
                "INSERT INTO vouch_proposals (id, body) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
            )?;
            let other = tx.prepare("SELECT body <> $2 FROM vouch_proposals WHERE id = $1")?;
            let mut differ = Vec::new();
            for (id, body) in proposals {
                if tx.execute(&insert, &[id, body])? == 0
                    && tx.query_one(&other, &[id, body])?.get::<_, bool>(0)
                {
                    differ.push(id.clone());
                }
            }
            tx.commit()?;
            Ok(differ)
        })
    }

    fn forget(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.conns.with("forgetting decided proposals", |c| {
            c.execute("DELETE FROM vouch_proposals WHERE id = ANY($1)", &[&ids])
                .map(|_| ())
        })
    }
}
