//! A real MCP client we did not write — the official MCP Python SDK from PyPI
//! (`mcp`, pinned in `tests/mcp-client/requirements.txt`) — against
//! `vouch serve` over stdio. The SDK starts the server itself, initializes,
//! lists the tools and calls `kb_status`, `kb_register_source`,
//! `kb_propose_claim` and `kb_search`, then makes a second connection with its
//! high-level `Client` (default mode: `server/discover`, else the handshake).
//! The driver is `tests/mcp-client/client.py`; this test prepares the KB,
//! runs it and checks what it printed and what landed on disk.
//!
//! Which Python runs the client:
//! - `VOUCH_MCP_CLIENT_PYTHON`, when set (`scripts/test.sh`, which `.ci/run`
//!   calls, creates `target/mcp-client-venv`, installs the pinned SDK into it
//!   and sets this). It must be able to `import mcp`, or the test fails.
//! - Otherwise `python3`, but only if it can `import mcp`.
//! - Otherwise the test FAILS, telling you to run `scripts/test.sh`. It never
//!   skips: a green run always means the SDK really talked to the server.

use crate::common::{Project, entity_relation_and_page};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use vouch_core::methods::REGISTRY;

const CLIENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp-client/client.py"
);
/// The client bounds itself at 120 s; this is the backstop if Python hangs.
const DEADLINE: Duration = Duration::from_secs(180);
const AGENT: &str = "sdk-agent";

/// The SDK version the client reports, as pinned in requirements.txt.
fn pinned_sdk_version() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/mcp-client/requirements.txt"
    );
    let text = std::fs::read_to_string(path).expect("read requirements.txt");
    text.lines()
        .find_map(|l| l.trim().strip_prefix("mcp=="))
        .expect("requirements.txt pins mcp==<version>")
        .to_string()
}

fn imports_mcp(python: &str) -> Result<(), String> {
    match Command::new(python)
        .args(["-c", "import mcp, mcp.client.stdio"])
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Err(format!("cannot run it: {e}")),
    }
}

/// The interpreter that has the SDK; panics (fails the test) when none does.
pub(crate) fn python() -> String {
    const HOW: &str = "run `scripts/test.sh` (it installs the pinned MCP Python SDK into \
                       target/mcp-client-venv and points VOUCH_MCP_CLIENT_PYTHON at it), or \
                       set VOUCH_MCP_CLIENT_PYTHON to a Python that has \
                       `pip install -r tests/mcp-client/requirements.txt`";
    match std::env::var("VOUCH_MCP_CLIENT_PYTHON") {
        Ok(p) if !p.is_empty() => {
            if let Err(e) = imports_mcp(&p) {
                panic!("VOUCH_MCP_CLIENT_PYTHON={p} cannot import the MCP SDK ({e}); {HOW}");
            }
            p
        }
        _ => match imports_mcp("python3") {
            Ok(()) => "python3".to_string(),
            Err(e) => panic!(
                "the MCP Python SDK is not installed (python3: {e}); this test does not skip; {HOW}"
            ),
        },
    }
}

/// Run the Python client against the real binary and the KB in `kb`.
fn run_client(python: &str, kb: &Path, query: &str) -> crate::common::ClientRun {
    let mut cmd = Command::new(python);
    cmd.arg(CLIENT)
        .arg("--vouch")
        .arg(env!("CARGO_BIN_EXE_vouch"))
        .arg("--kb")
        .arg(kb)
        .args(["--agent", AGENT, "--query", query])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    crate::common::run_client(cmd, DEADLINE)
}

