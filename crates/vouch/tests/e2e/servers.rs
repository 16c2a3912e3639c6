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

/// Send `request` on `s` and read the answer to the end (it asks the
/// server to close), failing after `within`.
fn ask(mut s: TcpStream, request: &[u8], within: Duration) -> HttpResponse {
    s.set_read_timeout(Some(within)).expect("read timeout");
    s.write_all(request).expect("send");
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw) {
        panic!(
            "no answer within {within:?} ({e}): {:?}",
            String::from_utf8_lossy(&raw)
        );
    }
    parse_response(&raw)
}

// ----- header read timeout ---------------------------------------------------

/// Slowloris: a client that opens a connection and never finishes its
/// request head would hold a connection (and a file descriptor) forever.
#[test]
fn a_half_sent_request_is_dropped_after_the_header_timeout() {
    let kb = init_kb();
    let server = http_server(kb.path(), &[("VOUCH_HTTP_HEADER_TIMEOUT_MS", "300")], &[]);
    let start = Instant::now();
    // Half a request head: the blank line that ends it never comes.
    let mut half = server.connect();
    half.write_all(b"GET /capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("send half a request");
    // And a connection that sends nothing at all.
    let mut silent = server.connect();
    let deadline = start + Duration::from_secs(5);
    let got = wait_closed(&mut half, deadline, "half-sent request");
    assert!(
        !String::from_utf8_lossy(&got).contains(" 200 "),
        "a half-sent request was answered: {}",
        String::from_utf8_lossy(&got)
    );
    wait_closed(&mut silent, deadline, "silent connection");
    // It is the timeout that closed them, not an eager reject.
    assert!(
        start.elapsed() >= Duration::from_millis(250),
        "closed after {:?}, before the 300 ms header timeout",
        start.elapsed()
    );

    // The server still answers, and a complete request is not cut off.
    assert!(server.healthy(), "the server stopped answering");
    let r = http(server.port, "GET", "/capabilities", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["transports"].is_array(), "{}", r.text());
    server.terminate();
}

// ----- connection cap --------------------------------------------------------

/// A flood of connections must not exhaust the server's file descriptors:
/// beyond the cap, new connections wait until one closes; they are then
/// served. (Each from its own address: one address may hold only part of
/// the slots, see
/// `slow_heads_from_one_address_leave_the_server_to_the_others`. And the
/// open ones have each made a request, so they have a holder: one that
/// only waits, a head or a `/health` kept alive, is closed to make room,
/// see `slow_heads_from_many_addresses_leave_the_server_to_the_others`.)
#[test]
fn connections_beyond_the_cap_wait_and_are_served_when_one_closes() {
    let kb = init_kb();
    let server = http_server(
        kb.path(),
        &[
            ("VOUCH_HTTP_MAX_CONNECTIONS", "2"),
            ("VOUCH_HTTP_HEADER_TIMEOUT_MS", "60000"),
        ],
        &[],
    );
    let status = |close: bool| {
        request_bytes(
            server.port,
            "POST",
            "/rpc",
            &[("Content-Type", "application/json")],
            br#"{"id": 1, "method": "kb.status"}"#,
            close,
        )
    };
    // Two keep-alive connections, each answered once (so the server has
    // certainly accepted both, and counts each against its address), then
    // left idle.
    let mut idle: Vec<TcpStream> = [1, 2]
        .into_iter()
        .map(|host| {
            let mut s = connect_from(host, server.port);
            s.write_all(&status(false)).expect("send");
            let r = read_keep_alive_response(&mut s);
            assert_eq!(r.status, 200, "{}", r.text());
            s
        })
        .collect();

    // A third: the kernel completes the handshake, the server does not serve it.
    let mut third = connect_from(3, server.port);
    third.write_all(&status(true)).expect("send");
    third
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("read timeout");
    let mut buf = [0u8; 1024];
    match third.read(&mut buf) {
        Err(e) if is_timeout(&e) => {}
        Ok(n) => panic!(
            "a connection beyond the cap was served at once: {:?}",
            String::from_utf8_lossy(&buf[..n])
        ),
        Err(e) => panic!("a connection beyond the cap was dropped: {e}"),
    }

    // One idle connection closes: the waiting one is served.
    drop(idle.remove(0));
    third.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
    let mut raw = Vec::new();
    third
        .read_to_end(&mut raw)
        .expect("the waiting connection is answered");
    let r = parse_response(&raw);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], json!(true));

    // The other idle connection is still served too.
    let s = &mut idle[0];
    s.write_all(&status(false)).expect("send");
    assert_eq!(read_keep_alive_response(s).status, 200);
    drop(idle);
    server.terminate();
}

