//! Serving the application on a socket: where it may bind (loopback
//! unless tokens are configured), our accept loop (a header-read timeout,
//! a cap on connections, a cap on the connections one address holds from
//! the moment it connects, a cap on those of every address that wait for
//! a holder), what one request may hold (a deadline for its whole body, a
//! cap on the connections one actor holds) and a graceful shutdown on
//! SIGINT/SIGTERM.

use super::*;

mod waiting;
use waiting::{Waiter, Waiting, waiting_cap};

/// Where to bind: every address `bind` resolves to must be loopback unless
/// tokens are configured.
pub(crate) fn resolve_bind(
    bind: &str,
    shortest_token: Option<&(String, usize)>,
) -> Result<Vec<SocketAddr>, Error> {
    let addrs: Vec<SocketAddr> = bind
        .to_socket_addrs()
        .map_err(|e| {
            Error::invalid(format!(
                "--bind {bind:?}: not an address:port ({e}); e.g. 127.0.0.1:8765"
            ))
        })?
        .collect();
    if addrs.is_empty() {
        return Err(Error::invalid(format!(
            "--bind {bind:?} resolves to no address"
        )));
    }
    if let Some(a) = addrs.iter().find(|a| !a.ip().is_loopback()) {
        match shortest_token {
            None => {
                return Err(Error::invalid(format!(
                    "refusing to serve HTTP on non-loopback address {a} without \
                     authentication; give at least one --token SUBJECT=TOKEN, or bind 127.0.0.1"
                )));
            }
            Some((subject, chars)) if *chars < MIN_REMOTE_TOKEN_CHARS => {
                return Err(Error::invalid(format!(
                    "refusing to serve HTTP on non-loopback address {a}: {subject}'s token has \
                     {chars} characters; a token the network can reach must have at least \
                     {MIN_REMOTE_TOKEN_CHARS} (128 bits as hex: `openssl rand -hex 16`), or \
                     anyone who can connect may guess it"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(addrs)
}

/// Resolves when SIGINT or SIGTERM arrives.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// Connection limits for [`serve`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A connection that has not sent a complete request head this long
    /// after it opened (or after its previous response) is closed.
    pub header_read_timeout: Duration,
    /// A request's whole body must have arrived this long after its head
    /// (on every route; a body that trickles in is not "idle"), or the
    /// request is answered 408 and the connection closed.
    pub body_timeout: Duration,
    /// Connections served at once; more wait until one closes (or, while
    /// any waits for a holder, one of those is closed to make room: see
    /// [`Limits::max_waiting_connections`]).
    pub max_connections: usize,
    /// Connections one remote address (an IPv6 host by its /64) holds
    /// before any of their requests has a holder: counted from the moment
    /// a connection is accepted — before a byte of its request head has
    /// arrived — until it closes or a request on it is counted against its
    /// actor or, without a token, its address
    /// ([`Limits::max_connections_per_actor`]); past the cap a new
    /// connection is answered 429 and closed at once, unread. Never more
    /// than `max_connections` less a quarter of it (at least one), and
    /// neither are these and an address's requests without a token
    /// together, so one address never holds every slot: the rest answer
    /// other addresses.
    pub max_connections_per_address: usize,
    /// Connections one actor holds at once: a token's subject, or, for a
    /// request without a token (every request on a server without
    /// tokens), its remote address. A connection counts against whoever
    /// sent its latest request, until it closes; past the cap a request is
    /// answered 429 and its connection closed. `/health` is not counted.
    pub max_connections_per_actor: usize,
    /// Connections from every address together that wait for a holder
    /// (see [`Limits::max_connections_per_address`]: a head still
    /// arriving, or only `/health` asked); unset, half of
    /// `max_connections`. When they are this many, a new connection
    /// closes the oldest waiting one of the address that has the most
    /// waiting, rather than waiting itself; so does one that finds every
    /// slot taken while any waits. Slow heads from many addresses, each
    /// under its own cap, once held every slot together, and `/health`
    /// and token holders waited unanswered (issue 39, round six).
    pub max_waiting_connections: Option<usize>,
    /// Live MCP sessions per actor (see [`mcp::CappedSessions`]).
    pub max_mcp_sessions: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_connections_per_address: MAX_CONNECTIONS_PER_ADDRESS,
            max_connections_per_actor: MAX_CONNECTIONS_PER_ACTOR,
            max_waiting_connections: None,
            max_mcp_sessions: mcp::MAX_SESSIONS_PER_ACTOR,
        }
    }
}

/// Default for [`Limits::header_read_timeout`].
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`Limits::body_timeout`].
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`Limits::max_connections`].
pub(crate) const MAX_CONNECTIONS: usize = 256;
/// Default for [`Limits::max_connections_per_actor`]: a quarter of
/// [`MAX_CONNECTIONS`], so one actor never holds them all.
pub(crate) const MAX_CONNECTIONS_PER_ACTOR: usize = 64;
/// Default for [`Limits::max_connections_per_address`]: a quarter of
/// [`MAX_CONNECTIONS`]. Every local client of a server on loopback is
/// 127.0.0.1 (or ::1), so this is also how many connections all of them
/// hold together: far more than agents and a browser open.
pub(crate) const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;
/// How long shutdown waits for open requests before exiting anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Errors from `accept` that concern one connection, not the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

/// Serve HTTP until SIGINT/SIGTERM. `anonymous` is the actor when no token
/// is configured.
pub(crate) async fn serve(
    kb: Arc<Kb>,
    anonymous: Caller,
    bind: &str,
    raw_tokens: &[TokenSpec],
    limits: Limits,
) -> Result<(), Error> {
    let root = kb.layout().root().display().to_string();
    let anonymous_actor = anonymous.actor.clone();
    let built = application(kb.clone(), anonymous, raw_tokens, limits.max_mcp_sessions)?;
    let (listener, local) = bind_listener(bind, built.shortest_token.as_ref()).await?;
    eprintln!("vouch: listening on http://{local}");
    // Proposals link to their review page here, unless the person's own
    // `review.url` named the address people reach (set first, it stays).
    // Another bind's address is not one a browser is known to reach.
    if local.ip().is_loopback() {
        kb.set_review_pages(&format!("http://{local}"));
    }
    if let Some(link) = kb.review_link("ID") {
        eprintln!("vouch: proposals link to their review page: {link}");
    }
    eprintln!("vouch: serving {root} at /rpc (JSONL envelope) and /mcp (MCP streamable HTTP)");
    match &built.sign_in {
        Some(link) => {
            eprintln!("vouch: no --token given: loopback only, acting as {anonymous_actor}");
            eprintln!(
                "vouch: review pages (as {anonymous_actor}; the link works once): http://{local}{link}"
            );
        }
        None => {
            eprintln!(
                "vouch: bearer tokens required for {} subject(s)",
                built.tokens
            );
            eprintln!("vouch: review pages at http://{local}/ (sign in with a token)");
        }
    }
    accept_loop(listener, built.router, limits, built.stop_mcp).await;
    Ok(())
}

/// Bind `bind` (loopback only unless tokens are configured, the shortest
/// at least [`MIN_REMOTE_TOKEN_CHARS`]); returns the listener
/// and the address it got (the port, when `bind` asked for port 0).
pub(crate) async fn bind_listener(
    bind: &str,
    shortest_token: Option<&(String, usize)>,
) -> Result<(tokio::net::TcpListener, SocketAddr), Error> {
    let addrs = resolve_bind(bind, shortest_token)?;
    let listener = tokio::net::TcpListener::bind(&addrs[..])
        .await
        .map_err(|e| Error::internal(format!("--bind {bind}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::internal(format!("--bind {bind}: {e}")))?;
    Ok((listener, local))
}

/// `vouch ui`: serve the review pages for `person` on `bind` (a free
/// loopback port by default) until SIGINT/SIGTERM; `announce` gets the
/// sign-in URL once the port is bound.
pub(crate) async fn serve_review(
    kb: Arc<Kb>,
    person: &str,
    bind: &str,
    limits: Limits,
    announce: impl FnOnce(&str),
) -> Result<(), Error> {
    let built = review_application(kb, person);
    let (listener, local) = bind_listener(bind, None).await?;
    let link = built.sign_in.clone().unwrap_or_default();
    announce(&format!("http://{local}{link}"));
    accept_loop(listener, built.router, limits, built.stop_mcp).await;
    Ok(())
}

/// Accept connections until SIGINT/SIGTERM, at most `max_connections` at
/// once, [`holder_cap`] from one address and [`waiting_cap`] waiting for
/// a holder, each with a deadline for its request heads; then let open
/// requests finish (for up to [`SHUTDOWN_GRACE`]).
///
/// axum's own `serve` sets no header deadline and no connection limit, so
/// clients that open connections and never finish a request would hold a
/// file descriptor each until the process runs out. And a connection is
/// counted against its address as soon as it is accepted: one that is
/// still sending its request head has no actor yet, and a few hundred
/// such heads from one address, each renewed as soon as its deadline
/// closes it, held every slot (issue 39, round five); from a dozen
/// addresses, each under its cap, they did again (round six): now the
/// heads of every address together wait in one line, and a newcomer
/// closes the oldest of the address that has the most in it rather than
/// waiting behind them.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    on_stop: impl FnOnce(),
) {
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let (stop_tx, stop_rx) = watch::channel(false);
    let holders = Holders::new(holder_cap(limits.max_connections_per_actor, max));
    let addresses = Holders::new(holder_cap(limits.max_connections_per_address, max));
    // What one address may hold in all: its connections still waiting for
    // a holder and those its requests without a token hold.
    let together = holder_cap(usize::MAX, max);
    let waiting = Waiting::new(waiting_cap(limits.max_waiting_connections, max));
    let mut full_since: Option<std::time::Instant> = None;
    let mut refused_since: Option<std::time::Instant> = None;
    let mut closed_since: Option<std::time::Instant> = None;
    let mut closed_one = |at: Option<Holder>| {
        let Some(at) = at else { return false };
        if closed_since.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
            closed_since = Some(std::time::Instant::now());
            eprintln!(
                "vouch: connections without a request wait to be served (at most {} at \
                 once, VOUCH_HTTP_MAX_WAITING_CONNECTIONS); the oldest of {at}'s was closed \
                 to make room",
                waiting.cap()
            );
        }
        true
    };
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors, most likely: wait, don't spin.
                    eprintln!("vouch: accept failed: {e}");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        let at = Holder::address(peer.ip());
        let address_hold = match addresses.take(at.clone(), Some((&holders, together))) {
            Ok(hold) => hold,
            Err(cap) => {
                if refused_since.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    refused_since = Some(std::time::Instant::now());
                    eprintln!(
                        "vouch: {at} holds {cap} connections (the most one address may); \
                         its new ones are closed at once"
                    );
                }
                refuse_at_once(&stream, &address_full_message(&at, cap));
                // Dropping the stream closes it.
                continue;
            }
        };
        // Too many wait for a holder, or every slot is taken while some
        // wait: the newcomer takes the place of the oldest of the address
        // that has the most waiting (its slot is free once its task ends).
        let made_room =
            (waiting.full() || slots.available_permits() == 0) && closed_one(waiting.close_one());
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !made_room && full_since.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    full_since = Some(std::time::Instant::now());
                    eprintln!(
                        "vouch: {max} connections open (the limit), each with a request; new \
                         ones wait until one closes"
                    );
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let state = Arc::new(ConnState {
            peer: peer.ip(),
            holders: holders.clone(),
            body_timeout: limits.body_timeout,
            hold: Mutex::new(None),
            address: Mutex::new(None),
            closed: tokio::sync::Notify::new(),
            asked: std::sync::atomic::AtomicBool::new(false),
            in_request: std::sync::atomic::AtomicBool::new(false),
        });
        *lock(&state.address) = Some(waiting.enter(&state, address_hold));
        let conn_state = Conn(state);
        let service = {
            let inner = TowerToHyperService::new(router.clone());
            let conn_state = conn_state.clone();
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                conn_state
                    .0
                    .asked
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                if req.uri().path() != "/health" {
                    conn_state
                        .0
                        .in_request
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
                req.extensions_mut().insert(conn_state.clone());
                hyper::service::Service::call(&inner, req)
            })
        };
        let http = http.clone();
        let mut stop = stop_rx.clone();
        let waiting_cap = waiting.cap();
        tokio::spawn(async move {
            let _slot = slot;
            let state = conn_state.0.clone();
            // Whatever else still holds the state, the connection is over.
            let _release = Release(conn_state);
            let mut conn = http.serve_connection(TokioIo::new(stream), service);
            let mut stopping = false;
            let made_room = loop {
                tokio::select! {
                    _ = &mut conn => break false,
                    // Closed to make room while it waited for a holder.
                    () = state.closed.notified() => break true,
                    _ = stop.changed(), if !stopping => {
                        stopping = true;
                        std::pin::Pin::new(&mut conn).graceful_shutdown();
                    }
                }
            };
            // A head that never finished is told why, unless a response
            // (to `/health`) may be on its way.
            if made_room && !state.asked.load(std::sync::atomic::Ordering::Relaxed) {
                let stream = conn.into_parts().io.into_inner();
                refuse_at_once(&stream, &made_room_message(waiting_cap));
            }
        });
    }
    eprintln!("vouch: shutting down");
    drop(listener);
    on_stop();
    let _ = stop_tx.send(true);
    // Every connection holds a slot until it ends.
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(SHUTDOWN_GRACE, slots.acquire_many(all))
        .await
        .is_err()
    {
        eprintln!(
            "vouch: {} connection(s) still open after {}s; exiting",
            max - slots.available_permits(),
            SHUTDOWN_GRACE.as_secs()
        );
    }
}

