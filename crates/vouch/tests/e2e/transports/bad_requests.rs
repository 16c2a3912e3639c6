//! Malformed requests on JSONL and HTTP, HTTP authentication, and the HTTP
//! server's bind and host checks.

use super::jsonl_server;
use crate::common::http::http;
use crate::common::server::{http_server, init_kb, vouch};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

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
    let server = http_server(
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
    let server = http_server(kb.path(), &[], &["--agent", "bob"]);
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
