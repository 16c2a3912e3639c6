//! Reads never write (issue 41). A read works on what the index keeper has
//! made current; catching up is the keeper's explicit step (the CLI's
//! before it dispatches, a server's background thread). So on a current
//! index no read commits to `state.db` or touches its files, on any
//! transport — and since every document vector a model computes is stored,
//! no read runs the model on a document either.
//!
//! What counts a write: SQLite's `PRAGMA data_version`, asked on one
//! connection held open across the reads (it moves whenever another
//! connection commits), and the size and change time of `state.db` and its
//! write-ahead log (which a write without SQLite would move).

use crate::common::Project;
use crate::common::server::HttpServer;
use crate::common::stdio::StdioServer;
use crate::transports::mcp::Mcp;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// What moves when anything writes the index.
#[derive(Debug, PartialEq)]
struct Writes {
    data_version: i64,
    files: Vec<(String, u64, SystemTime)>,
}

struct Watch {
    p_dir: std::path::PathBuf,
    conn: rusqlite::Connection,
}

impl Watch {
    fn new(p: &Project) -> Watch {
        let db = p.vouch_dir().join("state.db");
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        Watch {
            p_dir: p.vouch_dir(),
            conn,
        }
    }
    fn now(&self) -> Writes {
        let data_version = self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .unwrap();
        let files = ["state.db", "state.db-wal"]
            .iter()
            .filter_map(|name| {
                let m = std::fs::metadata(self.p_dir.join(name)).ok()?;
                Some((name.to_string(), m.len(), m.modified().unwrap()))
            })
            .collect();
        Writes {
            data_version,
            files,
        }
    }
}

/// Every read the index serves, with params that reach it: search by each
/// backend, context packs, recall, the review queue (near-duplicates),
/// status (vector counts), lint, doctor-free health reads, plain reads.
fn reads(claim: &str) -> Vec<(&'static str, Value)> {
    let mut out = vec![];
    for backend in ["fts5", "substring", "embedding", "hybrid"] {
        out.push((
            "kb.search",
            json!({"query": "how do we change big tables safely", "backend": backend}),
        ));
    }
    out.extend([
        ("kb.search", json!({"query": "fridays"})),
        ("kb.context", json!({"task": "plan a database migration"})),
        ("kb.recall", json!({"task": "deploy on friday"})),
        ("kb.list_pending", json!({})),
        ("kb.status", json!({})),
        ("kb.lint", json!({})),
        ("kb.read_claim", json!({"id": claim})),
        ("kb.list_claims", json!({})),
        ("kb.audit_verify", json!({})),
        ("kb.source_verify", json!({})),
        ("kb.capabilities", json!({})),
    ]);
    out
}

/// A KB with approved claims, one proposal waiting (near-duplicate of a
/// claim), the model installed, and an index made current by `vouch
/// index rebuild` (words and vectors).
fn current_kb() -> (Project, String) {
    let p = crate::semantic::with_model();
    let src = p.source("Ops notes.\n");
    let first = p.claim(
        "Long-running migrations use the online migration tool",
        &src,
    );
    for text in [
        "Deploys are frozen on Fridays",
        "Rate limits apply per tenant",
    ] {
        p.claim(text, &src);
    }
    p.propose("Deploys are frozen every Friday", &src);
    let rebuilt = p.ok("x", &["index", "rebuild"]);
    assert_eq!(rebuilt["embeddings"]["pending"], 0, "{rebuilt}");
    // The rebuild's own audit event came after it read the log: one
    // catch-up takes it in, and the index is current.
    p.ok("x", &["status"]);
    (p, first)
}

fn assert_ok(method: &str, answer: &Value) {
    assert!(
        answer.get("error").is_none() || answer["error"].is_null(),
        "{method}: {answer}"
    );
}

/// The CLI (`vouch call` and the commands): each one-shot read catches up
/// first (nothing to do on a current index) and then reads; neither
/// writes. (A server's start writes once — its watcher's token — which is
/// why one-shot reads are measured here through the CLI.)
#[test]
fn one_shot_reads_write_nothing() {
    let (p, claim) = current_kb();
    let watch = Watch::new(&p);
    let before = watch.now();
    for (method, params) in reads(&claim) {
        let run = p.call("agent", method, params.clone());
        assert_eq!(run.code, 0, "{method}: {}", run.stderr);
        assert_eq!(watch.now(), before, "{method} {params} wrote the index");
    }
    for args in [
        &["search", "fridays"][..],
        &["search", "big tables", "--backend", "hybrid"],
        &["context", "plan a migration"],
        &["status"],
        &["review", "--list"],
    ] {
        let _ = p.run("alice", args);
        assert_eq!(watch.now(), before, "vouch {args:?} wrote the index");
    }
}

/// A server over JSONL, MCP and HTTP: once it has made the index current
/// (its first round), requests only read — hundreds of them write nothing.
#[test]
fn a_servers_reads_write_nothing_on_any_transport() {
    let (p, claim) = current_kb();

    let mut cmd = p.command("agent");
    cmd.args(["serve", "--transport", "jsonl"]);
    let mut server = StdioServer::spawn(cmd);
    let warm = server.call(0, "kb.status", json!({}));
    assert_ok("kb.status", &warm);
    let mut cmd = p.command("agent");
    cmd.arg("serve");
    let mut mcp = Mcp::spawn(cmd);
    let mut cmd = p.command("agent");
    cmd.args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"]);
    let http = HttpServer::spawn(cmd);
    // Past the servers' own first rounds (their upkeep may write once, to
    // catch up; reads are what is measured).
    std::thread::sleep(Duration::from_millis(1500));

    let watch = Watch::new(&p);
    let before = watch.now();
    let mut id = 1;
    for _ in 0..3 {
        for (method, params) in reads(&claim) {
            id += 1;
            let answer = server.call(id, method, params.clone());
            assert_ok(method, &answer);
            let tool = method.replace('.', "_");
            let r = mcp.request(
                "tools/call",
                json!({"name": tool, "arguments": params.clone()}),
            );
            assert!(r.is_ok(), "{method} over MCP: {r:?}");
            let body = json!({"id": id, "method": method, "params": params});
            let answer = http.rpc(None, body.to_string().as_bytes()).json();
            assert_ok(method, &answer);
        }
    }
    let after = watch.now();
    server.finish();
    drop(mcp);
    drop(http);
    assert_eq!(after, before, "a server's read wrote the index");
}
