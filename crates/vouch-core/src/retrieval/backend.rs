//! The seam between "what to find" and "how": a [`Retriever`] is one
//! backend (FTS5, substring, embedding, or the hybrid fusion of two),
//! chosen by [`for_backend`]; a search that names none goes to
//! [`retriever`], the one `retrieval.backend` names. Retrievers read
//! through the knowledge base's derived index (`Kb::index`); none keeps
//! state of its own, so writers tell only the index.

use super::{Query, SearchHit};
use crate::error::Result;
use crate::kb::Kb;
use crate::settings::RetrievalBackend;

/// One way of finding documents for a query: a retrieval backend.
pub trait Retriever: Send + Sync {
    /// The name `retrieval.backend` uses and hits report in `backend`.
    fn name(&self) -> &'static str;
    /// Ranked hits for a query, best first.
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>>;
    /// Ranked hits as a stage that fuses or reranks them takes them: with
    /// their signals (`cosine`), but free to leave out what costs another
    /// trip to the index (an excerpt, the confidence), which the stage reads
    /// once for all its candidates.
    fn candidates(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        self.search(kb, q)
    }
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
        match kb.index().lexical(kb, q) {
            Err(e) if e.kind == crate::error::ErrorKind::Busy => {
                kb.warn(format!("{e}; answered by the substring backend"));
                Substring.search(kb, q)
            }
            other => other,
        }
    }
    /// The index's word ranking itself: a fusion whose index is locked
    /// fails as a whole (and the search falls back as `retrieve` decides)
    /// rather than fuse a substring scan labelled as fts5.
    fn candidates(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        kb.index().lexical(kb, q)
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
    fn candidates(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        super::semantic::candidates(kb, q)
    }
}

/// A fusion of two retrievers (see `retrieval::hybrid`): one by the
/// question's words, one by its meaning.
pub struct Hybrid {
    /// Ranks by the question's words.
    pub words: &'static dyn Retriever,
    /// Ranks by meaning.
    pub meaning: &'static dyn Retriever,
}

/// The `hybrid` backend: fts5 and embedding fused.
pub static HYBRID: Hybrid = Hybrid {
    words: &Fts5,
    meaning: &Embedding,
};

impl Retriever for Hybrid {
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn needs_model(&self) -> bool {
        true
    }
    fn search(&self, kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
        super::hybrid::fuse(kb, q, self.words, self.meaning)
    }
}

/// The one place a backend becomes a retriever.
pub fn for_backend(backend: RetrievalBackend) -> &'static dyn Retriever {
    match backend {
        RetrievalBackend::Fts5 => &Fts5,
        RetrievalBackend::Substring => &Substring,
        RetrievalBackend::Embedding => &Embedding,
        RetrievalBackend::Hybrid => &HYBRID,
    }
}

/// The retriever searches without a `backend` param go to: the one
/// `retrieval.backend` names, or FTS5 when that needs a model this KB was
/// not given (see [`RetrievalState`]).
pub fn retriever(kb: &Kb) -> &'static dyn Retriever {
    for_backend(used(kb))
}

/// Every backend, in the order they are documented.
pub const ALL: [RetrievalBackend; 4] = [
    RetrievalBackend::Fts5,
    RetrievalBackend::Substring,
    RetrievalBackend::Embedding,
    RetrievalBackend::Hybrid,
];