/// A cap on connections held by one holder (an address or an actor), never
/// more than `max` (the global limit) less a quarter of it, at least one:
/// however it is configured, one holder cannot take every slot, and the
/// rest still answer someone else.
fn holder_cap(cap: usize, max: usize) -> usize {
    let reserve = (max / 4).max(1);
    cap.clamp(1, max.saturating_sub(reserve).max(1))
}

/// Answer a connection that is closed before its request is read (past
/// its address's cap, or to make room) with a 429 saying why, if the
/// socket takes it at once: nothing here waits on the client.
fn refuse_at_once(stream: &tokio::net::TcpStream, message: &str) {
    let body = json!({"id": null, "ok": false, "error": {
        "code": "invalid_request",
        "message": message,
    }})
    .to_string();
    let response = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

/// Why a connection past its address's cap is closed unread.
fn address_full_message(at: &Holder, cap: usize) -> String {
    format!(
        "{at} already holds {cap} connections to this server, the most one address may \
         hold (VOUCH_HTTP_MAX_CONNECTIONS_PER_ADDRESS); finish or close one"
    )
}

/// Why a connection whose request never came whole is closed to make room.
fn made_room_message(cap: usize) -> String {
    format!(
        "no whole request arrived on this connection while {cap} connections waited for \
         theirs, the most this server keeps waiting (VOUCH_HTTP_MAX_WAITING_CONNECTIONS): \
         it was closed to make room for a newer one; send the request as soon as you connect"
    )
}

/// Who holds how many connections: per actor
/// ([`Limits::max_connections_per_actor`]) or per address
/// ([`Limits::max_connections_per_address`]).
struct Holders {
    cap: usize,
    held: Mutex<HashMap<Holder, usize>>,
}

impl Holders {
    fn new(cap: usize) -> Arc<Holders> {
        Arc::new(Holders {
            cap,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// Count one more connection against `holder`, or the cap it is at;
    /// with `beside`, also refused when what `holder` holds here and there
    /// together reaches the number given (that number then).
    fn take(
        self: &Arc<Self>,
        holder: Holder,
        beside: Option<(&Holders, usize)>,
    ) -> Result<Hold, usize> {
        // Always this map's lock first, then `beside`'s.
        let mut held = lock(&self.held);
        let n = held.get(&holder).copied().unwrap_or(0);
        if n >= self.cap {
            return Err(self.cap);
        }
        if let Some((beside, together)) = beside {
            let elsewhere = lock(&beside.held).get(&holder).copied().unwrap_or(0);
            if n + elsewhere >= together {
                return Err(together);
            }
        }
        held.insert(holder.clone(), n + 1);
        Ok(Hold {
            holders: self.clone(),
            holder,
        })
    }
}

/// Whom a connection counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Holder {
    /// A token's subject.
    Actor(String),
    /// The remote address of a request without a token (see
    /// [`Holder::address`]).
    Address(IpAddr),
}

impl Holder {
    /// The address a connection from `ip` counts against: itself, but for
    /// IPv6 beyond loopback its /64 (one host is usually given a whole
    /// /64, and would otherwise have 2^64 caps), and an IPv4 address
    /// mapped into IPv6 as that IPv4 address.
    fn address(ip: IpAddr) -> Holder {
        let ip = match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None if v6.is_loopback() => ip,
                None => IpAddr::V6(std::net::Ipv6Addr::from_bits(
                    v6.to_bits() & !((1u128 << 64) - 1),
                )),
            },
            v4 => v4,
        };
        Holder::Address(ip)
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Actor(actor) => f.write_str(actor),
            Holder::Address(IpAddr::V6(v6)) if !v6.is_loopback() => write!(f, "{v6}/64"),
            Holder::Address(ip) => write!(f, "{ip}"),
        }
    }
}

