//! A vouch team server's shared state on PostgreSQL.
//!
//! Replicas of `vouch serve --transport http` that serve one knowledge
//! base share its working tree (the knowledge files stay the truth, in
//! git) and one database, which holds what a network volume's file locks
//! and one process's memory cannot be trusted with:
//!
//! - the write lock every replica takes before it writes ([`TeamLock`], a
//!   session-level advisory lock: it goes with the connection when a
//!   replica dies), and the audit chain's head the last writer left, so a
//!   replica whose view of the tree is not the one the others wrote is
//!   refused before it writes;
//! - the review pages' sign-in: sessions and failed sign-ins
//!   ([`Sessions`]), so a cookie works on every replica behind a load
//!   balancer and a guesser gets one limit, not one per replica;
//! - news of each write: a new head is announced (`NOTIFY`) and every
//!   other replica's index keeper catches up at once
//!   ([`TeamLock::follow`]);
//! - the vectors each replica's model made, by text ([`TeamVectors`]), so
//!   no other replica's model runs on the same text;
//! - the review queue: the pending proposals ([`TeamQueue`]), so every
//!   replica lists, and decides, the same ones;
//! - the derived index ([`TeamIndex`]: the documents, their words, each
//!   document's vectors and the audit admission rows), so every replica
//!   reads one index and a new one answers without reading the files.
//!
//! The URL's password is never shown: [`Database::shown`] is what any
//! message names.

#![warn(unreachable_pub, missing_docs)]

mod index;
mod lock;
mod queue;
mod schema;
mod sessions;
mod tls;
mod vectors;

pub use index::TeamIndex;
pub use lock::TeamLock;
pub use queue::TeamQueue;
pub use sessions::{SessionRow, Sessions};
pub use vectors::TeamVectors;

use postgres::config::Host;
use postgres::{Client, NoTls};
use std::str::FromStr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use vouch_core::{Error, ErrorKind};

/// How long connecting may take before the request that needed it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Idle time before TCP keepalives probe the database's connection.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(20);

/// A team server's database: where it is and how to reach it.
pub struct Database {
    config: postgres::Config,
    shown: String,
    /// TLS unless `sslmode=disable` (a Unix socket never uses it).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

impl Database {
    /// Parse `url` (`postgresql://user:password@host:port/dbname?…`, or
    /// libpq's `key=value` form). Nothing is connected yet.
    pub fn new(url: &str) -> Result<Database, Error> {
        let (url, root_cert) = tls::split_root_cert(url);
        let url = url.as_str();
        let mut config = postgres::Config::from_str(url).map_err(|e| {
            // The parser's message can quote the URL: say only what to fix.
            Error::invalid(format!(
                "the team database URL does not parse ({}): expected \
                 postgresql://USER:PASSWORD@HOST:PORT/DBNAME",
                without_secrets(&e.to_string(), url)
            ))
        })?;
        // A Unix socket never speaks TLS (and has no name to verify).
        let all_sockets = config
            .get_hosts()
            .iter()
            .all(|h| socket_folder(h).is_some());
        // Over a network, TLS unless the URL says otherwise: under libpq's
        // default (`prefer`) a server, or anyone in the way, answering
        // "no TLS" would get the password in the clear.
        let remote = config.get_hosts().iter().any(|h| match h {
            Host::Tcp(name) => !matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
            #[allow(unreachable_patterns)]
            _ => false,
        });
        if remote && !url.contains("sslmode") {
            config.ssl_mode(postgres::config::SslMode::Require);
        }
        let tls =
            match config.get_ssl_mode() {
                postgres::config::SslMode::Disable => None,
                _ if all_sockets => None,
                _ => Some(tls::connector(root_cert.as_deref()).map_err(|e| {
                    Error::invalid(format!("the team database's TLS settings: {e}"))
                })?),
            };
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // A database that went away mid-conversation (a lost host, a
        // partition) is noticed in about half a minute, not the kernel's
        // two hours: a replica's follower would otherwise hear nothing, and
        // a held lock would outlive its holder's knowledge of it.
        config.keepalives_idle(KEEPALIVE_IDLE);
        config.keepalives_interval(Duration::from_secs(5));
        config.keepalives_retries(3);
        config.tcp_user_timeout(Duration::from_secs(30));
        // No statement waits forever (the lock's own wait gives up first,
        // with its own message). And the same watch from the server's end:
        // a replica whose host vanished (a partition, a power cut: no
        // packet says so) would otherwise keep the write lock it held for
        // the server's two hours of TCP silence, and every other replica
        // would be refused meanwhile; so the server drops its connection,
        // and the lock with it, in about half a minute.
        let ours = "-c statement_timeout=40s -c tcp_keepalives_idle=20 \
                    -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3 \
                    -c tcp_user_timeout=30000";
        let options = match config.get_options() {
            Some(o) if !o.trim().is_empty() => format!("{o} {ours}"),
            _ => ours.to_string(),
        };
        config.options(&options);
        if config.get_hosts().is_empty() {
            return Err(Error::invalid(
                "the team database URL names no host (a host name, an address, or \
                 ?host=/path/to/socket-folder)",
            ));
        }
        config.application_name("vouch");
        let shown = shown(&config);
        Ok(Database { config, shown, tls })
    }