// ----- MCP sessions ----------------------------------------------------------

/// `initialize` as the holder of `token`: the new session's id.
fn mcp_initialize(port: u16, token: &str) -> String {
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
fn mcp_use(port: u16, token: &str, session: &str, handshake: bool) -> (u16, usize) {
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

/// rmcp keeps every session an `initialize` creates; without a cap a client
/// initializing in a loop grows the server without bound. And a session id
/// is not a credential: another token holder who learns it gets nothing.
#[test]
fn mcp_sessions_are_capped_per_actor() {
    let kb = init_kb();
    let server = http_server(
        kb.path(),
        &[("VOUCH_MCP_MAX_SESSIONS", "2")],
        &["--token", "anna=tok-anna", "--token", "bert=tok-bert"],
    );
    let port = server.port;
    let a = "tok-anna";
    let b = "tok-bert";

    // Three sessions for anna under a cap of two: the oldest is closed.
    let s1 = mcp_initialize(port, a);
    let s2 = mcp_initialize(port, a);
    let s3 = mcp_initialize(port, a);
    assert!(s1 != s2 && s2 != s3 && s1 != s3, "session ids are distinct");
    assert_eq!(
        mcp_use(port, a, &s1, true).0,
        404,
        "the oldest session outlived the cap"
    );
    assert_eq!(mcp_use(port, a, &s1, false).0, 404);
    let (status, tools) = mcp_use(port, a, &s3, true);
    assert_eq!(status, 200, "the newest session was closed");
    assert!(tools > 0);
    assert_eq!(mcp_use(port, a, &s2, true).0, 200, "the second session");

    // Least recently used, not oldest: touch s2, open s4, and s3 goes.
    assert_eq!(mcp_use(port, a, &s2, false).0, 200);
    let s4 = mcp_initialize(port, a);
    assert_eq!(
        mcp_use(port, a, &s3, false).0,
        404,
        "s3 was least recently used"
    );
    assert_eq!(
        mcp_use(port, a, &s2, false).0,
        200,
        "s2 was used most recently"
    );
    assert_eq!(mcp_use(port, a, &s4, true).0, 200);

    // Another actor's session id gets bert nothing: 404, as if unknown...
    assert_eq!(
        mcp_use(port, b, &s2, false).0,
        404,
        "bert used anna's session"
    );
    assert_eq!(
        mcp_use(port, b, &s4, true).0,
        404,
        "bert sent a notification on anna's session"
    );
    // ...cannot close it...
    let auth = format!("Bearer {b}");
    let r = http(
        port,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Mcp-Session-Id", s2.as_str()),
        ],
        b"",
    );
    assert!(r.status != 500, "DELETE: {} {}", r.status, r.text());
    assert_eq!(
        mcp_use(port, a, &s2, false).0,
        200,
        "bert closed anna's session"
    );
    // ...and bert's own sessions count against bert's cap, not anna's.
    let t1 = mcp_initialize(port, b);
    let t2 = mcp_initialize(port, b);
    let t3 = mcp_initialize(port, b);
    assert_eq!(mcp_use(port, b, &t1, true).0, 404);
    assert_eq!(mcp_use(port, b, &t2, true).0, 200);
    assert_eq!(mcp_use(port, b, &t3, true).0, 200);
    assert_eq!(
        mcp_use(port, a, &t3, false).0,
        404,
        "anna used bert's session"
    );
    assert_eq!(
        mcp_use(port, a, &s2, false).0,
        200,
        "bert evicted anna's session"
    );
    assert_eq!(
        mcp_use(port, a, &s4, false).0,
        200,
        "bert evicted anna's session"
    );
    server.terminate();
}

// ----- slow bodies and connections per actor ---------------------------------

/// Open a connection and send the head of a `POST path` whose body is
/// announced as `len` bytes, and the body's first byte.
fn slow_post(port: u16, path: &str, token: Option<&str>, len: usize) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {len}\r\n"
    );
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    head.push_str("\r\n{");
    s.write_all(head.as_bytes()).expect("send the head");
    s
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

