//! Who is signed in to the review pages: sessions, the one-time link and
//! failed sign-ins — this process's own, or, on a team server, the team
//! database's (`vouch-postgres`) so a cookie works on every replica — and
//! the routes that sign in and out.

use super::*;
/// Sessions kept at once; the oldest is dropped past this.
pub(super) const MAX_SESSIONS: usize = 64;
/// Sessions one person may hold; their oldest is dropped past this (one
/// token holder cannot sign everyone else out).
pub(super) const MAX_SESSIONS_EACH: usize = 8;
/// A session ends this long after sign-in, or after this long unused: a
/// cookie that leaked (browsers send it to every port of the host) does
/// not stay good.
pub(super) const SESSION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(12 * 3600);
pub(super) const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

/// 32 random bytes from the OS, hex.
fn secret() -> String {
    let mut b = [0u8; 32];
    // No randomness from the OS means no safe secret: refuse to run.
    getrandom::fill(&mut b).expect("the OS random source failed");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[derive(Clone)]
pub(super) struct Session {
    pub(super) subject: String,
    /// Signed in by `vouch ui`'s one-time link: the person who ran it, a
    /// person (`Role::Human`). By a bearer token: an agent transport's
    /// actor, who decides only as a named reviewer.
    pub(super) person: bool,
    pub(super) csrf: String,
    /// Order of creation, to drop the oldest.
    pub(super) serial: u64,
    pub(super) started: std::time::Instant,
    pub(super) used: std::time::Instant,
}

impl Session {
    pub(super) fn expired(&self, now: std::time::Instant) -> bool {
        now.duration_since(self.started) > SESSION_LIFETIME
            || now.duration_since(self.used) > SESSION_IDLE
    }
}

/// The sign-in state of one server.
pub(crate) struct Ui {
    /// The person the one-time link signs in, and the digest of its secret
    /// (`None` once used, or on a server with tokens).
    login: Mutex<Option<(String, [u8; 32])>>,
    sessions: Mutex<HashMap<[u8; 32], Session>>,
    serial: Mutex<u64>,
    /// When recent sign-ins failed (unknown token or link), newest last.
    failures: Mutex<std::collections::VecDeque<std::time::Instant>>,
    /// A team server's sessions and failed sign-ins, shared by every
    /// replica (a cookie set here works on the others); `None`: this
    /// process's own. One-time links are never shared: a link works only
    /// on the process that printed it.
    shared: Option<Arc<vouch_postgres::Sessions>>,
}

/// Run a call to the team database on a thread of its own (its client
/// runs a runtime of its own, which no async worker may enter), with the
/// async worker marked as blocked meanwhile, so the server's other
/// requests move to the other workers.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let run = || {
        std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|p| std::panic::resume_unwind(p))
    };
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(run)
        }
        _ => run(),
    }
}

/// Failed sign-ins a server answers per minute; past that, every attempt
/// is refused unheard until the minute is over. Guessing a token (or a
/// link's secret) is then capped at this rate, whatever it costs the
/// guesser; a person locked out meanwhile still has the command line.
pub(crate) const MAX_FAILED_SIGN_INS_PER_MINUTE: usize = 20;

impl Ui {
    /// Sign-in for `owner` by a one-time link; returns the link's path.
    pub(crate) fn with_link(owner: &str) -> (Ui, String) {
        let s = secret();
        let ui = Ui {
            login: Mutex::new(Some((owner.to_string(), digest(s.as_bytes())))),
            ..Ui::tokens_only()
        };
        (ui, format!("/ui/login?secret={s}"))
    }

    /// Sign-in by bearer token only.
    pub(crate) fn tokens_only() -> Ui {
        Ui {
            login: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            serial: Mutex::new(0),
            failures: Mutex::new(Default::default()),
            shared: None,
        }
    }

    /// Keep sessions and failed sign-ins in the team database this process
    /// serves with (`serve --transport http` only: a person's own `vouch
    /// ui` keeps its sessions to itself).
    pub(crate) fn shared_by_team(mut self) -> Ui {
        self.shared = crate::team::current().map(|t| t.sessions.clone());
        self
    }

    /// Whether sign-ins are refused for now (too many recent failures).
    pub(super) fn sign_ins_throttled(&self) -> bool {
        // A team server's limit is the team's: a guesser spreading tries
        // over the replicas gets no more (a database away refuses all).
        if let Some(shared) = &self.shared {
            return !off_runtime(|| shared.failed_sign_ins_last_minute())
                .is_ok_and(|n| n < MAX_FAILED_SIGN_INS_PER_MINUTE);
        }
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

    pub(super) fn sign_in_failed(&self) {
        if let Some(shared) = &self.shared
            && off_runtime(|| shared.sign_in_failed()).is_ok()
        {
            return;
        }
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        f.push_back(std::time::Instant::now());
    }

    pub(super) fn start_session(&self, subject: &str, person: bool) -> Result<String, String> {
        let cookie = secret();
        if let Some(shared) = &self.shared {
            let row = vouch_postgres::SessionRow {
                subject: subject.to_string(),
                person,
                csrf: secret(),
            };
            let key = digest(cookie.as_bytes());
            off_runtime(|| shared.start(&key, &row, MAX_SESSIONS_EACH, MAX_SESSIONS))
                .map_err(|e| e.message)?;
            return Ok(cookie);
        }
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
        Ok(cookie)
    }

    pub(super) fn session(&self, cookie: &str) -> Result<Option<Session>, String> {
        let d = digest(cookie.as_bytes());
        if let Some(shared) = &self.shared {
            let row = off_runtime(|| shared.find(&d, SESSION_LIFETIME, SESSION_IDLE))
                .map_err(|e| e.message)?;
            let now = std::time::Instant::now();
            return Ok(row.map(|r| Session {
                subject: r.subject,
                person: r.person,
                csrf: r.csrf,
                serial: 0,
                started: now,
                used: now,
            }));
        }
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
        Ok(found)
    }

    pub(super) fn end_session(&self, cookie: &str) {
        let d = digest(cookie.as_bytes());
        if let Some(shared) = &self.shared
            && let Err(e) = off_runtime(|| shared.end(&d))
        {
            eprintln!("vouch: signing out: {e}");
        }
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|k, _| !ct_eq(k, &d));
    }

    /// Trade the one-time secret for its owner, once.
    pub(super) fn redeem(&self, presented: &str) -> Option<String> {
        let d = digest(presented.as_bytes());
        let mut login = self.login.lock().unwrap_or_else(|e| e.into_inner());
        let (owner, want) = login.as_ref()?;
        if !ct_eq(want, &d) {
            return None;
        }
        let owner = owner.clone();
        *login = None;
        Some(owner)
    }
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
    let cookie = match app.ui().start_session(subject, person) {
        Ok(c) => c,
        Err(why) => {
            eprintln!("vouch: review pages: signing in failed: {why}");
            return sign_in_page(
                app,
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing in failed just now; try again in a moment.",
            );
        }
    };
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
