//! HTTP: the same registry over axum.
//!
//! - `POST /rpc` takes the JSONL envelope `{id, method, params}` and answers
//!   exactly as the JSONL transport does (`crate::jsonl::handle_line`), with
//!   status 200 whatever the envelope says; transport failures (401, 413,
//!   415) answer with the same envelope shape and `id: null`.
//! - `/mcp` is MCP streamable HTTP (rmcp), with the same tools as stdio.
//! - `GET /health` → `{"ok": true}` (no auth); `GET /capabilities` → the
//!   kb.capabilities result.
//!
//! Auth: with `--token SUBJECT=TOKEN` every route but /health needs
//! `Authorization: Bearer TOKEN`, and the token's subject is the actor —
//! authenticated, so no param can act as someone else. Without tokens the
//! server only binds loopback and only answers loopback `Host` names (a
//! guard against DNS rebinding), and `/rpc` only takes `application/json`
//! (so a web page cannot post to it without a CORS preflight).

pub(crate) use crate::auth::ct_eq;
pub(crate) mod listen;

use crate::auth::digest;
use crate::errors::mapping;
use crate::mcp;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use vouch_core::{Caller, Error, Kb, Transport, methods};

/// Largest response read back by the in-process tests.
#[cfg(test)]
const MAX_BODY: usize = 1024 * 1024;

/// One configured bearer token: the subject, and the SHA-256 of the secret
/// (the secret itself is not kept).
struct Token {
    subject: String,
    digest: [u8; 32],
    /// Characters in the secret (never the secret itself), for the length
    /// a network-reachable server demands.
    chars: usize,
}

/// The shortest token a server bound beyond loopback accepts: 32
/// characters, 128 bits as hex (`openssl rand -hex 16`). A guessable
/// token there is the review gate's key handed to the network, and the
/// sign-in form is the place to guess it.
pub(crate) const MIN_REMOTE_TOKEN_CHARS: usize = 32;

/// A `SUBJECT=TOKEN` value and where it came from (`--token #2`,
/// `tokens.txt line 3`), for messages that must never contain the token.
#[derive(Debug, Clone)]
pub(crate) struct TokenSpec {
    pub origin: String,
    pub raw: String,
}

/// Parse `SUBJECT=TOKEN` values. Messages never contain a token.
fn parse_tokens(raw: &[TokenSpec]) -> Result<Vec<Token>, Error> {
    let mut out: Vec<Token> = Vec::new();
    for TokenSpec { origin, raw: t } in raw {
        let Some((subject, secret)) = t.split_once('=') else {
            return Err(Error::invalid(format!(
                "{origin}: expected SUBJECT=TOKEN (the subject is the actor)"
            )));
        };
        let subject = subject.trim();
        // A presented token is trimmed (`Bearer  tok ` is `tok`), so a
        // configured one must be too: `carol = tok` in a token file would
        // otherwise hold a token no request can match.
        let secret = secret.trim();
        if subject.is_empty() {
            return Err(Error::invalid(format!(
                "{origin}: the subject before `=` is empty"
            )));
        }
        // The subject is the actor its holder's events are signed with.
        if let Some(problem) = vouch_core::ids::actor_name_problem(subject) {
            return Err(Error::invalid(format!(
                "{origin}: the subject {subject:?} {problem}"
            )));
        }
        // A token holder may decide: not under the log's "no name".
        if vouch_core::ids::reads_as_no_name(subject) {
            return Err(Error::invalid(format!(
                "{origin}: the subject {subject:?} reads as {:?}, the name the audit log uses \
                 for \"no name\"; name the token's holder",
                vouch_core::ids::NO_NAME
            )));
        }
        if secret.is_empty() {
            return Err(Error::invalid(format!(
                "{origin} ({subject}): the token after `=` is empty"
            )));
        }
        let d = digest(secret.as_bytes());
        if out.iter().any(|o| ct_eq(&o.digest, &d)) {
            return Err(Error::invalid(format!(
                "{origin} ({subject}): the same token is given twice"
            )));
        }
        out.push(Token {
            subject: subject.to_string(),
            digest: d,
            chars: secret.chars().count(),
        });
    }
    Ok(out)
}

