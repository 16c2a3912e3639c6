//! Review in the browser: the pages of `vouch ui`, also served at `/` by
//! `vouch serve --transport http`.
//!
//! Who approves is the signed-in person, never a form field. Signing in:
//! - `vouch ui` (and a tokenless HTTP server) prints a one-time link,
//!   `/ui/login?secret=…` (as Jupyter does): the first visit trades it for
//!   a session cookie and the link is dead after that, so another local
//!   user, or a page in the same browser, has nothing to replay;
//! - a server with bearer tokens takes a token in the sign-in form; its
//!   subject is the person.
//!
//! Every state-changing request is a POST that must carry the session's
//! CSRF token and an `Origin` equal to the server's own (pages on another
//! port of 127.0.0.1 are "same site" to the browser, so `SameSite` alone is
//! not enough); without tokens the `Host` must be loopback (DNS rebinding).
//! Pages forbid scripts and framing (CSP, `X-Frame-Options`) and send a
//! referrer only to themselves (`same-origin`: under `no-referrer` the
//! browser's form posts say `Origin: null`). The gate is the same as on every transport: self-approval
//! stays refused.

pub mod pages;

use crate::auth::{ct_eq, digest};
use crate::errors::mapping;

/// What the review pages need from the server that hosts them (the HTTP
/// application, which stands above this module): the knowledge base, the
/// sign-in state, and its bearer tokens.
pub(crate) trait Host: Send + Sync + 'static {
    fn kb(&self) -> &Arc<Kb>;
    fn ui(&self) -> &Ui;
    fn has_tokens(&self) -> bool;
    /// The subject of a presented bearer token, if it is one.
    fn subject_for(&self, presented: &[u8]) -> Option<String>;
}
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pages::{Frame, url_id};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use vouch_core::{Caller, Error, Kb, Transport, methods};

/// Sessions kept at once; the oldest is dropped past this.
const MAX_SESSIONS: usize = 64;
/// Sessions one person may hold; their oldest is dropped past this (one
/// token holder cannot sign everyone else out).
const MAX_SESSIONS_EACH: usize = 8;
/// A session ends this long after sign-in, or after this long unused: a
/// cookie that leaked (browsers send it to every port of the host) does
/// not stay good.
const SESSION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(12 * 3600);
const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

