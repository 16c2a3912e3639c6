//! A process watching the files (`vouch watch`, `vouch serve`) keeps the
//! index in step, and one-shot commands trust it instead of scanning —
//! only while it lives and answers, only for the file it keeps.
//! Linux only (inotify); elsewhere the watcher refuses to start.
#![cfg(target_os = "linux")]

use crate::common::{Project, assert_contains, assert_lacks};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

/// A running `vouch watch`, killed on drop.
struct Watcher {
    child: Child,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Watcher {
    fn start(p: &Project) -> Watcher {
        let mut child = p
            .command("watcher")
            .arg("watch")
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vouch watch");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("vouch watch said nothing in 30 s");
            if line.starts_with("vouch: watching ") {
                break;
            }
        }
        Watcher { child, stderr: rx }
    }
    /// Wait for a line of the watcher's stderr containing `text`.
    fn said(&self, text: &str) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(text) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }
    fn pid(&self) -> u32 {
        self.child.id()
    }
    fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .expect("kill");
        assert!(ok.success());
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn claim_file(p: &Project, id: &str) -> PathBuf {
    p.vouch_dir().join("claims").join(format!("{id}.yaml"))
}

/// Rewrite `from` as `to` (same length) inside the file, in place (no
/// rename, as nano or VS Code save), and put its mtime back: size and mtime
/// are what they were, so a scan of signatures cannot see the change.
fn edit_unseen(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    // Only in the line that holds the words (ids are slugs of them too).
    let at = text
        .lines()
        .position(|l| (l.starts_with("text:") || l.starts_with("locator:")) && l.contains(from))
        .unwrap_or_else(|| panic!("{from} not in a text line of {}", path.display()));
    let edited: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == at {
                l.replace(from, to)
            } else {
                l.to_string()
            }
        })
        .collect();
    let mut edited = edited.join("\n");
    if text.ends_with('\n') {
        edited.push('\n');
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all(edited.as_bytes()).unwrap();
    f.set_modified(mtime).unwrap();
}

/// A KB with one approved claim whose file is an hour old (out of the
/// scan's 2 s "racy" window) and indexed.
fn project_with_claim(text: &str) -> (Project, String) {
    let p = Project::new();
    let src = p.source(text);
    let id = p.claim(text, &src);
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::OpenOptions::new()
        .write(true)
        .open(claim_file(&p, &id))
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    p.ok("x", &["index", "rebuild"]);
    (p, id)
}

fn hits(p: &Project, query: &str) -> (Vec<String>, String) {
    let r = p.run("x", &["--json", "search", query]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    let ids = v
        .as_array()
        .unwrap_or_else(|| panic!("not a list of hits: {v}"))
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect();
    (ids, r.stderr)
}

/// [`hits`] as answered by the watcher. A watcher too slow to answer within
/// 500 ms (a loaded test machine) is bypassed by a scan, which would miss the
/// edits these tests make: ask again until the watcher answers.
fn watched_hits(p: &Project, query: &str) -> Vec<String> {
    for _ in 0..20 {
        let (found, stderr) = hits(p, query);
        if !stderr.contains("did not answer") {
            return found;
        }
    }
    panic!("the watcher never answered a search for {query:?}");
}

#[test]
fn one_shot_commands_take_the_watchers_word_only_while_it_lives() {
    let (p, id) = project_with_claim("The tracing service is owned by the platform team");
    let w = Watcher::start(&p);
    let status = p.ok("x", &["status"]);
    assert_eq!(status["retrieval"]["watcher"]["pid"], w.pid(), "{status}");

    // An edit no scan can see: the watcher was told by the kernel.
    edit_unseen(&claim_file(&p, &id), "platform", "gardener");
    assert_eq!(watched_hits(&p, "gardener"), vec![id.clone()]);

    // Killed, it answers for nothing: the command scans, and a scan misses
    // exactly this kind of edit (which is how we know the watcher answered
    // above) until a rebuild.
    drop(w);
    let status = p.ok("x", &["status"]);
    assert!(status["retrieval"]["watcher"].is_null(), "{status}");
    edit_unseen(&claim_file(&p, &id), "gardener", "tortoise");
    assert!(hits(&p, "tortoise").0.is_empty());
    p.ok("x", &["index", "rebuild"]);
    assert_eq!(hits(&p, "tortoise").0, vec![id]);
}

#[test]
fn a_watcher_that_does_not_answer_is_not_trusted() {
    let (p, id) = project_with_claim("The billing queue retries failed charges twice");
    let w = Watcher::start(&p);
    w.signal("-STOP");
    // An ordinary edit (new mtime): the scan the command falls back to sees it.
    let path = claim_file(&p, &id);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("charges twice", "charges thrice")).unwrap();
    let started = std::time::Instant::now();
    let (found, stderr) = hits(&p, "thrice");
    let waited = started.elapsed();
    w.signal("-CONT");
    assert_eq!(found, vec![id.clone()], "{stderr}");
    assert!(
        stderr.contains("did not answer within 500 ms; scanned the files instead"),
        "{stderr}"
    );
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    // Awake again, it answers, and its cookie folder is left empty.
    assert_eq!(watched_hits(&p, "thrice"), vec![id]);
    let left: Vec<_> = std::fs::read_dir(p.vouch_dir().join(".watch"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "cookies left behind: {left:?}");
}

#[test]
fn events_lost_to_a_full_queue_cost_one_full_scan_not_a_wrong_answer() {
    let (p, id) = project_with_claim("The search cluster pages the storage team at night");
    let w = Watcher::start(&p);
    w.signal("-STOP");
    // More events than the kernel queues for a stopped reader.
    let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let junk = p.vouch_dir().join("claims").join(".junk");
    for _ in 0..queued / 2 + 100 {
        std::fs::write(&junk, b"x").unwrap();
        std::fs::remove_file(&junk).unwrap();
    }
    let path = claim_file(&p, &id);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("team at night", "team at dawn!")).unwrap();
    w.signal("-CONT");
    assert_eq!(watched_hits(&p, "dawn"), vec![id.clone()]);
    assert!(
        w.said("event queue overflowed"),
        "the queue never overflowed"
    );
    // And it goes on watching: an edit no scan can see is seen.
    edit_unseen(&path, "storage", "archive");
    assert_eq!(watched_hits(&p, "archive"), vec![id]);
}

