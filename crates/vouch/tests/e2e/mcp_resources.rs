//! MCP resources, prompts and subscriptions through the official MCP Python
//! SDK, over stdio (the initialize handshake, `resources/subscribe`) and
//! over streamable HTTP (the SDK's `Client` in auto mode, which negotiates
//! the 2026-07-28 protocol and follows through `subscriptions/listen`). The
//! driver is `tests/mcp-client/resources.py`; the TypeScript SDK does the
//! same in `mcp_ts_sdk.rs`.
//!
//! What it proves: a host can list and read knowledge as resources (a
//! source with its text, a context pack), gets MCP's error codes for a
//! missing object or a foreign URI, gets the prompts with what they attach,
//! and an agent that subscribed to the claim its proposal would make hears
//! of the approval a reviewer made on another transport.

use crate::common::Project;
use crate::mcp_sdk::python;
use crate::mcp_ts_sdk::{fixture, reviewers_server};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

const DRIVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp-client/resources.py"
);
const DEADLINE: Duration = Duration::from_secs(200);
const AGENT: &str = "py-agent";
const REVIEWER: &str = "py-reviewer";
const TOKEN: &str = "tok-py-reviewer-0123456789abcdef0123456789abcdef";

#[test]
fn official_python_sdk_reads_resources_gets_prompts_and_hears_of_approvals() {
    let python = python();
    let p = Project::real_clock();
    let (f, fixture_path) = fixture(&p);
    let server = reviewers_server(&p, REVIEWER, TOKEN);
    let mut cmd = Command::new(&python);
    cmd.arg(DRIVER)
        .arg("--vouch")
        .arg(env!("CARGO_BIN_EXE_vouch"))
        .arg("--kb")
        .arg(p.root())
        .args(["--agent", AGENT, "--token", TOKEN])
        .arg("--http")
        .arg(format!("http://127.0.0.1:{}/mcp", server.port))
        .arg("--fixture")
        .arg(&fixture_path)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let run = crate::common::run_client(cmd, DEADLINE);
    assert_eq!(
        run.code,
        Some(0),
        "the Python resources client failed\nstderr:\n{}\nstdout:\n{}",
        run.stderr,
        run.stdout
    );
    let out: Value = serde_json::from_str(run.stdout.trim()).expect("client stdout is JSON");
    let ctx = format!("client output:\n{out:#}\nstderr:\n{}", run.stderr);

    for transport in ["stdio", "http"] {
        let r = &out[transport];
        let ctx = format!("{transport}: {ctx}");
        let templates: Vec<&str> = r["templates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(templates.contains(&"vouch://claim/{id}"), "{ctx}");
        assert!(templates.contains(&"vouch://context/{task}"), "{ctx}");
        let claim_uri = format!("vouch://claim/{}", f["claim"].as_str().unwrap());
        assert!(
            r["listed"].as_array().unwrap().contains(&json!(claim_uri)),
            "{ctx}"
        );
        let claim: Value = serde_json::from_str(r["claim"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(claim["id"], f["claim"], "{ctx}");
        // The source's text after its metadata, as registered.
        assert_eq!(r["source"].as_array().unwrap().len(), 2, "{ctx}");
        assert!(
            r["source"][1]["text"]
                .as_str()
                .unwrap()
                .contains("Rollbacks are announced in the release channel."),
            "{ctx}"
        );
        assert_eq!(
            r["context"][0]["mime_type"],
            json!("text/markdown"),
            "{ctx}"
        );
        // "Resource not found" is -32002 up to 2025-11-25; the 2026-07-28
        // protocol (HTTP here) answers it with invalid params.
        let not_found = if transport == "stdio" { -32002 } else { -32602 };
        assert_eq!(r["not_found"], json!(not_found), "{ctx}");
        assert_eq!(r["foreign"], json!(-32602), "{ctx}");
        assert_eq!(r["missing_argument"], json!(-32602), "{ctx}");
        assert_eq!(
            r["prompts"],
            json!(["record_learning", "review_session", "what_we_know"]),
            "{ctx}"
        );
        assert_eq!(r["what_we_know"][1]["type"], json!("resource"), "{ctx}");
    }
    // The reviewer over HTTP negotiated the newest protocol and heard of the
    // proposal it approved through subscriptions/listen.
    assert_eq!(out["http"]["modern"], json!(true), "{ctx}");
    assert!(
        out["http"]["heard"]
            .as_str()
            .unwrap_or_default()
            .contains(out["stdio"]["proposal_uri"].as_str().unwrap()),
        "{ctx}"
    );
    // The agent over stdio heard of the claim its proposal made.
    let claim_uri = out["stdio"]["claim_uri"].as_str().unwrap();
    assert!(
        out["stdio"]["heard"]
            .as_array()
            .unwrap()
            .contains(&json!(claim_uri)),
        "{ctx}"
    );
    let now: Value =
        serde_json::from_str(out["stdio"]["new_claim"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(now["approved_by"], json!(REVIEWER), "{ctx}");
    server.terminate();
}

/// A stdio server says on stderr which host it serves and whether that
/// host will be asked to open review pages, so a person can see which
/// hosts do (docs/review.md).
#[test]
fn a_stdio_server_names_its_host_and_whether_it_is_asked() {
    use std::io::Write;
    let p = Project::new();
    for (caps, want) in [
        (
            json!({"elicitation": {"url": {}}}),
            "MCP client some-host 9.9 (protocol 2025-11-25); asked to open review pages: yes",
        ),
        (
            json!({}),
            "MCP client some-host 9.9 (protocol 2025-11-25); asked to open review pages: no",
        ),
    ] {
        let mut child = p
            .command("agent")
            .args(["serve"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "some-host", "version": "9.9"}}});
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(stdin, "{init}\n{done}").unwrap();
        // Read stderr until the line comes (a minute at most, so a server
        // that never says it fails the test instead of hanging it); only
        // then close stdin, which ends the session.
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(stderr).map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut seen = String::new();
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("asked to open review pages") {
                break;
            }
        }
        drop(stdin);
        child.wait().unwrap();
        assert!(seen.contains(want), "{seen}");
    }
}