/// 32 random bytes from the OS, hex.
pub fn secret() -> String {
    let mut b = [0u8; 32];
    // No randomness from the OS means no safe secret: refuse to run.
    getrandom::fill(&mut b).expect("the OS random source failed");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[derive(Clone)]
struct Session {
    subject: String,
    /// Signed in by `vouch ui`'s one-time link: the person who ran it, a
    /// person (`Role::Human`). By a bearer token: an agent transport's
    /// actor, who decides only as a named reviewer.
    person: bool,
    csrf: String,
    /// Order of creation, to drop the oldest.
    serial: u64,
    started: std::time::Instant,
    used: std::time::Instant,
}

impl Session {
    fn expired(&self, now: std::time::Instant) -> bool {
        now.duration_since(self.started) > SESSION_LIFETIME
            || now.duration_since(self.used) > SESSION_IDLE
    }
}

/// The sign-in state of one server.
pub struct Ui {
    /// The person the one-time link signs in, and the digest of its secret
    /// (`None` once used, or on a server with tokens).
    login: Mutex<Option<(String, [u8; 32])>>,
    sessions: Mutex<HashMap<[u8; 32], Session>>,
    serial: Mutex<u64>,
    /// When recent sign-ins failed (unknown token or link), newest last.
    failures: Mutex<std::collections::VecDeque<std::time::Instant>>,
}

/// Failed sign-ins a server answers per minute; past that, every attempt
/// is refused unheard until the minute is over. Guessing a token (or a
/// link's secret) is then capped at this rate, whatever it costs the
/// guesser; a person locked out meanwhile still has the command line.
pub const MAX_FAILED_SIGN_INS_PER_MINUTE: usize = 20;

impl Ui {
    /// Sign-in for `owner` by a one-time link; returns the link's path.
    pub fn with_link(owner: &str) -> (Ui, String) {
        let s = secret();
        let ui = Ui {
            login: Mutex::new(Some((owner.to_string(), digest(s.as_bytes())))),
            ..Ui::tokens_only()
        };
        (ui, format!("/ui/login?secret={s}"))
    }

    /// Sign-in by bearer token only.
    pub fn tokens_only() -> Ui {
        Ui {
            login: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            serial: Mutex::new(0),
            failures: Mutex::new(Default::default()),
        }
    }

    /// Whether sign-ins are refused for now (too many recent failures).
    fn sign_ins_throttled(&self) -> bool {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        while f
            .front()
            .is_some_and(|t| now.duration_since(*t) > std::time::Duration::from_secs(60))
        {
            f.pop_front();
        }
        f.len() >= MAX_FAILED_SIGN_INS_PER_MINUTE
    }

    fn sign_in_failed(&self) {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        f.push_back(std::time::Instant::now());
    }

    fn start_session(&self, subject: &str, person: bool) -> String {
        let cookie = secret();
        let mut serial = self.serial.lock().unwrap_or_else(|e| e.into_inner());
        *serial += 1;
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        sessions.retain(|_, s| !s.expired(now));
        let oldest = |sessions: &HashMap<[u8; 32], Session>, of: Option<&str>| {
            sessions
                .iter()
                .filter(|(_, s)| of.is_none_or(|o| s.subject == o))
                .min_by_key(|(_, s)| s.serial)
                .map(|(k, _)| *k)
        };
        if sessions.values().filter(|s| s.subject == subject).count() >= MAX_SESSIONS_EACH
            && let Some(k) = oldest(&sessions, Some(subject))
        {
            sessions.remove(&k);
        }
        if sessions.len() >= MAX_SESSIONS
            && let Some(k) = oldest(&sessions, None)
        {
            sessions.remove(&k);
        }
        sessions.insert(
            digest(cookie.as_bytes()),
            Session {
                subject: subject.to_string(),
                person,
                csrf: secret(),
                serial: *serial,
                started: now,
                used: now,
            },
        );
        cookie
    }

    fn session(&self, cookie: &str) -> Option<Session> {
        let d = digest(cookie.as_bytes());
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        // Compare every digest in constant time, as bearer tokens are.
        let mut found = None;
        for (k, s) in sessions.iter_mut() {
            if ct_eq(k, &d) && found.is_none() && !s.expired(now) {
                s.used = now;
                found = Some(s.clone());
            }
        }
        found
    }

    fn end_session(&self, cookie: &str) {
        let d = digest(cookie.as_bytes());
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|k, _| !ct_eq(k, &d));
    }

    /// Trade the one-time secret for its owner, once.
    fn redeem(&self, presented: &str) -> Option<String> {
        let mut login = self.login.lock().unwrap_or_else(|e| e.into_inner());
        let (owner, want) = login.as_ref()?;
        if !ct_eq(want, &digest(presented.as_bytes())) {
            return None;
        }
        let owner = owner.clone();
        *login = None;
        Some(owner)
    }
}

/// The session cookie's name, per port: two servers on one host must not
/// overwrite each other's sessions (cookies ignore ports).
fn cookie_name(headers: &HeaderMap) -> String {
    let port = host(headers)
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| "80".into());
    format!("vouch_session_{port}")
}

