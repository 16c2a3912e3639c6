//! The write lock replicas share: a session-level advisory lock, held on
//! a connection of its own for as long as a write runs. A replica that
//! dies loses its connection, and PostgreSQL releases the lock with it.

use crate::{Conns, Database, Leased};
use postgres::Client;
use std::sync::{Arc, Condvar, Mutex};
use vouch_core::Error;
use vouch_core::store::lock::{ChainHead, SharedHold, SharedLock};

/// The advisory lock key of the knowledge base's writes ("vouch" 00). One
/// database serves one knowledge base.
pub(crate) const WRITE_LOCK_KEY: i64 = 0x766f_7563_6800;

/// The channel a new head is announced on.
const HEAD_CHANNEL: &str = "vouch_head";

/// How long a writer waits for another replica's write before it fails
/// with a clear error rather than hanging.
const LOCK_WAIT: &str = "30s";

/// The write lock of a knowledge base whose writers share `db`.
pub struct TeamLock {
    db: Arc<Database>,
    /// Connections for holding the lock and asking after it, each made
    /// with the lock's wait set.
    conns: Conns,
    /// This process's turn: one of its threads at a time waits for (and
    /// holds) the database's lock, on one connection — not one connection
    /// per waiting thread, which a burst would multiply past the server's
    /// `max_connections`.
    turn: Arc<(Mutex<bool>, Condvar)>,
    /// Who writes, recorded beside the head (a replica's name).
    writer: String,
    /// The backend that holds the lock for this process now, if any.
    holder: Arc<Mutex<Option<i32>>>,
}

/// This process's turn at the lock, given back when dropped.
struct Turn(Arc<(Mutex<bool>, Condvar)>);

impl Turn {
    fn wait(turn: &Arc<(Mutex<bool>, Condvar)>) -> Turn {
        let (busy, freed) = &**turn;
        let mut taken = busy.lock().unwrap_or_else(|e| e.into_inner());
        while *taken {
            taken = freed.wait(taken).unwrap_or_else(|e| e.into_inner());
        }
        *taken = true;
        Turn(turn.clone())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let (busy, freed) = &*self.0;
        *busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        freed.notify_one();
    }
}

impl TeamLock {
    /// The lock in `db`; `writer` names this process in the head it
    /// records (for people reading the table).
    pub fn new(db: Arc<Database>, writer: &str) -> TeamLock {
        TeamLock {
            conns: Conns::with_setup(
                db.clone(),
                Some(format!("SET lock_timeout = '{LOCK_WAIT}'")),
            ),
            db,
            turn: Arc::new((Mutex::new(false), Condvar::new())),
            writer: writer.to_string(),
            holder: Arc::default(),
        }
    }

    /// The head recorded in the database.
    fn read_head(&self, c: &mut Client) -> Result<Option<ChainHead>, Error> {
        let row = c
            .query_opt("SELECT event_id, event_hash FROM vouch_chain_head", &[])
            .map_err(|e| self.db.failed("reading the audit chain's head", &e))?;
        Ok(row.map(|r| ChainHead {
            id: r.get(0),
            hash: r.get(1),
        }))
    }

    /// Record `head` as the chain's head, the lock held by the caller's
    /// hold: in place of `was`, the head this hold found — if another
    /// writer recorded one since (this hold's connection, and so its lock,
    /// was lost meanwhile), theirs stays and 0 is answered. `None` for `was`
    /// records it whatever the table held (`vouch team adopt`).
    fn write_head(
        c: &mut Client,
        head: &ChainHead,
        was: Option<&Option<ChainHead>>,
        writer: &str,
    ) -> Result<u64, postgres::Error> {
        let args: [&(dyn postgres::types::ToSql + Sync); 3] = [&head.id, &head.hash, &writer];
        match was {
            None => c.execute(
                "INSERT INTO vouch_chain_head (event_id, event_hash, written_by) VALUES ($1, $2, $3)
                 ON CONFLICT (only_row) DO UPDATE SET event_id = $1, event_hash = $2,
                     written_by = $3, written_at = now()",
                &args,
            ),
            Some(None) => c.execute(
                "INSERT INTO vouch_chain_head (event_id, event_hash, written_by) VALUES ($1, $2, $3)
                 ON CONFLICT (only_row) DO NOTHING",
                &args,
            ),
            Some(Some(prev)) => c.execute(
                "UPDATE vouch_chain_head SET event_id = $1, event_hash = $2, written_by = $3,
                     written_at = now() WHERE event_id = $4",
                &[&head.id, &head.hash, &writer, &prev.id],
            ),
        }
    }
}

