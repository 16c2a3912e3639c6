//! MCP: the stdio client the other modules share, tools and errors on
//! stdio, and MCP over HTTP acting as the token's subject.

use super::WireErr;
use crate::common::http::{mcp_message, mcp_post};
use crate::common::server::{http_server, init_kb, vouch};
use crate::common::stdio::StdioServer;
use serde_json::{Value, json};
use std::path::Path;

/// An MCP client over `vouch serve` on stdio, as "agent", initialized.
pub struct Mcp {
    pub server: StdioServer,
    next_id: u64,
}

impl Mcp {
    pub fn start(kb: &Path) -> Mcp {
        let mut cmd = vouch(kb);
        cmd.env("VOUCH_AGENT", "agent").arg("serve");
        Mcp::spawn(cmd)
    }

    /// An MCP client over the server `cmd` starts (`vouch ... serve`).
    pub fn spawn(cmd: std::process::Command) -> Mcp {
        let mut m = Mcp {
            server: StdioServer::spawn(cmd),
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
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
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
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, WireErr> {
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

#[test]
fn mcp_tools_and_errors() {
    let kb = init_kb();
    let mut m = Mcp::start(kb.path());

    let list = m.request("tools/list", json!({})).expect("tools/list");
    let tools = list["tools"].as_array().expect("tools");
    let methods = crate::common::command()
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
    // (`call` fails the test on a protocol error.)
    let (code, _) = m.call("kb.read_claim", json!({})).unwrap_err();
    assert_eq!(code, "missing_param");
    let (code, _) = m.call("kb.search", json!({"query": 5})).unwrap_err();
    assert_eq!(code, "invalid_request");

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

#[test]
fn mcp_over_http_uses_the_token_subject() {
    let kb = init_kb();
    let server = http_server(kb.path(), &[], &["--token", "carol=tok9"]);
    let post = |session: Option<&str>, body: Value| mcp_post(server.port, "tok9", session, &body);
    let r = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(r.status, 200);
    let init = mcp_message(&r, 1);
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
    let v = mcp_message(&r, 2);
    assert_eq!(v["result"]["isError"], json!(false), "{v}");
    let r = post(
        session.as_deref(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "kb_audit", "arguments": {}}}),
    );
    let v = mcp_message(&r, 3);
    let audit: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(audit[0]["actor"], json!("carol"), "{audit}");
    server.terminate();
}
