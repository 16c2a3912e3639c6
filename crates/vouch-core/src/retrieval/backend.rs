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
    /// Whether it ranks by meaning, so needs the knowledge base's embedding
    /// model (a search that did not name it falls back to fts5 when the
    /// model fails; one without query words still runs).
    fn needs_model(&self) -> bool {
        false
    }
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

/// Ranking by meaning with the local embedding model.
pub struct Embedding;

impl Retriever for Embedding {
    fn name(&self) -> &'static str {
        "embedding"
    }
    fn needs_model(&self) -> bool {
        true
    }
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        super::semantic::search(kb, q)
    }
}

/// FTS5 and embeddings fused (see `retrieval::hybrid`).
pub struct Hybrid;

impl Retriever for Hybrid {
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn needs_model(&self) -> bool {
        true
    }
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        super::hybrid::search(kb, q)
    }
}

/// The one place a backend becomes a retriever.
pub fn for_backend(backend: RetrievalBackend) -> &'static dyn Retriever {
    match backend {
        RetrievalBackend::Fts5 => &Fts5,
        RetrievalBackend::Substring => &Substring,
        RetrievalBackend::Embedding => &Embedding,
        RetrievalBackend::Hybrid => &Hybrid,
    }
}

/// Every backend, in the order they are documented.
pub const ALL: [RetrievalBackend; 4] = [
    RetrievalBackend::Fts5,
    RetrievalBackend::Substring,
    RetrievalBackend::Embedding,
    RetrievalBackend::Hybrid,
];

pub fn name_of(backend: RetrievalBackend) -> &'static str {
    for_backend(backend).name()
}

/// A `backend` param, by name; an unknown name is refused with the four.
pub fn parse(name: &str) -> crate::error::Result<RetrievalBackend> {
    let name = if name == "auto" { "hybrid" } else { name };
    ALL.into_iter()
        .find(|b| name_of(*b) == name)
        .ok_or_else(|| {
            crate::error::Error::invalid(format!(
                "backend: unknown backend {:?}; expected one of: {}",
                crate::ids::truncate_for_message(name),
                ALL.map(name_of).join(", ")
            ))
        })
}

/// Whether `backend` needs the embedding model: its retriever says.
pub fn needs_model(backend: RetrievalBackend) -> bool {
    for_backend(backend).needs_model()
}

/// What retrieval was asked for (`retrieval.backend`) and what answers.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct RetrievalState {
    #[serde(serialize_with = "ser_backend")]
    #[schemars(with = "String")]
    pub configured: RetrievalBackend,
    #[serde(serialize_with = "ser_backend")]
    #[schemars(with = "String")]
    pub used: RetrievalBackend,
    /// The embedding model's identity, when this KB has one.
    pub model: Option<String>,
    /// Why `used` is not `configured`, if it is not.
    pub degraded_reason: Option<String>,
    /// Backends that work right now.
    pub available: Vec<&'static str>,
}

fn ser_backend<S: serde::Serializer>(b: &RetrievalBackend, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(name_of(*b))
}

/// The backend that answers when a call names none: the configured one,
/// or fts5 when that needs a model this KB was not given. Cheap: the
/// search path asks it on every call.
pub fn used(kb: &Kb) -> RetrievalBackend {
    let configured = kb.settings().retrieval.backend;
    if needs_model(configured) && kb.embedder().is_none() {
        RetrievalBackend::Fts5
    } else {
        configured
    }
}

impl RetrievalState {
    pub fn of(kb: &Kb) -> RetrievalState {
        let configured = kb.settings().retrieval.backend;
        let model = kb.embedder().map(|e| e.model_id().to_string());
        let used = used(kb);
        let degraded_reason = (used != configured).then(|| {
            format!(
                "retrieval.backend is `{}` but no embedding model is installed; searches are \
                 answered by fts5. {}",
                name_of(configured),
                kb.model_hint()
            )
        });
        let available = ALL
            .into_iter()
            .filter(|b| model.is_some() || !needs_model(*b))
            .map(name_of)
            .collect();
        RetrievalState {
            configured,
            used,
            model,
            degraded_reason,
            available,
        }
    }
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
                kind: crate::model::DocKind::Claim,
                id: format!("answer-to-{}", q.terms.join("-")),
                snippet: String::new(),
                highlights: Vec::new(),
                score: 1.0,
                backend: self.name().into(),
                status: Some("working".into()),
                confidence: Some(0.9),
                cosine: None,
                meta: Default::default(),
            }])
        }
        fn on_write(&self, _kb: &Kb, written: &[Written]) {
            *self.writes.lock().unwrap() += written.len();
        }
    }

    #[test]
    fn searches_and_writes_go_through_the_retriever_the_kb_holds() {
        let (_dir, mut kb) = crate::testing::test_kb();
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
        for b in ALL {
            assert_eq!(parse(name_of(b)).unwrap(), b);
        }
        assert_eq!(parse("auto").unwrap(), RetrievalBackend::Hybrid);
        let e = parse("vector").unwrap_err();
        assert_eq!(
            e.message,
            "backend: unknown backend \"vector\"; expected one of: fts5, substring, embedding, hybrid"
        );
    }
}
