//! The team database's lock, head and change feed against a real
//! PostgreSQL (Debian's, a throwaway cluster from `scripts/postgres.sh`).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;
use vouch_core::store::lock::{ChainHead, SharedLock};
use vouch_postgres::{Database, TeamLock};

#[path = "shared/kept.rs"]
mod kept;
#[path = "shared/words.rs"]
mod words;

/// A source registered in `kb` by an agent; its id.
fn registered_source(kb: &vouch_core::Kb, content: &str) -> String {
    vouch_core::methods::dispatch(
        kb,
        &vouch_core::Caller::new("agent", vouch_core::Transport::Jsonl),
        "kb.register_source",
        serde_json::json!({"content": content, "locator": "notes"}),
    )
    .expect("source")["id"]
        .as_str()
        .expect("id")
        .to_string()
}

/// A claim proposed in `kb` by an agent citing `src` and approved by a
/// person; its id.
fn approved_claim(kb: &vouch_core::Kb, src: &str, text: &str) -> String {
    let proposed = vouch_core::methods::dispatch(
        kb,
        &vouch_core::Caller::new("agent", vouch_core::Transport::Jsonl),
        "kb.propose_claim",
        serde_json::json!({"text": text, "evidence": [src]}),
    )
    .expect("propose");
    vouch_core::methods::dispatch(
        kb,
        &vouch_core::Caller::new("alice", vouch_core::Transport::Cli),
        "kb.approve",
        serde_json::json!({"proposal_id": proposed["proposal_id"]}),
    )
    .expect("approve");
    proposed["claim_id"].as_str().expect("id").to_string()
}

/// A cluster of its own, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = postgres_sh("start", dir.path());
        assert!(
            out.status.success(),
            "scripts/postgres.sh start (Debian's postgresql package is needed): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout)
            .expect("url")
            .trim()
            .to_string();
        Cluster { dir, url }
    }

    /// `scripts/postgres.sh COMMAND` on this cluster (`stop`, or `start`
    /// it again), which must succeed.
    fn run(&self, command: &str) {
        let out = postgres_sh(command, self.dir.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = postgres_sh("stop", self.dir.path());
    }
}

/// `scripts/postgres.sh COMMAND DIR`, run.
fn postgres_sh(command: &str, dir: &Path) -> std::process::Output {
    Command::new(script())
        .arg(command)
        .arg(dir)
        .output()
        .expect("scripts/postgres.sh")
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres.sh")
}

fn head(id: &str) -> ChainHead {
    ChainHead {
        id: id.to_string(),
        hash: format!("{id}-hash"),
    }
}

#[test]
fn one_holder_at_a_time_and_the_next_finds_the_head_left() {
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let a = TeamLock::new(db.clone(), "a");
    let b = Arc::new(TeamLock::new(db, "b"));
    let held = a.acquire().expect("a takes it");
    assert_eq!(held.head(), None, "nothing recorded yet");
    let (took, taken) = mpsc::channel();
    let waiter = {
        let b = b.clone();
        std::thread::spawn(move || {
            let hold = b.acquire().expect("b takes it after a");
            took.send(hold.head()).expect("send");
        })
    };
    assert!(
        taken.recv_timeout(Duration::from_millis(500)).is_err(),
        "b must wait while a holds the lock"
    );
    held.release(head("e1"));
    let seen = taken
        .recv_timeout(Duration::from_secs(10))
        .expect("b got it");
    assert_eq!(seen, Some(head("e1")));
    waiter.join().expect("b");
    // Dropped without a release, a hold leaves the head as it was.
    drop(a.acquire().expect("again"));
    assert_eq!(a.acquire().expect("again").head(), Some(head("e1")));
}

