//! Attacks on `vouch serve --transport http` and on KB discovery, through
//! the real binary: half-sent requests, connection floods, MCP session
//! floods and session theft, token files others can read, and a `.vouch/`
//! planted above the working directory by another user.

use crate::common::http::{
    HttpResponse, head_end, http, mcp_message, mcp_post, parse_response, request_bytes,
};
use crate::common::server::{http_server, init_kb, vouch};
use serde_json::{Value, json};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod connections;
mod local;
mod per_actor;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Read one response with a Content-Length body from a keep-alive
/// connection, leaving the connection open.
fn read_keep_alive_response(s: &mut TcpStream) -> HttpResponse {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = head_end(&raw) {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("a Content-Length on a keep-alive response");
            if raw.len() >= end + len {
                return parse_response(&raw);
            }
        }
        let n = s.read(&mut buf).expect("read response");
        assert!(n > 0, "connection closed mid-response");
        raw.extend_from_slice(&buf[..n]);
    }
}

/// The message of a JSON error envelope (empty when there is none).
fn error_message(r: &HttpResponse) -> String {
    r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Read until the server closes `s` (EOF or reset); fail if it is still
/// open at `deadline`. Returns whatever the server sent first.
fn wait_closed(s: &mut TcpStream, deadline: Instant, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "{what}: the server kept the connection open"
        );
        s.set_read_timeout(Some(left)).expect("read timeout");
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if is_timeout(&e) => {
                panic!("{what}: the server kept the connection open")
            }
            Err(_) => return got, // reset: closed too
        }
    }
}

/// Connect to the server on `port` from the loopback address
/// 127.0.0.`host` (all of 127/8 is this machine on Linux): to the server,
/// another client's address.
fn connect_from(host: u8, port: u16) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime");
    let stream = rt
        .block_on(async {
            let s = tokio::net::TcpSocket::new_v4()?;
            s.bind(([127, 0, 0, host], 0).into())?;
            s.connect(([127, 0, 0, 1], port).into()).await
        })
        .unwrap_or_else(|e| panic!("connect from 127.0.0.{host}: {e}"));
    let stream = stream.into_std().expect("a std stream");
    stream.set_nonblocking(false).expect("blocking");
    stream
}

/// Poll `conns` until `want` of them have been answered (each answer read
/// whole: the server closes those connections) or `within` passes: the
/// answers, and the connections still waiting.
fn answered(
    conns: Vec<TcpStream>,
    want: usize,
    within: Duration,
) -> (Vec<HttpResponse>, Vec<TcpStream>) {
    let deadline = Instant::now() + within;
    let mut waiting: Vec<(TcpStream, Vec<u8>)> =
        conns.into_iter().map(|s| (s, Vec::new())).collect();
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let mut still = Vec::new();
        for (mut s, mut raw) in waiting {
            s.set_read_timeout(Some(Duration::from_millis(20)))
                .expect("read timeout");
            let mut buf = [0u8; 4096];
            let closed = loop {
                match s.read(&mut buf) {
                    Ok(0) => break true,
                    Ok(n) => raw.extend_from_slice(&buf[..n]),
                    Err(e) if is_timeout(&e) => break false,
                    Err(_) => break true,
                }
            };
            if closed && !raw.is_empty() {
                got.push(parse_response(&raw));
            } else {
                assert!(!closed, "a connection was closed without an answer");
                still.push((s, raw));
            }
        }
        waiting = still;
    }
    (got, waiting.into_iter().map(|(s, _)| s).collect())
}

/// `initialize` as the holder of `token`: the new session's id.
pub(crate) fn mcp_initialize(port: u16, token: &str) -> String {
    let r = mcp_post(
        port,
        token,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(r.status, 200, "initialize: {}", r.text());
    let init = mcp_message(&r, 1);
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("vouch"),
        "{init}"
    );
    r.header("mcp-session-id")
        .expect("a stateful server names the session")
        .to_string()
}

/// Finish the handshake on `session` (if `handshake`) and list the tools:
/// the HTTP status of the first refused step, or 200 with the tool count.
pub(crate) fn mcp_use(port: u16, token: &str, session: &str, handshake: bool) -> (u16, usize) {
    if handshake {
        let r = mcp_post(
            port,
            token,
            Some(session),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        if r.status >= 300 {
            return (r.status, 0);
        }
    }
    let r = mcp_post(
        port,
        token,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    if r.status != 200 {
        return (r.status, 0);
    }
    let v = mcp_message(&r, 2);
    let n = v["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list answered {v}"))
        .len();
    (200, n)
}
