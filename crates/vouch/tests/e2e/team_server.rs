//! A team server (issue 45): replicas of `vouch serve --transport http`
//! serving one working tree and sharing one real PostgreSQL — Debian's
//! server, started for each test by `scripts/postgres.sh` on a Unix
//! socket (or loopback with a password) in a temporary folder. What the
//! database holds: the write lock every replica takes before it writes,
//! the audit chain's head, the review pages' sessions.

mod hosts;
mod meaning;
mod queue;

use crate::common::postgres::Postgres;
use crate::common::{Project, copy_dir};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use vouch_clients::HttpServer;
use vouch_clients::http::http;

// Long enough for a replica bound where the network reaches it (at least
// 32 characters: `hosts`).
const AGENT: &str = "tok-agent-5c1e0f6a9d2b47c8e31a5f";
const REVIEWER: &str = "tok-reviewer-9a3f7e2c1b84d05a6f1";

/// A replica serving `p`'s tree with the team database at `url`; `env`
/// adds variables (a fail point).
fn replica_of(p: &Project, url: &str, env: &[(&str, &str)]) -> HttpServer {
    HttpServer::spawn(replica_command(p, url, "127.0.0.1:0", env))
}

/// The command line of a replica serving `p`'s tree with the team
/// database at `url`, listening on `bind`.
fn replica_command(p: &Project, url: &str, bind: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = p.command("server");
    cmd.env("VOUCH_DATABASE_URL", url)
        .args(["serve", "--transport", "http", "--bind", bind])
        .arg("--token")
        .arg(format!("agent={AGENT}"))
        .arg("--token")
        .arg(format!("rev={REVIEWER}"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// `vouch --json team ARGS` in `p`'s tree with the team database at
/// `url`, which must succeed; its answer.
fn team_cli(p: &Project, url: &str, args: &[&str]) -> Value {
    let out = p
        .command("operator")
        .env("VOUCH_DATABASE_URL", url)
        .args(["--json", "team"])
        .args(args)
        .output()
        .expect("vouch team");
    assert!(
        out.status.success(),
        "vouch team {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// A knowledge base whose person names `rev` a reviewer.
fn team_project() -> Project {
    let p = Project::real_clock();
    p.reviewers(&["rev"]);
    p
}

/// A person's config naming `rev` a reviewer and the team database at
/// `url` for the working tree `tree`.
fn team_config(url: &str, tree: &Path) -> String {
    format!(
        "review:\n  reviewers: [rev]\nserver:\n  database: {url}\n  tree: {}\n",
        tree.display()
    )
}

/// A database, a knowledge base whose person names `rev` a reviewer, and
/// two replicas serving it.
fn two_replicas() -> (Postgres, Project, HttpServer, HttpServer) {
    let pg = Postgres::start();
    let p = team_project();
    let a = replica_of(&p, &pg.url, &[]);
    let b = replica_of(&p, &pg.url, &[]);
    (pg, p, a, b)
}

/// `method` on `s` as `token`'s subject: the envelope.
fn call(s: &HttpServer, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"id": 1, "method": method, "params": params}).to_string();
    s.rpc(Some(token), body.as_bytes()).json()
}

fn ok(s: &HttpServer, token: &str, method: &str, params: Value) -> Value {
    let v = call(s, token, method, params.clone());
    assert_eq!(v["ok"], json!(true), "{method} {params}: {v}");
    v["result"].clone()
}

/// A write (a source) on `s` that must be refused: its message, which
/// holds each of `parts`.
fn write_refused(s: &HttpServer, parts: &[&str]) -> String {
    let v = call(
        s,
        AGENT,
        "kb.register_source",
        json!({"content": "Refused?", "locator": "refused.txt"}),
    );
    assert_eq!(v["ok"], json!(false), "{v}");
    let why = v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for part in parts {
        assert!(why.contains(part), "{part:?} is not in: {why}");
    }
    why
}

/// A source, then a claim proposed from it: the proposal id.
fn propose(s: &HttpServer, text: &str) -> String {
    let src = ok(
        s,
        AGENT,
        "kb.register_source",
        json!({"content": format!("{text}."), "locator": format!("{}.txt", text.len())}),
    );
    let r = ok(
        s,
        AGENT,
        "kb.propose_claim",
        json!({"text": text, "evidence": [src["id"]]}),
    );
    r["proposal_id"].as_str().expect("proposal id").to_string()
}

fn pending_ids(s: &HttpServer) -> Vec<String> {
    let mut ids: Vec<String> = ok(s, REVIEWER, "kb.list_pending", json!({"limit": 500}))
        .as_array()
        .expect("list")
        .iter()
        .map(|p| p["id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids
}

/// Poll `s` with `query` until a hit is claim `id` (up to 10 s): how long
/// it took.
fn found_within(s: &HttpServer, query: &str, id: &str) -> Duration {
    let start = Instant::now();
    loop {
        let hits = ok(s, AGENT, "kb.search", json!({"query": query}));
        if hits
            .as_array()
            .is_some_and(|h| h.iter().any(|x| x["id"] == json!(id)))
        {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{id} not found by {query:?} on port {}: {hits}",
            s.port
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The chain verifies and `doctor` finds no error.
fn sound(p: &Project) {
    let v = p.run("x", &["audit", "verify"]);
    assert_eq!(v.code, 0, "audit verify: {}{}", v.stdout, v.stderr);
    let d = p.ok("x", &["doctor"]);
    let errors: Vec<&Value> = d["issues"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|i| i["severity"] == json!("error"))
                .collect()
        })
        .unwrap_or_default();
    assert!(errors.is_empty(), "doctor: {errors:?}");
}

/// How many `event` events name `id` in the log.
fn events_naming(p: &Project, event: &str, id: &str) -> usize {
    std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == json!(event) && e.to_string().contains(id))
        .count()
}

#[test]
fn replicas_share_one_queue_and_see_each_others_decisions() {
    let pg = Postgres::start();
    let p = team_project();
    let replicas: Vec<HttpServer> = (0..3).map(|_| replica_of(&p, &pg.url, &[])).collect();
    let (a, b, c) = (&replicas[0], &replicas[1], &replicas[2]);
    let id = propose(a, "The billing worker retries a failed charge three times");
    for r in &replicas {
        assert_eq!(pending_ids(r), vec![id.clone()], "port {}", r.port);
        let status = ok(r, AGENT, "kb.status", json!({}));
        let lock = status["shared_lock"].as_str().unwrap_or_default();
        assert!(
            lock.starts_with("the team database postgresql://vouch@"),
            "{status}"
        );
    }
    let approved = ok(b, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    let claim = approved["object_id"]
        .as_str()
        .expect("claim id")
        .to_string();
    for r in [a, c] {
        let took = found_within(r, "billing worker retries", &claim);
        eprintln!(
            "port {}: found {claim} {} ms after the approval",
            r.port,
            took.as_millis()
        );
        assert!(pending_ids(r).is_empty());
    }
    // What they found is the team database's index: no replica built one
    // of its own in the tree.
    assert_eq!(
        psql(
            &pg.url,
            &format!(
                "SELECT count(*) FROM vouch_index_docs WHERE kind = 'claim' AND id = '{claim}'"
            )
        ),
        "1"
    );
    assert!(!p.vouch_dir().join("state.db").exists());
    sound(&p);
}

#[test]
fn decisions_on_two_replicas_at_once_all_land_once() {
    let (_pg, p, a, b) = two_replicas();
    let ids: Vec<String> = (0..8)
        .map(|i| propose(&a, &format!("Service number {i} owns queue number {i}")))
        .collect();
    let contested = propose(&b, "The contested claim is decided exactly once");
    // Each replica approves its half, then the contested one, at once.
    let approve_all = |server: &HttpServer, mine: &[String]| -> Vec<Value> {
        mine.iter()
            .chain([&contested])
            .map(|id| call(server, REVIEWER, "kb.approve", json!({"proposal_id": id})))
            .collect()
    };
    let (first, second) = ids.split_at(4);
    let results = std::thread::scope(|s| {
        let ha = s.spawn(|| approve_all(&a, first));
        let hb = s.spawn(|| approve_all(&b, second));
        (ha.join().expect("a"), hb.join().expect("b"))
    });
    let (mut on_a, mut on_b) = results;
    let last_a = on_a.pop().expect("contested on a");
    let last_b = on_b.pop().expect("contested on b");
    for v in on_a.iter().chain(&on_b) {
        assert_eq!(v["ok"], json!(true), "{v}");
    }
    let winners = [&last_a, &last_b]
        .iter()
        .filter(|v| v["ok"] == json!(true))
        .count();
    assert_eq!(
        winners, 1,
        "exactly one approval of the same proposal wins: {last_a} {last_b}"
    );
    let loser = if last_a["ok"] == json!(true) {
        &last_b
    } else {
        &last_a
    };
    let told = loser["error"]["message"].as_str().unwrap_or_default();
    assert!(
        told.contains("decided") || told.contains("approved"),
        "{loser}"
    );
    for id in ids.iter().chain([&contested]) {
        assert_eq!(events_naming(&p, "proposal.approve", id), 1, "{id}");
    }
    assert!(pending_ids(&a).is_empty());
    sound(&p);
}

#[test]
fn a_replica_killed_in_the_middle_of_an_approval_loses_nothing() {
    // Killed (SIGKILL) right after its approval is logged, before the
    // claim's files are moved into place, holding both locks.
    assert!(killed_at("approve.logged"));
}

/// A form posted to `path` on replica `s` as a browser at `host` (the
/// load balancer's address) sends it, with `cookie` if given.
fn post_form(
    s: &HttpServer,
    host: &str,
    path: &str,
    cookie: Option<&str>,
    body: &str,
) -> vouch_clients::http::HttpResponse {
    let origin = format!("https://{host}");
    let mut headers = vec![
        ("Host", host),
        ("Origin", origin.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    if let Some(c) = cookie {
        headers.push(("Cookie", c));
    }
    http(s.port, "POST", path, &headers, body.as_bytes())
}

/// Sign in on one replica with a token; the cookie it sets.
fn sign_in(s: &HttpServer, host: &str) -> String {
    let r = post_form(s, host, "/ui/login", None, &format!("token={REVIEWER}"));
    assert_eq!(r.status, 303, "{}", r.text());
    let set = r
        .header("set-cookie")
        .expect("a session cookie")
        .to_string();
    set.split(';').next().expect("cookie").to_string()
}

fn queue_page(s: &HttpServer, host: &str, cookie: &str) -> u16 {
    http(
        s.port,
        "GET",
        "/",
        &[("Host", host), ("Cookie", cookie)],
        b"",
    )
    .status
}

#[test]
fn a_review_session_works_on_every_replica_behind_one_address() {
    let (_pg, p, a, b) = two_replicas();
    // What a load balancer in front of both would send: one Host.
    let host = "vouch.example.test:443";
    let cookie = sign_in(&a, host);
    assert_eq!(queue_page(&a, host, &cookie), 200);
    assert_eq!(
        queue_page(&b, host, &cookie),
        200,
        "the session is the team's"
    );
    // A replica of the same tree without the database knows no session.
    let mut alone = p.command("server");
    alone
        .args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"])
        .arg("--token")
        .arg(format!("rev={REVIEWER}"));
    let alone = HttpServer::spawn(alone);
    assert_eq!(queue_page(&alone, host, &cookie), 401);
    // Signing out on one ends it on all.
    let page = http(
        b.port,
        "GET",
        "/",
        &[("Host", host), ("Cookie", &cookie)],
        b"",
    )
    .text();
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a CSRF token on the page")
        .to_string();
    let r = post_form(
        &b,
        host,
        "/ui/logout",
        Some(&cookie),
        &format!("csrf={csrf}"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(queue_page(&a, host, &cookie), 401, "signed out everywhere");
}

#[test]
fn a_replica_on_another_copy_of_the_tree_is_refused_before_it_writes() {
    let pg = Postgres::start();
    let p = team_project();
    let a = replica_of(&p, &pg.url, &[]);
    let id = propose(&a, "The cache holds sessions for an hour");
    let copy = Project::real_clock();
    copy_dir(p.root(), copy.root());
    copy.reviewers(&["rev"]);
    ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    // The copy was taken before the approval: its log lacks the head.
    let c = replica_of(&copy, &pg.url, &[]);
    write_refused(&c, &["lacks event", "vouch team adopt"]);
    // Reading is never refused.
    ok(&c, AGENT, "kb.search", json!({"query": "cache sessions"}));
    // `doctor` says it, for the person whose config names this tree.
    copy.person_config(&team_config(&pg.url, copy.root()));
    let doctor = copy.run("x", &["--json", "doctor"]).json();
    assert!(
        crate::common::issue_kinds(&doctor).contains(&"team-head-missing".to_string()),
        "{doctor}"
    );
    // A person who means this history to be the team's adopts it.
    team_cli(&copy, &pg.url, &["adopt"]);
    ok(
        &c,
        AGENT,
        "kb.register_source",
        json!({"content": "y", "locator": "y"}),
    );
    // The other tree is now the one behind.
    write_refused(&a, &["lacks event"]);
}

#[test]
fn the_database_going_away_fails_writes_clearly_and_service_resumes() {
    let pg = Postgres::start();
    let p = team_project();
    let a = replica_of(&p, &pg.url, &[]);
    propose(&a, "The importer runs every night at two");
    let before = std::fs::read(p.vouch_dir().join("audit.log.jsonl")).expect("log");
    pg.stop();
    write_refused(&a, &["cannot be reached", "nothing was written"]);
    assert_eq!(
        std::fs::read(p.vouch_dir().join("audit.log.jsonl")).expect("log"),
        before,
        "nothing logged while the database was away"
    );
    ok(&a, AGENT, "kb.search", json!({"query": "importer"}));
    assert!(a.healthy());
    p.person_config(&team_config(&pg.url, p.root()));
    let doctor = p.run("x", &["--json", "doctor"]).json();
    let kinds = crate::common::issue_kinds(&doctor);
    for kind in ["team-database-unreachable", "team-queue-unreadable"] {
        assert!(kinds.contains(&kind.to_string()), "{kind}: {doctor}");
    }
    assert!(!kinds.contains(&"unparseable-file".to_string()), "{doctor}");
    pg.restart();
    // No restart of the replica: the next write connects again.
    let id = propose(&a, "The exporter runs every night at three");
    ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    sound(&p);
}

/// A free loopback port (bound, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

#[test]
fn the_database_password_is_never_shown() {
    let password = "pw-7d41c0e9-not-for-eyes";
    let port = free_port().to_string();
    let pg = Postgres::start_with(&["--tcp", &port, "--password", password]);
    assert!(pg.url.contains(password));
    let p = team_project();
    let a = replica_of(&p, &pg.url, &[]);
    let status = call(&a, AGENT, "kb.status", json!({})).to_string();
    assert!(
        status.contains("the team database postgresql://vouch@127.0.0.1"),
        "{status}"
    );
    let mut said = vec![status];
    let cli = p
        .command("x")
        .env("VOUCH_DATABASE_URL", &pg.url)
        .args(["serve", "--help"])
        .output()
        .expect("help");
    said.push(String::from_utf8_lossy(&cli.stdout).to_string());
    pg.stop();
    said.push(
        call(
            &a,
            AGENT,
            "kb.register_source",
            json!({"content": "q", "locator": "q"}),
        )
        .to_string(),
    );
    pg.restart();
    // A wrong password: refused, and neither password is repeated.
    let wrong = pg.url.replace(password, "pw-wrong-3b9e");
    let b = replica_of(&p, &wrong, &[]);
    said.push(write_refused(&b, &[]));
    said.push(b.terminate());
    said.push(a.terminate());
    for text in &said {
        assert!(
            !text.contains(password) && !text.contains("pw-wrong"),
            "{text}"
        );
    }
}

#[test]
fn an_mcp_session_lives_on_its_replica_and_another_says_404() {
    use crate::servers::{mcp_initialize, mcp_use};
    let (_pg, _p, a, b) = two_replicas();
    let session = mcp_initialize(a.port, AGENT);
    let (status, tools) = mcp_use(a.port, AGENT, &session, true);
    assert_eq!(status, 200);
    assert!(tools > 20, "{tools} tools");
    // Another replica does not know it: 404, which tells an MCP client to
    // initialize again (docs/team-server.md: route by Mcp-Session-Id).
    assert_eq!(mcp_use(b.port, AGENT, &session, false).0, 404);
    let on_b = mcp_initialize(b.port, AGENT);
    assert_eq!(mcp_use(b.port, AGENT, &on_b, true), (200, tools));
}

/// `sql` through `psql` at `url`: its one value.
fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-tAc", sql])
        .output()
        .expect("psql (Debian's postgresql-client)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_remote_database_is_reached_over_verified_tls() {
    let port = free_port().to_string();
    let pg = Postgres::start_with(&["--tcp", &port, "--password", "pw-tls", "--tls"]);
    assert!(pg.url.contains("sslmode=require"), "{}", pg.url);
    let p = team_project();
    let a = replica_of(&p, &pg.url, &[]);
    let id = propose(&a, "The ledger service signs every export");
    ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    // Every connection vouch holds is encrypted.
    let plain_url = pg.url.split('?').next().unwrap().to_string() + "?sslmode=require";
    let seen = psql(
        &plain_url,
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_activity a \
         JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'vouch'",
    );
    let (tls, all) = seen.split_once('|').expect("two counts");
    assert!(
        all != "0" && tls == all,
        "{tls} of {all} connections over TLS"
    );
    // A certificate the client does not trust: refused, saying so.
    let other = tempfile::tempdir().expect("tempdir");
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(other.path().join("k.pem"))
        .arg("-out")
        .arg(other.path().join("c.pem"))
        .output()
        .expect("openssl");
    assert!(made.status.success());
    let untrusted = format!(
        "{}?sslmode=require&sslrootcert={}",
        pg.url.split('?').next().unwrap(),
        other.path().join("c.pem").display()
    );
    let b = replica_of(&p, &untrusted, &[]);
    let why = write_refused(&b, &["cannot be reached", "certificate"]);
    assert!(!why.contains("pw-tls"), "{why}");
}

#[test]
fn a_team_database_that_cannot_be_used_refuses_writes_and_reads_on() {
    let p = Project::real_clock();
    p.person_config(&format!(
        "server:\n  database: postgresql://vouch@db:notaport/kb\n  tree: {}\n",
        p.root().display()
    ));
    let read = p.run("alice", &["--json", "search", "anything"]);
    assert_eq!(read.code, 0, "reads are never refused: {}", read.stderr);
    let r = p.call(
        "alice",
        "kb.register_source",
        json!({"content": "x", "locator": "x"}),
    );
    assert_ne!(r.code, 0, "{}", r.stdout);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("server.database") && said.contains("nothing was written"),
        "{said}"
    );
    let s = p.run("alice", &["status"]);
    assert!(s.stdout.contains("not usable"), "{}", s.stdout);
}

#[test]
fn replicas_with_indexes_of_their_own_see_each_others_writes() {
    let pg = Postgres::start();
    let p = team_project();
    // A fresh clone has no index in the tree; replicas on hosts of their
    // own keep theirs on their own disks.
    let _ = std::fs::remove_file(p.vouch_dir().join("state.db"));
    let own: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().expect("dir")).collect();
    let at = |i: usize| own[i].path().join("index").display().to_string();
    let (a_dir, b_dir) = (at(0), at(1));
    let a = replica_of(&p, &pg.url, &[("VOUCH_INDEX_DIR", &a_dir)]);
    let b = replica_of(&p, &pg.url, &[("VOUCH_INDEX_DIR", &b_dir)]);
    let id = propose(&a, "The payments gateway retries webhooks for a day");
    assert_eq!(pending_ids(&b), vec![id.clone()]);
    let approved = ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    let claim = approved["object_id"].as_str().expect("claim").to_string();
    let took = found_within(&a, "payments gateway webhooks", &claim);
    eprintln!("a found b's approval {} ms after it", took.as_millis());
    for dir in [&a_dir, &b_dir] {
        assert!(Path::new(dir).join("state.db").is_file(), "{dir}");
    }
    assert!(
        !p.vouch_dir().join("state.db").exists(),
        "no replica wrote an index into the shared tree"
    );
    sound(&p);
}

#[test]
fn failed_sign_ins_count_across_replicas() {
    let (_pg, _p, a, b) = two_replicas();
    let host = "vouch.example.test:443";
    let try_token = |s: &HttpServer, token: &str| {
        post_form(s, host, "/ui/login", None, &format!("token={token}")).status
    };
    // A guesser spreading tries over both replicas gets the one limit.
    let limit = 20;
    for i in 0..limit {
        let s = if i % 2 == 0 { &a } else { &b };
        assert_eq!(try_token(s, &format!("guess-{i}")), 401, "try {i}");
    }
    assert_eq!(try_token(&a, "guess-more"), 429);
    assert_eq!(
        try_token(&b, REVIEWER),
        429,
        "paused for everyone, on every replica"
    );
}

/// Kill replica `a` at fail point `point` during the approval of `first`;
/// then replica `b` approves `second` at once and the reviewer's retry of
/// `first` on `b` lands. Returns whether `first` was knowledge already
/// before the retry.
fn killed_at(point: &str) -> bool {
    let pg = Postgres::start();
    let p = team_project();
    let a = replica_of(
        &p,
        &pg.url,
        &[("VOUCH_FAILPOINT", &format!("{point}=kill"))],
    );
    let b = replica_of(&p, &pg.url, &[]);
    let first = propose(&b, "The audit service keeps ninety days of events");
    let second = propose(&b, "The search service answers within twenty milliseconds");
    let body = json!({"id": 1, "method": "kb.approve", "params": {"proposal_id": first}});
    // The reply never comes: the client may panic on the closed connection.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.rpc(Some(REVIEWER), body.to_string().as_bytes())
    }));
    let mut a = a;
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "{point} did not kill replica a");
        std::thread::sleep(Duration::from_millis(20));
    }
    let landed_before = events_naming(&p, "proposal.approve", &first) == 1;
    // The lock went with a's connection: b decides at once (waiting would
    // mean the lock outlived its holder).
    let start = Instant::now();
    ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": second}));
    assert!(start.elapsed() < Duration::from_secs(20), "{point}");
    // The reviewer, who got no answer from a, asks b: a logged approval is
    // completed, an unlogged one made; never logged twice.
    let again = call(&b, REVIEWER, "kb.approve", json!({"proposal_id": first}));
    let decided_already = again["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("decided") || m.contains("approved"));
    assert!(
        again["ok"] == json!(true) || decided_already,
        "{point}: {again}"
    );
    assert!(pending_ids(&b).is_empty(), "{point}: {:?}", pending_ids(&b));
    for id in [&first, &second] {
        assert_eq!(
            events_naming(&p, "proposal.approve", id),
            1,
            "{point}: {id}"
        );
    }
    let claims = std::fs::read_dir(p.vouch_dir().join("claims"))
        .expect("claims")
        .count();
    assert_eq!(claims, 2, "{point}: both approved claims are knowledge");
    sound(&p);
    landed_before
}

#[test]
fn a_replica_killed_holding_the_database_lock_loses_nothing() {
    // Right after taking the database's lock, before anything is written.
    assert!(!killed_at("team.locked"));
    // After the approval is written and its head recorded, before the lock
    // is given back.
    assert!(killed_at("team.head"));
}

#[test]
fn a_persons_team_database_orders_only_the_tree_it_names() {
    let pg = Postgres::start();
    let team_tree = team_project();
    let other = Project::real_clock();
    let config = |tree: &Path| team_config(&pg.url, tree);
    // The same person's config in both projects: the team's tree is
    // ordered by the database, the other clone is not.
    team_tree.person_config(&config(team_tree.root()));
    other.person_config(&config(team_tree.root()));
    let named = team_tree.ok("alice", &["status"]);
    assert!(
        named["shared_lock"]
            .as_str()
            .is_some_and(|l| l.starts_with("the team database")),
        "{named}"
    );
    let elsewhere = other.ok("alice", &["status"]);
    assert_eq!(elsewhere["shared_lock"], Value::Null, "{elsewhere}");
    // Without `tree`, it orders nothing, and says why.
    other.person_config(&format!("server:\n  database: {}\n", pg.url));
    let r = other.run("alice", &["status"]);
    assert!(r.stderr.contains("without server.tree"), "{}", r.stderr);
    // A stdio server takes no database from its environment (a
    // repository's host config may set it).
    let out = other
        .command("agent")
        .env("VOUCH_DATABASE_URL", &pg.url)
        .args(["serve", "--transport", "jsonl"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            let mut stdin = c.stdin.take().expect("stdin");
            stdin.write_all(b"{\"id\":1,\"method\":\"kb.status\",\"params\":{}}\n")?;
            drop(stdin);
            c.wait_with_output()
        })
        .expect("jsonl server");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("\"shared_lock\":null"), "{said}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is for HTTP team servers"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_teammates_merge_pulled_under_the_lock_reaches_every_replica() {
    use crate::teams::git;
    let pg = Postgres::start();
    // The teammates' repository, and the team server's tree cloned from it.
    let origin = team_project();
    git(origin.root(), &["init", "-q"]);
    git(origin.root(), &["add", "-A"]);
    git(origin.root(), &["commit", "-qm", "start"]);
    let tree = team_project();
    std::fs::remove_dir_all(tree.vouch_dir()).expect("fresh");
    git(
        tree.root(),
        &["clone", "-q", origin.root().to_str().unwrap(), "."],
    );
    let a = replica_of(&tree, &pg.url, &[]);
    let b = replica_of(&tree, &pg.url, &[]);
    let ours = propose(&a, "The staging cluster is rebuilt every Monday");
    ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": ours}));
    // A teammate decides on a branch of their own and pushes it.
    let src = origin.source("The billing export runs at midnight.");
    let theirs = origin.claim("The billing export runs at midnight", &src);
    git(origin.root(), &["add", "-A"]);
    git(origin.root(), &["commit", "-qm", "a teammate's decision"]);
    // The operator commits the server's decisions, then pulls under the lock.
    git(tree.root(), &["add", "-A"]);
    git(
        tree.root(),
        &["commit", "-qm", "the team server's decisions"],
    );
    let mut pull = tree.command("operator");
    crate::teams::git_identity(&mut pull);
    let pulled = pull
        .env("VOUCH_DATABASE_URL", &pg.url)
        .args(["team", "pull"])
        .output()
        .expect("vouch team pull");
    assert!(
        pulled.status.success(),
        "{}{}",
        String::from_utf8_lossy(&pulled.stdout),
        String::from_utf8_lossy(&pulled.stderr)
    );
    for r in [&a, &b] {
        found_within(r, "billing export midnight", &theirs);
    }
    // The merged log is the head now: the replicas write on.
    let next = propose(&b, "The release train leaves on Thursdays");
    ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": next}));
    sound(&tree);
}

#[test]
fn a_replica_restarted_on_its_own_index_keeps_it_and_catches_up() {
    let pg = Postgres::start();
    let p = team_project();
    let own = tempfile::tempdir().expect("dir");
    let dir = own.path().join("index").display().to_string();
    let a = replica_of(&p, &pg.url, &[("VOUCH_INDEX_DIR", &dir)]);
    let id = propose(&a, "The inventory service reconciles stock hourly");
    let claim = ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": id}))["object_id"]
        .as_str()
        .expect("claim")
        .to_string();
    a.terminate();
    let inode = |d: &str| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(Path::new(d).join("state.db"))
            .expect("its index")
            .ino()
    };
    let built = inode(&dir);
    // Another replica wrote while this one was down.
    let b = replica_of(&p, &pg.url, &[]);
    let other = propose(&b, "The pricing service caches rates for a minute");
    let other_claim = ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": other}))["object_id"]
        .as_str()
        .expect("claim")
        .to_string();
    let again = replica_of(&p, &pg.url, &[("VOUCH_INDEX_DIR", &dir)]);
    let hits = ok(
        &again,
        AGENT,
        "kb.search",
        json!({"query": "inventory reconciles stock"}),
    );
    assert!(
        hits.as_array()
            .is_some_and(|h| h.iter().any(|x| x["id"] == json!(claim))),
        "{hits}"
    );
    found_within(&again, "pricing caches rates", &other_claim);
    let said = again.terminate();
    assert!(!said.contains("rebuilding"), "{said}");
    assert_eq!(
        inode(&dir),
        built,
        "the index it built is the one it opened again"
    );
}
