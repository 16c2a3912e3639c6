//! A minimal MCP client (JSON-RPC 2.0): initialize, tools/list, tools/call,
//! over any transport that can exchange one request for its response —
//! stdio here (one message per line), streamable HTTP in `mcp_http`.

use serde_json::{Value, json};

use crate::server::{CallErr, Server};

/// A tool call's outcome: `Ok(structured result)` or `Err(text)` when the
/// call is an error (JSON-RPC error or `isError: true`).
pub type ToolResult = Result<Value, String>;

/// The protocol version the kit asks for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// What a transport provides; the MCP calls are built on it.
pub trait McpClient {
    /// A fresh request id.
    fn next_id(&mut self) -> Value;
    /// Send one request and return the response message with its id.
    fn exchange(&mut self, req: &Value) -> Result<Value, CallErr>;
    /// Send one notification (no response).
    fn notify(&mut self, method: &str) -> Result<(), CallErr>;

    /// A JSON-RPC request; the `result`, or the error object as text.
    fn request(&mut self, method: &str, params: Value) -> Result<Result<Value, String>, CallErr> {
        let id = self.next_id();
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let v = self.exchange(&req)?;
        if let Some(e) = v.get("error") {
            return Ok(Err(e.to_string()));
        }
        Ok(Ok(v.get("result").cloned().unwrap_or(Value::Null)))
    }

    /// The `initialize` request alone; its result.
    fn initialize_only(&mut self) -> Result<Result<Value, String>, CallErr> {
        self.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                   "clientInfo": {"name": "vouch-conformance", "version": env!("CARGO_PKG_VERSION")}}),
        )
    }

    /// initialize + notifications/initialized; the initialize result.
    fn initialize(&mut self) -> Result<Result<Value, String>, CallErr> {
        let r = self.initialize_only()?;
        if r.is_ok() {
            self.notify("notifications/initialized")?;
        }
        Ok(r)
    }

    /// Every tool, following `nextCursor`.
    fn tools(&mut self) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..50 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = self
                .request("tools/list", params)
                .map_err(|e| e.to_string())??;
            out.extend(
                r.get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            match r.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => cursor = Some(c.to_string()),
                _ => return Ok(out),
            }
        }
        Err("tools/list never stops paging".into())
    }

    /// tools/call; the structured result (structuredContent, else the
    /// first text content parsed as JSON, else the text itself).
    fn call(&mut self, tool: &str, args: Value) -> Result<ToolResult, CallErr> {
        let r = match self.request("tools/call", json!({"name": tool, "arguments": args}))? {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let text = r
            .get("content")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find_map(|c| c.get("text").and_then(Value::as_str)))
            .unwrap_or("")
            .to_string();
        if r.get("isError") == Some(&Value::Bool(true)) {
            return Ok(Err(text));
        }
        if let Some(sc) = r.get("structuredContent") {
            // Servers may wrap a non-object result as {"result": …}.
            if let Some(inner) = sc
                .get("result")
                .filter(|_| sc.as_object().is_some_and(|o| o.len() == 1))
            {
                return Ok(Ok(inner.clone()));
            }
            return Ok(Ok(sc.clone()));
        }
        Ok(Ok(
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        ))
    }
}

/// MCP over stdio: one JSON-RPC message per line.
pub struct Mcp {
    pub s: Server,
    next: u64,
}

impl Mcp {
    pub fn new(s: Server) -> Mcp {
        Mcp { s, next: 100 }
    }
}

impl McpClient for Mcp {
    fn next_id(&mut self) -> Value {
        self.next += 1;
        json!(self.next)
    }

    fn exchange(&mut self, req: &Value) -> Result<Value, CallErr> {
        self.s.write_line(req.to_string().as_bytes())?;
        self.s.read_for(&req["id"])
    }

    fn notify(&mut self, method: &str) -> Result<(), CallErr> {
        let n = json!({"jsonrpc": "2.0", "method": method});
        self.s.write_line(n.to_string().as_bytes())
    }
}
