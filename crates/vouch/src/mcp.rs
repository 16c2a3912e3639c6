//! MCP: the `kb.*` registry as MCP tools (`kb_search`, …), served with the
//! official SDK (`rmcp`) over stdio, and over streamable HTTP by `http.rs`.
//!
//! Everything is generated from [`REGISTRY`]: one tool per method, its input
//! schema from the method's params type. A domain error is a tool result with
//! `isError: true` and the text `"<wire_code>: <message>"` (so the agent reads
//! it); only an unknown tool name is a protocol error.

use crate::errors::mapping;
use futures_core::Stream;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
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
             proposals, and `approver` cannot name anyone but you.",
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
    // Every hint is stated, so a host need not guess from defaults (a
    // missing destructiveHint means "destructive"). Writes are audited and
    // additive unless the registry marks them destructive.
    let annotations = ToolAnnotations::with_title(m.title)
        .read_only(m.effect == Effect::Read)
        .destructive(m.destructive)
        .idempotent(m.idempotent)
        .open_world(false);
    let mut tool = Tool::new(m.tool_name(), description, Arc::new(input_schema(m)))
        .with_title(m.title)
        .annotate(annotations);
    tool.output_schema = output_schema(m).map(Arc::new);
    tool
}

/// A method's result schema as an MCP output schema, when its result is a
/// JSON object (MCP's `structuredContent` is always one): clients that
/// validate results check them against it. Lists and loosely typed results
/// (`kb.read_*`) have none and come as text only.
pub fn output_schema(m: &Method) -> Option<JsonObject> {
    let Value::Object(mut schema) = (m.result_schema)() else {
        return None;
    };
    if schema.get("type").is_none() && every_branch_an_object(&schema) {
        // One of several object shapes (`kb.approve`: one result or many)
        // is still an object: say so at the root, as MCP requires.
        schema.insert("type".into(), Value::String("object".into()));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    schema.remove("$schema");
    Some(schema)
}

/// Whether the root is an `anyOf`/`oneOf` whose every branch is an object
/// schema (inline, or a `$ref` to one in `$defs`).
fn every_branch_an_object(schema: &JsonObject) -> bool {
    let branches = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array);
    let is_object = |s: &Value| {
        let s = match s.get("$ref").and_then(Value::as_str) {
            Some(r) => r
                .strip_prefix("#/$defs/")
                .and_then(|name| schema.get("$defs")?.get(name)),
            None => Some(s),
        };
        s.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("object")
    };
    branches.is_some_and(|b| !b.is_empty() && b.iter().all(is_object))
}

/// Every tool, built once from the registry.
pub(crate) fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| REGISTRY.iter().map(tool).collect())
}

/// The MCP server: one per stdio process or per HTTP session.
#[derive(Clone)]
pub(crate) struct Handler {
    kb: Arc<Kb>,
    /// The actor for stdio. `None` over HTTP: there the caller comes from the
    /// authenticated request (see `http.rs`), and a request without one is
    /// refused.
    caller: Option<Caller>,
}

impl Handler {
    /// A handler whose actor is fixed for the process (stdio).
    pub(crate) fn stdio(kb: Arc<Kb>, caller: Caller) -> Self {
        Handler {
            kb,
            caller: Some(caller),
        }
    }

    /// A handler whose actor comes from each HTTP request's extensions.
    pub(crate) fn http(kb: Arc<Kb>) -> Self {
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
            // Through the registry's one entry point, so MCP callers meet
            // the same limits as every other agent transport.
            // A panic is caught here, inside the notes' collection, so
            // what the call raised before it still reaches the caller.
            let (res, notes) = vouch_core::stored::Store::collecting_notes(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    vouch_core::methods::dispatch(&kb, &caller, method.name, params)
                }))
            });
            let meta = notes.meta(kb.layout().root());
            crate::render::print_warnings(notes.warnings);
            (res, meta)
        })
        .await;
        let (joined, meta) = match joined {
            Ok((Ok(res), meta)) => (Ok(res), meta),
            // A panic inside the call (its notes kept), or the task lost.
            Ok((Err(_), meta)) => (Err(()), meta),
            Err(_) => (Err(()), None),
        };
        let mut result = match joined {
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
        // What the call warned about and how partial its answer is: in
        // `_meta` for the host, and as a text block the model reads.
        if let Some(meta) = meta {
            result.content.push(ContentBlock::text(notes_text(&meta)));
            result.meta = Some(rmcp::model::MetaObject(meta));
        }
        Ok(result.into())
    }
}

