//! `vouch-bench ui`: the review pages as a person meets them — the real
//! `vouch ui` serving them, a browser's keep-alive connection signed in
//! with the printed one-time link — and `vouch ui`'s start-up.

use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::clock::SystemClock;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};

use crate::drive::fmt_ms;
use crate::drive::{HttpConn, Summary, summarize, time_calls, vouch_in};

/// A running `vouch ui` and the sign-in link it printed; killed when
/// dropped.
struct ReviewServer {
    child: Child,
    /// `127.0.0.1:port`.
    addr: String,
    /// The one-time sign-in path, `/ui/login?secret=…`.
    sign_in: String,
}

impl ReviewServer {
    /// Start `vouch ui` in `project` and read the link it prints; how long
    /// from exec to the link.
    fn start(project: &Path) -> (ReviewServer, Duration) {
        let start = Instant::now();
        let mut child = vouch_in(project)
            // The person who reviews (the pages' decisions are signed so).
            .args(["--agent", "alice", "ui"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("vouch ui");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the sign-in link");
        let took = start.elapsed();
        let url = line.trim();
        let (addr, sign_in) = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split_once('/'))
            .unwrap_or_else(|| panic!("vouch ui printed {url:?}, not its sign-in link"));
        let server = ReviewServer {
            addr: addr.to_string(),
            sign_in: format!("/{sign_in}"),
            child,
        };
        (server, took)
    }

    /// A browser's connection, signed in by the link: the connection and
    /// its session cookie.
    fn sign_in(&self) -> (HttpConn, String) {
        let mut conn = HttpConn::connect(&self.addr);
        let answer = conn.request("GET", &self.sign_in, &[], "");
        assert_eq!(answer.status, 303, "sign-in: {}", answer.text());
        let cookie = answer
            .header("set-cookie")
            .and_then(|c| c.split(';').next())
            .expect("a session cookie")
            .to_string();
        (conn, cookie)
    }
}

impl Drop for ReviewServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `calls` GETs of `path` on a signed-in connection, each answered 200.
fn time_page(conn: &mut HttpConn, cookie: &str, path: &str, calls: usize) -> Summary {
    time_calls(calls, |_| {
        let answer = conn.request("GET", path, &[("Cookie", cookie)], "");
        assert_eq!(answer.status, 200, "GET {path}: {}", answer.text());
    })
}

/// A KB in a temp folder holding `n` pending proposals (each quoting its
/// line of one source) and a claim with `history` audit events: its
/// proposal, its approval, then confirmations. The folder, the pending
/// proposals' ids in order, and that claim's id.
fn review_kb(n: usize, history: usize) -> (tempfile::TempDir, Vec<String>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    Kb::init(dir.path(), "bench", None).expect("init");
    let kb = Kb::open(&dir.path().join(".vouch"), Arc::new(SystemClock::default())).expect("open");
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    let cli = Caller::new("alice", Transport::Cli);
    let line = |i: usize| {
        format!(
            "Fact number {i} about subsystem {} is recorded here.",
            i % 37
        )
    };
    // One more than `n`: the last is approved into the claim with history.
    let n = n.max(1) + 1;
    let text: String = (0..n).map(|i| line(i) + "\n").collect();
    let src = dispatch(
        &kb,
        &agent,
        "kb.register_source",
        json!({"content": text, "locator": "bench.md"}),
    )
    .expect("source");
    let src = src["id"].as_str().expect("id").to_string();
    let mut ids = Vec::with_capacity(n);
    let mut claims = Vec::with_capacity(n);
    for i in 0..n {
        let r = dispatch(
            &kb,
            &agent,
            "kb.propose_claim",
            json!({"text": format!("Fact {i} about subsystem {}", i % 37),
                   "evidence": [{"source_id": src, "quote": line(i)}]}),
        )
        .expect("propose");
        ids.push(r["proposal_id"].as_str().expect("id").to_string());
        claims.push(r["claim_id"].as_str().expect("id").to_string());
    }
    let (claim, approved) = (claims[n - 1].clone(), ids.pop().expect("the last proposal"));
    dispatch(&kb, &cli, "kb.approve", json!({"proposal_id": approved})).expect("approve");
    for _ in 2..history {
        dispatch(&kb, &cli, "kb.confirm", json!({"id": claim})).expect("confirm");
    }
    (dir, ids, claim)
}

/// `vouch-bench ui`: the review queue with `n` pending proposals, one
/// proposal, a claim with `history` history events, each fetched from the
/// real `vouch ui` by a signed-in keep-alive connection (rendered,
/// routed, the session checked, sent); and `vouch ui` from exec to the
/// printed sign-in link.
pub fn ui(n: usize, history: usize) {
    let (dir, ids, claim) = review_kb(n, history);
    let events = {
        let kb =
            Kb::open(&dir.path().join(".vouch"), Arc::new(SystemClock::default())).expect("open");
        let web = Caller::new("alice", Transport::Web);
        dispatch(&kb, &web, "kb.audit", json!({"filter": {"object": claim}}))
            .expect("audit")
            .as_array()
            .map_or(0, Vec::len)
    };
    let mut starts = Vec::new();
    let mut server = None;
    for _ in 0..5 {
        drop(server.take());
        let (started, took) = ReviewServer::start(dir.path());
        starts.push(took);
        // The last one started serves the pages.
        server = Some(started);
    }
    let server = server.expect("started");
    let (mut conn, cookie) = server.sign_in();
    let queue = time_page(&mut conn, &cookie, "/", 20);
    let mid = &ids[ids.len() / 2];
    let proposal = time_page(&mut conn, &cookie, &format!("/ui/proposal/{mid}"), 50);
    let claim_page = time_page(&mut conn, &cookie, &format!("/ui/claim/{claim}"), 50);
    drop(server);
    let start_up = summarize(starts);
    println!("| page (GET from `vouch ui`, signed in, keep-alive) | p50 / p99 |");
    println!("|---|---:|");
    println!("| review queue, {} pending | {} |", ids.len(), queue.pair());
    println!(
        "| one proposal (its evidence in the source, similar claims) | {} |",
        proposal.pair()
    );
    println!(
        "| claim page, {events} history events | {} |",
        claim_page.pair()
    );
    println!(
        "| `vouch ui` start-up to the sign-in link (p50 of 5) | {} |",
        fmt_ms(start_up.p50)
    );
}
