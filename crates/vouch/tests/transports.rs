//! One scenario over every transport — register a source, propose a claim as
//! "agent", fail to self-approve, approve as "alice", find it by search, see
//! it in the audit log — against the real binary, demanding the same
//! results. Plus the error paths of each transport.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::http::{HttpResponse, http};
use common::server::{HttpServer, init_kb, vouch};
const TIMEOUT: Duration = Duration::from_secs(30);

/// Kills the child when dropped, so a failing test leaves no server behind.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vouch serve");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        // Through the test's own output capture: shown only on failure.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[server] {line}");
            }
        });
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    fn read(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(TIMEOUT)
            .expect("server answered in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Close stdin and wait for a clean exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "server exited with {status}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A wire error: (code, message).
type WireErr = (String, String);

#[derive(Clone, Copy, Debug)]
enum Who {
    Agent,
    Alice,
}

/// What the scenario produced, compared across transports.
#[derive(Debug, PartialEq)]
struct Outcome {
    source_id: String,
    claim_id: String,
    proposal_id: String,
    self_approve_error: String,
    approved_object: String,
    hit_ids: Vec<String>,
    events: Vec<(String, String)>,
}

fn scenario(call: &mut dyn FnMut(Who, &str, Value) -> Result<Value, WireErr>) -> Outcome {
    let src = call(
        Who::Agent,
        "kb.register_source",
        json!({"content": "Deploys run scripts/deploy.sh and need the staging credentials loaded first.\n",
               "locator": "notes/deploy.md", "title": "deploy notes"}),
    )
    .expect("register_source");
    let source_id = src["id"].as_str().expect("source id").to_string();
    assert_eq!(src["deduplicated"], json!(false));

    let p = call(
        Who::Agent,
        "kb.propose_claim",
        json!({"text": "Deploys need the staging credentials loaded first.",
               "evidence": [source_id], "type": "workflow"}),
    )
    .expect("propose_claim");
    assert_eq!(p["valid"], json!(true), "{p}");
    let claim_id = p["claim_id"].as_str().expect("claim id").to_string();
    let proposal_id = p["proposal_id"].as_str().expect("proposal id").to_string();

    // Not knowledge yet.
    let hits = call(
        Who::Agent,
        "kb.search",
        json!({"query": "staging credentials"}),
    )
    .expect("search");
    assert!(
        !hits.to_string().contains(&claim_id),
        "pending claim found by search: {hits}"
    );

    let (code, message) = call(
        Who::Agent,
        "kb.approve",
        json!({"proposal_id": proposal_id}),
    )
    .expect_err("self-approval must be refused");
    assert_eq!(code, "invalid_request", "{message}");
    assert!(message.contains("cannot also approve"), "{message}");

    let a = call(
        Who::Alice,
        "kb.approve",
        json!({"proposal_id": proposal_id}),
    )
    .expect("approve as alice");
    assert_eq!(a["ok"], json!(true), "{a}");
    let approved_object = a["object_id"].as_str().expect("object_id").to_string();
    assert_eq!(approved_object, claim_id);

    // Alice approved at the command line, outside the server: it sees the
    // new claim once it notices the files changed.
    let mut hit_ids: Vec<String> = Vec::new();
    eventually("the approved claim in search", || {
        let hits = call(
            Who::Agent,
            "kb.search",
            json!({"query": "staging credentials"}),
        )
        .expect("search");
        hit_ids = hits
            .as_array()
            .expect("search answers an array")
            .iter()
            .map(|h| h["id"].as_str().expect("hit id").to_string())
            .collect();
        hit_ids.contains(&claim_id)
    });

    let audit = call(Who::Agent, "kb.audit", json!({})).expect("audit");
    let events: Vec<(String, String)> = audit
        .as_array()
        .expect("audit answers an array")
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap_or_default().to_string(),
                e["actor"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for name in ["source.register", "proposal.create", "proposal.approve"] {
        assert!(
            events.iter().any(|(e, _)| e == name),
            "{name} in {events:?}"
        );
    }
    assert!(events.contains(&("proposal.approve".into(), "alice".into())));
    Outcome {
        source_id,
        claim_id,
        proposal_id,
        self_approve_error: code,
        approved_object,
        hit_ids,
        events,
    }
}

/// Over stdio the actor is fixed per process, and an `approver` param naming
/// anyone else is refused (tests/attacks.rs): alice, a person, approves at
/// the command line beside the running server.
fn as_person(kb: &Path, method: &str, params: Value) -> Result<Value, WireErr> {
    let out = vouch(kb)
        .env("VOUCH_AGENT", "alice")
        .args(["--json", "call", method, &params.to_string()])
        .output()
        .expect("run vouch call");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("vouch call prints JSON"))
    } else {
        Err((
            format!("exit {}", out.status.code().unwrap_or(-1)),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }
}

// ----- JSONL ---------------------------------------------------------------

fn jsonl_server(kb: &Path) -> Server {
    let mut cmd = vouch(kb);
    cmd.env("VOUCH_AGENT", "agent")
        .args(["serve", "--transport", "jsonl"]);
    Server::spawn(cmd)
}

fn envelope_result(v: Value) -> Result<Value, WireErr> {
    if v["ok"] == json!(true) {
        Ok(v["result"].clone())
    } else {
        Err((
            v["error"]["code"].as_str().unwrap_or_default().to_string(),
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ))
    }
}

fn run_jsonl() -> Outcome {
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    let mut n = 0;
    let out = scenario(&mut |who, method, params| {
        if let Who::Alice = who {
            return as_person(kb.path(), method, params);
        }
        n += 1;
        let req = json!({"id": format!("r{n}"), "method": method, "params": params});
        s.send_raw(&req.to_string());
        let v = s.read();
        assert_eq!(v["id"], json!(format!("r{n}")));
        envelope_result(v)
    });
    s.finish();
    out
}

// ----- HTTP ----------------------------------------------------------------

fn run_http() -> Outcome {
    let kb = init_kb();
    let server = HttpServer::spawn(
        kb.path(),
        &[],
        &["--token", "agent=tok1", "--token", "alice=tok2"],
    );
    let mut n = 0;
    let out = scenario(&mut |who, method, params| {
        n += 1;
        let token = match who {
            Who::Agent => "tok1",
            Who::Alice => "tok2",
        };
        let req = json!({"id": n, "method": method, "params": params});
        let r = server.rpc(Some(token), req.to_string().as_bytes());
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(v["id"], json!(n));
        envelope_result(v)
    });
    server.terminate();
    out
}

// ----- MCP (stdio) ---------------------------------------------------------

struct Mcp {
    server: Server,
    next_id: u64,
}

impl Mcp {
    fn start(kb: &Path) -> Mcp {
        let mut cmd = vouch(kb);
        cmd.env("VOUCH_AGENT", "agent").arg("serve");
        let mut m = Mcp {
            server: Server::spawn(cmd),
            next_id: 0,
        };
        let init = m
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "vouch-tests", "version": "0"}}),
            )
            .expect("initialize");
        assert_eq!(init["protocolVersion"], json!("2025-06-18"));
        assert_eq!(init["serverInfo"]["name"], json!("vouch"));
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        assert!(
            init["instructions"]
                .as_str()
                .is_some_and(|s| s.contains("review-gated")),
            "{init}"
        );
        m.server.send_raw(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        m
    }

    /// A JSON-RPC request; Err is the JSON-RPC error object.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.server.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        loop {
            let v = self.server.read();
            if v["id"] != json!(id) {
                // A notification or a server request: not ours.
                continue;
            }
            assert_eq!(v["jsonrpc"], json!("2.0"));
            return match v.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(v["result"].clone()),
            };
        }
    }

    /// tools/call by canonical method name; a tool error is a WireErr.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, WireErr> {
        let tool = method.replace('.', "_");
        let r = self
            .request("tools/call", json!({"name": tool, "arguments": params}))
            .unwrap_or_else(|e| panic!("protocol error from {tool}: {e}"));
        let text = r["content"][0]["text"]
            .as_str()
            .expect("text content")
            .to_string();
        if r["isError"] == json!(true) {
            let (code, message) = text.split_once(": ").expect("code: message");
            return Err((code.to_string(), message.to_string()));
        }
        let v: Value = serde_json::from_str(&text).expect("text content is JSON");
        if v.is_object() {
            assert_eq!(r["structuredContent"], v, "structured = text");
        }
        Ok(v)
    }
}

