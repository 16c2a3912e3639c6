//! `vouch serve --transport http` on a free port, started from a
//! command line, its standard error passed through a line at a time and
//! kept (marked `[server]`; a test shows it only when it fails).

use crate::http::{HttpResponse, http_to};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

/// `vouch serve --transport http` on a free loopback port; killed when
/// dropped, so a failing test leaves no server behind.
pub struct HttpServer {
    /// The server's process.
    pub child: Child,
    /// The port it listens on.
    pub port: u16,
    /// The address it listens on: loopback, unless its command line bound
    /// another (a host of its own, in a network namespace).
    pub host: String,
    stderr: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Start `cmd` (a `vouch serve --transport http` command line bound to
    /// a free port, `--bind 127.0.0.1:0`) and wait for the address it
    /// prints.
    pub fn spawn(mut cmd: Command) -> HttpServer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vouch serve --transport http");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let seen = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                // Through the test's own output capture: shown on failure.
                eprintln!("[server] {line}");
                if let Some(addr) = line.strip_prefix("vouch: listening on http://") {
                    let _ = tx.send(addr.to_string());
                }
                seen.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(TIMEOUT)
            .expect("server printed its address");
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?)))
            .expect("host:port");
        HttpServer {
            child,
            port,
            host,
            stderr: lines,
            reader: Some(reader),
        }
    }

    /// The address it listens on (`host:port`).
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// A connection to it, with the read timeout set.
    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect((self.host.as_str(), self.port)).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
        s
    }

    /// `POST /rpc` with the JSONL envelope, as `token`'s subject (or the
    /// loopback actor without one).
    pub fn rpc(&self, token: Option<&str>, body: &[u8]) -> HttpResponse {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = &auth {
            headers.push(("Authorization", a));
        }
        http_to((&self.host, self.port), "POST", "/rpc", &headers, body)
    }

    /// `GET /health` on its own connection.
    pub fn healthy(&self) -> bool {
        let r = http_to((&self.host, self.port), "GET", "/health", &[], b"");
        r.status == 200 && r.json()["ok"] == json!(true)
    }

    /// SIGTERM, a clean exit, and everything the server wrote to stderr.
    pub fn terminate(mut self) -> String {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            assert!(Instant::now() < deadline, "server ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "server exited with {status}");
        if let Some(r) = self.reader.take() {
            r.join().expect("stderr reader");
        }
        self.stderr.lock().unwrap().join("\n")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
