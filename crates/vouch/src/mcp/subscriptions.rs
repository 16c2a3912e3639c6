//! Resource subscriptions: a client that subscribed to a `vouch://` URI is
//! told (`notifications/resources/updated`) when what it reads changes —
//! a proposal approved, a claim superseded, a source redacted, a teammate's
//! merge pulled in.
//!
//! Every change to knowledge appends to the audit log (a merge brings the
//! other side's events), so a session's follower re-reads its resources
//! only when the log has grown, and once more a moment later for a
//! server's index to catch up with a write made by another process. A
//! resource counts as changed when the bytes its read answers change.
//! Both forms are served: `resources/subscribe` (protocol versions up to
//! 2025-11-25) and `subscriptions/listen` (2026-07-28).

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{ErrorData, Peer, RoleServer};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use vouch_core::{Caller, Kb};

/// Resources one session may follow at once.
pub(crate) const MAX_FOLLOWED: usize = 256;

/// Of them, at most this many costly ones (a context pack, an object's
/// provenance): each is computed again on every change to knowledge.
pub(crate) const MAX_COSTLY: usize = 8;

/// Whether following `uri` costs a search or a walk of the audit log.
fn costly(uri: &str) -> bool {
    uri.starts_with("vouch://context/") || uri.starts_with("vouch://why/")
}

/// How often the audit log is looked at.
const TICK: Duration = Duration::from_millis(250);

/// After the log changed, the resources are read again this much later:
/// a write by another process reaches this server's index within a second.
const RECHECK: Duration = Duration::from_secs(2);

/// What a read of a resource answered, as a digest; `None` when it failed
/// (not found yet, or an error).
type Seen = Option<[u8; 32]>;

/// The resources one MCP session follows, and what each read last.
#[derive(Default)]
pub(crate) struct Followed {
    last: Mutex<BTreeMap<String, Seen>>,
    /// A follower task runs for this session.
    running: AtomicBool,
}

impl Followed {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Seen>> {
        self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Follow `uri` from what it reads now. Refused beyond [`MAX_FOLLOWED`].
    pub(crate) fn add(&self, uri: String, seen: Seen) -> Result<(), ErrorData> {
        let mut last = self.lock();
        if !last.contains_key(&uri) && last.len() >= MAX_FOLLOWED {
            return Err(ErrorData::invalid_params(
                format!(
                    "this session follows {MAX_FOLLOWED} resources already; unsubscribe from \
                     some first"
                ),
                None,
            ));
        }
        if !last.contains_key(&uri)
            && costly(&uri)
            && last.keys().filter(|u| costly(u)).count() >= MAX_COSTLY
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "this session follows {MAX_COSTLY} context packs or provenances already \
                     (each is built again on every change); unsubscribe from some first"
                ),
                None,
            ));
        }
        last.insert(uri, seen);
        Ok(())
    }

    pub(crate) fn remove(&self, uri: &str) {
        self.lock().remove(uri);
    }

    fn uris(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Record what `uri` reads now; whether that differs from before. A
    /// URI no longer followed is not news.
    fn changed(&self, uri: &str, seen: Seen) -> bool {
        match self.lock().get_mut(uri) {
            Some(before) if *before != seen => {
                *before = seen;
                true
            }
            _ => false,
        }
    }

    /// Claim the right to run this session's follower; `false` when one
    /// runs already.
    pub(crate) fn start(&self) -> bool {
        !self.running.swap(true, Ordering::AcqRel)
    }
}

/// What reading `uri` answers now, as a digest.
pub(crate) async fn seen(kb: &Arc<Kb>, caller: &Caller, uri: &str) -> Seen {
    let read = super::resources::read(kb, caller, uri).await.ok()?;
    let bytes = serde_json::to_vec(&read.contents).ok()?;
    Some(Sha256::digest(&bytes).into())
}

/// The audit log's size and modification time: it changes with every
/// change to knowledge.
pub(crate) type Stamp = Option<(u64, SystemTime)>;

/// The audit log's [`Stamp`] now.
pub(crate) fn log_stamp(kb: &Kb) -> Stamp {
    let meta = std::fs::metadata(kb.layout().audit_log()).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// Follow `followed` until `stop` resolves, `notify` fails (the client is
/// gone) or nothing is followed any more; `notify` sends one URI's update.
pub(crate) async fn follow<N, F>(
    kb: Arc<Kb>,
    caller: Caller,
    followed: Arc<Followed>,
    notify: N,
    stop: impl Future<Output = ()>,
) where
    N: Fn(String) -> F,
    F: Future<Output = bool>,
{
    let mut stop = std::pin::pin!(stop);
    let mut stamp = log_stamp(&kb);
    // Once more after a moment from the start: what was read at subscribe
    // time may predate a write this server's index had not caught up with.
    let mut again: Option<Instant> = Some(Instant::now() + RECHECK);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(TICK) => {}
        }
        let now = log_stamp(&kb);
        let due = if now != stamp {
            stamp = now;
            again = Some(Instant::now() + RECHECK);
            true
        } else if again.is_some_and(|t| Instant::now() >= t) {
            again = None;
            true
        } else {
            false
        };
        let uris = followed.uris();
        if uris.is_empty() {
            followed.running.store(false, Ordering::Release);
            // A subscription made while stopping starts no second follower
            // (it saw this one running): take the work back if it came.
            if followed.uris().is_empty() || !followed.start() {
                break;
            }
            continue;
        }
        if !due {
            continue;
        }
        for uri in uris {
            let read = seen(&kb, &caller, &uri).await;
            if followed.changed(&uri, read) && !notify(uri).await {
                followed.running.store(false, Ordering::Release);
                return;
            }
        }
    }
    followed.running.store(false, Ordering::Release);
}

