//! Drivers and measuring: the setup most suites share (a generated KB,
//! indexed), servers (JSONL, HTTP, MCP, the review pages, the watcher) and
//! one-shot CLI runs timed, summaries, peak RSS.

use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_clients::http::HttpResponse;
use vouch_clients::{HttpServer, StdioServer};
use vouch_core::Kb;
use vouch_core::clock::SystemClock;

use crate::generate::{Generated, generate};

/// Latency summary of a sample, in milliseconds.
pub(crate) struct Summary {
    /// The median.
    pub(crate) p50: f64,
    /// The 99th percentile.
    pub(crate) p99: f64,
    /// How many samples.
    pub(crate) n: usize,
}

impl Summary {
    /// `p50 / p99` for a table cell.
    pub(crate) fn pair(&self) -> String {
        format!("{} / {}", fmt_ms(self.p50), fmt_ms(self.p99))
    }
}

/// The [`Summary`] of the times in `v`.
pub(crate) fn summarize(mut v: Vec<Duration>) -> Summary {
    if v.is_empty() {
        return Summary {
            p50: f64::NAN,
            p99: f64::NAN,
            n: 0,
        };
    }
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0;
    Summary {
        p50: at(0.5),
        p99: at(0.99),
        n: v.len(),
    }
}

/// Peak resident set of a live process, from /proc (Linux), in MiB.
pub(crate) fn peak_rss_mib(pid: u32) -> Option<f64> {
    rss_mib(pid).map(|(_, peak)| peak)
}

/// Resident set now and at its peak of a live process (Linux), in MiB.
pub(crate) fn rss_mib(pid: u32) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb / 1024.0)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// The `vouch` binary next to this one (`cargo build --release` builds both);
/// `VOUCH_BENCH_BIN` names another build to measure (an older one, to
/// compare in the same run).
pub(crate) fn vouch_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("VOUCH_BENCH_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current exe");
    let bin = exe.with_file_name("vouch");
    assert!(
        bin.exists(),
        "{} not found; build it with `cargo build --release --bin vouch`",
        bin.display()
    );
    bin
}

/// `vouch` in `project`, as a person runs it there.
pub(crate) fn vouch_in(project: &Path) -> Command {
    let mut cmd = Command::new(vouch_bin());
    cmd.current_dir(project);
    cmd
}

/// The knowledge base of `g` opened in process with the system clock, as
/// a one-shot command opens it (no model attached).
pub(crate) fn open(g: &Generated) -> Kb {
    Kb::open(&g.vouch(), Arc::new(SystemClock::default())).expect("open kb")
}

/// A generated KB of some size (seed 42) opened in process with its index
/// rebuilt: what every suite that measures a KB of a size starts from.
pub(crate) struct Indexed {
    /// The generated KB's folder and what to ask it.
    pub(crate) g: Generated,
    /// It, open in process.
    pub(crate) kb: Kb,
    /// How long generating it took.
    pub(crate) generate: Duration,
    /// How long the full index rebuild took.
    pub(crate) rebuild: Duration,
}

/// Generate a KB of `n` claims, open it and rebuild its index, timing
/// both (what was made goes to stderr).
pub(crate) fn indexed(n: usize) -> Indexed {
    let t = Instant::now();
    let g = generate(n, 42);
    let generate = t.elapsed();
    eprintln!("generated {}", g.counts);
    let kb = open(&g);
    let t = Instant::now();
    let rebuilt = kb.index().rebuild(&kb).expect("rebuild");
    let rebuild = t.elapsed();
    eprintln!("indexed {} documents", rebuilt.indexed);
    Indexed {
        g,
        kb,
        generate,
        rebuild,
    }
}

/// One table: its header row and alignment row, then, for each KB size,
/// a KB generated and indexed ([`indexed`]) that `each` measures and
/// prints its row(s) of.
pub(crate) fn per_size(
    header: &str,
    alignment: &str,
    sizes: &[usize],
    mut each: impl FnMut(usize, Indexed),
) {
    println!("{header}");
    println!("{alignment}");
    for &n in sizes {
        each(n, indexed(n));
    }
}

impl Indexed {
    /// Close the in-process knowledge base (the server opens its own) and
    /// start `vouch serve --transport jsonl` on it, `env` added to its
    /// environment.
    pub(crate) fn serve_jsonl(self, env: &[(&str, &Path)]) -> (Generated, StdioServer) {
        drop(self.kb);
        let server = jsonl_server(self.g.project(), env);
        (self.g, server)
    }
}