/// Serve MCP on stdin/stdout until the client closes stdin.
pub(crate) async fn serve_stdio(kb: Arc<Kb>, caller: Caller) -> std::io::Result<()> {
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

// ----- Streamable HTTP sessions --------------------------------------------

tokio::task_local! {
    /// The actor of the HTTP request being served, set by `http.rs` around
    /// every request so [`CappedSessions`] knows whose session it creates.
    pub(crate) static SESSION_OWNER: String;
}

/// Live MCP sessions one actor may hold over HTTP. A new session beyond it
/// closes that actor's least recently used one (its client gets 404 on its
/// next request and, as the MCP spec requires, initializes again).
pub(crate) const MAX_SESSIONS_PER_ACTOR: usize = 64;

/// A session with no request for this long is closed.
pub(crate) const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

struct Owned {
    owner: String,
    last_used: std::time::Instant,
}

/// rmcp's in-memory session manager, with sessions owned by the actor that
/// created them: at most `max_per_owner` live sessions per actor (LRU
/// eviction), and a session answers only its owner (anyone else gets 404).
///
/// rmcp keeps one session per `initialize` for its idle lifetime (about
/// 55 KB each), so without a cap a caller could grow the server without
/// bound by initializing in a loop.
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    max_per_owner: usize,
    owners: Mutex<HashMap<SessionId, Owned>>,
    /// When the last eviction was logged (at most one line a minute).
    logged: Mutex<Option<std::time::Instant>>,
}

impl CappedSessions {
    pub(crate) fn new(max_per_owner: usize, idle: std::time::Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        CappedSessions {
            inner,
            max_per_owner: max_per_owner.max(1),
            owners: Mutex::new(HashMap::new()),
            logged: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Owned>> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// May the current request use session `id`? Marks it used if so. Work
    /// outside a request (rmcp's own session tasks) is always allowed.
    fn permit(&self, id: &SessionId) -> bool {
        let Ok(me) = SESSION_OWNER.try_with(Clone::clone) else {
            return true;
        };
        match self.lock().get_mut(id) {
            Some(o) if o.owner == me => {
                o.last_used = std::time::Instant::now();
                true
            }
            _ => false,
        }
    }

    fn not_found(id: &SessionId) -> LocalSessionManagerError {
        LocalSessionManagerError::SessionNotFound(id.clone())
    }

    fn log_eviction(&self, owner: &str) {
        let mut last = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        if last.is_none_or(|t| now.duration_since(t) >= std::time::Duration::from_secs(60)) {
            *last = Some(now);
            eprintln!(
                "vouch: {owner:?} holds {} MCP sessions (the cap); closing its least recently \
                 used ones as it opens more",
                self.max_per_owner
            );
        }
    }
}

impl SessionManager for CappedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let owner = SESSION_OWNER
            .try_with(Clone::clone)
            .unwrap_or_else(|_| String::new());
        let (id, transport) = self.inner.create_session().await?;
        let evicted: Vec<SessionId> = {
            let mut owners = self.lock();
            let now = std::time::Instant::now();
            owners.insert(
                id.clone(),
                Owned {
                    owner: owner.clone(),
                    last_used: now,
                },
            );
            let mut mine: Vec<(std::time::Instant, SessionId)> = owners
                .iter()
                .filter(|(sid, o)| o.owner == owner && **sid != id)
                .map(|(sid, o)| (o.last_used, sid.clone()))
                .collect();
            let over = (mine.len() + 1).saturating_sub(self.max_per_owner);
            mine.sort();
            mine.truncate(over);
            for (_, sid) in &mine {
                owners.remove(sid);
            }
            mine.into_iter().map(|(_, sid)| sid).collect()
        };
        if !evicted.is_empty() {
            self.log_eviction(&owner);
        }
        for sid in evicted {
            let _ = self.inner.close_session(&sid).await;
        }
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if !self.permit(id) {
            return Err(Self::not_found(id));
        }
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.permit(id) {
            return Ok(false);
        }
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if !self.permit(id) {
            // Someone else's session (or one already gone): nothing to close.
            return Ok(());
        }
        self.lock().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !self.permit(id) {
            return Err(Self::not_found(id));
        }
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if !self.permit(id) {
            return Err(Self::not_found(id));
        }
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !self.permit(id) {
            return Err(Self::not_found(id));
        }
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !self.permit(id) {
            return Err(Self::not_found(id));
        }
        self.inner.resume(id, last_event_id).await
    }
}

/// An MCP tool result's notes as the model reads them: whether the answer
/// is partial, and each warning.
fn notes_text(meta: &serde_json::Map<String, Value>) -> String {
    let mut lines = Vec::new();
    if let Some(n) = meta.get("vectors_pending").and_then(Value::as_u64) {
        lines.push(format!(
            "vouch: partial answer: {n} document(s) are not embedded yet and were not \
             searched by meaning"
        ));
    }
    if meta.get("index_catching_up") == Some(&Value::Bool(true)) {
        lines.push(
            "vouch: partial answer: the server just started and its index is still catching \
             up with the files; what changed while no vouch ran may be missing"
                .to_string(),
        );
    }
    if let Some(warnings) = meta.get("warnings").and_then(Value::as_array) {
        for w in warnings.iter().filter_map(Value::as_str) {
            lines.push(format!("vouch: warning: {w}"));
        }
    }
    lines.join("\n")
}