impl TeamLock {
    /// Call `changed` whenever another process records a new head (it
    /// wrote), for as long as this process runs: a listener on a
    /// connection of its own, on a thread of its own. After connecting
    /// (and after a lost connection is back) `changed` is called once,
    /// since what was written meanwhile was not heard.
    pub fn follow(&self, changed: impl Fn() + Send + 'static) {
        let db = self.db.clone();
        let me = format!("{}|", self.writer);
        std::thread::spawn(move || {
            loop {
                if let Ok(mut c) = db.connect()
                    && c.batch_execute(&format!("LISTEN {HEAD_CHANNEL}")).is_ok()
                {
                    changed();
                    use postgres::fallible_iterator::FallibleIterator;
                    let mut notes = c.notifications();
                    let mut heard = notes.blocking_iter();
                    while let Ok(Some(note)) = heard.next() {
                        if !note.payload().starts_with(&me) {
                            changed();
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        });
    }
}

impl SharedLock for TeamLock {
    fn describe(&self) -> String {
        format!("the team database {}", self.db.shown())
    }

    fn acquire(&self) -> vouch_core::Result<Box<dyn SharedHold>> {
        Ok(Box::new(self.take()?))
    }

    fn still_held(&self) -> vouch_core::Result<bool> {
        let Some(backend) = *self.holder.lock().unwrap_or_else(|e| e.into_inner()) else {
            return Ok(false);
        };
        // Asked on another connection: the holder's own is busy with
        // nothing, but it is the one that may be gone.
        let mut c = self.conns.lease("checking the write lock is still held")?;
        let held = c
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND pid = $1 AND objsubid = 1 \
                 AND ((classid::bigint << 32) | objid::bigint) = $2)",
                &[&backend, &WRITE_LOCK_KEY],
            )
            .map(|r| r.get::<_, bool>(0))
            .map_err(|e| self.db.failed("checking the write lock is still held", &e));
        c.worked = held.is_ok();
        held
    }

    fn peek_head(&self) -> vouch_core::Result<Option<ChainHead>> {
        let mut c = self.conns.lease("reading the audit chain's head")?;
        let head = self.read_head(&mut c);
        c.worked = head.is_ok();
        head
    }
}

impl TeamLock {
    /// Block until this process holds the lock.
    fn take(&self) -> vouch_core::Result<Hold> {
        let turn = Turn::wait(&self.turn);
        let mut c = self.conns.lease("taking the write lock")?;
        c.execute("SELECT pg_advisory_lock($1)", &[&WRITE_LOCK_KEY])
            .map_err(|e| match e.code() {
                Some(code) if *code == postgres::error::SqlState::LOCK_NOT_AVAILABLE => Error::new(
                    vouch_core::ErrorKind::Busy,
                    format!(
                        "another replica has held the write lock in {} for {LOCK_WAIT}; \
                             nothing was written, try again",
                        self.db.shown()
                    ),
                ),
                _ => self.db.unreachable(&e),
            })?;
        vouch_core::fail::point("team.locked");
        let backend: Option<i32> = c
            .query_one("SELECT pg_backend_pid()", &[])
            .ok()
            .map(|r| r.get(0));
        *self.holder.lock().unwrap_or_else(|e| e.into_inner()) = backend;
        let head = match self.read_head(&mut c) {
            Ok(h) => h,
            Err(e) => {
                let _ = c.execute("SELECT pg_advisory_unlock($1)", &[&WRITE_LOCK_KEY]);
                return Err(e);
            }
        };
        Ok(Hold {
            client: Some(c),
            head,
            writer: self.writer.clone(),
            db: Arc::clone(&self.db),
            holder: Arc::clone(&self.holder),
            _turn: turn,
        })
    }

    /// Take the lock and record this folder's `head` as the chain's head,
    /// whatever it was (`vouch team adopt`: a person says this history is
    /// the team's). Answers the head it replaced.
    pub fn adopt(&self, head: &ChainHead) -> vouch_core::Result<Option<ChainHead>> {
        let mut hold = self.take()?;
        let before = hold.head.clone();
        hold.record(head, None)?;
        Ok(before)
    }
}

/// A held write lock: its connection, and the head found when taken.
struct Hold {
    client: Option<Leased>,
    head: Option<ChainHead>,
    writer: String,
    db: Arc<Database>,
    holder: Arc<Mutex<Option<i32>>>,
    // Dropped after `client` is given back (fields drop after `drop`).
    _turn: Turn,
}

impl Hold {
    /// Record `head` in place of `was` (see [`TeamLock::write_head`]) and
    /// tell the followers.
    fn record(&mut self, head: &ChainHead, was: Option<&Option<ChainHead>>) -> Result<(), Error> {
        let Some(c) = self.client.as_mut() else {
            return Ok(());
        };
        // Every follower hears of it (`TeamLock::follow`): WRITER|EVENT.
        let note = format!("{}|{}", self.writer, head.id);
        let recorded = TeamLock::write_head(c, head, was, &self.writer)
            .and_then(|_| c.execute("SELECT pg_notify($1, $2)", &[&HEAD_CHANNEL, &note]));
        vouch_core::fail::point("team.head");
        recorded
            .map(|_| ())
            .map_err(|e| self.db.failed("recording the audit chain's head", &e))
    }
}

impl SharedHold for Hold {
    fn head(&self) -> Option<ChainHead> {
        self.head.clone()
    }

    fn release(mut self: Box<Self>, head: ChainHead) {
        // Nothing to say it to if this fails: the files are written and
        // logged; the next holder finds an older head that the log still
        // holds, which passes.
        if self.head.as_ref() != Some(&head) {
            let was = self.head.clone();
            let _ = self.record(&head, Some(&was));
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        *self.holder.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let Some(mut c) = self.client.take() else {
            return;
        };
        // A connection that cannot unlock, or did not hold the lock any
        // more (it was lost and this is another session), is dropped: the
        // lock, if any, goes with it. At most a few are kept.
        c.worked = c
            .query_one("SELECT pg_advisory_unlock($1)", &[&WRITE_LOCK_KEY])
            .is_ok_and(|row| row.get::<_, bool>(0));
    }
}