#[test]
fn followers_hear_of_other_writers_heads_and_not_their_own() {
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let a = TeamLock::new(db.clone(), "replica a");
    let b = TeamLock::new(db, "replica b");
    let (heard, hears) = mpsc::channel();
    b.follow(move || {
        let _ = heard.send(());
    });
    // Once on connecting: what was written before it listened.
    hears
        .recv_timeout(Duration::from_secs(10))
        .expect("the first call");
    a.acquire().expect("a").release(head("e1"));
    hears
        .recv_timeout(Duration::from_secs(10))
        .expect("b hears of a's write");
    b.acquire().expect("b").release(head("e2"));
    assert!(
        hears.recv_timeout(Duration::from_millis(700)).is_err(),
        "b does not hear of its own write"
    );
}

#[test]
fn a_database_that_is_away_is_said_without_its_password() {
    let db = Database::new("postgresql://vouch:pw-f00d@127.0.0.1:1/vouch?connect_timeout=2")
        .expect("url");
    let lock = TeamLock::new(Arc::new(db), "a");
    let e = lock.acquire().err().expect("no database there");
    assert!(e.message.contains("cannot be reached"), "{}", e.message);
    assert!(!e.message.contains("pw-f00d"), "{}", e.message);
}

#[test]
fn a_hold_whose_connection_was_lost_never_overwrites_a_newer_head() {
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let a = TeamLock::new(db.clone(), "a");
    let b = TeamLock::new(db, "b");
    a.acquire().expect("a").release(head("e1"));
    let stale = a.acquire().expect("a again");
    assert_eq!(stale.head(), Some(head("e1")));
    // Its connection is cut (a partition, an administrator): PostgreSQL
    // releases its lock, and b writes.
    let mut admin = postgres::Client::connect(&pg.url, postgres::NoTls).expect("admin");
    let cut: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_locks \
             WHERE locktype = 'advisory' AND granted",
            &[],
        )
        .expect("terminate")
        .get(0);
    assert_eq!(cut, 1, "a's lock was held on one connection");
    let fresh = b.acquire().expect("b gets the lock a lost");
    assert_eq!(fresh.head(), Some(head("e1")));
    fresh.release(head("e2"));
    // a, not knowing, gives back what it thinks it holds: e2 stays.
    stale.release(head("e3"));
    assert_eq!(b.acquire().expect("b").head(), Some(head("e2")));
}

#[test]
fn a_lock_lost_with_its_connection_is_known_to_be_lost() {
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let a = TeamLock::new(db, "a");
    let hold = a.acquire().expect("a");
    assert!(a.still_held().expect("asked"), "held while taken");
    // With a timeout, it returns once the backend is gone (and its lock).
    let mut admin = postgres::Client::connect(&pg.url, postgres::NoTls).expect("admin");
    admin
        .execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND granted",
            &[],
        )
        .expect("terminate");
    assert!(!a.still_held().expect("asked"), "gone with its connection");
    drop(hold);
    assert!(!a.still_held().expect("asked"), "not held once given back");
}

/// The team's vectors: what one replica keeps, another fetches — by model
/// and text, the first kept of a text staying — and a row that is not
/// whole finite chunks of the model's dimension is never handed out.
#[test]
fn vectors_kept_by_one_replica_are_fetched_by_another_and_bad_rows_are_left_out() {
    use vouch_core::services::SharedVectors;
    use vouch_postgres::TeamVectors;
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let a = TeamVectors::new(db.clone());
    let b = TeamVectors::new(db);
    let one = vec![vec![0.5f32, -0.25, 1.0]];
    let two = vec![vec![0.0f32, 1.0, 0.0], vec![1.0, 0.0, 0.0]];
    a.keep("m@1", 3, &[("sha-one", &one), ("sha-two", &two)])
        .expect("kept");
    // Kept again with other values: the first stays.
    a.keep("m@1", 3, &[("sha-one", &two)]).expect("kept again");
    let mut got = b
        .fetch("m@1", 3, &["sha-one", "sha-two", "sha-none"])
        .expect("fetched");
    got.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        got,
        vec![
            ("sha-one".to_string(), one.clone()),
            ("sha-two".to_string(), two)
        ]
    );
    assert!(
        b.fetch("m@2", 3, &["sha-one"])
            .expect("other model")
            .is_empty()
    );
    assert!(
        b.fetch("m@1", 4, &["sha-one"])
            .expect("other dim")
            .is_empty()
    );
    // Rows planted by hand: not finite, cut short.
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).expect("connect");
    let nan: Vec<u8> = [0.5f32, f32::NAN, 0.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    c.execute(
        "INSERT INTO vouch_vectors (model, sha, dim, chunks) VALUES ('m@1', 'sha-nan', 3, $1), ('m@1', 'sha-short', 3, $2)",
        &[&nan, &&nan[..7]],
    )
    .expect("planted");
    let got = b
        .fetch("m@1", 3, &["sha-nan", "sha-short", "sha-one"])
        .expect("fetched");
    assert_eq!(got, vec![("sha-one".to_string(), one)]);
    assert!(b.describe().contains("the team database postgresql://"));
}

