//! MCP: the `kb.*` registry as MCP tools (`kb_search`, …), served with the
//! official SDK (`rmcp`) over stdio, and over streamable HTTP by `http.rs`.
//!
//! Everything is generated from [`REGISTRY`]: one tool per method, its input
//! schema from the method's params type. A domain error is a tool result with
//! `isError: true` and the text `"<wire_code>: <message>"` (so the agent reads
//! it); only an unknown tool name is a protocol error.

use crate::errors::mapping;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use vouch_core::methods::{Effect, Method, REGISTRY, find_tool};
use vouch_core::{Caller, Kb};

mod prompts;
mod resources;
mod review_link;
mod sessions;
mod subscriptions;

pub(crate) use sessions::{CappedSessions, MAX_SESSIONS_PER_ACTOR, SESSION_IDLE, SESSION_OWNER};

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
    /// The resources this session subscribed to (`resources/subscribe`).
    followed: Arc<subscriptions::Followed>,
    /// The audit log's stamp when the last `subscriptions/listen` was
    /// accepted: the SDK acknowledges it before `listen` reads what the
    /// resources hold, and a change in between must not go unheard.
    accepted_at: Arc<std::sync::Mutex<subscriptions::Stamp>>,
    /// Whether the host is being asked to open a review page already.
    asking: Arc<review_link::Asking>,
}

impl Handler {
    /// A handler whose actor is fixed for the process (stdio).
    pub(crate) fn stdio(kb: Arc<Kb>, caller: Caller) -> Self {
        Handler {
            kb,
            caller: Some(caller),
            followed: Arc::default(),
            accepted_at: Arc::default(),
            asking: Arc::default(),
        }
    }

    /// A handler whose actor comes from each HTTP request's extensions.
    pub(crate) fn http(kb: Arc<Kb>) -> Self {
        Handler {
            kb,
            caller: None,
            followed: Arc::default(),
            accepted_at: Arc::default(),
            asking: Arc::default(),
        }
    }

    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        let from_http = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned();
        from_http.or_else(|| self.caller.clone()).ok_or_else(|| {
            ErrorData::internal_error("no authenticated caller for this request", None)
        })
    }
}

/// A domain error as a tool result the agent can read.
fn tool_error(code: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))])
}

/// What one registry call answered, and the notes it made (how partial
/// the answer is, what it warned about) as `_meta`.
pub(crate) struct Answer {
    /// The result, the domain error, or `None` for a panic inside the call
    /// or a lost task.
    value: Result<Value, Option<vouch_core::Error>>,
    meta: Option<JsonObject>,
}

/// Call registry method `method` off the async threads, through the
/// registry's one entry point, so MCP callers meet the same limits as
/// every other agent transport.
pub(crate) async fn ask(kb: &Arc<Kb>, caller: &Caller, method: &str, params: Value) -> Answer {
    let (kb, caller, method) = (kb.clone(), caller.clone(), method.to_string());
    let joined = tokio::task::spawn_blocking(move || {
        // A panic is caught here, inside the notes' collection, so what
        // the call noted before it still reaches the caller.
        let (res, notes) = vouch_core::stored::Store::collecting_notes(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                vouch_core::methods::dispatch(&kb, &caller, &method, params)
            }))
        });
        let meta = notes.meta(kb.layout().root());
        crate::render::print_warnings(notes.warnings);
        (res, meta)
    })
    .await;
    match joined {
        Ok((Ok(res), meta)) => Answer {
            value: res.map_err(Some),
            meta,
        },
        Ok((Err(_), meta)) => Answer {
            value: Err(None),
            meta,
        },
        Err(_) => Answer {
            value: Err(None),
            meta: None,
        },
    }
}

/// A failed read as a JSON-RPC error (resources and prompts have no
/// `isError` result), by the one error table's HTTP status: not found is
/// MCP's "resource not found", other refusals are invalid params, the
/// rest internal errors. The message is the domain error's.
pub(crate) fn protocol_error(e: Option<vouch_core::Error>) -> ErrorData {
    let Some(e) = e else {
        return ErrorData::internal_error("the server hit an internal error; see stderr", None);
    };
    match mapping(e.kind).http_status {
        404 => ErrorData::resource_not_found(e.message, None),
        400..=499 => ErrorData::invalid_params(e.message, None),
        _ => ErrorData::internal_error(e.message, None),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("vouch", env!("CARGO_PKG_VERSION"))
                    .with_title("vouch knowledge base"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Over stdio the host is the person's own: say which it is and
        // whether it will be asked to open review pages (over HTTP every
        // session initializes, and the line would be noise).
        if self.caller.is_some()
            && let Some(info) = context.peer.peer_info()
        {
            eprintln!("{}", review_link::describe_host(&info));
        }
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
        let caller = self.caller(&context)?;
        let params = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let Answer { value, meta } = ask(&self.kb, &caller, method.name, params).await;
        let mut result = match value {
            Ok(value) => {
                if method.effect == Effect::Propose {
                    review_link::offer(&self.asking, &context, &value);
                }
                let text = serde_json::to_string(&value).unwrap_or_default();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                // structuredContent must be an object; arrays and null stay text only.
                if value.is_object() {
                    r.structured_content = Some(value);
                }
                r
            }
            Err(Some(e)) => tool_error(mapping(e.kind).wire_code, &e.message),
            Err(None) => tool_error(
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

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        resources::list(&self.kb, &self.caller(&context)?, cursor.as_deref()).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(resources::read(&self.kb, &caller, &request.uri)
            .await?
            .into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context)?;
        resources::parse(&request.uri)?;
        let seen = subscriptions::seen(&self.kb, &caller, &request.uri).await;
        self.followed.add(request.uri, seen)?;
        if self.followed.start() {
            subscriptions::spawn_legacy(
                self.kb.clone(),
                caller,
                self.followed.clone(),
                context.peer.clone(),
            );
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.followed.remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris = subscriptions::within_caps(
            requested
                .resource_subscriptions
                .iter()
                .flatten()
                .filter(|uri| resources::parse(uri).is_ok()),
        );
        *self.accepted_at.lock().unwrap_or_else(|p| p.into_inner()) =
            subscriptions::log_stamp(&self.kb);
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(uris);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let caller = self.caller(context.request_context())?;
        let followed = Arc::new(subscriptions::Followed::default());
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            let seen = subscriptions::seen(&self.kb, &caller, uri).await;
            followed.add(uri.clone(), seen)?;
        }
        followed.start();
        let sink = context.sink().clone();
        let notify = move |uri: String| {
            let sink = sink.clone();
            async move { sink.notify_resource_updated(uri).await.is_ok() }
        };
        // Knowledge changed between the acknowledgment and the reads above:
        // what the client read before may be stale, so every resource is
        // news once (a spare notification costs a re-read; a missed one
        // leaves the client wrong).
        let at_accept = *self.accepted_at.lock().unwrap_or_else(|p| p.into_inner());
        if subscriptions::log_stamp(&self.kb) != at_accept {
            for uri in context.accepted().resource_subscriptions.iter().flatten() {
                if !notify(uri.clone()).await {
                    return Ok(());
                }
            }
        }
        // Ended by the client, or by its transport closing (a dropped HTTP
        // stream need not cancel the request).
        let peer = context.request_context().peer.clone();
        let stop = async {
            tokio::select! {
                _ = context.cancelled() => {}
                _ = subscriptions::closed(&peer) => {}
            }
        };
        subscriptions::follow(self.kb.clone(), caller, followed, notify, stop).await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(prompts::list())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let caller = self.caller(&context)?;
        let result = prompts::get(&self.kb, &caller, &request.name, request.arguments).await?;
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
