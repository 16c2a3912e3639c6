//! A minimal HTTP/1.1 client over `std::net::TcpStream`, enough to drive MCP
//! over streamable HTTP: one request per connection (`Connection: close`),
//! a `Content-Length`, chunked or read-to-close body, and a stop as soon as
//! the caller has what it waits for (an SSE stream may stay open).
//! Plain `http://` only: the kit carries no TLS.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// `http://host[:port][/path]`, split.
#[derive(Clone, Debug)]
pub struct Url {
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl Url {
    pub fn parse(url: &str) -> Result<Url, String> {
        let rest = match url.split_once("://") {
            Some((s, rest)) if s.eq_ignore_ascii_case("http") => rest,
            Some((s, _)) if s.eq_ignore_ascii_case("https") => {
                return Err(format!(
                    "{url}: https is not supported (the kit's HTTP client has no TLS); \
                     give an http:// URL, e.g. the server on loopback"
                ));
            }
            _ => return Err(format!("{url}: not an http:// URL")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let port = |p: &str| {
            p.parse::<u16>()
                .map_err(|_| format!("{url}: bad port {p:?}"))
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("{url}: unclosed ["))?;
            match after.strip_prefix(':') {
                Some(p) => (h, port(p)?),
                None => (h, 80),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, port(p)?),
                None => (authority, 80),
            }
        };
        if host.is_empty() {
            return Err(format!("{url}: no host"));
        }
        Ok(Url {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }
}

/// A response: status, headers (names lower-cased), and the body read so far.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Send one request and read the response; the body is read until it ends
/// or `done(body so far)` says the caller has what it needs.
pub fn send(
    method: &str,
    url: &Url,
    headers: &[(&str, String)],
    body: &[u8],
    timeout: Duration,
    done: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Response, String> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("resolve {}: {e}", url.host))?
        .collect();
    let mut last = format!("{}: no address", url.host);
    let mut stream = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("connect {a}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let io = |e: std::io::Error| format!("{method} {}: {e}", url.path);
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let host = if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        url.path,
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(io)?;
    stream.write_all(body).map_err(io)?;
    stream.flush().map_err(io)?;

    let mut r = BufReader::new(stream);
    let status_line = line(&mut r).map_err(io)?;
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|s| s.get(2..5))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP status line: {status_line:?}"))?;
    let mut headers = Vec::new();
    loop {
        let l = line(&mut r).map_err(io)?;
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if method == "HEAD" || status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(resp);
    }
    let chunked = resp
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let length = resp
        .header("content-length")
        .and_then(|l| l.parse::<usize>().ok());
    let mut body = Vec::new();
    let timed_out = || format!("{method} {}: no complete answer in {timeout:?}", url.path);
    if chunked {
        loop {
            if Instant::now() > deadline {
                return Err(timed_out());
            }
            let size = line(&mut r).map_err(io)?;
            let size = size.split(';').next().unwrap_or("").trim();
            let n =
                usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n];
            r.read_exact(&mut chunk).map_err(io)?;
            line(&mut r).map_err(io)?;
            body.extend_from_slice(&chunk);
            if done(&body) {
                break;
            }
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(io)?;
    } else {
        let mut buf = [0u8; 8192];
        loop {
            if Instant::now() > deadline {
                return Err(timed_out());
            }
            let k = r.read(&mut buf).map_err(io)?;
            if k == 0 {
                break;
            }
            body.extend_from_slice(&buf[..k]);
            if done(&body) {
                break;
            }
        }
    }
    resp.body = body;
    Ok(resp)
}

/// One CRLF- (or LF-) terminated line, without its terminator.
fn line(r: &mut impl BufRead) -> std::io::Result<String> {
    let mut buf = Vec::new();
    if r.read_until(b'\n', &mut buf)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The `data` of each complete event in a `text/event-stream` body (the
/// `data:` lines of an event joined by newlines); empty data is skipped.
pub fn sse_data(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut out = Vec::new();
    // Only events closed by a blank line are complete.
    let complete = match text.rfind("\n\n") {
        Some(i) => &text[..i],
        None => return out,
    };
    for event in complete.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let data = data.join("\n");
        if !data.trim().is_empty() {
            out.push(data);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8765/mcp").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8765, "/mcp")
        );
        let u = Url::parse("http://example.org").unwrap();
        assert_eq!((u.port, u.path.as_str()), (80, "/"));
        let u = Url::parse("http://[::1]:9/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert!(
            Url::parse("https://example.org/mcp")
                .unwrap_err()
                .contains("https is not supported")
        );
        assert!(Url::parse("example.org").is_err());
    }

    /// A one-shot server writing `answer` and then holding the connection
    /// open (as an SSE stream may) until the client hangs up.
    fn serve_once(answer: &'static [u8]) -> Url {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            while !line(&mut r).unwrap().is_empty() {}
            s.write_all(answer).unwrap();
            let _ = r.read(&mut [0u8; 1]);
        });
        Url::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap()
    }

    fn get(url: &Url, done: &mut dyn FnMut(&[u8]) -> bool) -> Result<Response, String> {
        send("POST", url, &[], b"", Duration::from_secs(5), done)
    }

    #[test]
    fn content_length_body() {
        let url = serve_once(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
        let r = get(&url, &mut |_| false).unwrap();
        assert_eq!(
            (r.status, r.header("CONTENT-TYPE")),
            (200, Some("application/json"))
        );
        assert_eq!(r.body, b"{\"a\":1}");
    }

    #[test]
    fn chunked_stream_stops_when_the_caller_is_done() {
        // Two chunks, and no terminating chunk: the stream stays open.
        let url = serve_once(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n7\r\n{}\n\nxyz\r\n");
        let r = get(&url, &mut |b| !sse_data(b).is_empty()).unwrap();
        assert_eq!(sse_data(&r.body), vec!["{}".to_string()]);
        let url = serve_once(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(get(&url, &mut |_| false).unwrap().status, 202);
    }

    #[test]
    fn a_stalled_server_times_out() {
        let url = serve_once(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let e = send(
            "POST",
            &url,
            &[],
            b"",
            Duration::from_millis(300),
            &mut |_| false,
        );
        assert!(e.is_err(), "{e:?}");
    }

    #[test]
    fn sse_events() {
        let body = b"data: \nid: 0\nretry: 3000\n\ndata: {\"a\":\ndata: 1}\n\ndata: {\"partial\"";
        assert_eq!(sse_data(body), vec!["{\"a\":\n1}".to_string()]);
        assert_eq!(sse_data(b"data:x\r\n\r\n"), vec!["x".to_string()]);
    }
}