/// Issue 39.8: one token holder opened hundreds of `POST /rpc` with
/// `Content-Length: 100000`, sending a byte now and then, and every slot
/// was theirs: `/health`, the review pages and every other agent got no
/// answer. Now an actor holds at most its share of the connections; past
/// it, a request is answered 429 (naming the limit) and closed at once,
/// and everyone else is still served.
#[test]
fn one_token_holder_cannot_take_every_connection() {
    let kb = init_kb();
    let server = http_server(
        kb.path(),
        &[
            // Enough that however many of the hog's twelve connections
            // (all from 127.0.0.1) the server has accepted and not yet
            // read a head of, they are within that address's share.
            ("VOUCH_HTTP_MAX_CONNECTIONS", "32"),
            ("VOUCH_HTTP_MAX_CONNECTIONS_PER_ACTOR", "3"),
            // Long enough that no slow body is cut off during the test:
            // it is the cap per actor that keeps the server answering.
            ("VOUCH_HTTP_BODY_TIMEOUT_MS", "60000"),
        ],
        &["--token", "hog=tok-hog", "--token", "bob=tok-bob"],
    );
    let port = server.port;
    let slow: Vec<TcpStream> = (0..12)
        .map(|_| slow_post(port, "/rpc", Some("tok-hog"), 100_000))
        .collect();
    let (refused, held) = answered(slow, 9, TIMEOUT);
    assert_eq!(refused.len(), 9, "past the cap, answered at once");
    assert_eq!(held.len(), 3, "the cap's worth are still reading");
    for r in &refused {
        assert_eq!(r.status, 429, "{}", r.text());
        let message = error_message(r);
        assert!(
            message.contains("hog") && message.contains("VOUCH_HTTP_MAX_CONNECTIONS_PER_ACTOR"),
            "{message}"
        );
    }

    // Everyone else is answered while the hog holds its three.
    let r = server.rpc(Some("tok-bob"), br#"{"id": 1, "method": "kb.status"}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    assert!(server.healthy(), "/health starved");
    let r = http(port, "GET", "/", &[], b"");
    // Not signed in: the sign-in page.
    assert!(
        r.status == 401 && r.text().contains("Sign in"),
        "the review pages starved: {} {}",
        r.status,
        r.text()
    );
    // The hog itself, at its cap: refused, not left waiting.
    let r = server.rpc(Some("tok-hog"), br#"{"id": 1, "method": "kb.status"}"#);
    assert_eq!(r.status, 429, "{}", r.text());
    drop(held);
    server.terminate();
}

/// A body that trickles in (a byte every 100 ms: never idle long enough
/// for a per-read timeout) is cut off as a whole, on `/rpc` and `/mcp`
/// alike: 408 with a JSON error naming the deadline. MCP's long-lived
/// `GET /mcp` event stream has no body, so no deadline: it stays open.
#[test]
fn a_request_body_must_arrive_whole_within_its_deadline_on_every_route() {
    let kb = init_kb();
    let server = http_server(kb.path(), &[("VOUCH_HTTP_BODY_TIMEOUT_MS", "600")], &[]);
    let port = server.port;
    for path in ["/rpc", "/mcp"] {
        let start = Instant::now();
        let mut s = slow_post(port, path, None, 1000);
        let mut writer = s.try_clone().expect("clone");
        let trickle = std::thread::spawn(move || {
            for _ in 0..100 {
                std::thread::sleep(Duration::from_millis(100));
                if writer.write_all(b" ").is_err() {
                    return;
                }
            }
        });
        let mut raw = Vec::new();
        s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
        let _ = s.read_to_end(&mut raw);
        let took = start.elapsed();
        let r = parse_response(&raw);
        assert_eq!(r.status, 408, "{path}: {}", r.text());
        let message = error_message(&r);
        assert!(
            message.contains("VOUCH_HTTP_BODY_TIMEOUT_MS"),
            "{path}: {message}"
        );
        assert!(
            took >= Duration::from_millis(500) && took < Duration::from_secs(5),
            "{path}: answered after {took:?}, the deadline is 600 ms"
        );
        drop(s);
        trickle.join().expect("trickle");
    }

    // An event stream outlives the body deadline.
    let session = mcp_initialize(port, "none");
    assert_eq!(mcp_use(port, "none", &session, true).0, 200);
    let mut stream = server.connect();
    stream
        .write_all(&request_bytes(
            port,
            "GET",
            "/mcp",
            &[
                ("Accept", "text/event-stream"),
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Mcp-Session-Id", session.as_str()),
            ],
            b"",
            false,
        ))
        .expect("open the event stream");
    let until = Instant::now() + Duration::from_millis(1500);
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    while Instant::now() < until {
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("read timeout");
        match stream.read(&mut buf) {
            Ok(0) => panic!(
                "the event stream was closed: {}",
                String::from_utf8_lossy(&raw)
            ),
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if is_timeout(&e) => {}
            Err(e) => panic!("the event stream was reset: {e}"),
        }
    }
    let head = String::from_utf8_lossy(&raw).to_string();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("text/event-stream"),
        "{head}"
    );
    drop(stream);
    server.terminate();
}

/// Without tokens every request counts against its remote address: a
/// local process holding its share is answered 429 past it, `/health`
/// is still answered, and once the held bodies miss their deadline the
/// address is served again.
#[test]
fn without_tokens_one_address_holds_at_most_its_share() {
    let kb = init_kb();
    let server = http_server(
        kb.path(),
        &[
            ("VOUCH_HTTP_MAX_CONNECTIONS_PER_ACTOR", "2"),
            ("VOUCH_HTTP_BODY_TIMEOUT_MS", "1500"),
        ],
        &[],
    );
    let port = server.port;
    let slow: Vec<TcpStream> = (0..3)
        .map(|_| slow_post(port, "/rpc", None, 100_000))
        .collect();
    let (refused, held) = answered(slow, 1, Duration::from_secs(1));
    assert_eq!(refused.len(), 1, "the third is past the cap");
    assert_eq!(refused[0].status, 429, "{}", refused[0].text());
    let message = error_message(&refused[0]);
    assert!(
        message.contains("127.0.0.1") && message.contains("without a token"),
        "{message}"
    );
    assert!(server.healthy(), "/health is not counted");
    // The held two miss their deadline (408) and close...
    let (late, _) = answered(held, 2, TIMEOUT);
    assert_eq!(late.len(), 2);
    assert!(late.iter().all(|r| r.status == 408), "{}", late[0].text());
    // ...and the address is served again.
    let r = server.rpc(None, br#"{"id": 1, "method": "kb.status"}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    server.terminate();
}

/// Open `n` connections from 127.0.0.`host`, each sending part of a
/// request head (a slowloris that never finishes it); after `settle`, the
/// ones the server still holds open, and how many it closed.
fn slow_heads(host: u8, port: u16, n: usize, settle: Duration) -> (Vec<TcpStream>, usize) {
    let conns: Vec<TcpStream> = (0..n)
        .map(|_| {
            let mut s = connect_from(host, port);
            // Closed at once, the write may find the socket reset: that
            // counts as closed below.
            let _ = s.write_all(b"POST /rpc HTTP/1.1\r\nHost: x\r\nX-a: b\r\n");
            s
        })
        .collect();
    std::thread::sleep(settle);
    still_open(conns)
}

/// Round five of issue 39 (H2): with no token, 700 connections from one
/// address each sent part of a request head, added a header line every
/// second and reconnected as soon as they were closed; `/health` and a
/// token holder's `/rpc` both timed out. A head still being read has no
/// actor, and every slot was taken before any head was. Now a connection
/// counts against its address from the moment it is accepted: past the
/// cap it is answered 429 and closed at once, the heads hold only their
/// share, and other addresses — a token holder, `/health` — are answered
/// at once. However the cap is configured, one address never holds every
/// slot; a closed connection gives its place back.
#[test]
fn slow_heads_from_one_address_leave_the_server_to_the_others() {
    let kb = init_kb();
    let server = http_server(
        kb.path(),
        &[
            ("VOUCH_HTTP_MAX_CONNECTIONS", "8"),
            ("VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "3"),
            // No head is cut off by its deadline during the test: it is
            // the cap per address that keeps the server answering.
            ("VOUCH_HTTP_HEADER_TIMEOUT_MS", "60000"),
        ],
        &["--token", "bob=tok-bob"],
    );
    let port = server.port;
    let status = br#"{"id": 1, "method": "kb.status"}"#;
    let rpc_on = |close: bool| {
        request_bytes(
            port,
            "POST",
            "/rpc",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", "Bearer tok-bob"),
            ],
            status,
            close,
        )
    };
    let rpc = rpc_on(true);
    // Two connections from 127.0.0.1 that showed a token, kept open: their
    // actor holds them, not their address.
    let bobs: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = connect_from(1, port);
            s.write_all(&rpc_on(false)).expect("send");
            assert_eq!(read_keep_alive_response(&mut s).status, 200);
            s
        })
        .collect();
    let (held, closed) = slow_heads(1, port, 20, Duration::from_millis(500));
    assert_eq!(held.len(), 3, "one address holds its cap's worth");
    assert_eq!(closed, 17, "past the cap, closed at once");

    // Another address is answered at once: a token holder and /health.
    let quick = Duration::from_secs(10);
    let r = ask(connect_from(2, port), &rpc, quick);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    let health = request_bytes(port, "GET", "/health", &[], b"", true);
    assert_eq!(ask(connect_from(3, port), &health, quick).status, 200);

    // The address at its cap: answered 429 naming the limit, not left
    // waiting. (A connection that sends nothing reads it whole.)
    let mut s = connect_from(1, port);
    let got = wait_closed(&mut s, Instant::now() + quick, "past the address's cap");
    let r = parse_response(&got);
    assert_eq!(r.status, 429, "{}", r.text());
    let message = error_message(&r);
    assert!(
        message.contains("127.0.0.1") && message.contains("VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS"),
        "{message}"
    );

    // Closed heads give their places back.
    drop(held);
    drop(bobs);
    std::thread::sleep(Duration::from_millis(200));
    let r = ask(connect_from(1, port), &rpc, quick);
    assert_eq!(r.status, 200, "{}", r.text());
    server.terminate();

    // A cap above the server's own limit: one address still leaves a
    // quarter of the slots to the others.
    let server = http_server(
        kb.path(),
        &[
            ("VOUCH_HTTP_MAX_CONNECTIONS", "4"),
            ("VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "1000"),
            // Every slot may wait: the address's cap is what is tested.
            ("VOUCH_HTTP_MAX_WAITING_CONNECTIONS", "4"),
            ("VOUCH_HTTP_HEADER_TIMEOUT_MS", "60000"),
        ],
        &[],
    );
    let port = server.port;
    // A connection that only asked for `/health` (kept open, to trickle
    // its next head) still counts among its address's waiting ones.
    let mut healthy = connect_from(1, port);
    healthy
        .write_all(&request_bytes(port, "GET", "/health", &[], b"", false))
        .expect("send");
    assert_eq!(read_keep_alive_response(&mut healthy).status, 200);
    let (held, closed) = slow_heads(1, port, 10, Duration::from_millis(500));
    assert_eq!((held.len(), closed), (2, 8));
    let health = request_bytes(port, "GET", "/health", &[], b"", true);
    assert_eq!(ask(connect_from(2, port), &health, quick).status, 200);
    drop((held, healthy));
    server.terminate();
}

/// Round six of issue 39 (A3): 720 slow heads from twelve addresses
/// (127.0.0.2-13), sixty each — under the cap of each address — held every
/// slot together; `/health` got no answer in 15 s, a token holder's `/rpc`
/// took 21 s, and no 429 was sent: past the global limit a connection
/// waited silently in the backlog. Now the connections that wait for a
/// holder, from every address together, are at most
/// `VOUCH_HTTP_MAX_WAITING_CONNECTIONS` (half the slots unless set): a
/// newcomer closes the oldest of the address that has the most waiting
/// rather than waiting behind them, so `/health` and a token holder are
/// answered at once, and connections whose requests have a holder are
/// never closed to make room.
#[test]
fn slow_heads_from_many_addresses_leave_the_server_to_the_others() {
    let kb = init_kb();
    let server = http_server(
        kb.path(),
        &[
            ("VOUCH_HTTP_MAX_CONNECTIONS", "8"),
            ("VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "3"),
            ("VOUCH_HTTP_MAX_WAITING_CONNECTIONS", "3"),
            // No head is cut off by its deadline during the test.
            ("VOUCH_HTTP_HEADER_TIMEOUT_MS", "60000"),
        ],
        &["--token", "bob=tok-bob"],
    );
    let port = server.port;
    let rpc_on = |close: bool| {
        request_bytes(
            port,
            "POST",
            "/rpc",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", "Bearer tok-bob"),
            ],
            br#"{"id": 1, "method": "kb.status"}"#,
            close,
        )
    };
    // A token holder's connection kept open: it has a holder, and stays.
    let mut bob = connect_from(2, port);
    bob.write_all(&rpc_on(false)).expect("send");
    assert_eq!(read_keep_alive_response(&mut bob).status, 200);

    // Three slow heads from each of six addresses, under each one's cap:
    // eighteen, more than every slot.
    let settle = Duration::from_millis(300);
    let mut held = Vec::new();
    let mut closed = 0;
    for host in 10..16 {
        let (open, shut) = slow_heads(host, port, 3, settle);
        held.extend(open);
        closed += shut;
    }
    // Each already open may have been closed since: read them all again.
    std::thread::sleep(settle);
    let (mut held, shut) = still_open(held);
    closed += shut;
    assert_eq!(held.len(), 3, "the waiting line holds its cap");
    assert_eq!(closed, 15, "the rest were closed to make room");

    // A token holder and /health from other addresses are answered at
    // once, and so is bob on his open connection.
    let quick = Duration::from_secs(5);
    let r = ask(connect_from(3, port), &rpc_on(true), quick);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    let health = request_bytes(port, "GET", "/health", &[], b"", true);
    assert_eq!(ask(connect_from(4, port), &health, quick).status, 200);
    bob.set_read_timeout(Some(quick)).expect("read timeout");
    bob.write_all(&rpc_on(false)).expect("send");
    assert_eq!(read_keep_alive_response(&mut bob).status, 200);

    // The heads keep coming, from address after address: still answered.
    for host in 20..30 {
        let (open, _) = slow_heads(host, port, 3, Duration::from_millis(50));
        held.extend(open);
        assert_eq!(ask(connect_from(4, port), &health, quick).status, 200);
    }
    let (held, _) = still_open(held);
    assert!(held.len() <= 3, "{} heads wait", held.len());
    drop(held);
    std::thread::sleep(settle);

    // The one closed to make room is told why: the oldest of the address
    // with the most waiting.
    let (mut first, _) = slow_heads(40, port, 1, Duration::ZERO);
    let (others, _) = slow_heads(40, port, 1, Duration::ZERO);
    let (more, _) = slow_heads(41, port, 1, settle);
    assert_eq!(first.len() + others.len() + more.len(), 3);
    let (newest, _) = slow_heads(42, port, 1, settle);
    assert_eq!(newest.len(), 1, "the newcomer is served");
    let got = wait_closed(&mut first[0], Instant::now() + quick, "the oldest head");
    let r = parse_response(&got);
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(
        error_message(&r).contains("VOUCH_HTTP_MAX_WAITING_CONNECTIONS"),
        "{}",
        r.text()
    );
    assert_eq!(
        still_open(others).0.len(),
        1,
        "the second of 127.0.0.40 stays"
    );
    // Nothing left open for shutdown to wait on.
    drop((bob, more, newest));
    server.terminate();
}

/// Of `conns`, the ones the server still holds open, and how many it closed.
fn still_open(conns: Vec<TcpStream>) -> (Vec<TcpStream>, usize) {
    let mut open = Vec::new();
    let mut closed = 0;
    for mut s in conns {
        s.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 1024];
        match s.read(&mut buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                s.set_nonblocking(false).expect("blocking");
                open.push(s);
            }
            _ => closed += 1,
        }
    }
    (open, closed)
}