    /// The database as any message names it: user, hosts, port and
    /// database name; never the password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection, with vouch's tables made if missing.
    pub(crate) fn connect(&self) -> Result<Client, Error> {
        let connected = match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(NoTls),
        };
        let mut client = connected.map_err(|e| self.unreachable(&e))?;
        schema::ensure(&mut client).map_err(|e| self.failed("preparing vouch's tables", &e))?;
        Ok(client)
    }

    /// The error for a database that could not be reached.
    pub(crate) fn unreachable(&self, e: &postgres::Error) -> Error {
        Error::new(
            ErrorKind::Busy,
            format!(
                "the team database {} cannot be reached ({}); nothing was written, and the next \
                 request tries again",
                self.shown,
                self.cleaned(e)
            ),
        )
    }

    /// The error for a statement that failed while `doing`: one whose
    /// connection was lost (a broken pipe, the server gone) is said as a
    /// database that cannot be reached.
    pub(crate) fn failed(&self, doing: &str, e: &postgres::Error) -> Error {
        if connection_lost(e) {
            // Whether a statement whose answer was lost was done, nobody
            // here knows: not "nothing was written".
            return Error::new(
                ErrorKind::Busy,
                format!(
                    "the team database {} cannot be reached ({}): {doing} was cut off; the \
                     next request tries again",
                    self.shown,
                    self.cleaned(e)
                ),
            );
        }
        // Data the database will not hold (a value out of its range, a
        // `tsvector` past its size): what was sent is at fault, not the
        // database, and sending it again fails again.
        if let Some(db) = e.as_db_error()
            && matches!(&db.code().code()[..2], "22" | "54")
        {
            return Error::new(
                ErrorKind::Internal,
                format!(
                    "the team database {}: {doing} was refused ({}); nothing was written",
                    self.shown,
                    self.cleaned(e)
                ),
            );
        }
        Error::new(
            ErrorKind::Busy,
            format!(
                "the team database {}: {doing} failed ({}); nothing was written",
                self.shown,
                self.cleaned(e)
            ),
        )
    }

    /// `e`'s text without the password, should a server ever echo it.
    fn cleaned(&self, e: &postgres::Error) -> String {
        let text = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => {
                // The cause says what to fix ("invalid peer certificate:
                // UnknownIssuer"); the top line often does not.
                let mut text = e.to_string();
                let mut cause = std::error::Error::source(e);
                while let Some(c) = cause {
                    text.push_str(": ");
                    text.push_str(&c.to_string());
                    cause = c.source();
                }
                text
            }
        };
        match self.config.get_password() {
            Some(pw) if !pw.is_empty() => text.replace(String::from_utf8_lossy(pw).as_ref(), "***"),
            _ => text,
        }
    }
}

/// Connections to the database for one use (the queue, the sessions, the
/// vectors, the write lock), made when first needed, each call on one of
/// its own. At most [`OPEN_AT_MOST`] are open at once, [`IDLE_KEPT`] of
/// them kept between calls; past them a call waits its turn, in the order
/// asked ([`Turns`]), so a writer listing the queue under the write lock
/// waits behind a few short statements at most.
#[derive(Clone)]
pub(crate) struct Conns(Arc<Pool>);

/// What the clones of one [`Conns`] share.
struct Pool {
    db: Arc<Database>,
    /// What each new connection runs first (the lock's wait), if anything.
    setup: Option<String>,
    /// Connections kept for the next call, each with when it was last used.
    idle: Mutex<Vec<(Client, Instant)>>,
    /// The calls that hold a connection (or are making one) now, and
    /// those waiting for one.
    turns: Turns,
}

/// Turns at a use's connections, given in the order asked: a writer
/// holding the write lock waits behind the calls that asked before it
/// (each one short statement), never behind those that ask after. Woken
/// at random, a writer could wait out a burst of review pages until it
/// gave up, the lock held all the while.
struct Turns {
    state: Mutex<TurnState>,
    freed: Condvar,
}

#[derive(Default)]
struct TurnState {
    /// Turns being had now.
    out: usize,
    /// Tickets waiting, first asked first.
    waiting: std::collections::VecDeque<u64>,
    next: u64,
}

