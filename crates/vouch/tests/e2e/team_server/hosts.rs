//! Replicas on hosts of their own: each in a Linux network namespace —
//! its own address and network stack, joined to the database's host by a
//! virtual link on a bridge — reaching the team database over TCP, with
//! TLS and a password, as replicas on several machines do. The working
//! tree is shared as a network volume would share it (here: one folder).
//! Making namespaces needs root, as the tests run here and in CI.

use super::{AGENT, REVIEWER, free_port, ok, propose, psql, replica_command, sound, team_project};
use crate::common::Project;
use crate::common::postgres::Postgres;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};
use vouch_clients::HttpServer;

/// `ip ARGS…`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {} (network namespaces need root)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Hosts on one bridge, `10.S.0.0/24`: the database's host (this one) at
/// `.1`, host `i` at `.(i + 2)`. Removed when dropped.
struct Hosts {
    tag: String,
    subnet: u8,
    count: usize,
}

impl Hosts {
    fn make(count: usize) -> Hosts {
        // Unique among the tests running at once in this process, and
        // among processes (interface names are at most 15 bytes).
        static NEXT: AtomicU8 = AtomicU8::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let subnet = 200 + (std::process::id() % 40) as u8 + n;
        let hosts = Hosts { tag, subnet, count };
        let br = hosts.bridge();
        ip(&["link", "add", &br, "type", "bridge"]);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", hosts.gateway()),
            "dev",
            &br,
        ]);
        ip(&["link", "set", &br, "up"]);
        for i in 0..count {
            let (ns, port) = (hosts.ns(i), hosts.port(i));
            let peer = format!("vp{}h{i}", hosts.tag);
            ip(&["netns", "add", &ns]);
            ip(&["link", "add", &port, "type", "veth", "peer", "name", &peer]);
            ip(&["link", "set", &peer, "netns", &ns]);
            ip(&["link", "set", &port, "master", &br]);
            ip(&["link", "set", &port, "up"]);
            ip(&["-n", &ns, "link", "set", &peer, "name", "eth0"]);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", hosts.addr(i)),
                "dev",
                "eth0",
            ]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        hosts
    }
    fn bridge(&self) -> String {
        format!("vb{}", self.tag)
    }
    fn ns(&self, i: usize) -> String {
        format!("vouch-host-{}-{i}", self.tag)
    }
    /// Host `i`'s end of its link, on the bridge.
    fn port(&self, i: usize) -> String {
        format!("vv{}h{i}", self.tag)
    }
    fn gateway(&self) -> String {
        format!("10.{}.0.1", self.subnet)
    }
    fn addr(&self, i: usize) -> String {
        format!("10.{}.0.{}", self.subnet, i + 2)
    }
    /// Cut host `i` off (`false`) or join it again: its link on the
    /// bridge goes down, so nothing it sends arrives and nothing reaches
    /// it — and no packet tells anyone so, as when a host loses power.
    fn link(&self, i: usize, up: bool) {
        ip(&["link", "set", &self.port(i), if up { "up" } else { "down" }]);
    }
    /// `cmd` run on host `i` (its environment and folder kept).
    fn on(&self, i: usize, cmd: &Command) -> Command {
        let mut on = Command::new("ip");
        on.env_clear()
            .args(["netns", "exec", &self.ns(i)])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => on.env(k, v),
                None => on.env_remove(k),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            on.current_dir(dir);
        }
        on
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for i in 0..self.count {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(i)])
                .output();
            let _ = Command::new("ip")
                .args(["link", "del", &self.port(i)])
                .output();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .output();
    }
}

/// A database on this host reached from the others over TLS with a
/// password, and `n` hosts.
fn database_and_hosts(n: usize) -> (Hosts, Postgres) {
    let hosts = Hosts::make(n);
    let port = free_port().to_string();
    let pg = Postgres::start_with(&[
        "--tcp",
        &port,
        "--password",
        "pw-hosts",
        "--tls",
        "--listen",
        &hosts.gateway(),
    ]);
    assert!(pg.url.contains(&hosts.gateway()), "{}", pg.url);
    (hosts, pg)
}

/// A replica of `p` on host `i`, its index in a folder of its own.
fn replica_on(
    hosts: &Hosts,
    i: usize,
    p: &Project,
    pg: &Postgres,
    index: &tempfile::TempDir,
    env: &[(&str, &str)],
) -> HttpServer {
    let bind = format!("{}:0", hosts.addr(i));
    let mut cmd = replica_command(p, &pg.url, &bind, env);
    cmd.env("VOUCH_INDEX_DIR", index.path());
    HttpServer::spawn(hosts.on(i, &cmd))
}

/// The hosts the database's vouch connections come from, and whether
/// each is over TLS.
fn connections(pg: &Postgres) -> String {
    psql(
        &pg.url,
        "SELECT string_agg(DISTINCT host(a.client_addr) || ':' || s.ssl, ',' ORDER BY \
         host(a.client_addr) || ':' || s.ssl) FROM pg_stat_activity a JOIN pg_stat_ssl s \
         USING (pid) WHERE a.application_name = 'vouch'",
    )
}