/// The backend's name, as `retrieval.backend` and hits spell it.
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
    /// The backend `retrieval.backend` names.
    #[serde(serialize_with = "ser_backend")]
    #[schemars(with = "String")]
    pub configured: RetrievalBackend,
    /// The backend that answers calls naming none: `configured`, or fts5 when
    /// that needs a model this KB was not given.
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
    /// This KB's retrieval state now.
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
    use crate::index::{
        Budget, Currency, EmbedStats, Freshness, IndexOptions, Near, RebuildResult, SyncStats,
        Watcher, Watching,
    };
    use crate::methods::dispatch;
    use crate::model::{DocKind, Written};
    use crate::services::Embedder;
    use crate::stored::Store;
    use crate::{Caller, Transport};
    use serde_json::json;
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// A derived index that answers every word search with one claim,
    /// calls it unaudited, and records what writers told it: a second
    /// index needs nothing but the trait.
    #[derive(Default)]
    struct Fixed {
        written: Arc<Mutex<Vec<String>>>,
        options: Mutex<IndexOptions>,
    }

    impl crate::index::DerivedIndex for Fixed {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    impl crate::index::Configured for Fixed {
        fn configure(&self, options: IndexOptions) {
            *self.options.lock().unwrap() = options;
        }
        fn options(&self) -> IndexOptions {
            *self.options.lock().unwrap()
        }
        fn is_open(&self) -> bool {
            true
        }
        fn caught_up_at(&self) -> Option<std::time::Instant> {
            Some(std::time::Instant::now())
        }
    }

    impl crate::index::WriteHook for Fixed {
        fn written(&self, _: &Store, written: &[Written]) {
            let mut list = self.written.lock().unwrap();
            list.extend(written.iter().map(|w| w.key().1.to_string()));
        }
        fn embed_written(&self, _: &Store, _: &Arc<dyn Embedder>) {}
    }

    impl crate::index::Upkeep for Fixed {
        fn catch_up(&self, _: &Store) -> Result<SyncStats> {
            Ok(SyncStats::default())
        }
        fn open_built(&self, _: &Store) -> Result<bool> {
            Ok(true)
        }
        fn refresh_postings(&self, _: &Store) -> Result<()> {
            Ok(())
        }
        fn rebuild(&self, _: &Store) -> Result<RebuildResult> {
            Ok(RebuildResult {
                ok: true,
                indexed: 0,
            })
        }
        fn embed(
            &self,
            _: &Store,
            _: &Arc<dyn Embedder>,
            _: Budget,
            _: bool,
            _: &mut dyn FnMut(usize, usize),
        ) -> Result<Option<EmbedStats>> {
            Ok(None)
        }
        fn wait_for_upkeep(&self, _: Duration) {}
        fn changed_elsewhere(&self) {}
        fn take_changed_elsewhere(&self) -> bool {
            false
        }
        fn start_watching(&self, _: Arc<Store>) -> Result<Watching> {
            Err(crate::Error::invalid("not watched"))
        }
        fn watcher(&self, _: &Store) -> Option<Watcher> {
            None
        }
    }

    impl crate::index::LexicalIndex for Fixed {
        fn lexical(&self, _: &Store, q: &Query) -> Result<Vec<SearchHit>> {
            Ok(vec![SearchHit {
                kind: DocKind::Claim,
                id: format!("answer-to-{}", q.terms.join("-")),
                snippet: String::new(),
                highlights: Vec::new(),
                score: 1.0,
                backend: "fts5".into(),
                status: Some("working".into()),
                confidence: Some(0.9),
                cosine: None,
                meta: Default::default(),
            }])
        }
        fn texts_and_confidence(
            &self,
            _: &Store,
            keys: &[(DocKind, &str, bool)],
        ) -> Result<Vec<(String, Option<f64>)>> {
            Ok(vec![Default::default(); keys.len()])
        }
    }

    impl crate::index::VectorIndex for Fixed {
        fn vectors_for_read(&self, _: &Store, _: &Arc<dyn Embedder>, _: Duration) -> Result<usize> {
            Ok(0)
        }
        fn vector_counts(&self, _: &Store, _: &Arc<dyn Embedder>) -> Result<(usize, usize)> {
            Ok((0, 0))
        }
        fn nearest(&self, _: &[f32], _: &[DocKind], _: Currency, _: usize) -> Result<Vec<Near>> {
            Ok(Vec::new())
        }
        fn similarity(&self, _: DocKind, _: &str, _: &[f32]) -> Result<Option<f32>> {
            Ok(None)
        }
        fn text_shas(&self, _: &Store) -> Result<HashSet<String>> {
            Ok(HashSet::new())
        }
    }

    impl crate::index::IndexChecks for Fixed {
        fn freshness(&self, _: &Store) -> Result<Option<Freshness>> {
            Ok(None)
        }
        fn unaudited(
            &self,
            _: &Store,
            objects: &[(crate::store::Dir, &str)],
            _: bool,
        ) -> Result<HashSet<(crate::store::Dir, String)>> {
            Ok(objects.iter().map(|(d, id)| (*d, id.to_string())).collect())
        }
    }

    #[test]
    fn searches_and_writes_go_through_the_index_the_kb_holds() {
        let (_dir, mut kb) = crate::testing::test_kb();
        kb.configure_index(|o| o.trust_watcher = true);
        let index = Fixed::default();
        let written = index.written.clone();
        kb.set_index(Box::new(index));
        assert!(kb.index().options().trust_watcher, "the options carry over");
        let caller = Caller::new("agent", Transport::Jsonl);
        let hits = dispatch(&kb, &caller, "kb.search", json!({"query": "rate limits"})).unwrap();
        assert_eq!(hits[0]["id"], "answer-to-rate-limits");
        assert_eq!(hits[0]["_meta"]["unaudited"], true, "the index's marks");
        let src = dispatch(
            &kb,
            &caller,
            "kb.register_source",
            json!({"content": "x", "locator": "l"}),
        )
        .unwrap();
        assert_eq!(
            *written.lock().unwrap(),
            [src["id"].as_str().unwrap().to_string()],
            "the write hook reached it"
        );
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