pub(crate) struct App {
    pub(crate) kb: Arc<Kb>,
    tokens: Vec<Token>,
    /// The actor when no token is configured.
    anonymous: Caller,
    /// Sign-in to the review pages.
    pub(crate) ui: crate::ui::Ui,
    /// Requests at work at once on the blocking pool, reads and writes
    /// apart: writes take turns on the knowledge base's lock anyway, and a
    /// write waiting its turn must not hold the permit a read needs (under
    /// ten writers a search waited 10 ms for one). A read answered with a
    /// timeout keeps its permit until it really ends, so a client cannot
    /// pile up work by timing reads out.
    work: Work,
}

/// The two permit pools of [`App::work`].
pub(crate) struct Work {
    reads: Arc<Semaphore>,
    writes: Arc<Semaphore>,
}

impl Work {
    /// A few of each per core: a write does much of its work (checks,
    /// reading what it cites) before it takes the lock.
    fn new() -> Work {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Work {
            reads: Arc::new(Semaphore::new(cores * 4)),
            writes: Arc::new(Semaphore::new(cores * 4)),
        }
    }

    fn pool(&self, read: bool) -> Arc<Semaphore> {
        if read {
            self.reads.clone()
        } else {
            self.writes.clone()
        }
    }
}

impl App {
    pub(crate) fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The subject of a presented token, checking every configured token so
    /// the time does not reveal which one matched.
    pub(crate) fn subject_for(&self, presented: &[u8]) -> Option<&str> {
        let presented = digest(presented);
        let mut found = None;
        for t in &self.tokens {
            if ct_eq(&t.digest, &presented) && found.is_none() {
                found = Some(t.subject.as_str());
            }
        }
        found
    }
}

impl crate::ui::Host for App {
    fn kb(&self) -> &Arc<Kb> {
        &self.kb
    }
    fn ui(&self) -> &crate::ui::Ui {
        &self.ui
    }
    fn has_tokens(&self) -> bool {
        App::has_tokens(self)
    }
    fn subject_for(&self, presented: &[u8]) -> Option<String> {
        App::subject_for(self, presented).map(str::to_string)
    }
}

/// Why a body over `limits.http_max_body_bytes` is refused.
fn body_too_large(max: u64) -> String {
    format!("request body is over {max} bytes (config.yaml `limits.http_max_body_bytes`)")
}

/// The JSONL error envelope, for failures before dispatch.
fn envelope_error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({"id": null, "ok": false, "error": {"code": "invalid_request", "message": message.into()}});
    (status, Json(body)).into_response()
}

pub(crate) fn host_is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Authenticate (or, without tokens, check the Host) and attach the
/// [`Caller`] to the request for the handlers and the MCP service.
async fn auth(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    if req.uri().path() == "/health" {
        return next.run(req).await;
    }
    if app.tokens.is_empty() {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        if !host_is_loopback(host) {
            return envelope_error(
                StatusCode::FORBIDDEN,
                "this server has no tokens and only answers requests addressed to localhost",
            );
        }
    }
    // The review pages sign people in by cookie (see `crate::ui`).
    if crate::ui::is_ui_path(req.uri().path()) {
        return next.run(req).await;
    }
    let caller = if app.tokens.is_empty() {
        app.anonymous.clone()
    } else {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| {
                let (scheme, rest) = h.split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| rest.trim().as_bytes())
            });
        let subject = presented.and_then(|p| app.subject_for(p));
        let Some(subject) = subject else {
            let mut r = envelope_error(
                StatusCode::UNAUTHORIZED,
                "missing or unknown bearer token: send `Authorization: Bearer <token>`",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        };
        Caller {
            authenticated: true,
            ..Caller::new(subject, Transport::Http)
        }
    };
    let owner = caller.actor.clone();
    req.extensions_mut().insert(caller);
    // The MCP session manager reads the actor from here (see
    // `mcp::CappedSessions`).
    mcp::SESSION_OWNER.scope(owner, next.run(req)).await
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