impl Turns {
    fn new() -> Turns {
        Turns {
            state: Mutex::new(TurnState::default()),
            freed: Condvar::new(),
        }
    }

    /// Wait for a turn while fewer than `at_most` are had: true once
    /// taken, false when `wait` passed first (the place in line given up).
    fn take(&self, at_most: usize, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let me = state.next;
        state.next += 1;
        state.waiting.push_back(me);
        loop {
            if state.out < at_most && state.waiting.front() == Some(&me) {
                state.waiting.pop_front();
                state.out += 1;
                // The next in line may fit too.
                self.freed.notify_all();
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                state.waiting.retain(|t| *t != me);
                self.freed.notify_all();
                return false;
            }
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// A turn is over.
    fn give_back(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.out = state.out.saturating_sub(1);
        self.freed.notify_all();
    }
}

/// Connections kept between calls, per use: more at once are made, and
/// closed after.
const IDLE_KEPT: usize = 4;

/// Connections one use opens at once, at most. A replica's HTTP server
/// runs up to 256 requests at once: without a cap a burst listing the
/// queue would open as many connections, past PostgreSQL's default
/// `max_connections` of 100, and every replica's next request would be
/// refused. Past the cap a call waits its turn.
const OPEN_AT_MOST: usize = 8;

/// How long a call waits for its turn at a connection before it fails
/// (the database is that slow, or that busy).
const TURN_WAIT: Duration = Duration::from_secs(10);

/// A kept connection idle this long is asked whether it still works (one
/// round trip) before it is used: the database may have restarted
/// meanwhile — a stop and start take well under a second — and the request
/// would otherwise fail on a broken pipe. Calls closer together than this
/// (a listing and the reads that follow it) ask once.
const CHECK_AFTER_IDLE: Duration = Duration::from_millis(100);

/// A connection one call holds, given back when dropped: kept for the
/// next call if its last use `worked`, and the turn handed on either way.
pub(crate) struct Leased {
    conns: Conns,
    client: Option<Client>,
    /// Whether the connection is fit to keep (what was done on it worked);
    /// false until its user says so.
    pub(crate) worked: bool,
}

impl std::ops::Deref for Leased {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client
            .as_ref()
            .expect("a leased connection until dropped")
    }
}

impl std::ops::DerefMut for Leased {
    fn deref_mut(&mut self) -> &mut Client {
        self.client
            .as_mut()
            .expect("a leased connection until dropped")
    }
}

impl Drop for Leased {
    fn drop(&mut self) {
        let pool = &self.conns.0;
        if let Some(c) = self.client.take()
            && self.worked
            && !c.is_closed()
        {
            let mut idle = pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE_KEPT {
                idle.push((c, Instant::now()));
            }
        }
        pool.turns.give_back();
    }
}

impl Conns {
    pub(crate) fn new(db: Arc<Database>) -> Conns {
        Conns::with_setup(db, None)
    }

    /// Connections that each run `setup` when made.
    pub(crate) fn with_setup(db: Arc<Database>, setup: Option<String>) -> Conns {
        Conns(Arc::new(Pool {
            db,
            setup,
            idle: Mutex::new(Vec::new()),
            turns: Turns::new(),
        }))
    }

    /// The database, as messages name it.
    pub(crate) fn shown(&self) -> &str {
        self.0.db.shown()
    }

    /// The error for a statement of this use that failed while `doing`.
    pub(crate) fn failed(&self, doing: &str, e: &postgres::Error) -> Error {
        self.0.db.failed(doing, e)
    }

    /// A connection for `doing`, once this use has fewer than
    /// [`OPEN_AT_MOST`] out: a kept one that still works (asked when it
    /// sat idle), else a new one.
    pub(crate) fn lease(&self, doing: &str) -> Result<Leased, Error> {
        let pool = &self.0;
        if !pool.turns.take(OPEN_AT_MOST, TURN_WAIT) {
            return Err(Error::new(
                ErrorKind::Busy,
                format!(
                    "the team database {}: {doing} waited {} s for one of this replica's \
                     {OPEN_AT_MOST} connections, all busy; nothing was written, and the next \
                     request tries again",
                    pool.db.shown(),
                    TURN_WAIT.as_secs()
                ),
            ));
        }
        // From here the turn is handed on when `leased` drops, on every
        // path. Not kept unless its user says it worked: a connection
        // given up on mid-way may still hold the write lock.
        let mut leased = Leased {
            conns: self.clone(),
            client: None,
            worked: false,
        };
        let kept = loop {
            let popped = pool.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some((mut c, used)) = popped else {
                break None;
            };
            if !c.is_closed()
                && (used.elapsed() < CHECK_AFTER_IDLE || c.is_valid(Duration::from_secs(2)).is_ok())
            {
                break Some(c);
            }
        };
        leased.client = Some(match kept {
            Some(c) => c,
            None => {
                let mut c = pool.db.connect()?;
                if let Some(setup) = &pool.setup {
                    c.batch_execute(setup)
                        .map_err(|e| pool.db.failed("preparing a connection", &e))?;
                }
                c
            }
        });
        Ok(leased)
    }