#[test]
fn a_rebuild_by_another_process_and_new_sources_are_followed() {
    let (p, id) = project_with_claim("The deploy bot tags every release candidate");
    let _w = Watcher::start(&p);
    // Another process replaces state.db: the watcher moves to the new file.
    p.ok("x", &["index", "rebuild"]);
    edit_unseen(&claim_file(&p, &id), "candidate", "milestone");
    assert_eq!(watched_hits(&p, "milestone"), vec![id]);

    // A source added while watching: its folder is watched from then on.
    let src = p.source("Runbook for the ledger export job");
    let meta = p.vouch_dir().join("sources").join(&src).join("meta.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    assert!(text.contains("locator: test"), "{text}");
    edit_unseen(&meta, "locator: test", "locator: zinc");
    assert_eq!(watched_hits(&p, "zinc"), vec![src]);
}

#[test]
fn one_watcher_per_knowledge_base_and_servers_watch_too() {
    let (p, id) = project_with_claim("The metrics gateway drops samples older than an hour");
    let w = Watcher::start(&p);
    let second = p.run("x", &["watch"]);
    assert_ne!(second.code, 0);
    assert_contains(
        &second.stderr,
        &format!("another process (pid {}) watches", w.pid()),
    );
    drop(w);

    // A server watches when nobody else does.
    let mut server = p
        .command("agent")
        .args(["serve", "--transport", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while p.ok("x", &["status"])["retrieval"]["watcher"]["pid"] != server.id() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never watched"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    edit_unseen(&claim_file(&p, &id), "an hour", "a week!");
    assert_eq!(watched_hits(&p, "week"), vec![id]);
    drop(server.stdin.take());
    let _ = server.wait();
}

#[test]
fn a_watcher_that_loses_sight_of_the_knowledge_base_stops() {
    let (p, _) = project_with_claim("The cache warms itself every morning");
    let mut w = Watcher::start(&p);
    std::fs::rename(p.vouch_dir(), p.root().join("moved-away")).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = w.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the watcher went on watching a folder that is gone"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success());
    assert!(w.said("cannot watch"), "no reason given");
}

/// Kills a background watcher by pid when the test ends, however it ends.
struct Reap(u32);

impl Drop for Reap {
    fn drop(&mut self) {
        // Only a vouch process: the watcher may be long gone and its pid
        // reused by something else.
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.0)).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("vouch") {
            let _ = std::process::Command::new("kill")
                .arg(self.0.to_string())
                .status();
        }
    }
}

fn is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

/// `vouch watch --detach` starts a watcher in the background once and
/// returns; later calls, and `vouch recall --watch` (a session-start
/// hook), find it instead of starting another. It stops by itself after
/// `--for`, and one-shot commands trust it only while it lives.
#[test]
fn a_background_watcher_is_started_once_found_after_and_stops_by_itself() {
    let (p, id) = project_with_claim("The billing export runs at noon every weekday");
    let started = p.ok("x", &["watch", "--detach", "--for", "4s"]);
    assert_eq!(started["started"], true, "{started}");
    assert_eq!(started["stops_after_seconds"], 4, "{started}");
    let pid = started["watcher"]["pid"].as_u64().unwrap() as u32;
    let _reap = Reap(pid);
    assert_eq!(p.ok("x", &["status"])["retrieval"]["watcher"]["pid"], pid);

    let again = p.ok("x", &["watch", "--detach"]);
    assert_eq!(again["started"], false, "{again}");
    assert_eq!(again["watcher"]["pid"], pid);
    let recall = p.run("x", &["recall", "--watch"]);
    assert_eq!(recall.code, 0, "{}", recall.stderr);
    // Found, not started.
    assert_lacks(&recall.stderr, "in the background");
    // It keeps the index in step: an edit no scan can see is found.
    edit_unseen(&claim_file(&p, &id), "at noon", "at 1 pm");
    assert_eq!(watched_hits(&p, "1 pm"), vec![id.clone()]);

    // After --for it is gone, and nobody is trusted.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while is_alive(pid) {
        assert!(std::time::Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(p.ok("x", &["status"])["retrieval"]["watcher"].is_null());

    // A session-start hook's recall starts one when none runs, and says so
    // on stderr only (stdout is the digest the agent is given).
    let recall = p.run("x", &["recall", "--watch"]);
    assert_eq!(recall.code, 0, "{}", recall.stderr);
    assert_contains(
        &recall.stderr,
        "watching this knowledge base in the background",
    );
    assert_lacks(&recall.stdout, "background");
    let pid = p.ok("x", &["status"])["retrieval"]["watcher"]["pid"]
        .as_u64()
        .expect("a watcher after recall --watch") as u32;
    let _reap_second = Reap(pid);
    assert!(is_alive(pid));

    // `--stop` ends it and returns once its lock is free: the next
    // one-shot command scans again.
    let stopped = p.ok("x", &["watch", "--stop"]);
    assert_eq!(stopped["stopped"]["pid"], pid, "{stopped}");
    assert!(p.ok("x", &["status"])["retrieval"]["watcher"].is_null());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while is_alive(pid) {
        assert!(std::time::Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(50));
    }
    let again = p.ok("x", &["watch", "--stop"]);
    assert!(again["stopped"].is_null(), "{again}");
}

/// With `retrieval.watch: false` nothing starts a watcher: `--detach`
/// says why, and a session hook's `recall --watch` stays quiet.
#[test]
fn a_knowledge_base_that_turned_watching_off_gets_no_background_watcher() {
    let (p, _) = project_with_claim("The nightly backup copies the database to cold storage");
    let config = p.vouch_dir().join("config.yaml");
    let yaml = std::fs::read_to_string(&config).unwrap();
    assert!(yaml.contains("retrieval:\n"), "{yaml}");
    std::fs::write(
        &config,
        yaml.replace("retrieval:\n", "retrieval:\n  watch: false\n"),
    )
    .unwrap();
    let r = p.run("x", &["watch", "--detach"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("retrieval.watch: false") && r.stderr.contains("nothing was started"),
        "{}",
        r.stderr
    );
    let recall = p.run("x", &["recall", "--watch"]);
    assert_eq!(recall.code, 0, "{}", recall.stderr);
    assert_lacks(&recall.stderr, "watch");
    assert!(p.ok("x", &["status"])["retrieval"]["watcher"].is_null());
}

#[test]
fn durations_are_a_number_and_a_unit() {
    let p = Project::new();
    for bad in [
        "12",
        "h",
        "0s",
        "1.5h",
        "3w",
        "99999999999999999999d",
        "999999999999999999d",
        "400d",
    ] {
        let r = p.run("x", &["watch", "--detach", "--for", bad]);
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
        assert!(r.stderr.contains("--for"), "{bad}: {}", r.stderr);
    }
}

/// `--stop` signals only the process that holds the watcher's lock: a
/// lock file naming another pid (a watcher in another container, a pid
/// reused) is refused, and that process lives on.
#[test]
fn stop_signals_only_the_process_holding_the_lock() {
    let (p, _) = project_with_claim("The nightly backup runs at two");
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("start sleep");
    let lock_path = p.vouch_dir().join("watch.lock");
    let lock = std::fs::File::create(&lock_path).unwrap();
    lock.lock().unwrap();
    std::fs::write(&lock_path, format!("{} forged-token\n", bystander.id())).unwrap();
    let r = p.run("x", &["watch", "--stop"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_contains(&r.stderr, "does not hold it");
    assert!(is_alive(bystander.id()), "the bystander was signalled");
    drop(lock);
    let _ = bystander.kill();
    let _ = bystander.wait();
}
