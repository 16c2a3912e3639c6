//! A server under test: a child process speaking one JSON object per line
//! on stdin/stdout (the JSONL transport; MCP over stdio frames the same way).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// Run `cmd` through `sh -c` in `dir`.
pub fn shell(cmd: &str, dir: &Path) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).current_dir(dir);
    c
}

/// Quote one word for `sh`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Vec<u8>>,
    next: u64,
    timeout: Duration,
    stderr: PathBuf,
}

/// An error response, or a transport failure.
#[derive(Debug)]
pub enum CallErr {
    /// `ok: false`: the code and message.
    Refused(String, String),
    /// No answer, a malformed answer, or a dead server.
    Transport(String),
}

impl std::fmt::Display for CallErr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallErr::Refused(c, m) => write!(f, "{c}: {m}"),
            CallErr::Transport(m) => write!(f, "transport: {m}"),
        }
    }
}

impl From<CallErr> for crate::check::Miss {
    fn from(e: CallErr) -> Self {
        crate::check::Miss::Fail(e.to_string())
    }
}

impl Server {
    /// Start `cmd` in `dir`; its stderr goes to `stderr` (outside the KB).
    pub fn start(
        cmd: &str,
        dir: &Path,
        stderr: PathBuf,
        timeout: Duration,
    ) -> Result<Server, String> {
        let err_file = std::fs::File::create(&stderr).map_err(|e| format!("stderr file: {e}"))?;
        let mut child = shell(cmd, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err_file))
            .spawn()
            .map_err(|e| format!("cannot start `{cmd}`: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Server {
            child,
            stdin,
            rx,
            next: 0,
            timeout,
            stderr,
        })
    }

    /// The last lines the server wrote to stderr, for a failure's detail.
    pub fn stderr_tail(&self) -> String {
        let s = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = s.lines().rev().take(2).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }

    pub fn fresh_id(&mut self) -> String {
        self.next += 1;
        format!("kit-{}", self.next)
    }

    /// Write raw bytes (a newline is appended).
    pub fn write_line(&mut self, bytes: &[u8]) -> Result<(), CallErr> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or(CallErr::Transport("stdin closed".into()))?;
        let mut buf = bytes.to_vec();
        buf.push(b'\n');
        stdin
            .write_all(&buf)
            .and_then(|_| stdin.flush())
            .map_err(|e| CallErr::Transport(format!("write failed (server gone?): {e}")))
    }

    /// The next line the server writes, parsed as JSON.
    pub fn read_value(&mut self) -> Result<Value, CallErr> {
        loop {
            let line = match self.rx.recv_timeout(self.timeout) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CallErr::Transport(format!(
                        "no response within {:?}",
                        self.timeout
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CallErr::Transport(format!(
                        "server closed stdout ({})",
                        self.stderr_tail()
                    )));
                }
            };
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            return serde_json::from_str(text.trim()).map_err(|e| {
                CallErr::Transport(format!("response is not JSON ({e}): {}", text.trim()))
            });
        }
    }

    /// Read responses until the one whose `id` is `id` (others are skipped).
    pub fn read_for(&mut self, id: &Value) -> Result<Value, CallErr> {
        loop {
            let v = self.read_value()?;
            if v.get("id") == Some(id) {
                return Ok(v);
            }
        }
    }

    /// Send a request with a fresh string id; the whole response envelope.
    pub fn envelope(&mut self, method: &str, params: Value) -> Result<Value, CallErr> {
        let id = Value::String(self.fresh_id());
        let req = json!({"id": id, "method": method, "params": params});
        self.write_line(req.to_string().as_bytes())?;
        self.read_for(&id)
    }

    /// Call a method: `Ok(result)` when `ok: true`, else the error.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, CallErr> {
        let env = self.envelope(method, params)?;
        match env.get("ok") {
            Some(Value::Bool(true)) => Ok(env.get("result").cloned().unwrap_or(Value::Null)),
            Some(Value::Bool(false)) => {
                let e = env.get("error").cloned().unwrap_or(Value::Null);
                let code = e
                    .get("code")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string();
                let msg = e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                Err(CallErr::Refused(code, msg))
            }
            _ => Err(CallErr::Transport(format!(
                "envelope without a boolean `ok`: {}",
                crate::check::brief(&env)
            ))),
        }
    }

    /// Whether the server still answers kb.capabilities.
    pub fn alive(&mut self) -> bool {
        self.call("kb.capabilities", json!({})).is_ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stdin.take();
        if let Ok(None) = self.child.try_wait() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
