//! Partial answers say so to the agent (issue 41): what a call warned
//! about, and the documents a search could not see by meaning, reach the
//! caller in the answer (`_meta` of the JSONL/HTTP envelope and of an MCP
//! tool result, plus a text block the model reads), not only the server's
//! stderr; and `kb.index_rebuild` returns with words and vectors complete.

use crate::common::stdio::StdioServer;
use crate::common::{Project, jsonl};
use crate::transports::mcp::Mcp;
use serde_json::{Value, json};

/// `kb.index_rebuild` embeds every document before it returns (the next
/// search is whole by meaning); `wait: false` returns once the words are
/// indexed and says how many documents wait for vectors, `_meta.partial`.
#[test]
fn index_rebuild_returns_with_vectors_or_says_what_waits() {
    let p = crate::semantic::with_model();
    let src = p.source("Ops notes.\n");
    for text in [
        "Long-running migrations use the online migration tool",
        "Deploys are frozen on Fridays",
        "Rate limits apply per tenant",
    ] {
        let (pid, _) = p.propose(text, &src);
        p.ok("alice", &["approve", &pid]);
    }
    let quick = jsonl(&p, "agent", "kb.index_rebuild", json!({"wait": false}));
    let pending = quick["result"]["embeddings"]["pending"].as_u64().unwrap();
    assert!(pending >= 3, "{quick}");
    assert_eq!(quick["_meta"]["partial"], true, "{quick}");
    assert_eq!(quick["_meta"]["vectors_pending"], pending, "{quick}");

    let whole = jsonl(&p, "agent", "kb.index_rebuild", json!({}));
    let vectors = &whole["result"]["embeddings"];
    assert_eq!(vectors["pending"], 0, "{whole}");
    assert!(vectors["documents"].as_u64().unwrap() >= 3, "{whole}");
    assert!(
        vectors["model"].as_str().unwrap().contains("MiniLM"),
        "{whole}"
    );
    assert!(whole.get("_meta").is_none(), "{whole}");
    // kb.status says how many documents have vectors, of which model.
    let status = p.ok("x", &["status"]);
    let counted = &status["retrieval"]["vectors"];
    assert_eq!(counted["pending"], 0, "{status}");
    assert_eq!(counted["documents"], vectors["documents"], "{status}");
    assert_eq!(counted["model"], vectors["model"], "{status}");

    // Whole: a search by meaning right after has nothing to own up to.
    let search = jsonl(
        &p,
        "agent",
        "kb.search",
        json!({"query": "how do we change big tables safely", "backend": "embedding"}),
    );
    assert!(search.get("_meta").is_none(), "{search}");
    assert!(!search["result"].as_array().unwrap().is_empty(), "{search}");
}

/// A warning a call raises (here: the configured backend needs a model
/// that is not installed, so the search is answered by words) is in the
/// answer on every transport.
#[test]
fn a_calls_warnings_reach_the_agent_on_every_transport() {
    let p = Project::new();
    let src = p.source("Ops notes.\n");
    p.claim("Deploys are frozen on Fridays", &src);
    let config = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("backend: fts5", "backend: hybrid")).unwrap();
    let says_why = |warnings: &Value| {
        warnings
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w.as_str().unwrap().contains("hybrid")))
    };

    let answer = jsonl(&p, "agent", "kb.search", json!({"query": "deploys"}));
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["result"][0]["backend"], "fts5", "{answer}");
    assert!(says_why(&answer["_meta"]["warnings"]), "{answer}");

    let mut mcp = Mcp::start(&p.vouch_dir());
    let r = mcp
        .request(
            "tools/call",
            json!({"name": "kb_search", "arguments": {"query": "deploys"}}),
        )
        .unwrap();
    assert!(says_why(&r["_meta"]["warnings"]), "{r}");
    let said = r["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .any(|t| t.starts_with("vouch: warning:") && t.contains("hybrid"));
    assert!(said, "the model reads the warning: {r}");
}

/// The first call of a fresh server that is a rebuild builds once: the
/// server's own first sync built the index from the files and no one else
/// has written it since, so the rebuild only catches up. The server is
/// armed to abort where a rebuild clears the index: it answers. Once
/// anything else has written `state.db` — even bytes patched without
/// SQLite — a rebuild builds again (and the armed server dies there).
#[test]
fn a_fresh_servers_first_rebuild_builds_once() {
    let p = Project::new();
    let src = p.source("Ops notes.\n");
    let claim = p.claim("Deploys are frozen on Fridays", &src);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!(
            "{}{suffix}",
            p.vouch_dir().join("state.db").display()
        ));
    }
    let mut cmd = p.command("agent");
    cmd.env("VOUCH_FAILPOINT", "index.rebuild.cleared=abort")
        .args(["serve", "--transport", "jsonl"]);
    let mut server = StdioServer::spawn(cmd);
    let rebuilt = server.call(1, "kb.index_rebuild", json!({}));
    assert_eq!(rebuilt["ok"], true, "{rebuilt}");
    assert_eq!(
        rebuilt["result"]["indexed"], 2,
        "a claim and its source: {rebuilt}"
    );
    let found = server.call(2, "kb.search", json!({"query": "fridays"}));
    assert_eq!(found["result"][0]["id"], claim.as_str(), "{found}");

    // Something writes state.db's bytes without SQLite (which SQLite's
    // `data_version` never sees): here the same byte written back in
    // place, as a planted row would be. The index is no longer only what
    // this server built, and a rebuild clears it (where the server dies).
    // (A moment later than the server's last write: a write within the
    // same tick of the file system's clock keeps the file's times, a
    // residual race written in `Index::as_built_here`.)
    std::thread::sleep(std::time::Duration::from_millis(100));
    {
        use std::io::{Read, Seek, SeekFrom, Write};
        let mut db = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p.vouch_dir().join("state.db"))
            .unwrap();
        let mut byte = [0u8; 1];
        db.seek(SeekFrom::Start(100)).unwrap();
        db.read_exact(&mut byte).unwrap();
        db.seek(SeekFrom::Start(100)).unwrap();
        db.write_all(&byte).unwrap();
    }
    server.send_raw(&json!({"id": 3, "method": "kb.index_rebuild"}).to_string());
    let status = server.close();
    assert!(
        !status.success(),
        "the second rebuild built again: {status}"
    );
}