fn run_mcp() -> Outcome {
    let kb = init_kb();
    let mut m = Mcp::start(kb.path());
    let out = scenario(&mut |who, method, params| match who {
        Who::Alice => as_person(kb.path(), method, params),
        Who::Agent => m.call(method, params),
    });
    m.server.finish();
    out
}

// ----- the scenario on every transport -------------------------------------

#[test]
fn same_scenario_same_results_on_every_transport() {
    let jsonl = run_jsonl();
    let http = run_http();
    let mcp = run_mcp();
    assert_eq!(jsonl.self_approve_error, "invalid_request");
    assert_eq!(
        jsonl.events,
        vec![
            ("source.register".to_string(), "agent".to_string()),
            ("proposal.create".to_string(), "agent".to_string()),
            ("proposal.approve".to_string(), "alice".to_string()),
        ]
    );
    assert_eq!(jsonl, http, "JSONL vs HTTP");
    assert_eq!(jsonl, mcp, "JSONL vs MCP");
}

// ----- malformed requests: JSONL and HTTP ----------------------------------

/// Bad requests and the answers they must get; then the server still works.
fn check_bad_requests(send: &mut dyn FnMut(&[u8]) -> Value) {
    let code = |v: &Value| v["error"]["code"].as_str().unwrap_or_default().to_string();

    let v = send(br#"{"id": 1, "method": "kb.status""#);
    assert_eq!(
        (v["ok"].clone(), v["id"].clone()),
        (json!(false), Value::Null)
    );
    assert_eq!(code(&v), "invalid_request", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );

    let v = send(b"[1, 2, 3]");
    assert_eq!(v["id"], Value::Null);
    assert_eq!(code(&v), "invalid_request", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("JSON object")
    );

    let v = send(br#"{"id": "u", "method": "kb.no_such_method", "params": {}}"#);
    assert_eq!(v["id"], json!("u"));
    assert_eq!(code(&v), "method_not_found", "{v}");

    let v = send(br#"{"id": "m", "method": "kb.read_claim", "params": {}}"#);
    assert_eq!(v["id"], json!("m"));
    assert_eq!(code(&v), "missing_param", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("id"));

    let v = send(br#"{"id": "w", "method": "kb.search", "params": {"query": 5}}"#);
    assert_eq!(v["id"], json!("w"));
    assert_eq!(code(&v), "invalid_request", "{v}");

    let v = send(br#"{"id": "s", "method": "kb.status"}"#);
    assert_eq!(v["ok"], json!(true), "still serving: {v}");
    assert!(v["result"]["counts"].is_object());
}

#[test]
fn jsonl_bad_requests() {
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    check_bad_requests(&mut |line| {
        s.send_raw(std::str::from_utf8(line).unwrap());
        s.read()
    });
    s.finish();
}

#[test]
fn http_bad_requests_and_auth() {
    let kb = init_kb();
    let server = HttpServer::spawn(
        kb.path(),
        &[],
        &["--token", "agent=tok1", "--token", "alice=tok2"],
    );
    check_bad_requests(&mut |body| {
        let r = server.rpc(Some("tok1"), body);
        assert_eq!(r.status, 200);
        r.json()
    });

    // No token, a wrong token, a non-bearer scheme: 401 with a JSON body.
    let status = br#"{"id": 1, "method": "kb.status"}"#;
    for token in [None, Some("tok3"), Some("tok1x"), Some("")] {
        let r = server.rpc(token, status);
        assert_eq!(r.status, 401, "token {token:?}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert_eq!(r.json()["ok"], json!(false));
    }
    let r = http(
        server.port,
        "POST",
        "/rpc",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Basic tok1"),
        ],
        status,
    );
    assert_eq!(r.status, 401);
    for path in ["/capabilities", "/mcp"] {
        assert_eq!(
            http(server.port, "GET", path, &[], b"").status,
            401,
            "{path}"
        );
    }

    // /health needs no token; /capabilities with one lists every transport.
    let r = http(server.port, "GET", "/health", &[], b"");
    assert_eq!((r.status, r.json()), (200, json!({"ok": true})));
    let r = http(
        server.port,
        "GET",
        "/capabilities",
        &[("Authorization", "Bearer tok2")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["transports"], json!(["mcp", "jsonl", "http"]));
    assert_eq!(r.json()["review_gated"], json!(true));

    // An authenticated actor cannot approve as someone else.
    let r = server.rpc(
        Some("tok1"),
        br#"{"id": 9, "method": "kb.approve", "params": {"proposal_id": "p-x", "approver": "alice"}}"#,
    );
    let v = r.json();
    assert_eq!(v["ok"], json!(false), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot name someone else"),
        "{v}"
    );

    // Wrong content type, oversized body.
    let r = http(
        server.port,
        "POST",
        "/rpc",
        &[
            ("Content-Type", "text/plain"),
            ("Authorization", "Bearer tok1"),
        ],
        status,
    );
    assert_eq!(r.status, 415);
    let big = vec![b' '; 1024 * 1024 + 10];
    let r = server.rpc(Some("tok1"), &big);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["ok"], json!(false));

    server.terminate();
}

#[test]
fn http_refuses_public_bind_without_token() {
    let kb = init_kb();
    let out = vouch(kb.path())
        .args(["serve", "--transport", "http", "--bind", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("run vouch serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("non-loopback") && err.contains("--token"),
        "{err}"
    );
}

#[test]
fn http_without_tokens_serves_loopback_as_the_configured_agent() {
    let kb = init_kb();
    let server = HttpServer::spawn(kb.path(), &[], &["--agent", "bob"]);
    let r = server.rpc(
        None,
        br#"{"id": 1, "method": "kb.register_source", "params": {"content": "x\n", "locator": "t"}}"#,
    );
    assert_eq!(r.json()["ok"], json!(true), "{}", r.json());
    let r = server.rpc(None, br#"{"id": 2, "method": "kb.audit"}"#);
    assert_eq!(r.json()["result"][0]["actor"], json!("bob"));
    // A request addressed to another host name is refused (DNS rebinding).
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.write_all(
        b"GET /capabilities HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 403"), "{raw}");
    server.terminate();
}

// ----- MCP specifics ---------------------------------------------------------

#[test]
fn mcp_tools_and_errors() {
    let kb = init_kb();
    let mut m = Mcp::start(kb.path());

    let list = m.request("tools/list", json!({})).expect("tools/list");
    let tools = list["tools"].as_array().expect("tools");
    let methods = common::command()
        .args(["methods", "--json"])
        .output()
        .expect("vouch methods");
    let methods: Value = serde_json::from_slice(&methods.stdout).expect("methods json");
    let mut registry: Vec<String> = methods
        .as_array()
        .expect("method list")
        .iter()
        .map(|m| m["name"].as_str().unwrap().replace('.', "_"))
        .collect();
    let mut listed: Vec<String> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    registry.sort();
    listed.sort();
    assert_eq!(listed, registry, "one tool per registry method");
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert!(name.starts_with("kb_") && !name.contains('.'), "{name}");
        assert_eq!(t["inputSchema"]["type"], json!("object"), "{name}");
        assert!(t["inputSchema"].get("$schema").is_none(), "{name}");
    }
    let propose = tools
        .iter()
        .find(|t| t["name"] == json!("kb_propose_claim"))
        .expect("kb_propose_claim");
    assert!(
        propose["description"]
            .as_str()
            .unwrap()
            .contains("Review-gated"),
        "{propose}"
    );
    assert!(
        propose["inputSchema"]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("text"))
    );

    // A failing method is a tool result with isError, not a protocol error.
    let r = m
        .request(
            "tools/call",
            json!({"name": "kb_read_claim", "arguments": {}}),
        )
        .expect("a tool error is still a result");
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("missing_param: "),
        "{r}"
    );
    let r = m
        .request(
            "tools/call",
            json!({"name": "kb_search", "arguments": {"query": 5}}),
        )
        .expect("a tool error is still a result");
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("invalid_request: ")
    );

    // An unknown tool is a protocol error.
    let e = m
        .request(
            "tools/call",
            json!({"name": "kb_no_such_tool", "arguments": {}}),
        )
        .expect_err("unknown tool");
    assert_eq!(e["code"], json!(-32602), "{e}");

    // And the server still answers.
    let status = m.call("kb.status", json!({})).expect("status");
    assert!(status["counts"].is_object());
    let caps = m.call("kb.capabilities", json!({})).expect("capabilities");
    assert_eq!(caps["transports"], json!(["mcp", "jsonl", "http"]));
    m.server.finish();
}

/// Parse a streamable-HTTP answer (JSON or SSE) for the message with `id`.
fn mcp_http_message(r: &HttpResponse, id: u64) -> Value {
    let body = String::from_utf8_lossy(&r.body);
    if r.header("content-type")
        .is_some_and(|c| c.starts_with("application/json"))
    {
        return serde_json::from_str(&body).expect("JSON body");
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == json!(id))
        .unwrap_or_else(|| panic!("no message {id} in {body}"))
}

#[test]
fn mcp_over_http_uses_the_token_subject() {
    let kb = init_kb();
    let server = HttpServer::spawn(kb.path(), &[], &["--token", "carol=tok9"]);
    let post = |session: Option<&str>, body: Value| {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", "Bearer tok9"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ];
        if let Some(s) = session {
            headers.push(("Mcp-Session-Id", s));
        }
        http(
            server.port,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        )
    };
    let r = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(r.status, 200);
    let init = mcp_http_message(&r, 1);
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("vouch"),
        "{init}"
    );
    let session = r.header("mcp-session-id").map(str::to_string);
    let r = post(
        session.as_deref(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(r.status < 300, "{}", r.status);
    let r = post(
        session.as_deref(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "kb_register_source",
                          "arguments": {"content": "hello\n", "locator": "t"}}}),
    );
    assert_eq!(r.status, 200);
    let v = mcp_http_message(&r, 2);
    assert_eq!(v["result"]["isError"], json!(false), "{v}");
    let r = post(
        session.as_deref(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "kb_audit", "arguments": {}}}),
    );
    let v = mcp_http_message(&r, 3);
    let audit: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(audit[0]["actor"], json!("carol"), "{audit}");
    server.terminate();
}