fn host(headers: &HeaderMap) -> &str {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// An HTML response with the headers every page carries.
fn html(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

fn redirect(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// The page for someone not signed in: how to sign in, and the token form
/// on a server with tokens.
fn sign_in_page<H: Host>(app: &H, status: StatusCode, why: &str) -> Response {
    let mut body = format!("<p class=\"error\" id=\"error\">{}</p>", pages::esc(why));
    body.push_str(
        "<p>Open the sign-in link that <code>vouch ui</code> printed; it works once. Run \
         <code>vouch ui</code> again for a new one.</p>",
    );
    if app.has_tokens() {
        body.push_str(
            "<form class=\"card\" method=\"post\" action=\"/ui/login\"><p>Or sign in with your \
             bearer token:</p><p><input type=\"password\" name=\"token\" autocomplete=\"off\"> \
             <button>Sign in</button></p></form>",
        );
    }
    html(status, pages::bare("Sign in", &body))
}

/// The signed-in session, or the sign-in page.
fn signed_in<H: Host>(app: &H, headers: &HeaderMap) -> Result<Session, Box<Response>> {
    let name = cookie_name(headers);
    cookie(headers, &name)
        .and_then(|c| app.ui().session(c))
        .ok_or_else(|| {
            Box::new(sign_in_page(
                app,
                StatusCode::UNAUTHORIZED,
                "You are not signed in.",
            ))
        })
}

/// A POST must come from this server's own pages: the same `Origin` as
/// its `Host`, and not marked cross-site by the browser.
fn same_origin(headers: &HeaderMap) -> Result<(), String> {
    let host = host(headers);
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .ok_or("this request has no Origin header, so it may come from another site")?;
    let ok = !host.is_empty()
        && (origin == format!("http://{host}") || origin == format!("https://{host}"));
    if !ok {
        return Err(format!(
            "this request came from another site ({}), not from these pages",
            vouch_core::ids::truncate_for_message(origin)
        ));
    }
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|s| s == "cross-site" || s == "same-site")
    {
        return Err("the browser marked this request as coming from another site".into());
    }
    Ok(())
}

fn refused<H: Host>(app: &H, headers: &HeaderMap, status: StatusCode, why: &str) -> Response {
    match signed_in(app, headers) {
        Ok(s) => html(
            status,
            pages::error(
                &Frame {
                    actor: &s.subject,
                    csrf: &s.csrf,
                },
                why,
                Some("/"),
            ),
        ),
        Err(_) => html(
            status,
            pages::bare(
                "Refused",
                &format!("<p class=\"error\" id=\"error\">{}</p>", pages::esc(why)),
            ),
        ),
    }
}

/// Every check of a state-changing request: same origin, signed in, the
/// session's CSRF token. Returns the session.
fn guard_post<H: Host>(
    app: &H,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<Session, Box<Response>> {
    if let Err(why) = same_origin(headers) {
        return Err(Box::new(refused(
            app,
            headers,
            StatusCode::FORBIDDEN,
            &format!("Refused: {why}."),
        )));
    }
    let session = signed_in(app, headers)?;
    let presented = form.get("csrf").map(String::as_str).unwrap_or("");
    if !ct_eq(
        &digest(presented.as_bytes()),
        &digest(session.csrf.as_bytes()),
    ) {
        return Err(Box::new(refused(
            app,
            headers,
            StatusCode::FORBIDDEN,
            "Refused: the form's security token is missing or stale; reload the page and try again.",
        )));
    }
    Ok(session)
}

/// The caller a signed-in session acts as: authenticated (it cannot name
/// another approver); a person when signed in by `vouch ui`'s link, else
/// held to the gate like any agent transport.
fn web_caller(s: &Session) -> Caller {
    Caller {
        authenticated: true,
        role: if s.person {
            vouch_core::Role::Human
        } else {
            vouch_core::Role::Agent
        },
        ..Caller::new(s.subject.clone(), Transport::Web)
    }
}

/// A page for the signed-in person, rendered by `f` on the blocking pool.
async fn signed_page<H: Host, F>(app: Arc<H>, headers: &HeaderMap, f: F) -> Response
where
    F: FnOnce(&H, &Caller, &Frame) -> Result<Option<String>, Error> + Send + 'static,
{
    let session = match signed_in(&*app, headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    render(app, session, f).await
}

/// Run a page renderer on the blocking pool, mapping errors to pages.
async fn render<H: Host, F>(app: Arc<H>, session: Session, f: F) -> Response
where
    F: FnOnce(&H, &Caller, &Frame) -> Result<Option<String>, Error> + Send + 'static,
{
    let out = tokio::task::spawn_blocking(move || {
        let caller = web_caller(&session);
        let frame = Frame {
            actor: &session.subject,
            csrf: &session.csrf,
        };
        match f(&*app, &caller, &frame) {
            Ok(Some(page)) => html(StatusCode::OK, page),
            Ok(None) => html(
                StatusCode::NOT_FOUND,
                pages::error(&frame, "No such object.", Some("/")),
            ),
            Err(e) => {
                let status = StatusCode::from_u16(mapping(e.kind).http_status)
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                html(status, pages::error(&frame, &e.message, Some("/")))
            }
        }
    })
    .await;
    out.unwrap_or_else(|_| {
        html(
            StatusCode::INTERNAL_SERVER_ERROR,
            pages::bare(
                "Error",
                "<p class=\"error\">internal error; see the server's stderr</p>",
            ),
        )
    })
}

/// An id from a URL, checked before it reaches the store.
fn checked_id(id: &str) -> Result<(), String> {
    vouch_core::ids::check_id("id", id).map_err(|e| e.to_string())
}

pub(crate) async fn queue<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let session = match signed_in(&*app, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    // A fixed sentence per outcome: nothing from the URL is shown as text
    // but a checked id.
    let notice = match (q.get("done").map(String::as_str), q.get("id")) {
        (Some(d @ ("approved" | "rejected")), Some(id)) if checked_id(id).is_ok() => Some(format!(
            "{} {id}.",
            if d == "approved" {
                "Approved"
            } else {
                "Rejected"
            }
        )),
        (Some("approved"), None) => q
            .get("n")
            .and_then(|n| n.parse::<usize>().ok())
            .map(|n| format!("Approved {n} proposal(s) together.")),
        _ => None,
    };
    let a = app.clone();
    render(a, session, move |app, caller, frame| {
        pages::queue(app.kb(), caller, frame, notice.as_deref()).map(Some)
    })
    .await
}

/// Renders the page of one object by id (`None`: no such object).
type ObjectPage = fn(&Kb, &Caller, &Frame, &str) -> Result<Option<String>, Error>;

/// A page about one object named in the URL: signed in, the id checked
/// before it reaches the store, then rendered.
async fn object_page<H: Host>(
    app: Arc<H>,
    headers: HeaderMap,
    id: String,
    page: ObjectPage,
) -> Response {
    let session = match signed_in(&*app, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if let Err(why) = checked_id(&id) {
        return refused(&*app, &headers, StatusCode::BAD_REQUEST, &why);
    }
    render(app.clone(), session, move |app, caller, frame| {
        page(app.kb(), caller, frame, &id)
    })
    .await
}

pub(crate) async fn proposal<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    object_page(app, headers, id, pages::proposal).await
}

pub(crate) async fn claim<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    object_page(app, headers, id, pages::claim).await
}

pub(crate) async fn search<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let text = q.get("q").cloned().unwrap_or_default();
    let backend = q.get("backend").cloned().unwrap_or_default();
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        pages::search(app.kb(), caller, frame, &text, &backend).map(Some)
    })
    .await
}

