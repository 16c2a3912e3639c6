//! A team server under load (issue 14): `vouch serve --transport http`
//! with four bearer tokens, 16 concurrent clients on loopback (agents
//! registering sources, proposing, searching, asking for context and
//! answers; reviewers approving what the agents proposed), while another
//! process edits files by hand and runs `index rebuild`. Bounded: it stops
//! by itself after `VOUCH_SOAK_SECS` (default 8) with `VOUCH_SOAK_CLIENTS`
//! clients (default 16).
//!
//! Afterwards: no 5xx and no `internal_error`, every accepted write on
//! disk with its audit event, the chain valid, no id handed out twice. It
//! prints (and writes to target/soak.md) throughput, p50 / p99 per method
//! and the server's RSS at start, peak and end.

use crate::common::http::http;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKENS: &[(&str, &str)] = &[
    ("agent-a", "token-agent-a"),
    ("agent-b", "token-agent-b"),
    ("reviewer-1", "token-reviewer-1"),
    ("reviewer-2", "token-reviewer-2"),
];

/// The binary under load: this build's, or `VOUCH_SOAK_BIN` (a release
/// build, or an older one to compare in the same run). Hermetic as
/// [`crate::common::command`].
fn soak_command() -> std::process::Command {
    match std::env::var_os("VOUCH_SOAK_BIN") {
        Some(bin) => {
            let mut c = std::process::Command::new(bin);
            c.env_clear();
            if let Some(path) = std::env::var_os("PATH") {
                c.env("PATH", path);
            }
            c
        }
        None => crate::common::command(),
    }
}

fn env_num(k: &str, default: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[derive(Default)]
struct Tally {
    /// Per method: latencies, ok, refused (a clear error), broken (5xx or
    /// internal_error).
    calls: BTreeMap<String, (Vec<Duration>, usize, usize, Vec<String>)>,
    proposals: Vec<(String, String)>,
    approved: Vec<String>,
    sources: Vec<String>,
}

/// A small deterministic generator per client.
use vouch_core::clock::SeededRng as Rng;

const WORDS: &[&str] = &[
    "deploy",
    "cache",
    "billing",
    "retry",
    "queue",
    "schema",
    "migration",
    "tracing",
    "owner",
    "timeout",
    "index",
    "backup",
    "token",
    "rotation",
    "staging",
    "alert",
];

fn call(port: u16, token: &str, tally: &Mutex<Tally>, method: &str, params: Value) -> Value {
    let body = json!({"id": 1, "method": method, "params": params}).to_string();
    let auth = format!("Bearer {token}");
    let start = Instant::now();
    let r = http(
        port,
        "POST",
        "/rpc",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        body.as_bytes(),
    );
    let took = start.elapsed();
    let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    let mut t = tally.lock().unwrap();
    let e = t.calls.entry(method.to_string()).or_default();
    e.0.push(took);
    if r.status >= 500 || v["error"]["code"] == "internal_error" {
        e.3.push(format!("{} {}", r.status, r.text()));
    } else if v["ok"] == true {
        e.1 += 1;
    } else {
        e.2 += 1;
    }
    v
}

fn agent(port: u16, name: &str, token: &str, seed: u64, stop: &AtomicBool, tally: &Mutex<Tally>) {
    let mut rng = Rng::new(seed);
    let mut sources: Vec<String> = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let w = |rng: &mut Rng| *rng.pick(WORDS);
        let (a, b) = (w(&mut rng), w(&mut rng));
        match rng.below(10) {
            0 | 1 => {
                let text = format!("Notes by {name} #{n}: the {a} service owns the {b} queue.");
                let v = call(
                    port,
                    token,
                    tally,
                    "kb.register_source",
                    json!({"content": text, "locator": format!("{name}-{n}.md")}),
                );
                if let Some(id) = v["result"]["id"].as_str() {
                    sources.push(id.to_string());
                    tally.lock().unwrap().sources.push(id.to_string());
                }
            }
            2..=4 if !sources.is_empty() => {
                let s = rng.pick(&sources);
                let v = call(
                    port,
                    token,
                    tally,
                    "kb.propose_claim",
                    json!({
                    "text": format!("The {a} service owns the {b} queue ({name} {n})"),
                    "evidence": [s]}),
                );
                if let (Some(p), Some(c)) = (
                    v["result"]["proposal_id"].as_str(),
                    v["result"]["claim_id"].as_str(),
                ) {
                    tally
                        .lock()
                        .unwrap()
                        .proposals
                        .push((p.to_string(), c.to_string()));
                }
            }
            5 | 6 => {
                call(
                    port,
                    token,
                    tally,
                    "kb.search",
                    json!({"query": format!("{a} {b}"), "limit": 10}),
                );
            }
            7 | 8 => {
                call(
                    port,
                    token,
                    tally,
                    "kb.context",
                    json!({"task": format!("who owns the {a} queue"), "max_chars": 1500}),
                );
            }
            _ => {
                call(
                    port,
                    token,
                    tally,
                    "kb.synthesize",
                    json!({"query": format!("which service owns the {b} queue?")}),
                );
            }
        }
    }
}