/// Approve a proposal from the CLI, as a person beside the running server.
fn approve_as_alice(kb: &Path, proposed: &Value) {
    let out = vouch(kb)
        .env("VOUCH_AGENT", "alice")
        .args(["approve", proposed["proposal_id"].as_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Poll `ok` every 100 ms; fail naming `what` after 10 s.
fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "{what} never seen");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ids of a kb.search result, sorted.
fn hit_ids(v: Value) -> Vec<String> {
    let mut ids: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// A running server sees files edited by hand (an editor, a git pull) without
/// a restart or a rebuild: a background scan refreshes its index.
#[test]
fn a_running_server_sees_hand_edits() {
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    let mut n = 0;
    let mut call = |s: &mut Server, method: &str, params: Value| -> Value {
        n += 1;
        s.send_raw(&json!({"id": n, "method": method, "params": params}).to_string());
        envelope_result(s.read()).expect("call succeeds")
    };
    let src = call(
        &mut s,
        "kb.register_source",
        json!({"content": "the ops handbook", "locator": "handbook"}),
    )["id"]
        .clone();
    let proposed = call(
        &mut s,
        "kb.propose_claim",
        json!({"text": "Backups run at midnight", "evidence": [src]}),
    );
    approve_as_alice(kb.path(), &proposed);
    let claim = proposed["claim_id"].as_str().unwrap().to_string();
    // Another process approved it: the server finds it within a few scans.
    eventually("the approval", || {
        hit_ids(call(&mut s, "kb.search", json!({"query": "midnight"}))) == [claim.clone()]
    });
    let file = kb.path().join(format!(".vouch/claims/{claim}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("run at midnight", "run at noon");
    std::fs::write(&file, text).unwrap();
    eventually("the hand edit", || {
        hit_ids(call(&mut s, "kb.search", json!({"query": "noon"}))) == [claim.clone()]
            && hit_ids(call(&mut s, "kb.search", json!({"query": "midnight"}))).is_empty()
    });
    s.finish();
}

/// Concurrent HTTP searches run on read connections beside the main one; a
/// rebuild in the middle (which replaces state.db) must not leave any of
/// them reading the old file: every answer is the full, right one.
#[test]
fn concurrent_http_searches_survive_a_rebuild() {
    let kb = init_kb();
    let server = HttpServer::spawn(kb.path(), &[], &[]);
    let call = |method: &str, params: Value| -> Value {
        let body = json!({"id": 1, "method": method, "params": params}).to_string();
        let v = server.rpc(None, body.as_bytes()).json();
        assert_eq!(v["ok"], true, "{v}");
        v["result"].clone()
    };
    let src = call(
        "kb.register_source",
        json!({"content": "the runbook", "locator": "runbook"}),
    )["id"]
        .clone();
    let mut expected = Vec::new();
    for i in 0..5 {
        let p = call(
            "kb.propose_claim",
            json!({"text": format!("Failover drill number {i} passed"), "evidence": [src]}),
        );
        approve_as_alice(kb.path(), &p);
        expected.push(p["claim_id"].as_str().unwrap().to_string());
    }
    expected.sort();
    let drills = || {
        hit_ids(call(
            "kb.search",
            json!({"query": "failover drill", "kinds": ["claim"]}),
        ))
    };
    // Six clients searching at once, each `rounds` times, beside `also`.
    let hammer = |rounds: usize, expected: &[String], also: &(dyn Fn() + Sync)| {
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..rounds {
                        assert_eq!(drills(), expected, "a reader served a wrong index");
                    }
                });
            }
            s.spawn(also);
        });
    };
    // Wait until the server has seen the CLI's approvals.
    eventually("the approvals", || drills() == expected);
    hammer(30, &expected, &|| {
        for _ in 0..3 {
            call("kb.index_rebuild", json!({}));
        }
    });
    // A claim approved after the rebuild lands in the new file; a read
    // connection still open on the old one would never see it.
    let p = call(
        "kb.propose_claim",
        json!({"text": "Failover drill number 5 passed", "evidence": [src]}),
    );
    approve_as_alice(kb.path(), &p);
    expected.push(p["claim_id"].as_str().unwrap().to_string());
    expected.sort();
    eventually("the new approval", || drills() == expected);
    hammer(20, &expected, &|| {});
}