fn ids(hits: &Value) -> Vec<(String, String)> {
    hits.as_array()
        .unwrap_or_else(|| panic!("search result is not an array: {hits}"))
        .iter()
        .map(|h| {
            for key in ["kind", "id", "snippet", "backend"] {
                assert!(h[key].is_string(), "hit lacks string {key}: {h}");
            }
            assert!(h["score"].is_number(), "hit lacks a numeric score: {h}");
            (
                h["kind"].as_str().unwrap().to_string(),
                h["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn official_python_sdk_drives_vouch_serve() {
    let python = python();

    // Approved knowledge for kb_search to find: proposed by one actor,
    // approved by another, through the CLI.
    let p = Project::new();
    let src = p.source("Deploys need the staging credentials loaded first.\n");
    let approved = p.claim("Deploys need the staging credentials loaded first.", &src);
    // An approved entity, relation and page, so every read and list result
    // the client checks against its schema holds a real object.
    entity_relation_and_page(&p, &approved, &src);

    let run = run_client(&python, p.root(), "staging credentials");
    assert_eq!(
        run.code,
        Some(0),
        "the MCP client failed\nstderr:\n{}\nstdout:\n{}",
        run.stderr,
        run.stdout
    );
    let out: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "client stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    });
    let ctx = format!("client output:\n{out:#}\nstderr:\n{}", run.stderr);

    // The SDK we meant to test.
    assert_eq!(out["sdk"]["version"], json!(pinned_sdk_version()), "{ctx}");

    // initialize: the newest handshake version both sides know, our identity.
    let init = &out["initialize"];
    assert_eq!(init["protocol_version"], json!("2025-11-25"), "{ctx}");
    assert_eq!(init["protocol_version"], init["offered"], "{ctx}");
    assert_eq!(init["server_name"], json!("vouch"), "{ctx}");
    assert_eq!(
        init["server_version"],
        json!(env!("CARGO_PKG_VERSION")),
        "{ctx}"
    );
    assert_eq!(init["tools_capability"], json!(true), "{ctx}");
    assert_eq!(
        init["instructions"],
        json!(vouch::mcp::INSTRUCTIONS),
        "{ctx}"
    );

    // tools/list: exactly the registry, each schema as generated, unchanged
    // by the trip through the SDK's models.
    let tools = out["tools"].as_object().expect("tools object");
    let listed: BTreeSet<&str> = tools.keys().map(String::as_str).collect();
    let expected: BTreeSet<String> = REGISTRY.iter().map(|m| m.tool_name()).collect();
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(listed, expected, "tools/list differs from the registry");
    for m in REGISTRY {
        let t = &tools[&m.tool_name()];
        assert_eq!(
            t["input_schema"],
            Value::Object(vouch::mcp::input_schema(m)),
            "{} input schema",
            m.tool_name()
        );
        let description = t["description"].as_str().expect("description");
        assert!(description.starts_with(m.description), "{description}");
    }
    assert_eq!(tools["kb_status"]["read_only_hint"], json!(true));
    assert_eq!(tools["kb_search"]["read_only_hint"], json!(true));
    assert_eq!(tools["kb_propose_claim"]["read_only_hint"], json!(false));
    let propose = &tools["kb_propose_claim"]["input_schema"];
    assert!(
        propose["properties"]["text"].is_object() && propose["properties"]["evidence"].is_object(),
        "{propose}"
    );
    let required = propose["required"].as_array().expect("required");
    assert!(required.contains(&json!("text")) && required.contains(&json!("evidence")));
    assert!(
        tools["kb_propose_claim"]["description"]
            .as_str()
            .unwrap()
            .contains("Review-gated"),
        "propose tools say writes need approval"
    );

    // kb_status before: what the CLI set up.
    let before = &out["status_before"];
    assert_eq!(before["counts"]["claims"], json!(1), "{ctx}");
    assert_eq!(before["counts"]["sources"], json!(1), "{ctx}");
    assert_eq!(before["pending"], json!(0), "{ctx}");
    assert!(
        before["root"].as_str().unwrap().ends_with(".vouch"),
        "{ctx}"
    );

    // kb_register_source and kb_propose_claim (with a quoted span).
    let source_id = out["source"]["id"].as_str().expect("source id");
    assert_eq!(source_id.len(), 64, "sha256 hex: {source_id}");
    assert_eq!(out["source"]["deduplicated"], json!(false), "{ctx}");
    let proposal = &out["proposal"];
    assert_eq!(proposal["valid"], json!(true), "{ctx}");
    assert_eq!(proposal["dry_run"], json!(false), "{ctx}");
    assert_eq!(proposal["errors"], json!([]), "{ctx}");
    let proposal_id = proposal["proposal_id"].as_str().expect("proposal_id");
    let pending_claim = proposal["claim_id"].as_str().expect("claim_id");

    // kb_status after: one more source, the minted evidence, one pending.
    let after = &out["status_after"];
    assert_eq!(after["counts"]["claims"], json!(1), "{ctx}");
    assert_eq!(after["counts"]["sources"], json!(2), "{ctx}");
    assert_eq!(after["pending"], json!(1), "{ctx}");

    // kb_search: finds the approved claim; never the pending one.
    let hits = ids(&out["search"]);
    assert!(
        hits.contains(&("claim".into(), approved.clone())),
        "search missed the approved claim: {ctx}"
    );
    for (kind, id) in ids(&out["search"])
        .into_iter()
        .chain(ids(&out["search_pending_words"]))
    {
        assert!(
            !(kind == "claim" && id == pending_claim),
            "a pending claim was found by search: {ctx}"
        );
    }

    // kb_synthesize: the same answer as over JSONL, citing the approved
    // claim (never the pending one).
    let answer = &out["synthesize"];
    assert!(
        answer["answer"]
            .as_str()
            .unwrap()
            .contains(&format!("[{approved}]")),
        "{ctx}"
    );
    let jsonl = crate::common::jsonl(
        &p,
        "agent",
        "kb.synthesize",
        json!({"query": "staging credentials"}),
    );
    assert_eq!(&jsonl["result"], answer, "{ctx}");

    // A domain error is a tool result with isError, and the server keeps
    // serving; an unknown tool is a JSON-RPC invalid-params error.
    let e = &out["error_no_evidence"];
    assert_eq!(e["is_error"], json!(true), "{ctx}");
    assert!(
        e["text"].as_str().unwrap().contains("evidence"),
        "the error names what is missing: {ctx}"
    );
    // Limits hold over MCP as on every agent transport.
    let over = out["error_over_limit"]["text"].as_str().unwrap_or("");
    assert!(over.contains("limits.max_results"), "{ctx}: {over}");
    assert_eq!(out["error_unknown_tool"]["code"], json!(-32602), "{ctx}");
    assert!(
        out["error_unknown_tool"]["message"]
            .as_str()
            .unwrap()
            .contains("kb_no_such_tool"),
        "{ctx}"
    );
    assert_eq!(
        out["status_final"], out["status_after"],
        "failed calls changed nothing"
    );

    // Every object result has an outputSchema, and the SDK validated these
    // results against theirs (it raises when one does not fit).
    let with_schema: BTreeSet<String> = vouch_core::methods::REGISTRY
        .iter()
        .filter(|m| vouch::mcp::output_schema(m).is_some())
        .map(|m| m.tool_name())
        .collect();
    let listed: BTreeSet<String> = out["output_schemas"]
        .as_array()
        .expect("output_schemas")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, with_schema, "{ctx}");
    assert!(with_schema.len() >= 30, "{with_schema:?}");
    assert_eq!(
        out["schema_checked"].as_object().map(|o| o.len()),
        Some(11),
        "{ctx}"
    );
    // Results that are lists (or an object or null) were checked against
    // the catalog's result schemas: every read and list method, the audit
    // log and search; a read of a missing id is null.
    let wire = out["wire_checked"].as_object().expect("wire_checked");
    let read_list: BTreeSet<String> = vouch_core::methods::REGISTRY
        .iter()
        .filter(|m| m.name.starts_with("kb.read_") || m.name.starts_with("kb.list_"))
        .map(|m| m.tool_name())
        .collect();
    for tool in &read_list {
        // Each read and list was checked with a real object (a list of
        // at least one, a read that found one), and reads of a missing id
        // with null.
        let kinds = wire[tool]
            .as_array()
            .unwrap_or_else(|| panic!("{tool} not checked: {ctx}"));
        assert!(
            kinds.contains(&json!("list")) || kinds.contains(&json!("dict")),
            "{tool} checked only empty results: {ctx}"
        );
    }
    assert!(
        wire["kb_read_claim"]
            .as_array()
            .unwrap()
            .contains(&json!("NoneType")),
        "{ctx}"
    );
    assert_eq!(wire["kb_audit"], json!(["list"]), "{ctx}");

    // Second connection, the SDK's default high-level Client: it negotiates
    // the stateless 2026-07-28 era through `server/discover`.
    let auto = &out["auto"];
    assert_eq!(auto["protocol_version"], json!("2026-07-28"), "{ctx}");
    assert_eq!(auto["modern"], json!(true), "{ctx}");
    assert_eq!(auto["server_name"], json!("vouch"), "{ctx}");
    let auto_tools: BTreeSet<&str> = auto["tool_names"]
        .as_array()
        .expect("tool_names")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(auto_tools, expected, "{ctx}");
    // Each connection is a server process of its own, watching the files:
    // the same status but for the watcher's pid.
    let watched_by = |status: &Value| -> (Value, u64) {
        let mut status = status.clone();
        let watcher = status["retrieval"]
            .as_object_mut()
            .and_then(|r| r.remove("watcher"))
            .unwrap_or_default();
        let pid = watcher["pid"]
            .as_u64()
            .unwrap_or_else(|| panic!("no watcher in {status}"));
        (status, pid)
    };
    let (auto_status, auto_pid) = watched_by(&auto["status"]);
    let (first_status, first_pid) = watched_by(&out["status_end"]);
    assert_eq!(auto_status, first_status, "{ctx}");
    assert_ne!(auto_pid, first_pid, "{ctx}");
    assert_eq!(auto["proposal"]["valid"], json!(true), "{ctx}");
    let proposal_id_2 = auto["proposal"]["proposal_id"].as_str().expect("id");
    assert!(
        ids(&auto["search"]).contains(&("claim".into(), approved.clone())),
        "{ctx}"
    );
    assert_eq!(auto["error_no_evidence"]["is_error"], json!(true), "{ctx}");
    assert_eq!(auto["status_final"]["pending"], json!(2), "{ctx}");

    // On disk: both proposals pending, proposed by the server's actor.
    for id in [proposal_id, proposal_id_2] {
        let file = p.vouch_dir().join("proposed").join(format!("{id}.yaml"));
        assert!(file.is_file(), "{} missing", file.display());
        let read = p.call("tester", "kb.read_proposal", json!({"id": id}));
        assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);
        let v = read.json();
        assert_eq!(v["status"], json!("pending"), "{v}");
        assert_eq!(v["proposed_by"], json!(AGENT), "{v}");
    }
    let pending = p.call("tester", "kb.list_pending", json!({}));
    let pending = pending.json().to_string();
    assert!(pending.contains(proposal_id) && pending.contains(proposal_id_2));

    // The audit log still verifies after everything the SDK did.
    let verify = p.call("tester", "kb.audit_verify", json!({}));
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    assert_eq!(verify.json()["ok"], json!(true), "{}", verify.stdout);
}