/// Time `f` over `calls` calls (after a short warm-up).
pub(crate) fn time_calls(calls: usize, mut f: impl FnMut(usize)) -> Summary {
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

/// `vouch serve --transport jsonl` in `project` as "bench-agent", through
/// the clients the end-to-end tests use; `env` adds to its environment
/// (e.g. XDG_CACHE_HOME, where models live). Waits up to 10 minutes for an
/// answer (a rebuild at 100,000 claims and more).
pub(crate) fn jsonl_server(project: &Path, env: &[(&str, &Path)]) -> StdioServer {
    let mut cmd = vouch_in(project);
    cmd.envs(env.iter().map(|(k, v)| (*k, *v))).args([
        "serve",
        "--transport",
        "jsonl",
        "--agent",
        "bench-agent",
    ]);
    let mut server = StdioServer::spawn(cmd);
    server.set_timeout(Duration::from_secs(600));
    server
}

/// One-shot `vouch --json search <q>` calls: wall time of each process.
pub(crate) fn cli_search(project: &Path, queries: &[String], runs: usize) -> Summary {
    cli_search_after(project, queries, runs, &mut |_| {})
}

/// [`cli_search`], calling `before(i)` (untimed) ahead of the i-th search.
pub(crate) fn cli_search_after(
    project: &Path,
    queries: &[String],
    runs: usize,
    before: &mut dyn FnMut(usize),
) -> Summary {
    let mut v = Vec::with_capacity(runs);
    for i in 0..runs + 2 {
        before(i);
        let t = Instant::now();
        let out = vouch_in(project)
            .args(["--json", "search", &queries[i % queries.len()]])
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
pub(crate) struct WatchProcess {
    child: Child,
    /// From spawn to the "watching" line: open, watch every folder, sync.
    pub(crate) ready_after: Duration,
}

impl WatchProcess {
    /// Start `vouch watch` in `project` and wait for its "watching" line.
    pub(crate) fn start(project: &Path) -> WatchProcess {
        let t = Instant::now();
        let mut child = vouch_in(project)
            .args(["watch"])
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
pub(crate) fn edit_in_place(path: &Path, round: usize) {
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
pub(crate) fn cli_peak_rss_mib(project: &Path, args: &[&str]) -> Option<f64> {
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

/// `vouch serve --transport http` in `project` on an ephemeral loopback
/// port, through the clients the end-to-end tests use.
pub(crate) fn http_server(project: &Path) -> HttpServer {
    let mut cmd = vouch_in(project);
    cmd.args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"]);
    HttpServer::spawn(cmd)
}

/// One keep-alive HTTP/1.1 connection, as a browser or an agent's client
/// keeps one: requests in turn, each answer read by its `Content-Length`.
pub(crate) struct HttpConn {
    stream: BufReader<std::net::TcpStream>,
    host: String,
}

impl HttpConn {
    /// Connect to `addr` (`127.0.0.1:port`).
    pub(crate) fn connect(addr: &str) -> HttpConn {
        let stream = std::net::TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).ok();
        HttpConn {
            stream: BufReader::new(stream),
            host: addr.to_string(),
        }
    }

    /// Send one request with `headers` and `body`, and read its answer.
    pub(crate) fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> HttpResponse {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.stream.get_mut().write_all(req.as_bytes()).unwrap();
        let mut status_line = String::new();
        self.stream.read_line(&mut status_line).unwrap();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("a status line, not {status_line:?}"));
        let mut head = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                head.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let mut answer = HttpResponse {
            status,
            headers: head,
            body: Vec::new(),
        };
        assert!(
            answer.header("transfer-encoding").is_none(),
            "{method} {path}: a chunked answer; this client reads only sized ones"
        );
        let length = answer
            .header("content-length")
            .map_or(0, |v| v.parse().expect("Content-Length"));
        answer.body = vec![0u8; length];
        self.stream.read_exact(&mut answer.body).unwrap();
        answer
    }

    /// POST a JSONL envelope to /rpc; the answer's body.
    pub(crate) fn post(&mut self, body: &str) -> Vec<u8> {
        self.request(
            "POST",
            "/rpc",
            &[("Content-Type", "application/json")],
            body,
        )
        .body
    }
}

/// Requests/second for `kb.search` with `connections` concurrent keep-alive
/// clients over `duration`, and the per-request latency.
pub(crate) fn http_load(
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
pub(crate) fn mcp_tools_list(project: &Path, calls: usize) -> (Duration, Summary, usize) {
    let t0 = Instant::now();
    let mut cmd = vouch_in(project);
    cmd.arg("serve");
    let mut server = StdioServer::spawn(cmd);
    server.send_raw(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "vouch-bench", "version": "0"}}})
        .to_string(),
    );
    server.read();
    let init = t0.elapsed();
    server.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let mut tools = 0;
    let mut v = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        server
            .send_raw(&json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/list"}).to_string());
        let answer = server.read();
        v.push(t.elapsed());
        tools = answer["result"]["tools"].as_array().map_or(0, Vec::len);
    }
    (init, summarize(v), tools)
}

/// Milliseconds for a table cell: two decimals below 100 ms, none above.
pub(crate) fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}
