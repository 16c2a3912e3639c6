//! MCP over streamable HTTP (MCP 2025-06-18 "Streamable HTTP"): every
//! message is a POST to one endpoint; a request is answered by a JSON body
//! or an SSE stream carrying the response; the server may hand out an
//! `Mcp-Session-Id` at initialize that later requests carry, and a DELETE
//! ends the session.

use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{Response, Url, send, sse_data};
use crate::mcp::McpClient;
use crate::server::CallErr;

pub struct McpHttp {
    url: Url,
    token: Option<String>,
    /// The session id the server gave at initialize, if any.
    pub session: Option<String>,
    /// The protocol version the server answered at initialize.
    pub protocol: Option<String>,
    next: u64,
    timeout: Duration,
}

/// One POST's outcome: the HTTP status and, for a request, the JSON-RPC
/// response with its id (when the body carried one).
pub struct Reply {
    pub status: u16,
    pub resp: Response,
    pub message: Option<Value>,
}

impl Reply {
    /// Status and the start of the body, for a detail.
    pub fn brief(&self) -> String {
        let body = String::from_utf8_lossy(&self.resp.body);
        let body: String = body.chars().take(200).collect();
        format!("HTTP {} {}", self.status, body.trim())
    }
}

/// Which of the client's credentials a POST carries.
#[derive(Clone, Copy)]
pub struct Carry {
    pub token: bool,
    pub session: bool,
}

pub const ALL: Carry = Carry {
    token: true,
    session: true,
};

impl McpHttp {
    pub fn new(url: &str, token: Option<String>, timeout: Duration) -> Result<McpHttp, String> {
        Ok(McpHttp {
            url: Url::parse(url)?,
            token,
            session: None,
            protocol: None,
            next: 100,
            timeout,
        })
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    fn headers(&self, carry: Carry) -> Vec<(&'static str, String)> {
        let mut h = vec![
            ("Content-Type", "application/json".to_string()),
            ("Accept", "application/json, text/event-stream".to_string()),
        ];
        if let (true, Some(t)) = (carry.token, &self.token) {
            h.push(("Authorization", format!("Bearer {t}")));
        }
        if let (true, Some(s)) = (carry.session, &self.session) {
            h.push(("Mcp-Session-Id", s.clone()));
        }
        if let Some(p) = &self.protocol {
            h.push(("MCP-Protocol-Version", p.clone()));
        }
        h
    }

    /// POST one JSON-RPC message; for a request, read until the response
    /// with its id has arrived (a JSON body, or an event of an SSE stream).
    pub fn post(&mut self, msg: &Value, carry: Carry) -> Result<Reply, String> {
        let id = msg.get("id").cloned();
        let body = msg.to_string();
        let want = id.clone();
        let mut done = |b: &[u8]| {
            want.as_ref()
                .is_some_and(|id| find(&sse_data(b), id).is_some())
        };
        let resp = send(
            "POST",
            &self.url,
            &self.headers(carry),
            body.as_bytes(),
            self.timeout,
            &mut done,
        )?;
        let message = id.as_ref().and_then(|id| {
            let ct = resp
                .header("content-type")
                .unwrap_or("")
                .to_ascii_lowercase();
            if ct.starts_with("text/event-stream") {
                find(&sse_data(&resp.body), id)
            } else {
                let v: Value = serde_json::from_slice(&resp.body).ok()?;
                let all = match v {
                    Value::Array(a) => a,
                    one => vec![one],
                };
                all.into_iter().find(|m| is_response(m, id))
            }
        });
        Ok(Reply {
            status: resp.status,
            resp,
            message,
        })
    }

    /// DELETE the session; the status.
    pub fn delete(&mut self) -> Result<u16, String> {
        let headers: Vec<_> = self
            .headers(ALL)
            .into_iter()
            .filter(|(k, _)| *k != "Content-Type")
            .collect();
        send(
            "DELETE",
            &self.url,
            &headers,
            b"",
            self.timeout,
            &mut |_| false,
        )
        .map(|r| r.status)
    }
}

fn is_response(m: &Value, id: &Value) -> bool {
    m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
}

/// The JSON-RPC response with `id` among SSE events' data.
fn find(events: &[String], id: &Value) -> Option<Value> {
    events
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|m| is_response(m, id))
}

impl McpClient for McpHttp {
    fn next_id(&mut self) -> Value {
        self.next += 1;
        json!(self.next)
    }

    fn exchange(&mut self, req: &Value) -> Result<Value, CallErr> {
        let r = self.post(req, ALL).map_err(CallErr::Transport)?;
        if !(200..300).contains(&r.status) {
            return Err(CallErr::Transport(r.brief()));
        }
        let m = r
            .message
            .ok_or_else(|| CallErr::Transport(format!("no response with id {}", req["id"])))?;
        if req.get("method") == Some(&json!("initialize")) {
            if let Some(s) = r.resp.header("mcp-session-id") {
                self.session = Some(s.to_string());
            }
            if let Some(p) = m.pointer("/result/protocolVersion").and_then(Value::as_str) {
                self.protocol = Some(p.to_string());
            }
        }
        Ok(m)
    }

    /// A notification: MCP wants 202 Accepted.
    fn notify(&mut self, method: &str) -> Result<(), CallErr> {
        let n = json!({"jsonrpc": "2.0", "method": method});
        let r = self.post(&n, ALL).map_err(CallErr::Transport)?;
        if r.status != 202 {
            return Err(CallErr::Transport(format!(
                "{} (MCP wants 202 Accepted)",
                r.brief()
            )));
        }
        Ok(())
    }
}