pub(crate) async fn audit<H: Host>(State(app): State<Arc<H>>, headers: HeaderMap) -> Response {
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        pages::audit(app.kb(), caller, frame, 200).map(Some)
    })
    .await
}

/// Approve or reject: the decision as the signed-in person.
async fn decide<H: Host>(
    app: Arc<H>,
    headers: HeaderMap,
    id: String,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
    approve: bool,
) -> Response {
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => return refused(&*app, &headers, StatusCode::BAD_REQUEST, &e.body_text()),
    };
    let session = match guard_post(&*app, &headers, &form) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if let Err(why) = checked_id(&id) {
        return refused(&*app, &headers, StatusCode::BAD_REQUEST, &why);
    }
    let reason = form
        .get("reason")
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    let (method, params) = if approve {
        ("kb.approve", json!({"proposal_id": id, "reason": reason}))
    } else {
        (
            "kb.reject",
            json!({"proposal_id": id, "reason": reason.unwrap_or_default()}),
        )
    };
    let a = app.clone();
    let s = session.clone();
    let pid = id.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        methods::dispatch(a.kb(), &web_caller(&s), method, params)
    })
    .await;
    match outcome {
        Ok(Ok(_)) => redirect(&format!(
            "/?done={}&id={}",
            if approve { "approved" } else { "rejected" },
            url_id(&pid)
        )),
        Ok(Err(e)) => refused_decision(
            &session,
            &e.message,
            e.kind,
            &format!("/ui/proposal/{}", url_id(&id)),
        ),
        Err(_) => internal_error(),
    }
}

/// The page for a decision the gate refused, with the reason and the way
/// back.
fn refused_decision(
    session: &Session,
    message: &str,
    kind: vouch_core::ErrorKind,
    back: &str,
) -> Response {
    let status = StatusCode::from_u16(mapping(kind).http_status)
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let frame = Frame {
        actor: &session.subject,
        csrf: &session.csrf,
    };
    html(status, pages::error(&frame, message, Some(back)))
}

/// The page for a decision that panicked on the blocking pool.
fn internal_error() -> Response {
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        pages::bare(
            "Error",
            "<p class=\"error\">internal error; see the server's stderr</p>",
        ),
    )
}

/// `/ui/browse?kind=&status=&type=&tag=&entity=`: approved knowledge.
pub(crate) async fn browse<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let field = |k: &str| q.get(k).cloned().unwrap_or_default();
    let b = pages::Browse {
        kind: field("kind"),
        status: field("status"),
        claim_type: field("type"),
        tag: field("tag"),
        entity: field("entity"),
    };
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        pages::browse(app.kb(), caller, frame, &b).map(Some)
    })
    .await
}

/// `/ui/health`: what `vouch doctor` reports.
pub(crate) async fn health<H: Host>(State(app): State<Arc<H>>, headers: HeaderMap) -> Response {
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        pages::health(app.kb(), caller, frame).map(Some)
    })
    .await
}

