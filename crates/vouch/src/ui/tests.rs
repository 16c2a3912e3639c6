//! The review pages in process: sign-in, CSRF, the gate, escaping, groups, browse and health.

use super::*;
use axum::body::Body;
use axum::extract::Request;
use serde_json::json;
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

/// `kb` served over HTTP with one token, alice's (`alice-secret-token`).
fn alices_token_server(kb: Kb) -> crate::http::Application {
    let spec = crate::http::TokenSpec {
        origin: "test".into(),
        raw: "alice=alice-secret-token".into(),
    };
    crate::http::application(
        Arc::new(kb),
        Caller::new("server", Transport::Http),
        &[spec],
        4,
    )
    .unwrap()
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
    session_of(router, get(link, "")).await
}

/// Sign in with a server token (an agent's session); the cookie and the
/// page's CSRF token.
async fn sign_in_with_token(router: &axum::Router, token: &str) -> (String, String) {
    session_of(router, post("/ui/login", "", format!("token={token}"))).await
}

/// The session a sign-in request starts: its cookie and CSRF token.
async fn session_of(router: &axum::Router, sign_in: Request) -> (String, String) {
    let (status, headers, _) = send(router, sign_in).await;
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
    let built = alices_token_server(kb);
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
    let (status, headers, _) = send(&router, post(&approve, &cookie, format!("csrf={csrf}"))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        format!("/?done=approved&id={id}").as_str()
    );
    let (status, _, page) = send(&router, post(&approve, &cookie, format!("csrf={csrf}"))).await;
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

/// A group of more than a page shows the oldest 50 whole, and says so.
#[tokio::test]
async fn a_large_group_is_shown_a_page_at_a_time() {
    let (dir, router, link, _) = review("alice");
    let kb = open(dir.path());
    for n in 0..55 {
        propose(&kb, &format!("Fridays are deploy-free, note {n}"));
    }
    let (cookie, _) = sign_in(&router, &link).await;
    let (status, _, page) = send(&router, get("/ui/group?by=agent", &cookie)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("<span class=\"muted\" id=\"count\">56</span>"),
        "{page}"
    );
    assert!(page.contains("The oldest 50 of 56 are shown"), "{page}");
    assert_eq!(page.matches("name=\"id\"").count(), 50);
}

/// A token's session is an agent's: a decision it makes in the browser
/// meets the request limits its params would meet on the wire (a reason
/// over `limits.max_string_bytes` is refused, nothing is decided).
#[tokio::test]
async fn an_agent_session_meets_the_wire_request_limits() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "t", None).unwrap();
    let config = dir.path().join(".vouch/config.yaml");
    let mut yaml = std::fs::read_to_string(&config).unwrap();
    yaml.push_str("limits:\n  max_string_bytes: 64\n");
    std::fs::write(&config, yaml).unwrap();
    let mut kb = open(dir.path());
    kb.set_trust(vouch_core::settings::PersonalTrust {
        reviewers: vec!["alice".into()],
        ..Default::default()
    });
    let id = propose(&kb, "Deploys freeze on Fridays");
    let built = alices_token_server(kb);
    let router = built.router;
    let (cookie, csrf) = sign_in_with_token(&router, "alice-secret-token").await;
    let reason = "x".repeat(200);
    let (status, _, page) = send(
        &router,
        post(
            &format!("/ui/proposal/{id}/reject"),
            &cookie,
            format!("csrf={csrf}&reason={reason}"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("limits.max_string_bytes"), "{page}");
    assert!(
        dir.path()
            .join(format!(".vouch/proposed/{id}.yaml"))
            .exists(),
        "still pending"
    );
}