async fn rpc(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            let status = e.status();
            let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
                body_too_large(app.kb.settings().limits.http_max_body_bytes)
            } else {
                format!("could not read the request body: {}", e.body_text())
            };
            return envelope_error(status, message);
        }
    };
    if !is_json(&headers) {
        return envelope_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "POST /rpc takes `Content-Type: application/json`",
        );
    }
    // A read that runs past `limits.request_timeout_ms` is answered with an
    // error (it finishes unseen); a write is never cut off, since its
    // caller must learn whether it happened.
    // Parsed once: the method says whether a timeout may cut it off, and
    // the same value is answered.
    let request: serde_json::Result<Value> = serde_json::from_slice(&body);
    let read = request
        .as_ref()
        .ok()
        .and_then(|r| r.get("method"))
        .and_then(Value::as_str)
        .and_then(|m| methods::find(m).or_else(|| methods::find_tool(m)))
        .is_some_and(|m| m.effect == methods::Effect::Read);
    let id = request
        .as_ref()
        .ok()
        .and_then(|r| r.get("id"))
        .cloned()
        .unwrap_or(Value::Null);
    let timeout_ms = app.kb.settings().limits.request_timeout_ms;
    let kb = app.kb.clone();
    let Ok(permit) = app.work.pool(read).acquire_owned().await else {
        return envelope_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down",
        );
    };
    let work = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        crate::jsonl::handle_request(&kb, &caller, request)
    });
    let outcome = if read {
        let limit = Duration::from_millis(timeout_ms);
        let started = std::time::Instant::now();
        // A read that finished past the limit (before the timer fired) is
        // refused too: the limit means the same whichever wakes first.
        match tokio::time::timeout(limit, work).await {
            Ok(done) if started.elapsed() < limit => done,
            _ => {
                let body = json!({"id": id, "ok": false, "error": {"code": "invalid_request",
                    "message": format!("the request took longer than {timeout_ms} ms \
                        (config.yaml `limits.request_timeout_ms`); narrow it (a smaller \
                        `limit`, a shorter query)")}});
                return Json(body).into_response();
            }
        }
    } else {
        work.await
    };
    match outcome {
        Ok(v) => Json(v).into_response(),
        Err(_) => {
            let body = json!({"id": null, "ok": false, "error": {"code": "internal_error",
                "message": "the server hit an internal error; see stderr"}});
            (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response()
        }
    }
}