/// Follow over the legacy form: notifications go to the session's peer
/// until its transport closes.
pub(crate) fn spawn_legacy(
    kb: Arc<Kb>,
    caller: Caller,
    followed: Arc<Followed>,
    peer: Peer<RoleServer>,
) {
    let closed_peer = peer.clone();
    let notify = move |uri: String| {
        let peer = peer.clone();
        async move {
            peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok()
        }
    };
    let stop = async move { closed(&closed_peer).await };
    tokio::spawn(follow(kb, caller, followed, notify, stop));
}

/// Resolves once `peer`'s transport has closed.
pub(crate) async fn closed(peer: &Peer<RoleServer>) {
    while !peer.is_transport_closed() {
        tokio::time::sleep(TICK).await;
    }
}

/// The URIs of `uris` a session may follow at once, in order: at most
/// [`MAX_FOLLOWED`], of them at most [`MAX_COSTLY`] costly ones.
pub(crate) fn within_caps<'a>(uris: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut costly_ones = 0;
    for uri in uris {
        if out.len() >= MAX_FOLLOWED || out.contains(uri) {
            continue;
        }
        if costly(uri) {
            if costly_ones >= MAX_COSTLY {
                continue;
            }
            costly_ones += 1;
        }
        out.push(uri.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_news_once_and_only_for_followed_uris() {
        let f = Followed::default();
        f.add("vouch://claim/a".into(), None).unwrap();
        assert!(!f.changed("vouch://claim/a", None));
        assert!(f.changed("vouch://claim/a", Some([1; 32])));
        assert!(!f.changed("vouch://claim/a", Some([1; 32])));
        assert!(!f.changed("vouch://claim/b", Some([1; 32])));
        f.remove("vouch://claim/a");
        assert!(!f.changed("vouch://claim/a", Some([2; 32])));
    }

    /// Follow `uris` on `kb`, run `change`, and wait until as many
    /// notifications came as URIs are followed (10 s at most) and a recheck
    /// more; what was heard, sorted.
    async fn heard_after(
        kb: &Arc<Kb>,
        caller: &Caller,
        uris: &[String],
        change: impl FnOnce(),
    ) -> Vec<String> {
        let followed = Arc::new(Followed::default());
        for uri in uris {
            followed
                .add(uri.clone(), seen(kb, caller, uri).await)
                .unwrap();
        }
        assert!(followed.start());
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        let notify = move |uri: String| {
            sink.lock().unwrap().push(uri);
            std::future::ready(true)
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(follow(
            kb.clone(),
            caller.clone(),
            followed,
            notify,
            async {
                let _ = stop_rx.await;
            },
        ));
        change();
        let until = Instant::now() + Duration::from_secs(10);
        while heard.lock().unwrap().len() < uris.len() && Instant::now() < until {
            tokio::time::sleep(TICK).await;
        }
        // A moment more: nothing is heard twice for one change.
        tokio::time::sleep(RECHECK + TICK * 2).await;
        let _ = stop_tx.send(());
        task.await.unwrap();
        let mut heard = heard.lock().unwrap().clone();
        heard.sort();
        heard
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn supersession_and_redaction_are_heard_and_a_quiet_resource_is_not() {
        use serde_json::{Value, json};
        use vouch_core::Transport;
        let (_dir, kb, agent) = crate::mcp::resources::tests::kb_with_claims(3);
        let person = Caller::new("alice", Transport::Cli);
        let call = |m: &str, p: Value| vouch_core::methods::dispatch(&kb, &person, m, p).unwrap();
        let claims: Vec<String> = call("kb.list_claims", json!({}))
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect();
        let source = call("kb.list_sources", json!({}))[0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let uri = |kind: &str, id: &str| crate::mcp::resources::uri(kind, id);
        let (old, new, quiet) = (&claims[0], &claims[1], &claims[2]);

        let followed = [uri("claim", old), uri("claim", quiet)];
        let heard = heard_after(&kb, &agent, &followed, || {
            call("kb.supersede", json!({"old_id": old, "new_id": new}));
        })
        .await;
        assert_eq!(
            heard,
            [uri("claim", old)],
            "the superseded claim, once; not the quiet one"
        );

        let followed = [uri("source", &source)];
        let heard = heard_after(&kb, &agent, &followed, || {
            call(
                "kb.redact",
                json!({"kind": "source", "id": source, "reason": "held a token"}),
            );
        })
        .await;
        assert_eq!(heard, followed);
    }

    #[test]
    fn a_session_follows_a_bounded_number() {
        let f = Followed::default();
        for i in 0..MAX_FOLLOWED {
            f.add(format!("vouch://claim/{i}"), None).unwrap();
        }
        assert!(f.add("vouch://claim/one-more".into(), None).is_err());
        let g = Followed::default();
        for i in 0..MAX_COSTLY {
            g.add(format!("vouch://context/task{i}"), None).unwrap();
        }
        assert!(
            g.add("vouch://why/x".into(), None).is_err(),
            "costly ones are capped"
        );
        assert!(
            g.add("vouch://claim/x".into(), None).is_ok(),
            "cheap ones are not"
        );
        // Subscribing again to one already followed is fine.
        assert!(f.add("vouch://claim/0".into(), None).is_ok());
        assert!(f.start());
        assert!(!f.start());
    }
}