/// Two replicas on two hosts and a third on another: one queue, one
/// chain, each one's decisions seen by the others, every connection from
/// its own host's address over TLS.
#[test]
fn replicas_on_hosts_of_their_own_share_one_database() {
    let (hosts, pg) = database_and_hosts(3);
    let p = team_project();
    let index: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().expect("dir")).collect();
    let a = replica_on(&hosts, 0, &p, &pg, &index[0], &[]);
    let b = replica_on(&hosts, 1, &p, &pg, &index[1], &[]);
    let c = replica_on(&hosts, 2, &p, &pg, &index[2], &[]);
    assert_eq!(a.host, hosts.addr(0));
    let id = propose(&a, "The audit exporter runs on the hour");
    let approved = ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    let claim = approved["object_id"].as_str().expect("claim").to_string();
    for s in [&a, &c] {
        let start = Instant::now();
        loop {
            let hits = ok(
                s,
                AGENT,
                "kb.search",
                json!({"query": "audit exporter hour"}),
            );
            if hits[0]["id"] == json!(claim) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{}: {hits}",
                s.host
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let seen = connections(&pg);
    for i in 0..3 {
        assert!(seen.contains(&format!("{}:true", hosts.addr(i))), "{seen}");
    }
    assert!(
        !seen.contains(":false"),
        "every connection over TLS: {seen}"
    );
    sound(&p);
}

/// Whether process `pid` is stopped (SIGSTOP).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')))
        .unwrap_or(false)
}

/// `kb.register_source` sent to `s` as the agent, on a connection of its
/// own: the connection, the answer not read yet.
fn send_register(s: &HttpServer, content: &str, locator: &str) -> std::net::TcpStream {
    let body = json!({"id": 1, "method": "kb.register_source",
        "params": {"content": content, "locator": locator}})
    .to_string();
    let auth = format!("Bearer {AGENT}");
    let mut conn = s.connect();
    conn.write_all(&vouch_clients::http::request_bytes(
        s.port,
        "POST",
        "/rpc",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        body.as_bytes(),
        true,
    ))
    .expect("send");
    conn
}

/// The answer on `conn`, waited for up to `within` (a write waits up to
/// 30 s for another replica's lock before it says so).
fn answer(mut conn: std::net::TcpStream, within: Duration) -> Value {
    conn.set_read_timeout(Some(within)).expect("timeout");
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).expect("the answer");
    vouch_clients::http::parse_response(&raw).json()
}

/// A source registered on `s`: the envelope of the answer.
fn register(s: &HttpServer, content: &str) -> Value {
    let conn = send_register(s, content, &format!("{}.txt", content.len()));
    answer(conn, Duration::from_secs(90))
}

/// A replica's host freezes holding the write lock and drops off the
/// network — no packet says so. The database notices within about half
/// a minute and drops that replica's connection, and the lock with it
/// (the server's own keepalives: without them the lock would stay taken
/// for the server's two hours of TCP silence); the other replica writes
/// on. When the lost host comes back, its write in flight is refused (it
/// no longer holds the lock), nothing of it is logged, and its next write
/// succeeds without a restart.
#[test]
fn a_host_lost_holding_the_lock_releases_it_and_the_others_write_on() {
    let (hosts, pg) = database_and_hosts(2);
    let p = team_project();
    let index: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().expect("dir")).collect();
    let a = replica_on(&hosts, 0, &p, &pg, &index[0], &[]);
    let b = replica_on(
        &hosts,
        1,
        &p,
        &pg,
        &index[1],
        &[("VOUCH_FAILPOINT", "team.locked=stop")],
    );
    // B takes the lock for a write, and freezes holding it.
    let in_flight = send_register(&b, "Written by the lost host.", "lost.txt");
    let start = Instant::now();
    while !stopped(b.child.id()) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "b never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    hosts.link(1, false);
    // A's writes wait for the lock (refused after 30 s each, saying so)
    // until the database has dropped B's connection.
    let cut = Instant::now();
    let mut refused = Vec::new();
    let written = loop {
        let r = register(&a, "Written on A while B is lost.");
        if r["ok"] == json!(true) {
            break r["result"]["id"].as_str().expect("id").to_string();
        }
        refused.push(
            r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        assert!(
            cut.elapsed() < Duration::from_secs(150),
            "A never got the lock: {refused:?}"
        );
    };
    eprintln!(
        "A wrote {} s after B was cut off ({} refusals)",
        cut.elapsed().as_secs(),
        refused.len()
    );
    // B comes back: its write in flight is refused, nothing of it logged.
    hosts.link(1, true);
    let cont = Command::new("kill")
        .args(["-CONT", &b.child.id().to_string()])
        .status()
        .expect("kill -CONT");
    assert!(cont.success());
    let refused = answer(in_flight, Duration::from_secs(120));
    assert_eq!(refused["ok"], json!(false), "{refused}");
    eprintln!("the lost host's write: {}", refused["error"]["message"]);
    let log = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).expect("log");
    assert!(
        !log.contains("lost.txt"),
        "the lost host's write is not logged"
    );
    assert!(log.contains(&written), "A's write is");
    // And B writes again, without a restart.
    let start = Instant::now();
    loop {
        let r = register(&b, "Written by B once it is back.");
        if r["ok"] == json!(true) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{r}");
        std::thread::sleep(Duration::from_millis(200));
    }
    sound(&p);
}