async fn capabilities(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    match methods::dispatch(&app.kb, &caller, "kb.capabilities", Value::Null) {
        Ok(v) => Json(v).into_response(),
        Err(e) => {
            let m = mapping(e.kind);
            let status =
                StatusCode::from_u16(m.http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let body = json!({"id": null, "ok": false, "error": {"code": m.wire_code, "message": e.message}});
            (status, Json(body)).into_response()
        }
    }
}

async fn health() -> Json<Value> {
    Json(json!({"ok": true}))
}

async fn not_found() -> Response {
    envelope_error(
        StatusCode::NOT_FOUND,
        "no such route: POST /rpc, /mcp, GET /capabilities, GET /health, GET / (review pages)",
    )
}

async fn ui_not_found() -> Response {
    envelope_error(
        StatusCode::NOT_FOUND,
        "no such route: this server has only the review pages (GET /) and GET /health",
    )
}

/// Why a request body could not be read whole.
pub(crate) enum BodyError {
    /// Over the size allowed.
    TooLarge,
    /// The client broke off mid-body, or sent a malformed one.
    Broken(String),
}

/// A request's whole body, at most `max` bytes (refused at once when its
/// `Content-Length` says more).
pub(crate) async fn read_body(mut body: axum::body::Body, max: u64) -> Result<Bytes, BodyError> {
    use axum::body::HttpBody;
    if body.size_hint().lower() > max {
        return Err(BodyError::TooLarge);
    }
    let mut out: Vec<u8> = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let frame = frame.map_err(|e| BodyError::Broken(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if (out.len() + data.len()) as u64 > max {
                return Err(BodyError::TooLarge);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

/// The review pages' forms are a few fields: at most this many bytes (and,
/// as every body, whole within `listen::Limits::body_timeout`, which
/// `listen::guard` enforces before this runs).
const FORM_MAX_BYTES: u64 = 16 * 1024;

/// Refuse a form over [`FORM_MAX_BYTES`] before anything else looks at
/// the request.
async fn bounded_form(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match read_body(body, FORM_MAX_BYTES).await {
        Err(BodyError::TooLarge) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a form is at most {FORM_MAX_BYTES} bytes"),
        )
            .into_response(),
        Err(BodyError::Broken(e)) => {
            (StatusCode::BAD_REQUEST, format!("a broken form: {e}")).into_response()
        }
        Ok(bytes) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    }
}

/// The review pages' routes (`crate::ui`).
fn ui_routes(router: Router<Arc<App>>) -> Router<Arc<App>> {
    use crate::ui;
    let form = || middleware::from_fn(bounded_form);
    router
        .route("/", get(ui::queue::<App>))
        .route(
            "/ui/login",
            get(ui::login_link::<App>)
                .post(ui::login_form::<App>)
                .layer(form()),
        )
        .route("/ui/logout", post(ui::logout::<App>).layer(form()))
        .route("/ui/proposal/{id}", get(ui::proposal::<App>))
        .route(
            "/ui/proposal/{id}/approve",
            post(ui::approve::<App>).layer(form()),
        )
        .route(
            "/ui/proposal/{id}/reject",
            post(ui::reject::<App>).layer(form()),
        )
        .route("/ui/claim/{id}", get(ui::claim::<App>))
        .route("/ui/search", get(ui::search::<App>))
        .route("/ui/group", get(ui::group::<App>))
        .route("/ui/keys.js", get(ui::keys_js))
        .route("/ui/browse", get(ui::browse::<App>))
        .route("/ui/health", get(ui::health::<App>))
        .route(
            "/ui/approve-selected",
            post(ui::approve_selected::<App>).layer(form()),
        )
        .route("/ui/audit", get(ui::audit::<App>))
        .route("/ui/why/{id}", get(ui::insight::why::<App>))
        .route("/ui/stats", get(ui::insight::stats::<App>))
}

/// The HTTP application without a listener: routes, bearer-token auth,
/// body limit and the MCP service, so tests can drive it in process.
pub(crate) struct Application {
    pub router: Router,
    /// Ends rmcp's open SSE streams (on shutdown), so their connections
    /// can close.
    pub stop_mcp: Box<dyn FnOnce() + Send>,
    /// How many bearer tokens are configured (0: loopback only).
    pub tokens: usize,
    /// The subject and length of the shortest token, if any.
    pub shortest_token: Option<(String, usize)>,
    /// The review pages' one-time sign-in path (`/ui/login?secret=…`),
    /// when the server has no tokens.
    pub sign_in: Option<String>,
}

/// Only the review pages, signing in `person` by a one-time link: what
/// `vouch ui` serves. No `/rpc` or `/mcp`: a local process must not reach
/// the person's identity through this server.
pub(crate) fn review_application(kb: Arc<Kb>, person: &str) -> Application {
    let max_body = kb.settings().limits.http_max_body_bytes as usize;
    let (ui, link) = crate::ui::Ui::with_link(person);
    let app = Arc::new(App {
        kb,
        tokens: Vec::new(),
        anonymous: Caller::new(person, Transport::Web),
        ui,
        work: Work::new(),
    });
    let router = ui_routes(Router::new())
        .route("/health", get(health))
        .fallback(ui_not_found)
        .layer(middleware::from_fn_with_state(app.clone(), listen::guard))
        .layer(middleware::from_fn_with_state(app.clone(), auth))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(app);
    Application {
        router,
        stop_mcp: Box::new(|| {}),
        tokens: 0,
        shortest_token: None,
        sign_in: Some(link),
    }
}

/// Build the application. `anonymous` is the actor when no token is
/// configured.
pub(crate) fn application(
    kb: Arc<Kb>,
    anonymous: Caller,
    raw_tokens: &[TokenSpec],
    max_mcp_sessions: usize,
) -> Result<Application, Error> {
    let tokens = parse_tokens(raw_tokens)?;
    let max_body = kb.settings().limits.http_max_body_bytes as usize;
    let mut mcp_config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_body)
        .with_sse_keep_alive(Some(Duration::from_secs(15)));
    if !tokens.is_empty() {
        // Bearer tokens already stop DNS rebinding; let any Host through so
        // a server bound to a LAN address answers its own name.
        mcp_config = mcp_config.disable_allowed_hosts();
    }
    let mcp_cancel = mcp_config.cancellation_token.clone();
    let mcp_kb = kb.clone();
    let sessions = Arc::new(mcp::CappedSessions::new(
        max_mcp_sessions,
        mcp::SESSION_IDLE,
    ));
    let mcp_service = StreamableHttpService::new(
        move || Ok(mcp::Handler::http(mcp_kb.clone())),
        sessions,
        mcp_config,
    );
    let n_tokens = tokens.len();
    let shortest_token = tokens
        .iter()
        .min_by_key(|t| t.chars)
        .map(|t| (t.subject.clone(), t.chars));
    // Without tokens, the one-time link signs in the server's own actor.
    let (ui, sign_in) = if tokens.is_empty() {
        let (ui, link) = crate::ui::Ui::with_link(&anonymous.actor);
        (ui.shared_by_team(), Some(link))
    } else {
        (crate::ui::Ui::tokens_only().shared_by_team(), None)
    };
    let app = Arc::new(App {
        kb,
        tokens,
        anonymous,
        ui,
        work: Work::new(),
    });
    let router = ui_routes(Router::new())
        .route("/rpc", post(rpc))
        .route("/capabilities", get(capabilities))
        .route("/health", get(health))
        .nest_service("/mcp", mcp_service)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), listen::guard))
        .layer(middleware::from_fn_with_state(app.clone(), auth))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(app);
    Ok(Application {
        router,
        stop_mcp: Box::new(move || mcp_cancel.cancel()),
        tokens: n_tokens,
        shortest_token,
        sign_in,
    })
}