    /// Run `f` on a connection of [`Conns::lease`]'s; a failure drops it.
    /// `f` runs once: nothing is retried, since a statement whose answer
    /// was lost may have been done.
    pub(crate) fn with<T>(
        &self,
        doing: &str,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, Error> {
        let mut c = self.lease(doing)?;
        let done = f(&mut c);
        c.worked = done.is_ok();
        done.map_err(|e| self.failed(doing, &e))
    }
}

/// Whether `e` is the connection's failure (closed, or an I/O error on
/// its socket) rather than the database's answer or this side's.
fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.is::<std::io::Error>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// `user@host:port/dbname` as a URL, the password left out.
fn shown(config: &postgres::Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let port = ports.get(i).or(ports.first());
            match (h, socket_folder(h)) {
                (_, Some(dir)) => format!("[socket in {}]", dir.display()),
                (Host::Tcp(name), None) => match port {
                    Some(p) => format!("{name}:{p}"),
                    None => name.clone(),
                },
                #[allow(unreachable_patterns)]
                _ => String::new(),
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    format!("postgresql://{user}{}/{db}", hosts.join(","))
}

/// The folder of a Unix socket host (`None`: a network host).
fn socket_folder(h: &Host) -> Option<&std::path::Path> {
    match h {
        #[cfg(unix)]
        Host::Unix(dir) => Some(dir),
        _ => None,
    }
}

/// `text` with anything after a URL's `:` and before its `@` masked,
/// and `url` itself replaced: a parse error may quote either.
fn without_secrets(text: &str, url: &str) -> String {
    let masked = text.replace(url, "<the URL>");
    match (masked.find("://"), masked.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &masked[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &masked[..s + 3], &masked[at..]),
                None => masked,
            }
        }
        _ => masked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each waits until the one asked before it is waiting, then all are
    /// let go one turn at a time: served in the order asked.
    #[test]
    fn turns_are_given_in_the_order_asked() {
        let turns = Arc::new(Turns::new());
        assert!(turns.take(1, Duration::from_secs(5)), "the one turn, had");
        let served = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..6 {
            let (t, s) = (turns.clone(), served.clone());
            waiters.push(std::thread::spawn(move || {
                assert!(t.take(1, Duration::from_secs(30)), "waiter {i} served");
                s.lock().unwrap().push(i);
                t.give_back();
            }));
            while turns.state.lock().unwrap().waiting.len() < i + 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        turns.give_back();
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*served.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }

    /// A caller that waited too long gives its place up; the one behind
    /// it is served next.
    #[test]
    fn a_turn_not_had_in_time_gives_its_place_to_the_next() {
        let turns = Arc::new(Turns::new());
        assert!(turns.take(1, Duration::from_secs(5)));
        let first = {
            let t = turns.clone();
            std::thread::spawn(move || t.take(1, Duration::from_millis(200)))
        };
        while turns.state.lock().unwrap().waiting.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let second = {
            let t = turns.clone();
            std::thread::spawn(move || t.take(1, Duration::from_secs(30)))
        };
        assert!(!first.join().unwrap(), "the first gave up");
        turns.give_back();
        assert!(second.join().unwrap(), "the second was served");
        assert!(turns.state.lock().unwrap().waiting.is_empty());
    }

    #[test]
    fn the_password_is_never_in_what_is_shown() {
        let db = Database::new("postgresql://vouch:s3cr3t-pw@db.example.org:6543/kb").unwrap();
        assert_eq!(db.shown(), "postgresql://vouch@db.example.org:6543/kb");
        let db = Database::new("host=/run/pg user=u password=s3cr3t-pw dbname=kb").unwrap();
        assert!(!db.shown().contains("s3cr3t"), "{}", db.shown());
        assert!(db.shown().contains("/run/pg"), "{}", db.shown());
    }

    #[test]
    fn a_bad_url_is_refused_without_quoting_its_password() {
        let e = Database::new("postgresql://vouch:s3cr3t-pw@db:notaport/kb")
            .err()
            .expect("refused");
        assert!(!e.message.contains("s3cr3t"), "{}", e.message);
        let e = Database::new(
            "postgresql://vouch:s3cr3t-pw@db/kb?sslmode=require&sslrootcert=/no/such/ca.pem",
        )
        .err()
        .expect("refused");
        assert!(
            e.message.contains("sslrootcert /no/such/ca.pem"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("s3cr3t"), "{}", e.message);
    }
}