/// One connection counted against its holder; given back when dropped.
struct Hold {
    holders: Arc<Holders>,
    holder: Holder,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = lock(&self.holders.held);
        if let Some(n) = held.get_mut(&self.holder) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.holder);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the accept loop knows of a connection, in each request's
/// extensions for [`guard`]. Absent when the application is driven in
/// process (no socket): nothing is counted then.
#[derive(Clone)]
pub(crate) struct Conn(Arc<ConnState>);

struct ConnState {
    peer: IpAddr,
    holders: Arc<Holders>,
    body_timeout: Duration,
    /// Whom the connection counts against now.
    hold: Mutex<Option<Hold>>,
    /// Its place among its address's connections that wait for a holder
    /// ([`Limits::max_connections_per_address`]) and among every
    /// address's ([`Limits::max_waiting_connections`]), from its accept
    /// until a request on it is counted against its actor or address
    /// (`hold`). A connection that has only asked for `/health` still
    /// waits.
    address: Mutex<Option<Waiter>>,
    /// Told when it is closed to make room while it waits.
    closed: tokio::sync::Notify,
    /// Whether a request head has arrived on it (one for `/health` too).
    asked: std::sync::atomic::AtomicBool,
    /// Whether a request other than `/health` is on it: it is about to be
    /// counted against its holder (or refused), so it is never closed to
    /// make room meanwhile (an authenticated request would be cut off).
    in_request: std::sync::atomic::AtomicBool,
}