#[cfg(test)]
mod tests {
    use super::listen::resolve_bind;
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    #[test]
    fn beyond_loopback_the_shortest_token_needs_128_bits() {
        let short = ("alice".to_string(), MIN_REMOTE_TOKEN_CHARS - 1);
        let long = ("alice".to_string(), MIN_REMOTE_TOKEN_CHARS);
        assert!(resolve_bind("0.0.0.0:0", None).is_err());
        assert!(resolve_bind("0.0.0.0:0", Some(&short)).is_err());
        assert!(resolve_bind("0.0.0.0:0", Some(&long)).is_ok());
        // Loopback takes any token, or none (the person's own machine).
        assert!(resolve_bind("127.0.0.1:0", Some(&short)).is_ok());
        assert!(resolve_bind("127.0.0.1:0", None).is_ok());
    }

    fn app(tokens: &[&str]) -> (tempfile::TempDir, Router) {
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let kb = Arc::new(
            Kb::open(
                &dir.path().join(".vouch"),
                Arc::new(vouch_core::clock::SystemClock::default()),
            )
            .unwrap(),
        );
        let specs: Vec<TokenSpec> = tokens
            .iter()
            .map(|t| TokenSpec {
                origin: "test".into(),
                raw: t.to_string(),
            })
            .collect();
        let built = application(kb, Caller::new("agent", Transport::Http), &specs, 4).unwrap();
        (dir, built.router)
    }

    async fn call(router: &Router, req: Request) -> (StatusCode, Value) {
        let res = router.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), MAX_BODY)
            .await
            .unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn rpc(body: &str, token: Option<&str>) -> Request {
        let mut b = Request::builder()
            .method("POST")
            .uri("/rpc")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json");
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        b.body(Body::from(body.to_string())).unwrap()
    }

    #[tokio::test]
    async fn the_application_answers_in_process() {
        let (_dir, router) = app(&[]);
        let (status, v) = call(&router, rpc(r#"{"id": 1, "method": "kb.status"}"#, None)).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["ok"], true, "{v}");
        // An agent names someone else as approver: refused.
        let (_, v) = call(
            &router,
            rpc(
                r#"{"id": 2, "method": "kb.approve", "params": {"proposal_id": "x", "approver": "alice"}}"#,
                None,
            ),
        )
        .await;
        assert_eq!(v["ok"], false, "{v}");
        assert!(v.to_string().contains("cannot name someone else"), "{v}");
        let req = Request::builder()
            .uri("/nowhere")
            .header("host", "127.0.0.1")
            .body(Body::empty())
            .unwrap();
        assert_eq!(call(&router, req).await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn tokens_are_required_when_configured_and_name_the_actor() {
        let (_dir, router) = app(&["alice=s3cret-token"]);
        let (status, _) = call(&router, rpc(r#"{"id": 1, "method": "kb.status"}"#, None)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = call(
            &router,
            rpc(r#"{"id": 1, "method": "kb.status"}"#, Some("wrong")),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, v) = call(
            &router,
            rpc(
                r#"{"id": 1, "method": "kb.register_source", "params": {"content": "x", "locator": "l"}}"#,
                Some("s3cret-token"),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        let (_, v) = call(
            &router,
            rpc(r#"{"id": 2, "method": "kb.audit"}"#, Some("s3cret-token")),
        )
        .await;
        assert_eq!(v["result"][0]["actor"], "alice", "{v}");
    }
}