/// Issue 9, item 1: an agent that proposed a claim names a person as
/// `approver`. On every agent transport — JSONL and MCP on stdio, HTTP
/// without tokens — the call is refused, nothing becomes durable and the
/// log records no approval.
#[test]
fn an_agent_cannot_approve_by_naming_someone_else_on_any_transport() {
    let propose = json!({"text": "The deploy key rotates monthly.", "evidence": [{"source_id": "SRC", "quote": "rotates monthly"}]});
    let source = json!({"content": "The deploy key rotates monthly.\n", "locator": "notes"});
    let check = |kb: &Path, answer: Result<Value, WireErr>| {
        let (code, message) = answer.expect_err("impersonation must be refused");
        assert_eq!(code, "invalid_request", "{message}");
        assert!(message.contains("cannot name someone else"), "{message}");
        assert!(
            std::fs::read_dir(kb.join(".vouch/claims"))
                .unwrap()
                .next()
                .is_none(),
            "a claim became durable"
        );
        let log = std::fs::read_to_string(kb.join(".vouch/audit.log.jsonl")).unwrap();
        assert!(!log.contains("proposal.approve"), "{log}");
    };
    let with_source = |src: &Value| {
        let mut p = propose.clone();
        p["evidence"][0]["source_id"] = src["id"].clone();
        p
    };
    let approve =
        |proposed: &Value| json!({"proposal_id": proposed["proposal_id"], "approver": "alice"});

    // JSONL on stdio.
    let kb = init_kb();
    let mut s = jsonl_server(kb.path());
    let mut call = |method: &str, params: Value| {
        s.send_raw(&json!({"id": 1, "method": method, "params": params}).to_string());
        envelope_result(s.read())
    };
    let src = call("kb.register_source", source.clone()).unwrap();
    let proposed = call("kb.propose_claim", with_source(&src)).unwrap();
    check(kb.path(), call("kb.approve", approve(&proposed)));
    s.finish();

    // MCP on stdio.
    let kb = init_kb();
    let mut m = Mcp::start(kb.path());
    let src = m.call("kb.register_source", source.clone()).unwrap();
    let proposed = m.call("kb.propose_claim", with_source(&src)).unwrap();
    check(kb.path(), m.call("kb.approve", approve(&proposed)));
    m.server.finish();

    // HTTP without tokens (loopback only, acting as the configured agent).
    let kb = init_kb();
    let server = HttpServer::spawn(kb.path(), &[], &["--agent", "claude"]);
    let call = |method: &str, params: Value| {
        let req = json!({"id": 1, "method": method, "params": params});
        envelope_result(server.rpc(None, req.to_string().as_bytes()).json())
    };
    let src = call("kb.register_source", source.clone()).unwrap();
    let proposed = call("kb.propose_claim", with_source(&src)).unwrap();
    check(kb.path(), call("kb.approve", approve(&proposed)));
    // Naming itself is allowed, and is then plain self-approval: refused.
    let (_, message) = call(
        "kb.approve",
        json!({"proposal_id": proposed["proposal_id"], "approver": "claude"}),
    )
    .unwrap_err();
    assert!(message.contains("cannot also approve"), "{message}");
    server.terminate();
}