/// A prune removes the model's rows whose text is not current and that
/// were kept before the grace; a row kept within it stays whatever its
/// text (another replica may have written it since), and other models'
/// rows are counted, then removed only when asked. Sent in parts: more
/// current texts than one statement takes are all honoured.
#[test]
fn a_prune_removes_old_rows_of_texts_gone_and_leaves_the_rest() {
    use vouch_core::services::{SharedPruned, SharedVectors};
    use vouch_postgres::TeamVectors;
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let team = TeamVectors::new(db);
    let v = vec![vec![0.5f32, -0.25, 1.0]];
    team.keep(
        "m@1",
        3,
        &[("current", &v), ("gone-old", &v), ("gone-young", &v)],
    )
    .expect("kept");
    team.keep("m@0", 3, &[("current", &v)]).expect("kept");
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).expect("connect");
    c.execute(
        "UPDATE vouch_vectors SET made_at = now() - interval '2 hours' WHERE sha <> 'gone-young'",
        &[],
    )
    .expect("aged");
    // The current text last of many more than one part holds.
    let mut current: Vec<String> = (0..120_000).map(|i| format!("other-{i}")).collect();
    current.push("current".into());
    let current: Vec<&str> = current.iter().map(String::as_str).collect();
    let hour = Duration::from_secs(3600);
    let done = team.prune("m@1", &current, hour, false).expect("pruned");
    let left_other = SharedPruned {
        removed: 1,
        left: 2,
        other_models_removed: 0,
        other_models_left: 1,
    };
    assert_eq!(done, left_other);
    let shas: Vec<String> = c
        .query(
            "SELECT sha FROM vouch_vectors WHERE model = 'm@1' ORDER BY sha",
            &[],
        )
        .expect("rows")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(shas, ["current", "gone-young"]);
    let done = team
        .prune("m@1", &["current"], Duration::ZERO, true)
        .expect("pruned");
    let all_but_current = SharedPruned {
        removed: 1,
        left: 1,
        other_models_removed: 1,
        other_models_left: 0,
    };
    assert_eq!(done, all_but_current);
    assert_eq!(
        team.fetch("m@1", 3, &["current"]).expect("fetched"),
        vec![("current".to_string(), v)]
    );
}

#[test]
fn the_queue_keeps_each_proposal_once_and_every_replica_reads_it() {
    use vouch_core::store::queue::SharedQueue;
    use vouch_postgres::TeamQueue;
    let pg = Cluster::start();
    let db = Arc::new(Database::new(&pg.url).expect("url"));
    let a = TeamQueue::new(db.clone());
    let b = TeamQueue::new(db);
    let p1 = (
        "20261129-120000-aaaaaaaa".to_string(),
        b"kind: claim\n".to_vec(),
    );
    let p2 = (
        "20261129-120001-bbbbbbbb".to_string(),
        b"kind: page\n".to_vec(),
    );
    assert_eq!(
        a.keep(&[p1.clone(), p2.clone()]).expect("keep"),
        Vec::<String>::new()
    );
    // Kept again as it is: nothing differs; with other bytes: named, and
    // the first kept stays.
    assert_eq!(
        a.keep(std::slice::from_ref(&p1)).expect("again"),
        Vec::<String>::new()
    );
    let other = (p1.0.clone(), b"kind: entity\n".to_vec());
    assert_eq!(b.keep(&[other]).expect("other"), vec![p1.0.clone()]);
    assert_eq!(b.ids().expect("ids"), vec![p1.0.clone(), p2.0.clone()]);
    let ask = [
        p2.0.clone(),
        "20261129-000000-cccccccc".to_string(),
        p1.0.clone(),
    ];
    assert_eq!(b.read(&ask).expect("read"), vec![p1.clone(), p2.clone()]);
    b.forget(std::slice::from_ref(&p1.0)).expect("forget");
    assert_eq!(a.ids().expect("ids"), vec![p2.0.clone()]);
    assert_eq!(a.read(std::slice::from_ref(&p1.0)).expect("read"), vec![]);
}