// ----- token files -----------------------------------------------------------

/// Run `cmd` to completion (killing it after `limit`): exit code and stderr.
fn run_briefly(mut cmd: Command, limit: Duration) -> (Option<i32>, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vouch");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, reader.join().expect("stderr reader"))
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write token file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A token file others can read leaks every token in it: refused, with a
/// message that says how to fix it and never repeats a token.
#[test]
fn token_file_is_read_and_must_be_private() {
    let kb = init_kb();
    let secret = "tok-5e4f7a2b-very-secret";
    let other = "tok-0c9d1e88-also-secret";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.txt");
    let text = format!("# who may call this server\n\ncarol = {secret}\n  dave={other}\n");
    let serve = |file: &Path| {
        let mut c = vouch(kb.path());
        c.args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"])
            .arg("--token-file")
            .arg(file);
        c
    };
    let no_secret = |stderr: &str| {
        for s in [secret, other, "5e4f7a2b", "0c9d1e88"] {
            assert!(!stderr.contains(s), "a token leaked: {stderr}");
        }
    };

    // Readable (or writable) by group or others: refused before serving.
    for mode in [0o644, 0o640, 0o604, 0o620, 0o602] {
        write_mode(&file, &text, mode);
        let (code, stderr) = run_briefly(serve(&file), TIMEOUT);
        assert_eq!(code, Some(2), "mode {mode:o} must be refused: {stderr}");
        assert!(stderr.contains("chmod 600"), "mode {mode:o}: {stderr}");
        assert!(
            !stderr.contains("listening on"),
            "mode {mode:o} served: {stderr}"
        );
        no_secret(&stderr);
    }

    // Empty, or only comments: refused (a server with no tokens would
    // otherwise fall back to anonymous access).
    for empty in ["", "\n\n", "# no tokens yet\n   \n"] {
        write_mode(&file, empty, 0o600);
        let (code, stderr) = run_briefly(serve(&file), TIMEOUT);
        assert_eq!(code, Some(2), "{empty:?} must be refused: {stderr}");
        assert!(stderr.contains("no tokens"), "{stderr}");
        assert!(!stderr.contains("listening on"), "{stderr}");
    }

    // A bad line is named by its line number, never by its token.
    write_mode(&file, &format!("carol={secret}\ndave={secret}\n"), 0o600);
    let (code, stderr) = run_briefly(serve(&file), TIMEOUT);
    assert_eq!(code, Some(2), "a token given twice: {stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    no_secret(&stderr);

    // Private: it serves, and each token authenticates as its subject.
    write_mode(&file, &text, 0o600);
    let server = http_server(
        kb.path(),
        &[],
        &["--token-file", file.to_str().expect("utf-8 path")],
    );
    let rpc = |token: Option<&str>, body: Value| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        http(
            server.port,
            "POST",
            "/rpc",
            &headers,
            body.to_string().as_bytes(),
        )
    };
    let r = rpc(
        Some(secret),
        json!({"id": 1, "method": "kb.register_source",
               "params": {"content": "from carol\n", "locator": "c"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    let r = rpc(
        Some(other),
        json!({"id": 2, "method": "kb.register_source",
               "params": {"content": "from dave\n", "locator": "d"}}),
    );
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    let r = rpc(Some(secret), json!({"id": 3, "method": "kb.audit"}));
    let actors: Vec<String> = r.json()["result"]
        .as_array()
        .expect("audit events")
        .iter()
        .map(|e| e["actor"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(actors, ["carol", "dave"], "{}", r.text());
    // The comment line is not a token, nor is anything else.
    for wrong in [
        None,
        Some("# who may call this server"),
        Some("carol"),
        Some("tok-5e4f7a2b"),
        Some("tok-5e4f7a2b-very-secreT"),
    ] {
        let r = rpc(wrong, json!({"id": 4, "method": "kb.status"}));
        assert_eq!(r.status, 401, "token {wrong:?}: {}", r.text());
    }
    let stderr = server.terminate();
    assert!(
        stderr.contains("bearer tokens required for 2 subject(s)"),
        "{stderr}"
    );
    no_secret(&stderr);
}

// ----- someone else's .vouch/ ------------------------------------------------

/// The effective uid, from /proc (no libc in the tests).
fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// `chown -R uid:gid path`, not following links.
fn chown_r(path: &Path, id: u32) {
    std::os::unix::fs::lchown(path, Some(id), Some(id)).expect("chown");
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).expect("read_dir") {
            chown_r(&e.expect("entry").path(), id);
        }
    }
}

/// Anyone who can create a directory above the working directory (a shared
/// /tmp, a colleague's checkout) could plant a `.vouch/` there and choose
/// what an agent reads and where its writes go. Like git's safe.directory,
/// a walked-up `.vouch/` must be one's own unless trusted explicitly.
#[test]
fn a_walked_up_kb_owned_by_someone_else_is_refused() {
    if euid() != Some(0) {
        eprintln!(
            "skipped: needs root to give a .vouch/ to another user (euid {:?})",
            euid()
        );
        return;
    }
    let p = crate::common::Project::new();
    let sub = p.root().join("docs").join("deep");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let nobody = 65534;
    chown_r(&p.vouch_dir(), nobody);
    let project = p.root().display().to_string();
    let vouch_dir = p.vouch_dir().display().to_string();

    let run = |safe: Option<&str>, args: &[&str]| {
        let mut c = p.command("tester");
        c.current_dir(&sub).env_remove("VOUCH_SAFE_DIRECTORIES");
        if let Some(s) = safe {
            c.env("VOUCH_SAFE_DIRECTORIES", s);
        }
        let out = c.args(args).output().expect("run vouch");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // Found by walking up, owned by uid 65534: refused, reads and writes.
    let before = p.snapshot();
    for safe in [None, Some(""), Some("/nonexistent:/tmp"), Some("docs")] {
        let (code, _, stderr) = run(safe, &["status"]);
        assert_eq!(code, Some(7), "safe {safe:?}: {stderr}");
        assert!(stderr.contains("VOUCH_SAFE_DIRECTORIES"), "{stderr}");
        assert!(stderr.contains("uid 65534"), "{stderr}");
        let (code, _, stderr) = run(
            safe,
            &["source", "add", "--text", "planted?", "--locator", "x"],
        );
        assert_eq!(code, Some(7), "a write went to someone else's KB: {stderr}");
    }
    assert!(p.snapshot() == before, "the refused KB was changed");

    // Trusted by listing the project, the .vouch/ itself, or `*`.
    for safe in [
        project.clone(),
        vouch_dir.clone(),
        format!("/nonexistent:{project}"),
        "*".to_string(),
    ] {
        let (code, stdout, stderr) = run(Some(&safe), &["status"]);
        assert_eq!(code, Some(0), "VOUCH_SAFE_DIRECTORIES={safe}: {stderr}");
        assert!(!stdout.is_empty());
    }

    // Or by naming it: --kb, VOUCH_KB_PATH.
    let (code, _, stderr) = run(None, &["--kb", &project, "status"]);
    assert_eq!(code, Some(0), "--kb: {stderr}");
    let out = p
        .command("tester")
        .current_dir(&sub)
        .env_remove("VOUCH_SAFE_DIRECTORIES")
        .env("VOUCH_KB_PATH", &project)
        .arg("status")
        .output()
        .expect("run vouch");
    assert!(
        out.status.success(),
        "VOUCH_KB_PATH: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // One's own .vouch/ needs nothing.
    chown_r(&p.vouch_dir(), 0);
    let (code, _, stderr) = run(None, &["status"]);
    assert_eq!(code, Some(0), "{stderr}");

    // A `.vouch` link someone else made, pointing at a KB that is yours:
    // the link's owner chose it, so it counts as theirs.
    let mine = tempfile::tempdir().expect("tempdir");
    std::fs::rename(p.vouch_dir(), mine.path().join(".vouch")).expect("move the KB");
    std::os::unix::fs::symlink(mine.path().join(".vouch"), p.vouch_dir()).expect("link");
    std::os::unix::fs::lchown(p.vouch_dir(), Some(nobody), Some(nobody)).expect("lchown");
    let (code, _, stderr) = run(None, &["status"]);
    assert_eq!(code, Some(7), "a planted link to my KB was used: {stderr}");
    assert!(stderr.contains("uid 65534"), "{stderr}");
}