/// `/ui/keys.js`: the pages' keyboard paths (static; no session needed).
pub(crate) async fn keys_js() -> Response {
    let mut r = pages::KEYS_JS.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// `/ui/group?session=ID` or `?by=ACTOR`: a group's proposals together.
pub(crate) async fn group<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let session = match signed_in(&*app, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let g = match (q.get("session"), q.get("by")) {
        (Some(s), None) => pages::Group::Session(s.clone()),
        (None, Some(a)) => pages::Group::By(a.clone()),
        _ => {
            return refused(
                &*app,
                &headers,
                StatusCode::BAD_REQUEST,
                "name one group: ?session=ID or ?by=ACTOR",
            );
        }
    };
    render(app.clone(), session, move |app, caller, frame| {
        pages::group(app.kb(), caller, frame, &g).map(Some)
    })
    .await
}

/// Approve the selected proposals of a group, all or nothing: the same
/// typed gate call as `vouch review` and `vouch approve A B C`. If one
/// cannot be approved (decided meanwhile, changed, refused by the gate),
/// none is, and the page says which and why.
pub(crate) async fn approve_selected<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> Response {
    let pairs = match form {
        Ok(Form(f)) => f,
        Err(e) => return refused(&*app, &headers, StatusCode::BAD_REQUEST, &e.body_text()),
    };
    let fields: HashMap<String, String> =
        pairs.iter().filter(|(k, _)| k != "id").cloned().collect();
    let session = match guard_post(&*app, &headers, &fields) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let ids: Vec<String> = pairs
        .into_iter()
        .filter(|(k, _)| k == "id")
        .map(|(_, v)| v)
        .collect();
    if ids.is_empty() {
        return refused(
            &*app,
            &headers,
            StatusCode::BAD_REQUEST,
            "Nothing was selected; nothing was approved.",
        );
    }
    for id in &ids {
        if let Err(why) = checked_id(id) {
            return refused(&*app, &headers, StatusCode::BAD_REQUEST, &why);
        }
    }
    let reason = fields
        .get("reason")
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    let a = app.clone();
    let s = session.clone();
    let n = ids.len();
    let outcome = tokio::task::spawn_blocking(move || {
        vouch_core::review::gate::approve(
            a.kb(),
            &web_caller(&s),
            vouch_core::params::ApproveParams {
                proposal_id: vouch_core::params::OneOrMany::Many(ids),
                reason,
                approver: None,
            },
        )
    })
    .await;
    match outcome {
        Ok(Ok(_)) => redirect(&format!("/?done=approved&n={n}")),
        Ok(Err(e)) => refused_decision(
            &session,
            &format!("Nothing was approved: {}", e.message),
            e.kind,
            "/",
        ),
        Err(_) => internal_error(),
    }
}

pub(crate) async fn approve<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    decide(app, headers, id, form, true).await
}

pub(crate) async fn reject<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    decide(app, headers, id, form, false).await
}

fn session_cookie(headers: &HeaderMap, value: &str, max_age: Option<u32>) -> HeaderValue {
    let age = max_age
        .map(|a| format!("; Max-Age={a}"))
        .unwrap_or_default();
    HeaderValue::from_str(&format!(
        "{}={value}; Path=/; HttpOnly; SameSite=Strict{age}",
        cookie_name(headers)
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn signed_in_as<H: Host>(headers: &HeaderMap, app: &H, subject: &str, person: bool) -> Response {
    let cookie = app.ui().start_session(subject, person);
    let mut r = redirect("/");
    r.headers_mut().insert(
        header::SET_COOKIE,
        session_cookie(headers, &cookie, Some(SESSION_LIFETIME.as_secs() as u32)),
    );
    r
}

/// `GET /ui/login?secret=…`: the one-time link.
pub(crate) async fn login_link<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if q.contains_key("secret") && app.ui().sign_ins_throttled() {
        return too_many_sign_ins(&*app);
    }
    match q.get("secret").and_then(|s| app.ui().redeem(s)) {
        Some(owner) => signed_in_as(&headers, &*app, &owner, true),
        None if q.contains_key("secret") => {
            app.ui().sign_in_failed();
            sign_in_page(
                &*app,
                StatusCode::FORBIDDEN,
                "This sign-in link is not valid, or was used already.",
            )
        }
        None => sign_in_page(&*app, StatusCode::OK, "Sign in to review."),
    }
}

fn too_many_sign_ins<H: Host>(app: &H) -> Response {
    sign_in_page(
        app,
        StatusCode::TOO_MANY_REQUESTS,
        &format!(
            "More than {MAX_FAILED_SIGN_INS_PER_MINUTE} sign-ins failed in the last minute; \
             sign-in is paused until the minute is over."
        ),
    )
}

/// `POST /ui/login` with a bearer token (servers with tokens).
pub(crate) async fn login_form<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    if let Err(why) = same_origin(&headers) {
        return sign_in_page(&*app, StatusCode::FORBIDDEN, &format!("Refused: {why}."));
    }
    if app.ui().sign_ins_throttled() {
        return too_many_sign_ins(&*app);
    }
    let token = form
        .ok()
        .and_then(|Form(f)| f.get("token").cloned())
        .unwrap_or_default();
    match app.subject_for(token.trim().as_bytes()) {
        Some(subject) => {
            let subject = subject.to_string();
            signed_in_as(&headers, &*app, &subject, false)
        }
        None => {
            app.ui().sign_in_failed();
            sign_in_page(&*app, StatusCode::UNAUTHORIZED, "Unknown token.")
        }
    }
}

pub(crate) async fn logout<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    if let Err(r) = guard_post(&*app, &headers, &form) {
        return *r;
    }
    if let Some(c) = cookie(&headers, &cookie_name(&headers)) {
        app.ui().end_session(c);
    }
    let mut r = sign_in_page(&*app, StatusCode::OK, "Signed out.");
    r.headers_mut()
        .insert(header::SET_COOKIE, session_cookie(&headers, "", Some(0)));
    r
}