#[test]
fn a_queue_out_of_reach_is_said_without_its_password() {
    use vouch_core::store::queue::SharedQueue;
    let db = Database::new("postgresql://vouch:pw-f00d@127.0.0.1:1/vouch?connect_timeout=2")
        .expect("url");
    let queue = vouch_postgres::TeamQueue::new(Arc::new(db));
    let e = queue.ids().expect_err("no database there");
    assert!(e.message.contains("cannot be reached"), "{}", e.message);
    assert!(!e.message.contains("pw-f00d"), "{}", e.message);
}

#[test]
fn a_kept_connection_is_made_anew_after_the_database_restarted() {
    use vouch_core::store::queue::SharedQueue;
    let pg = Cluster::start();
    let queue = vouch_postgres::TeamQueue::new(Arc::new(Database::new(&pg.url).expect("url")));
    assert_eq!(queue.ids().expect("ids"), Vec::<String>::new());
    pg.run("stop");
    let away = queue.ids().expect_err("stopped");
    assert!(
        away.message.contains("cannot be reached"),
        "{}",
        away.message
    );
    pg.run("start");
    assert_eq!(
        queue.ids().expect("the first call after"),
        Vec::<String>::new()
    );
    // Restarted under a connection kept and idle (for as long as a stop
    // and a start take).
    pg.run("stop");
    pg.run("start");
    assert_eq!(queue.ids().expect("after a restart"), Vec::<String>::new());
}

#[test]
fn a_burst_of_calls_opens_at_most_eight_connections_and_every_call_is_answered() {
    use vouch_core::store::queue::SharedQueue;
    let pg = Cluster::start();
    let queue = Arc::new(vouch_postgres::TeamQueue::new(Arc::new(
        Database::new(&pg.url).expect("url"),
    )));
    // What the database sees: its connections named `vouch` (the
    // watcher's own is named otherwise).
    let mut watcher = <postgres::Config as std::str::FromStr>::from_str(&pg.url)
        .expect("url")
        .application_name("watcher")
        .connect(postgres::NoTls)
        .expect("watcher");
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let callers: Vec<_> = (0..40)
        .map(|_| {
            let queue = queue.clone();
            std::thread::spawn(move || {
                (0..25)
                    .map(|_| queue.ids().is_ok())
                    .filter(|ok| *ok)
                    .count()
            })
        })
        .collect();
    let watching = {
        let done = done.clone();
        std::thread::spawn(move || {
            // A connection the pool closed shows until its backend has
            // exited, a moment after (longer while other tests load the
            // machine): a count is taken as what was open only when the
            // two after it, 10 ms apart, are as high.
            let mut most = 0i64;
            let mut last = [0i64; 3];
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let open: i64 = watcher
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'vouch'",
                        &[],
                    )
                    .expect("count")
                    .get(0);
                last = [last[1], last[2], open];
                most = most.max(*last.iter().min().expect("three"));
                std::thread::sleep(Duration::from_millis(10));
            }
            most
        })
    };
    let answered: usize = callers.into_iter().map(|c| c.join().expect("caller")).sum();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = watching.join().expect("watcher");
    assert_eq!(answered, 40 * 25, "every call answered");
    assert!(most >= 2, "the calls overlapped ({most} open at most)");
    assert!(most <= 8, "{most} connections open at once");
}