/// Gives a connection's hold back when its task ends.
struct Release(Conn);

impl Drop for Release {
    fn drop(&mut self) {
        lock(&self.0.0.hold).take();
        lock(&self.0.0.address).take();
    }
}

impl Conn {
    /// Count the connection against `holder` (once; a later request on
    /// it by someone else moves it). Refused past the cap.
    fn hold_for(&self, holder: Holder) -> Result<(), String> {
        let state = &self.0;
        let mut hold = lock(&state.hold);
        if hold.as_ref().is_some_and(|h| h.holder == holder) {
            return Ok(());
        }
        hold.take();
        let who = match holder {
            Holder::Actor(_) => "one actor",
            Holder::Address(_) => "one address without a token",
        };
        let message = |cap: usize| {
            format!(
                "{holder} already holds {cap} connections to this server, the most {who} may \
                 hold (VOUCH_HTTP_MAX_CONNECTIONS_PER_ACTOR); finish or close one"
            )
        };
        *hold = Some(state.holders.take(holder.clone(), None).map_err(message)?);
        Ok(())
    }
}

/// An error envelope after which the connection closes (whatever the
/// client has still to send is not read).
fn closing(status: StatusCode, message: impl Into<String>) -> Response {
    let mut r = envelope_error(status, message);
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// On every route but `/health`, inside [`auth`] (which names the actor):
/// count the connection against its actor (or, without a token, its
/// remote address), then read the request's whole body, at most
/// `limits.http_max_body_bytes` within [`Limits::body_timeout`], before a
/// handler sees it. A body that trickles in would otherwise hold its
/// connection slot for as long as the client likes, and a few hundred
/// of them starve every route. A request without a body (MCP's
/// long-lived `GET /mcp` event stream) is not cut off: only the body has
/// a deadline.
pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    // `/health` never reads a body; hyper closes a connection whose body
    // was left unread, so it holds nothing past its answer.
    if req.uri().path() == "/health" {
        return next.run(req).await;
    }
    let conn = req.extensions().get::<Conn>().cloned();
    if let Some(conn) = &conn {
        let holder = match req.extensions().get::<Caller>() {
            Some(c) if c.authenticated => Holder::Actor(c.actor.clone()),
            _ => Holder::address(conn.0.peer),
        };
        if let Err(message) = conn.hold_for(holder) {
            return closing(StatusCode::TOO_MANY_REQUESTS, message);
        }
        // Counted against its holder now, it leaves its place among the
        // connections still waiting for one (those of a team behind one
        // NAT or proxy count against their actors from here on).
        lock(&conn.0.address).take();
    }
    let deadline = conn.as_ref().map_or(BODY_TIMEOUT, |c| c.0.body_timeout);
    let max = app.kb.settings().limits.http_max_body_bytes;
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(deadline, read_body(body, max)).await {
        Err(_) => closing(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive whole within {} ms of its head \
                 (VOUCH_HTTP_BODY_TIMEOUT_MS)",
                deadline.as_millis()
            ),
        ),
        Ok(Err(BodyError::TooLarge)) => closing(StatusCode::PAYLOAD_TOO_LARGE, body_too_large(max)),
        Ok(Err(BodyError::Broken(e))) => closing(
            StatusCode::BAD_REQUEST,
            format!("could not read the request body: {e}"),
        ),
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Holder, holder_cap};

    #[test]
    fn one_holder_never_takes_every_slot() {
        assert_eq!(holder_cap(64, 256), 64);
        assert_eq!(holder_cap(1000, 256), 192);
        assert_eq!(holder_cap(1000, 8), 6);
        assert_eq!(holder_cap(1000, 2), 1);
        assert_eq!(holder_cap(0, 8), 1);
        // A server of one connection has nothing to keep back.
        assert_eq!(holder_cap(5, 1), 1);
    }

    #[test]
    fn an_ipv6_host_counts_as_its_64_and_a_mapped_ipv4_as_itself() {
        let key = |s: &str| Holder::address(s.parse().unwrap()).to_string();
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(
            Holder::address("2001:db8:1:2:aaaa::1".parse().unwrap()),
            Holder::address("2001:db8:1:2:bbbb::7".parse().unwrap())
        );
        assert_ne!(
            Holder::address("2001:db8:1:2::1".parse().unwrap()),
            Holder::address("2001:db8:1:3::1".parse().unwrap())
        );
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("::1"), "::1");
        assert_eq!(key("127.0.0.1"), "127.0.0.1");
    }
}
