//! `vouch serve` on stdio, JSONL or MCP: a running server driven a line at
//! a time. Its standard error is passed through, a line at a time and
//! marked `[server]` (a test shows it only when it fails).

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a read waits for the server's next line, unless told
/// otherwise ([`StdioServer::set_timeout`]).
const TIMEOUT: Duration = Duration::from_secs(30);

/// A `vouch serve` process spoken to over stdin and stdout, one JSON message
/// a line; killed when dropped, so a failing test leaves no server behind.
pub struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    timeout: Duration,
}

impl StdioServer {
    /// Start `cmd` (a `vouch serve` command line) with piped stdio.
    pub fn spawn(mut cmd: Command) -> StdioServer {
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
        StdioServer {
            stdin: child.stdin.take(),
            child,
            lines,
            timeout: TIMEOUT,
        }
    }

    /// Write one line (a request, or anything a test wants the server to
    /// read).
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line the server wrote, as JSON.
    pub fn read(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(self.timeout)
            .expect("server answered in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Send every request, then read as many answers, in order (stdout is
    /// drained all along, so a long batch cannot block the server).
    pub fn batch(&mut self, requests: Vec<Value>) -> Vec<Value> {
        let n = requests.len();
        for r in requests {
            self.send_raw(&r.to_string());
        }
        (0..n).map(|_| self.read()).collect()
    }

    /// One JSONL request and its answer, which must be `ok` (the benches'
    /// calls: a failed one is a broken measurement).
    pub fn call(&mut self, id: usize, method: &str, params: Value) -> Value {
        let request = serde_json::json!({"id": id, "method": method, "params": params});
        self.send_raw(&request.to_string());
        let answer = self.read();
        assert_eq!(answer["ok"], true, "{answer}");
        answer
    }

    /// Wait up to `timeout` for each answer (a benchmark's rebuild of a
    /// large knowledge base takes longer than a test's request).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The server's process id (for its peak memory).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Close stdin and wait for the server to exit.
    pub fn close(mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait")
    }

    /// Close stdin and wait for a clean exit.
    pub fn finish(self) {
        let status = self.close();
        assert!(status.success(), "server exited with {status}");
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
