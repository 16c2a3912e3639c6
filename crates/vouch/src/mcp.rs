//! MCP: the `kb.*` registry as MCP tools (`kb_search`, …), served with the
//! official SDK (`rmcp`) over stdio, and over streamable HTTP by `http.rs`.
//!
//! Everything is generated from [`REGISTRY`]: one tool per method, its input
//! schema from the method's params type. A domain error is a tool result with
//! `isError: true` and the text `"<wire_code>: <message>"` (so the agent reads
//! it); only an unknown tool name is a protocol error.

use crate::errors::mapping;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use vouch_core::methods::{Effect, Method, REGISTRY, find_tool};
use vouch_core::{Caller, Kb};

/// Told to every agent at `initialize`.
pub const INSTRUCTIONS: &str = "vouch is a review-gated knowledge base for this project. \
Read freely: call kb_status first, then kb_search (and kb_read_*) before proposing anything, \
so you do not duplicate what is already known or pending. Writing knowledge is review-gated: \
kb_propose_* tools only create pending proposals, which become knowledge after someone other \
than the proposer approves them; never approve your own proposals. Cite sources: register the \
material with kb_register_source (or kb_register_source_from_path), quote the exact span with \
kb_register_evidence, and cite those ids in the proposal. Pending proposals are not knowledge \
and never appear in search results.";

/// The sentence added to the description of tools whose writes are gated.
fn gate_note(effect: Effect) -> Option<&'static str> {
    match effect {
        Effect::Propose => Some(
            " Review-gated: this only creates a pending proposal; nothing becomes knowledge \
             until a person (or a configured trusted agent other than you) approves it.",
        ),
        Effect::Review => Some(
            " Review-gated: approvals write durable knowledge and need human approval; the \
             approver must be someone other than the proposer, so do not approve your own \
             proposals.",
        ),
        _ => None,
    }
}

/// A method's params schema as an MCP input schema: a JSON object with
/// `"type": "object"`, without `$schema`.
pub fn input_schema(m: &Method) -> JsonObject {
    let mut schema = match (m.params_schema)() {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    schema.remove("$schema");
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        schema.insert("type".into(), Value::String("object".into()));
    }
    schema
}

fn tool(m: &Method) -> Tool {
    let mut description = m.description.to_string();
    if let Some(note) = gate_note(m.effect) {
        description.push_str(note);
    }
    let annotations = ToolAnnotations::new()
        .read_only(m.effect == Effect::Read)
        .open_world(false);
    let annotations = match m.effect {
        Effect::Read => annotations,
        // Audited and additive: nothing is ever deleted.
        _ => annotations.destructive(false),
    };
    Tool::new(m.tool_name(), description, Arc::new(input_schema(m))).annotate(annotations)
}

/// Every tool, built once from the registry.
pub fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| REGISTRY.iter().map(tool).collect())
}

/// The MCP server: one per stdio process or per HTTP session.
#[derive(Clone)]
pub struct Handler {
    kb: Arc<Kb>,
    /// The actor for stdio. `None` over HTTP: there the caller comes from the
    /// authenticated request (see `http.rs`), and a request without one is
    /// refused.
    caller: Option<Caller>,
}

impl Handler {
    /// A handler whose actor is fixed for the process (stdio).
    pub fn stdio(kb: Arc<Kb>, caller: Caller) -> Self {
        Handler {
            kb,
            caller: Some(caller),
        }
    }

    /// A handler whose actor comes from each HTTP request's extensions.
    pub fn http(kb: Arc<Kb>) -> Self {
        Handler { kb, caller: None }
    }

    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Option<Caller> {
        let from_http = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned();
        from_http.or_else(|| self.caller.clone())
    }
}

/// A domain error as a tool result the agent can read.
fn tool_error(code: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))])
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("vouch", env!("CARGO_PKG_VERSION"))
                    .with_title("vouch knowledge base"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(method) = find_tool(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; tools/list names them all",
                    vouch_core::ids::truncate_for_message(&request.name)
                ),
                None,
            ));
        };
        let Some(caller) = self.caller(&context) else {
            return Err(ErrorData::internal_error(
                "no authenticated caller for this request",
                None,
            ));
        };
        let params = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let kb = self.kb.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let res = (method.call)(&kb, &caller, params);
            for w in kb.take_warnings() {
                eprintln!("warning: {w}");
            }
            res
        })
        .await;
        let result = match joined {
            Ok(Ok(value)) => {
                let text = serde_json::to_string(&value).unwrap_or_default();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                // structuredContent must be an object; arrays and null stay text only.
                if value.is_object() {
                    r.structured_content = Some(value);
                }
                r
            }
            Ok(Err(e)) => tool_error(mapping(e.kind).wire_code, &e.message),
            Err(_) => tool_error(
                "internal_error",
                "the server hit an internal error; see stderr",
            ),
        };
        Ok(result.into())
    }
}

/// Serve MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(kb: Arc<Kb>, caller: Caller) -> std::io::Result<()> {
    let service = Handler::stdio(kb, caller)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| std::io::Error::other(format!("MCP initialize: {e}")))?;
    service
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("MCP server task: {e}")))?;
    Ok(())
}
