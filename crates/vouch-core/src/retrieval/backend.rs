//! The seam between "what to find" and "how": a [`Retriever`] is one
//! backend (FTS5, substring; an embedding retriever or a fusion of several
//! is another implementation), chosen once by [`for_backend`] and held by
//! `Kb`. Writers announce what they wrote through `Kb::announce`, which
//! keeps `state.db` in step and tells the retriever.

use super::{Query, SearchHit, Written};
use crate::error::Result;
use crate::kb::Kb;
use crate::settings::RetrievalBackend;

pub trait Retriever: Send + Sync {
    /// The name `retrieval.backend` uses and hits report in `backend`.
    fn name(&self) -> &'static str;
    /// Ranked hits for a query, best first.
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>>;
    /// Objects just written through vouch (after the index has them). A
    /// retriever with state of its own (vectors) updates it here.
    fn on_write(&self, _kb: &Kb, _written: &[Written]) {}
}

/// BM25 over `state.db`; when another process holds the index locked, the
/// answer comes from the substring backend rather than an error.
pub struct Fts5;

impl Retriever for Fts5 {
    fn name(&self) -> &'static str {
        "fts5"
    }
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        match super::fts_search(kb, q) {
            Err(e) if e.kind == crate::error::ErrorKind::Busy => {
                kb.warn(format!("{e}; answered by the substring backend"));
                Substring.search(kb, q)
            }
            other => other,
        }
    }
}

/// Case-insensitive substring match over the files themselves.
pub struct Substring;

impl Retriever for Substring {
    fn name(&self) -> &'static str {
        "substring"
    }
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        super::substring::search(kb, q)
    }
}

/// The one place a backend name becomes a retriever.
pub fn for_backend(backend: RetrievalBackend) -> Box<dyn Retriever> {
    match backend {
        RetrievalBackend::Fts5 => Box::new(Fts5),
        RetrievalBackend::Substring => Box::new(Substring),
        // Not in this build yet: answered by FTS5 (see `unavailable`).
        RetrievalBackend::Embedding | RetrievalBackend::Hybrid => Box::new(Fts5),
    }
}

/// Why `backend` is answered by another retriever in this build, if it is.
pub fn unavailable(backend: RetrievalBackend) -> Option<String> {
    let name = match backend {
        RetrievalBackend::Embedding => "embedding",
        RetrievalBackend::Hybrid => "hybrid",
        _ => return None,
    };
    Some(format!(
        "retrieval.backend `{name}` needs a local embedding model, which this build of vouch \
         does not have yet; searches are answered by fts5 (set retrieval.backend: fts5 to \
         silence this)"
    ))
}

/// Every backend this build can serve, by name (for `kb.capabilities`).
pub fn names() -> Vec<&'static str> {
    [RetrievalBackend::Fts5, RetrievalBackend::Substring]
        .into_iter()
        .map(|b| for_backend(b).name())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::dispatch;
    use crate::{Caller, Transport};
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    /// Answers every query with one claim id, and records what it was told.
    struct Fixed {
        writes: Arc<Mutex<usize>>,
    }

    impl Retriever for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn search(&self, _kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
            Ok(vec![SearchHit {
                kind: "claim".into(),
                id: format!("answer-to-{}", q.terms.join("-")),
                snippet: String::new(),
                score: 1.0,
                backend: self.name().into(),
                status: Some("working".into()),
                confidence: Some(0.9),
                meta: None,
            }])
        }
        fn on_write(&self, _kb: &Kb, written: &[Written]) {
            *self.writes.lock().unwrap() += written.len();
        }
    }

    #[test]
    fn searches_and_writes_go_through_the_retriever_the_kb_holds() {
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let mut kb = Kb::open(
            &dir.path().join(".vouch"),
            Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        assert_eq!(kb.retriever().name(), "fts5");
        let writes = Arc::new(Mutex::new(0));
        kb.set_retriever(Box::new(Fixed {
            writes: writes.clone(),
        }));
        let caller = Caller::new("agent", Transport::Jsonl);
        let hits = dispatch(&kb, &caller, "kb.search", json!({"query": "rate limits"})).unwrap();
        assert_eq!(hits[0]["id"], "answer-to-rate-limits");
        assert_eq!(hits[0]["backend"], "fixed");
        // Not admitted by any approval in the (empty) log: marked.
        assert_eq!(hits[0]["_meta"]["unaudited"], true);
        dispatch(
            &kb,
            &caller,
            "kb.register_source",
            json!({"content": "x", "locator": "l"}),
        )
        .unwrap();
        assert_eq!(*writes.lock().unwrap(), 1, "the write hook reached it");
    }

    #[test]
    fn every_backend_name_makes_a_retriever_of_that_name() {
        assert_eq!(names(), ["fts5", "substring"]);
        assert_eq!(for_backend(RetrievalBackend::Substring).name(), "substring");
    }
}
