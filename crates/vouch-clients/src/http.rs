//! A tiny HTTP/1.1 client for driving `vouch serve --transport http` over
//! real sockets: whole requests, keep-alive reads, chunked bodies, and MCP
//! messages over streamable HTTP.

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// A whole HTTP response, read to its end (a chunked body joined).
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header called `name` (any letter case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The body as JSON; panics, showing the body, when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
}

/// The bytes of one HTTP/1.1 request to `127.0.0.1:port`: the request
/// line, `Host` (unless `headers` has one), `Content-Length`, `Connection: close` when `close`, the
/// `headers`, then the body.
pub fn request_bytes(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    close: bool,
) -> Vec<u8> {
    // A `Host` among `headers` stands for the address a proxy in front
    // would send; else the server's own.
    let own_host = if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        String::new()
    } else {
        format!("Host: 127.0.0.1:{port}\r\n")
    };
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\n{own_host}Content-Length: {}\r\n",
        body.len()
    );
    if close {
        req.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Where the head ends (the index just past `\r\n\r\n`), if it has.
pub fn head_end(raw: &[u8]) -> Option<usize> {
    raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parse a whole response (head and complete body).
pub fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = head_end(raw)
        .unwrap_or_else(|| panic!("end of headers in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split - 4]).to_string();
    let mut rest = raw[split..].to_vec();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        let mut body = Vec::new();
        loop {
            let eol = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size line");
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&rest[..eol])
                    .split(';')
                    .next()
                    .unwrap_or("0")
                    .trim(),
                16,
            )
            .expect("chunk size");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest.drain(..eol + 2 + size + 2);
        }
        rest = body;
    }
    HttpResponse {
        status,
        headers,
        body: rest,
    }
}

/// One request on its own connection (`Connection: close`) to
/// `127.0.0.1:port`.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    http_to(("127.0.0.1", port), method, path, headers, body)
}

/// [`http`] to another address (a server on another host).
pub fn http_to(
    (host, port): (&str, u16),
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut s = TcpStream::connect((host, port)).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    s.write_all(&request_bytes(port, method, path, headers, body, true))
        .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read response");
    parse_response(&raw)
}

/// POST one MCP message to /mcp as the holder of `token`.
pub fn mcp_post(port: u16, token: &str, session: Option<&str>, body: &Value) -> HttpResponse {
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
    }
    http(port, "POST", "/mcp", &headers, body.to_string().as_bytes())
}

/// The JSON-RPC message with `id` in a streamable-HTTP answer (JSON or SSE).
pub fn mcp_message(r: &HttpResponse, id: u64) -> Value {
    let body = r.text();
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