/// Whether a path belongs to the review pages (signed in by cookie, not
/// by bearer token).
pub fn is_ui_path(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::extract::Request;
    use tower::ServiceExt;
    use vouch_core::Kb;

    /// A KB with one claim proposed by `agent`, and the review pages for
    /// `person`; returns the router, the sign-in path and the proposal id.
    fn review(person: &str) -> (tempfile::TempDir, axum::Router, String, String) {
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let kb = open(dir.path());
        let id = propose(&kb, "Deploys freeze on Fridays <script>alert(1)</script>");
        let built = crate::http::review_application(Arc::new(kb), person);
        let link = built.sign_in.unwrap();
        (dir, built.router, link, id)
    }

    /// The KB of the project `dir`.
    fn open(dir: &std::path::Path) -> Kb {
        Kb::open(
            &dir.join(".vouch"),
            Arc::new(vouch_core::clock::SystemClock::default()),
        )
        .unwrap()
    }

    /// As `agent`, register the notes and propose `text` citing them; the
    /// proposal id.
    fn propose(kb: &Kb, text: &str) -> String {
        let agent = Caller::new("agent", Transport::Jsonl);
        let src = methods::dispatch(
            kb,
            &agent,
            "kb.register_source",
            json!({"content": "Deploys are frozen on Fridays.", "locator": "notes"}),
        )
        .unwrap();
        methods::dispatch(
            kb,
            &agent,
            "kb.propose_claim",
            json!({"text": text, "evidence": [src["id"]]}),
        )
        .unwrap()["proposal_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn send(router: &axum::Router, req: Request) -> (StatusCode, HeaderMap, String) {
        let res = router.clone().oneshot(req).await.unwrap();
        let (status, headers) = (res.status(), res.headers().clone());
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    fn get(path: &str, cookie: &str) -> Request {
        Request::builder()
            .uri(path)
            .header("host", "127.0.0.1:7000")
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap()
    }

    fn post(path: &str, cookie: &str, body: String) -> Request {
        Request::builder()
            .method("POST")
            .uri(path)
            .header("host", "127.0.0.1:7000")
            .header("origin", "http://127.0.0.1:7000")
            .header("cookie", cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap()
    }

    /// Sign in; returns the cookie and the page's CSRF token.
    async fn sign_in(router: &axum::Router, link: &str) -> (String, String) {
        let (status, headers, _) = send(router, get(link, "")).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        let cookie = headers[header::SET_COOKIE].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_string();
        let (_, _, page) = send(router, get("/", &cookie)).await;
        let csrf = page
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_string();
        (cookie, csrf)
    }

    #[tokio::test]
    async fn on_a_server_with_tokens_a_person_signs_in_with_their_token() {
        let (dir, _, _, _) = review("alice");
        let kb = Kb::open(
            &dir.path().join(".vouch"),
            Arc::new(vouch_core::clock::SystemClock::default()),
        )
        .unwrap();
        let spec = crate::http::TokenSpec {
            origin: "test".into(),
            raw: "alice=alice-secret-token".into(),
        };
        let built = crate::http::application(
            Arc::new(kb),
            Caller::new("server", Transport::Http),
            &[spec],
            4,
        )
        .unwrap();
        assert!(built.sign_in.is_none(), "no one-time link with tokens");
        let router = built.router;
        // Without a session: the sign-in page, with its token form.
        let (status, _, page) = send(&router, get("/", "")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(page.contains("name=\"token\""), "{page}");
        let (status, _, _) = send(&router, post("/ui/login", "", "token=wrong".into())).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, headers, _) = send(
            &router,
            post("/ui/login", "", "token=alice-secret-token".into()),
        )
        .await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        let cookie = headers[header::SET_COOKIE].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_string();
        let (status, _, page) = send(&router, get("/", &cookie)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            page.contains("signed in as <b id=\"actor\">alice</b>"),
            "{page}"
        );
        // The bearer API still needs its token.
        let rpc = Request::builder()
            .method("POST")
            .uri("/rpc")
            .header("host", "127.0.0.1:7000")
            .header("content-type", "application/json")
            .header("cookie", &cookie)
            .body(Body::from(r#"{"id":1,"method":"kb.status"}"#))
            .unwrap();
        assert_eq!(send(&router, rpc).await.0, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn the_proposer_cannot_approve_its_own_proposal_in_the_browser() {
        let (_dir, router, link, id) = review("agent");
        let (cookie, csrf) = sign_in(&router, &link).await;
        let (status, _, page) = send(
            &router,
            post(
                &format!("/ui/proposal/{id}/approve"),
                &cookie,
                format!("csrf={csrf}"),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
        assert!(page.contains("cannot also approve"), "{page}");
    }

    #[tokio::test]
    async fn the_review_pages_refuse_what_they_must() {
        let (_dir, router, link, id) = review("alice");
        // Nothing without signing in, and no agent routes on this server.
        assert_eq!(
            send(&router, get("/", "")).await.0,
            StatusCode::UNAUTHORIZED
        );
        let rpc = Request::builder()
            .method("POST")
            .uri("/rpc")
            .header("host", "127.0.0.1:7000")
            .header("content-type", "application/json")
            .body(Body::from(r#"{"id":1,"method":"kb.status"}"#))
            .unwrap();
        assert_eq!(send(&router, rpc).await.0, StatusCode::NOT_FOUND);
        let (cookie, csrf) = sign_in(&router, &link).await;
        // A Host that is not loopback (DNS rebinding) is refused.
        let mut rebound = get("/", &cookie);
        rebound
            .headers_mut()
            .insert("host", HeaderValue::from_static("evil.example:7000"));
        assert_eq!(send(&router, rebound).await.0, StatusCode::FORBIDDEN);
        // An id with path characters never reaches the store.
        let (status, _, _) = send(&router, get("/ui/proposal/..%2F..%2Fconfig", &cookie)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // Rejecting needs a reason; nothing is written without one.
        let (status, _, page) = send(
            &router,
            post(
                &format!("/ui/proposal/{id}/reject"),
                &cookie,
                format!("csrf={csrf}&reason="),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
        // Approve once; the second time is a clear conflict.
        let approve = format!("/ui/proposal/{id}/approve");
        let (status, headers, _) =
            send(&router, post(&approve, &cookie, format!("csrf={csrf}"))).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        assert_eq!(
            headers[header::LOCATION],
            format!("/?done=approved&id={id}").as_str()
        );
        let (status, _, page) =
            send(&router, post(&approve, &cookie, format!("csrf={csrf}"))).await;
        assert_eq!(status, StatusCode::CONFLICT, "{page}");
        assert!(page.contains("already approved"), "{page}");
        // Stored text is escaped: an agent's markup never runs.
        let (_, _, page) = send(&router, get(&format!("/ui/proposal/{id}"), &cookie)).await;
        assert!(
            page.contains("Fridays &lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script>alert"), "{page}");
    }

    /// Browse lists approved claims by status and tag, with what changed;
    /// Health shows doctor's findings with what to do — a claim written by
    /// hand (no approval in the log) is an error there.
    #[tokio::test]
    async fn browse_filters_claims_and_health_shows_findings() {
        let (dir, router, link, id) = review("alice");
        let kb = open(dir.path());
        methods::dispatch(
            &kb,
            &Caller::new("bob", Transport::Cli),
            "kb.approve",
            json!({"proposal_id": id}),
        )
        .unwrap();
        let (cookie, _) = sign_in(&router, &link).await;
        let (status, _, page) = send(&router, get("/ui/browse", &cookie)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(page.contains("1 claims"), "{page}");
        assert!(page.contains("Fridays &lt;script&gt;"), "{page}");
        assert!(page.contains("Recent changes (1)"), "{page}");
        assert!(page.contains("proposal.approve"), "{page}");
        let (_, _, none) = send(&router, get("/ui/browse?status=archived", &cookie)).await;
        assert!(none.contains("0 claims"), "{none}");
        let (_, _, tagged) = send(&router, get("/ui/browse?tag=nothing-has-it", &cookie)).await;
        assert!(tagged.contains("0 claims"), "{tagged}");

        let (_, _, healthy) = send(&router, get("/ui/health", &cookie)).await;
        assert!(healthy.contains("0 error(s)"), "{healthy}");
        std::fs::write(
            dir.path().join(".vouch/claims/written-by-hand.yaml"),
            "id: written-by-hand\ntext: Nobody reviewed this\ntype: fact\nstatus: stable\n\
             confidence: 0.9\nevidence: []\ncreated_at: '2026-01-01T00:00:00Z'\n\
             updated_at: '2026-01-01T00:00:00Z'\n",
        )
        .unwrap();
        let (_, _, page) = send(&router, get("/ui/health", &cookie)).await;
        assert!(!page.contains("0 error(s)"), "{page}");
        assert!(page.contains("unaudited-object:written-by-hand"), "{page}");
        assert!(
            page.contains("remove it, or propose it for review"),
            "{page}"
        );
    }

    /// A group's proposals are shown whole on one page and approved
    /// together, all or nothing: one rejected between the page and the
    /// approval makes the whole approval refused, with the reason, and
    /// the rest stays pending; approving what remains then succeeds.
    #[tokio::test]
    async fn a_group_is_approved_all_or_nothing() {
        let (dir, router, link, first) = review("alice");
        let kb = open(dir.path());
        let second = propose(&kb, "Fridays are deploy-free");
        let (cookie, csrf) = sign_in(&router, &link).await;
        let (_, _, queue) = send(&router, get("/", &cookie)).await;
        assert!(queue.contains("/ui/group?by=agent"), "{queue}");
        let (status, _, page) = send(&router, get("/ui/group?by=agent", &cookie)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for id in [&first, &second] {
            assert!(
                page.contains(&format!("name=\"id\" value=\"{id}\" checked")),
                "{page}"
            );
        }
        // Shown whole: the escaped text, and the cited quote.
        assert!(page.contains("Fridays &lt;script&gt;"), "{page}");
        assert!(page.contains("Deploys are frozen on Fridays."), "{page}");
        // Someone rejects one in between.
        methods::dispatch(
            &kb,
            &Caller::new("bob", Transport::Cli),
            "kb.reject",
            json!({"proposal_id": first, "reason": "duplicate"}),
        )
        .unwrap();
        let both = format!("csrf={csrf}&id={first}&id={second}");
        let (status, _, page) = send(&router, post("/ui/approve-selected", &cookie, both)).await;
        assert_eq!(status, StatusCode::CONFLICT, "{page}");
        assert!(page.contains("Nothing was approved"), "{page}");
        assert!(page.contains(&first), "{page}");
        let pending = vouch_core::review::gate::list_pending(&kb).unwrap();
        assert_eq!(pending.len(), 1, "the other is still pending");
        // A forged post (no CSRF token) is refused.
        let (status, _, _) = send(
            &router,
            post("/ui/approve-selected", &cookie, format!("id={second}")),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, headers, _) = send(
            &router,
            post(
                "/ui/approve-selected",
                &cookie,
                format!("csrf={csrf}&id={second}"),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        assert_eq!(headers[header::LOCATION], "/?done=approved&n=1");
        assert!(
            vouch_core::review::gate::list_pending(&kb)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_login_link_works_once() {
        let (ui, path) = Ui::with_link("alice");
        let secret = path.rsplit('=').next().unwrap();
        assert_eq!(ui.redeem("wrong"), None);
        assert_eq!(ui.redeem(secret).as_deref(), Some("alice"));
        assert_eq!(ui.redeem(secret), None, "a second use must fail");
    }

    #[test]
    fn sessions_are_found_by_cookie_and_capped() {
        let ui = Ui::tokens_only();
        let first = ui.start_session("alice", true);
        assert_eq!(ui.session(&first).unwrap().subject, "alice");
        assert!(ui.session("nope").is_none());
        // One person's sessions are capped on their own: bob signing in
        // again and again never signs alice out.
        for _ in 0..3 * MAX_SESSIONS_EACH {
            ui.start_session("bob", true);
        }
        assert!(ui.session(&first).is_some(), "alice is still signed in");
        for i in 0..MAX_SESSIONS {
            ui.start_session(&format!("user{i}"), true);
        }
        assert!(ui.session(&first).is_none(), "the oldest is dropped");
        let c = ui.start_session("carol", true);
        ui.end_session(&c);
        assert!(ui.session(&c).is_none());
    }

    #[test]
    fn a_post_from_another_origin_is_refused() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8765"));
        assert!(same_origin(&h).is_err(), "no Origin");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:9999"),
        );
        assert!(same_origin(&h).is_err(), "another port is another origin");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8765"),
        );
        assert!(same_origin(&h).is_ok());
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(same_origin(&h).is_err());
    }
}
