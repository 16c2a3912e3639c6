//! The review pages in process: sign-in, CSRF, the gate, escaping, groups,
//! browse, health, provenance and the gate's health.

use super::signin::{MAX_SESSIONS, MAX_SESSIONS_EACH};
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
    let start = |who: &str| ui.start_session(who, true).expect("a session");
    let found = |cookie: &str| ui.session(cookie).expect("this process's sessions");
    let first = start("alice");
    assert_eq!(found(&first).unwrap().subject, "alice");
    assert!(found("nope").is_none());
    // One person's sessions are capped on their own: bob signing in
    // again and again never signs alice out.
    for _ in 0..3 * MAX_SESSIONS_EACH {
        start("bob");
    }
    assert!(found(&first).is_some(), "alice is still signed in");
    for i in 0..MAX_SESSIONS {
        start(&format!("user{i}"));
    }
    assert!(found(&first).is_none(), "the oldest is dropped");
    let c = start("carol");
    ui.end_session(&c);
    assert!(found(&c).is_none());
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

/// Every file under `.vouch/` with its bytes: a read must leave them be.
fn files(root: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![root.join(".vouch")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A person's call, its result.
fn call(kb: &Kb, who: &Caller, method: &str, params: serde_json::Value) -> serde_json::Value {
    methods::dispatch(kb, who, method, params).unwrap()
}

/// Approve as bob; the object made.
fn approved(kb: &Kb, proposed: &serde_json::Value) -> String {
    let bob = Caller::new("bob", Transport::Cli);
    let id = json!({"proposal_id": proposed["proposal_id"]});
    call(kb, &bob, "kb.approve", id)["object_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The provenance page tells an object's whole story through `kb.why`:
/// who proposed and approved it and when, its quote marked in its source,
/// every audit event; what rests on it (`kb.impact`) and what lies around
/// it (`kb.neighbors`) beside, each linked; a hand edit shown as
/// UNAUDITED; every stored value escaped; and it writes nothing.
#[tokio::test]
async fn the_provenance_page_tells_an_objects_whole_story() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "t", None).unwrap();
    let kb = open(dir.path());
    let agent = Caller::new("agent", Transport::Jsonl);
    let notes =
        json!({"content": "Ops: deploys are frozen on <b>Fridays</b>.", "locator": "notes"});
    let src = call(&kb, &agent, "kb.register_source", notes)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let quote = json!({"source_id": src, "quote": "frozen on <b>Fridays</b>"});
    let ev = call(&kb, &agent, "kb.register_evidence", quote)["evidence_id"].clone();
    let proposed = call(
        &kb,
        &agent,
        "kb.propose_claim",
        json!({"text": "Deploys freeze on Fridays <script>alert(1)</script>",
               "evidence": [ev], "rationale": "from the <i>ops</i> notes"}),
    );
    let pid = proposed["proposal_id"].as_str().unwrap().to_string();
    let claim = approved(&kb, &proposed);
    let team = json!({"name": "Deploy <team>", "type": "project"});
    let entity = approved(&kb, &call(&kb, &agent, "kb.propose_entity", team));
    let edge = json!({"source": claim, "relation": "references", "target": entity});
    let relation = approved(&kb, &call(&kb, &agent, "kb.propose_relation", edge));
    let built = crate::http::review_application(Arc::new(kb), "alice");
    let router = built.router;
    let (cookie, _) = sign_in(&router, &built.sign_in.unwrap()).await;
    let before = files(dir.path());

    let (status, _, page) = send(&router, get(&format!("/ui/why/{claim}"), &cookie)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    for want in [
        "Fridays &lt;script&gt;alert(1)&lt;/script&gt;",
        "<mark>frozen on &lt;b&gt;Fridays&lt;/b&gt;</mark>",
        "from the &lt;i&gt;ops&lt;/i&gt; notes",
        &format!("href=\"/ui/proposal/{pid}\""),
        "<dt>proposed by</dt><dd>agent</dd>",
        "<dt>decided by</dt><dd>bob</dd>",
        "class=\"notice\" id=\"gate\">Its file is what the gate wrote",
        "proposal.create",
        "proposal.approve",
        // Beside it: what rests on it, what lies around it.
        &format!("href=\"/ui/why/{relation}?kind=relation\""),
        "starts from it",
        &format!("href=\"/ui/why/{entity}?kind=entity\""),
        "Deploy &lt;team&gt;",
        &format!("href=\"/ui/claim/{claim}\""),
    ] {
        assert!(page.contains(want), "{want} not in {page}");
    }
    for markup in ["<script>alert", "<b>Fridays", "<team>", "<i>ops"] {
        assert!(!page.contains(markup), "{markup} unescaped in {page}");
    }
    // A source: what cites it through its evidence; not gated.
    let (status, _, page) = send(&router, get(&format!("/ui/why/{src}"), &cookie)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("cites it through evidence"), "{page}");
    assert!(page.contains("quotes it"), "{page}");
    assert!(page.contains("are not gated"), "{page}");
    // Linked from the claim's page, its proposal's page and search.
    let (_, _, page) = send(&router, get(&format!("/ui/claim/{claim}"), &cookie)).await;
    assert!(
        page.contains(&format!("/ui/why/{claim}?kind=claim")),
        "{page}"
    );
    let (_, _, page) = send(&router, get(&format!("/ui/proposal/{pid}"), &cookie)).await;
    assert!(
        page.contains(&format!("href=\"/ui/why/{claim}\"")),
        "{page}"
    );
    let (_, _, page) = send(&router, get("/ui/search?q=Fridays", &cookie)).await;
    assert!(
        page.contains(&format!("/ui/why/{claim}?kind=claim")),
        "{page}"
    );
    // An id nothing holds, a kind that is none, a path trick, no session.
    let (status, _, page) = send(&router, get("/ui/why/no-such-thing", &cookie)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
    assert!(
        page.contains("no claim, page, entity, relation, evidence or source with id"),
        "{page}"
    );
    let odd = format!("/ui/why/{claim}?kind=%3Cscript%3E");
    let (status, _, page) = send(&router, get(&odd, &cookie)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(!page.contains("<script>\""), "{page}");
    let (status, _, _) = send(&router, get("/ui/why/..%2F..%2Fconfig", &cookie)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, _) = send(&router, get(&format!("/ui/why/{claim}"), "")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(before == files(dir.path()), "a read wrote to .vouch/");

    // A hand edit is shown, not hidden.
    let path = dir.path().join(format!(".vouch/claims/{claim}.yaml"));
    let yaml = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        yaml.replace("Deploys freeze", "Deploys never freeze"),
    )
    .unwrap();
    let (status, _, page) = send(&router, get(&format!("/ui/why/{claim}"), &cookie)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        page.contains("class=\"error\" id=\"gate\"><b>UNAUDITED</b>"),
        "{page}"
    );
}

/// The gate health page: the queue with its oldest named, linked and
/// marked stale, the decisions by agent and by reviewer with their rates,
/// a `since` window (a bad one said on the page), every name escaped.
#[tokio::test]
async fn the_gate_health_page_shows_the_queue_and_the_decisions() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "t", None).unwrap();
    let kb = open(dir.path());
    let odd = Caller::new("<i>agent</i>", Transport::Jsonl);
    let notes = json!({"content": "Deploys are frozen on Fridays.", "locator": "notes"});
    let src = call(&kb, &odd, "kb.register_source", notes)["id"].clone();
    let propose = |text: &str| {
        let claim = json!({"text": text, "evidence": [src]});
        call(&kb, &odd, "kb.propose_claim", claim)
    };
    let waiting = propose("Deploys freeze on Fridays")["proposal_id"]
        .as_str()
        .unwrap()
        .to_string();
    approved(&kb, &propose("Fridays are deploy-free"));
    let no = json!({"proposal_id": propose("Fridays are for deploys")["proposal_id"],
                    "reason": "the notes say the opposite"});
    call(&kb, &Caller::new("carol", Transport::Cli), "kb.reject", no);
    // Ten days on, the one still pending is stale.
    let later = chrono::Utc::now() + chrono::Duration::days(10);
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(vouch_core::clock::FixedClock::new(later, 7)),
    )
    .unwrap();
    let built = crate::http::review_application(Arc::new(kb), "alice");
    let router = built.router;
    let (cookie, _) = sign_in(&router, &built.sign_in.unwrap()).await;
    // This second handle's index first catches up with what the first
    // wrote to the log (the keeper's work, once); from then on, reading
    // the pages writes nothing at all.
    send(&router, get("/ui/stats", &cookie)).await;
    let before = files(dir.path());

    let (status, _, page) = send(&router, get("/ui/stats", &cookie)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    for want in [
        "<a href=\"/ui/stats\">Gate health</a>",
        "1 pending</a>",
        &format!("class=\"error\" id=\"oldest\">Oldest: <a href=\"/ui/proposal/{waiting}\">"),
        "waiting <b>10d 0h</b>: stale",
        "<tr class=\"stale\">",
        "Decisions over all time",
        "<tr><th>Approved</th><td>1</td></tr>",
        "<tr><th>Approval rate</th><td>50%</td></tr>",
        "&lt;i&gt;agent&lt;/i&gt;</td><td>3</td><td>1</td>",
        "<td>bob</td>",
        "<td>carol</td>",
    ] {
        assert!(page.contains(want), "{want} not in {page}");
    }
    assert!(!page.contains("<i>agent"), "{page}");
    // A window: nothing was proposed or decided in the last day.
    let (_, _, page) = send(&router, get("/ui/stats?since=1d", &cookie)).await;
    assert!(page.contains("Decisions since"), "{page}");
    assert!(
        page.contains("<tr><th>Proposed</th><td>0</td></tr>"),
        "{page}"
    );
    assert!(page.contains("1 pending</a>"), "the queue is counted whole");
    // A window that is none is said on the page, escaped.
    let (status, _, page) = send(&router, get("/ui/stats?since=%3Cb%3Esoon", &cookie)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("id=\"error\""), "{page}");
    assert!(page.contains("is not an age"), "{page}");
    assert!(!page.contains("<b>soon"), "{page}");
    let (status, _, _) = send(&router, get("/ui/stats", "")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let after = files(dir.path());
    let changed: Vec<_> = after
        .iter()
        .filter(|(p, b)| before.get(*p) != Some(*b))
        .map(|(p, _)| p)
        .collect();
    assert!(
        changed.is_empty() && before.len() == after.len(),
        "a read wrote {changed:?}"
    );
}
