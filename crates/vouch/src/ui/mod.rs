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

mod browse;
pub(crate) mod html;
pub(crate) mod insight;
pub mod pages;
mod signin;

use signin::Session;
pub(crate) use signin::{Ui, login_form, login_link, logout};

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
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use vouch_core::methods::{self, kb};
use vouch_core::params::{ApproveParams, OneOrMany, RejectParams};
use vouch_core::{Caller, Error, Kb, Transport};

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
    let found = match cookie(headers, &name).map(|c| app.ui().session(c)) {
        Some(Err(why)) => {
            // The details (which database, why) are for the operator, not
            // for whoever opened the page.
            eprintln!("vouch: review pages: a session could not be read: {why}");
            return Err(Box::new(sign_in_page(
                app,
                StatusCode::SERVICE_UNAVAILABLE,
                "Your session could not be read just now; try again in a moment.",
            )));
        }
        Some(Ok(found)) => found,
        None => None,
    };
    found.ok_or_else(|| {
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
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        pages::queue(app.kb(), caller, frame, notice.as_deref()).map(Some)
    })
    .await
}

/// A page about one object named in the URL: signed in, the id checked
/// before it reaches the store, then rendered by `page` (`None`: no such
/// object).
async fn object_page<H: Host, P>(app: Arc<H>, headers: HeaderMap, id: String, page: P) -> Response
where
    P: FnOnce(&Kb, &Caller, &Frame, &str) -> Result<Option<String>, Error> + Send + 'static,
{
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
        browse::audit(app.kb(), caller, frame, 200).map(Some)
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
    let a = app.clone();
    let s = session.clone();
    let pid = id.clone();
    // The same typed calls `vouch review` makes; an agent's session (a
    // token's) meets the wire's request limits.
    let outcome = tokio::task::spawn_blocking(move || {
        let caller = web_caller(&s);
        if approve {
            let params = ApproveParams {
                proposal_id: OneOrMany::One(pid),
                reason,
                approver: None,
            };
            methods::call_over_transport::<kb::Approve>(a.kb(), &caller, params).map(|_| ())
        } else {
            let params = RejectParams {
                proposal_id: pid,
                reason: reason.unwrap_or_default(),
            };
            methods::call_over_transport::<kb::Reject>(a.kb(), &caller, params).map(|_| ())
        }
    })
    .await;
    match outcome {
        Ok(Ok(())) => redirect(&format!(
            "/?done={}&id={}",
            if approve { "approved" } else { "rejected" },
            url_id(&id)
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
    let b = browse::Browse {
        kind: field("kind"),
        status: field("status"),
        claim_type: field("type"),
        tag: field("tag"),
        entity: field("entity"),
    };
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        browse::browse(app.kb(), caller, frame, &b).map(Some)
    })
    .await
}

/// `/ui/health`: what `vouch doctor` reports.
pub(crate) async fn health<H: Host>(State(app): State<Arc<H>>, headers: HeaderMap) -> Response {
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        browse::health(app.kb(), caller, frame).map(Some)
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
    let g = match (q.get("session"), q.get("by")) {
        (Some(s), None) => Some(pages::Group::Session(s.clone())),
        (None, Some(a)) => Some(pages::Group::By(a.clone())),
        _ => None,
    };
    signed_page(app.clone(), &headers, move |app, caller, frame| match g {
        Some(g) => pages::group(app.kb(), caller, frame, &g).map(Some),
        None => Err(Error::invalid("name one group: ?session=ID or ?by=ACTOR")),
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

/// Whether a path belongs to the review pages (signed in by cookie, not
/// by bearer token).
pub(crate) fn is_ui_path(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

#[cfg(test)]
mod tests;