fn reviewer(
    port: u16,
    name: &str,
    token: &str,
    seed: u64,
    stop: &AtomicBool,
    tally: &Mutex<Tally>,
) {
    let mut rng = Rng::new(seed);
    while !stop.load(Ordering::Relaxed) {
        if rng.below(3) == 0 {
            call(
                port,
                token,
                tally,
                "kb.search",
                json!({"query": WORDS[rng.below(16)]}),
            );
            continue;
        }
        let pending = call(port, token, tally, "kb.list_pending", json!({"limit": 20}));
        let ids: Vec<String> = pending["result"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["proposed_by"] != name)
            .filter_map(|p| p["id"].as_str().map(str::to_string))
            .collect();
        if ids.is_empty() {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let id = rng.pick(&ids);
        let v = call(port, token, tally, "kb.approve", json!({"proposal_id": id}));
        if let Some(o) = v["result"]["object_id"].as_str() {
            tally.lock().unwrap().approved.push(o.to_string());
        }
    }
}

/// Edits by hand while the server runs: a comment appended to an approved
/// claim's file, and now and then a full `index rebuild` by another process.
fn editor(kb: &Path, stop: &AtomicBool) -> usize {
    let mut rebuilds = 0;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let claims: Vec<PathBuf> = std::fs::read_dir(kb.join("claims"))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        if let Some(f) = claims.get(i as usize % claims.len().max(1))
            && let Ok(mut text) = std::fs::read_to_string(f)
        {
            text.push_str(&format!("# looked at by hand ({i})\n"));
            let tmp = f.with_extension("edit");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, f).unwrap();
        }
        if i.is_multiple_of(6) {
            let out = soak_command()
                .args([
                    "--kb",
                    kb.to_str().unwrap(),
                    "--agent",
                    "editor",
                    "index",
                    "rebuild",
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "index rebuild: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            rebuilds += 1;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    rebuilds
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or_default()
}

/// A server process under load: its pid and port.
struct Replica {
    child: std::process::Child,
    port: u16,
}

/// `vouch serve --transport http` on `kb` (with the team database at
/// `database`, if any), on a free port.
fn start_replica(p: &crate::common::Project, database: Option<&str>) -> Replica {
    let kb = p.vouch_dir();
    let mut cmd = soak_command();
    cmd.env("XDG_CONFIG_HOME", p.person.path());
    if let Some(url) = database {
        cmd.env("VOUCH_DATABASE_URL", url);
    }
    cmd.args([
        "--kb",
        kb.to_str().unwrap(),
        "serve",
        "--transport",
        "http",
        "--bind",
        "127.0.0.1:0",
    ]);
    for (who, tok) in TOKENS {
        cmd.arg("--token").arg(format!("{who}={tok}"));
    }
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port: u16 = loop {
        let line = lines.next().expect("server output").unwrap();
        if let Some(addr) = line.strip_prefix("vouch: listening on http://") {
            break addr.rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Replica { child, port }
}

/// What one configuration's run measured: p50 and p99 (ms) per method,
/// and its table.
struct Soaked {
    per_method: BTreeMap<String, (f64, f64)>,
    report: String,
}

/// `clients` clients on `replicas` servers of one knowledge base for
/// `secs` (more than one: sharing a team database) while another process
/// edits files and rebuilds; then every accepted write is checked.
fn soak(replicas: usize, secs: u64, clients: u64) -> Soaked {
    let p = crate::common::Project::new();
    // The reviewers' tokens decide: the person named them.
    p.reviewers(&["reviewer-1", "reviewer-2"]);
    let kb = p.vouch_dir();
    let pg = (replicas > 1).then(crate::common::postgres::Postgres::start);
    let mut servers: Vec<Replica> = (0..replicas)
        .map(|_| start_replica(&p, pg.as_ref().map(|pg| pg.url.as_str())))
        .collect();
    let pids: Vec<u32> = servers.iter().map(|r| r.child.id()).collect();
    let ports: Vec<u16> = servers.iter().map(|r| r.port).collect();
    let rss_all = |pids: &[u32]| pids.iter().filter_map(|p| rss_kib(*p)).sum::<u64>();
    let rss_start = rss_all(&pids);
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let peak = Arc::new(Mutex::new(rss_start));

    let mut handles = Vec::new();
    for i in 0..clients {
        let (stop, tally) = (stop.clone(), tally.clone());
        // Clients spread over the replicas, as a load balancer would.
        let port = ports[i as usize % ports.len()];
        handles.push(std::thread::spawn(move || {
            let (name, token) = TOKENS[if i % 2 == 0 {
                (i / 2 % 2) as usize
            } else {
                2 + (i / 2 % 2) as usize
            }];
            if i % 2 == 0 {
                agent(port, name, token, 0x9E37_79B9 + i, &stop, &tally);
            } else {
                reviewer(port, name, token, 0x7F4A_7C15 + i, &stop, &tally);
            }
        }));
    }
    let sampler = {
        let (stop, peak, pids) = (stop.clone(), peak.clone(), pids.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let r = rss_all(&pids);
                let mut p = peak.lock().unwrap();
                *p = (*p).max(r);
                drop(p);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let editor_kb = kb.clone();
    let editor_stop = stop.clone();
    let editor = std::thread::spawn(move || editor(&editor_kb, &editor_stop));
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let rebuilds = editor.join().unwrap();
    sampler.join().unwrap();
    let elapsed = started.elapsed();
    let rss_end = rss_all(&pids);
    let healthy = ports
        .iter()
        .all(|port| http(*port, "GET", "/health", &[], b"").status == 200);
    // With a team database the pending proposals are kept there, not in
    // the tree: what a replica lists (outside the tally).
    let mut queued: HashSet<String> = HashSet::new();
    let mut more = replicas > 1;
    while more {
        let listed = call(
            ports[0],
            TOKENS[2].1,
            &Mutex::new(Tally::default()),
            "kb.list_pending",
            json!({"limit": 1000, "offset": queued.len()}),
        );
        let page = listed["result"]
            .as_array()
            .unwrap_or_else(|| panic!("the queue lists: {listed}"));
        queued.extend(
            page.iter()
                .filter_map(|p| p["id"].as_str().map(str::to_string)),
        );
        more = page.len() == 1000;
    }
    for r in &mut servers {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &r.child.id().to_string()])
            .status();
        let _ = r.child.wait();
    }

    let t = tally.lock().unwrap();
    let servers_said = if replicas > 1 {
        format!("{replicas} replicas sharing one PostgreSQL")
    } else {
        "one server".to_string()
    };
    let mut report = format!(
        "{servers_said}, {clients} clients, {:.1} s, {rebuilds} index rebuilds by another process\n\n\
         | method | calls | ok | refused | 5xx / internal | p50 | p99 |\n|---|---:|---:|---:|---:|---:|---:|\n",
        elapsed.as_secs_f64()
    );
    let mut total = 0;
    let mut broken = Vec::new();
    let mut per_method = BTreeMap::new();
    let mut calls = t
        .calls
        .iter()
        .map(|(m, c)| (m.clone(), c.clone()))
        .collect::<Vec<_>>();
    for (m, (lat, ok, refused, bad)) in calls.iter_mut() {
        total += lat.len();
        broken.extend(bad.iter().map(|b| format!("{m}: {b}")));
        let (p50, p99) = (
            pct(lat, 0.5).as_secs_f64() * 1000.0,
            pct(lat, 0.99).as_secs_f64() * 1000.0,
        );
        per_method.insert(m.clone(), (p50, p99));
        report.push_str(&format!(
            "| {m} | {} | {ok} | {refused} | {} | {p50:.1} ms | {p99:.1} ms |\n",
            lat.len(),
            bad.len(),
        ));
    }
    report.push_str(&format!(
        "\nthroughput {:.0} requests/s; servers' RSS (together) start {} MiB, peak {} MiB, end {} MiB\n",
        total as f64 / elapsed.as_secs_f64(),
        rss_start / 1024,
        *peak.lock().unwrap() / 1024,
        rss_end / 1024
    ));
    println!("{report}");

    assert!(healthy, "a server stopped answering");
    assert!(broken.is_empty(), "{}\n{report}", broken.join("\n"));
    assert!(
        !t.proposals.is_empty() && !t.approved.is_empty(),
        "{report}"
    );

    // Every accepted write is on disk with its audit event; no id twice.
    let log = std::fs::read_to_string(kb.join("audit.log.jsonl")).unwrap();
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let named = |event: &str, id: &str| {
        events.iter().any(|e| {
            e["event"] == event
                && e["object_ids"]
                    .as_array()
                    .is_some_and(|o| o.iter().any(|x| x == id))
        })
    };
    let mut seen = HashSet::new();
    for (proposal, claim) in &t.proposals {
        assert!(
            seen.insert(proposal.clone()),
            "proposal id {proposal} handed out twice"
        );
        assert!(
            seen.insert(claim.clone()),
            "claim id {claim} reserved twice"
        );
        let pending_file = kb.join("proposed").join(format!("{proposal}.yaml"));
        let kept = pending_file.is_file()
            || queued.contains(proposal)
            || kb
                .join("decided")
                .join(format!("{proposal}.yaml"))
                .is_file();
        assert!(
            kept,
            "accepted proposal {proposal} is neither pending nor decided"
        );
        assert!(
            replicas == 1 || !pending_file.exists(),
            "{proposal} was left in the shared tree's proposed/, not moved to the team database"
        );
        assert!(
            named("proposal.create", proposal),
            "{proposal} has no proposal.create"
        );
    }
    for claim in &t.approved {
        assert!(
            kb.join("claims").join(format!("{claim}.yaml")).is_file(),
            "approved {claim} missing"
        );
        assert!(
            named("proposal.approve", claim),
            "{claim} has no proposal.approve"
        );
    }
    for s in &t.sources {
        assert!(
            kb.join("sources").join(s).join("meta.yaml").is_file(),
            "source {s} missing"
        );
    }
    let verify = p.run("x", &["--json", "audit", "verify"]);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
    // The editor's hand edits are named (edited-object); nothing else.
    let doctor = p.run("x", &["--json", "doctor"]).json();
    let errors: Vec<&Value> = doctor["issues"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|i| i["severity"] == "error" && i["kind"] != "edited-object")
                .collect()
        })
        .unwrap_or_default();
    assert!(errors.is_empty(), "doctor: {errors:?}");
    Soaked { per_method, report }
}

/// One server, then `VOUCH_SOAK_REPLICAS` (default 3) replicas sharing a
/// real PostgreSQL, each for `VOUCH_SOAK_SECS`: the same load, the same
/// checks, and the two configurations' p50 / p99 side by side
/// (target/soak.md).
#[test]
fn one_server_and_replicas_under_load_keep_every_accepted_write() {
    let secs = env_num("VOUCH_SOAK_SECS", 8);
    let clients = env_num("VOUCH_SOAK_CLIENTS", 16).clamp(2, 64);
    let replicas = env_num("VOUCH_SOAK_REPLICAS", 3).clamp(2, 8) as usize;
    let one = soak(1, secs, clients);
    let many = soak(replicas, secs, clients);
    let mut side = format!(
        "| method | one server p50 / p99 | {replicas} replicas p50 / p99 |\n|---|---:|---:|\n"
    );
    for (m, (a50, a99)) in &one.per_method {
        let (b50, b99) = many.per_method.get(m).copied().unwrap_or_default();
        side.push_str(&format!(
            "| {m} | {a50:.1} / {a99:.1} ms | {b50:.1} / {b99:.1} ms |\n"
        ));
    }
    println!("{side}");
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/soak.md"),
        format!("{}\n{}\n{side}", one.report, many.report),
    );
}
