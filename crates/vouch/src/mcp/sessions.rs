//! MCP sessions over streamable HTTP: rmcp's in-memory session manager,
//! with each session owned by the actor that opened it and capped per actor.

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use std::collections::HashMap;
use std::sync::Mutex;

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
