//! What one actor, or one address without tokens, may hold: MCP sessions,
//! connections, and request bodies that must arrive whole in time.

use super::*;

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
