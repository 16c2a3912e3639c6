//! The `embedding` backend: ranking by meaning. The query is embedded by
//! the model `Kb::embedder` holds and compared (cosine) with every
//! document's vectors by the derived index (`DerivedIndex::nearest`); a
//! document's best chunk answers for it.

use super::{Query, SearchHit, Snippets};
use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::DocKind;
use crate::services::Embedder;

/// Documents the semantic side offers a fusion (and the most it ranks).
pub(crate) const CANDIDATES: usize = 50;

/// The message for a semantic search on a knowledge base without a model.
pub(crate) fn no_model(kb: &Kb, backend: &str) -> Error {
    Error::invalid(format!(
        "backend `{backend}` needs a local embedding model and the one configured is not \
         installed. {}",
        kb.model_hint()
    ))
}

/// The vector of a question (or a term of one) for `embedder`, kept for
/// the last few ([`crate::services::QueryVectors`]): one search may ask
/// twice (current knowledge first) and an answer weighs the same terms.
pub(crate) fn query_vector(kb: &Kb, embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>> {
    kb.query_vectors().get(embedder, text)
}

/// How close in meaning claim `id` is to `query` (a vector of the
/// knowledge base's model): its best chunk's cosine, `None` while it has
/// no vector. For answers, which weigh what a search found.
pub(crate) fn claim_cosine(kb: &Kb, id: &str, query: &[f32]) -> Result<Option<f32>> {
    kb.index().similarity(DocKind::Claim, id, query)
}

/// A plain excerpt of `text` for a hit no word matched (nothing to
/// highlight).
pub(crate) fn excerpt(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

pub(crate) fn search(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    let mut hits = candidates(kb, q)?;
    let snippets = q.snippets == Snippets::Yes;
    let keys: Vec<(DocKind, &str, bool)> = hits
        .iter()
        .map(|h| (h.kind, h.id.as_str(), snippets))
        .collect();
    let facts = kb.index().texts_and_confidence(kb, &keys)?;
    for (hit, (text, confidence)) in hits.iter_mut().zip(facts) {
        hit.confidence = confidence;
        if snippets {
            hit.snippet = excerpt(&text);
        }
    }
    Ok(hits)
}

/// The `q.limit` documents nearest the question as hits with their
/// cosine, without a trip to the index for texts or confidence (see
/// `Retriever::candidates`). Reads only, unless no background step keeps
/// the vectors up to date ([`crate::index::IndexUpkeep`]): then what is new
/// is embedded first, within the search budget.
pub(crate) fn candidates(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    let embedder = kb
        .embedder()
        .ok_or_else(|| no_model(kb, "embedding"))?
        .clone();
    // The query first: loading the model before the vectors keeps the
    // load's transient copy of the weights off the peak.
    let vector = query_vector(kb, embedder.as_ref(), q.text)?;
    let index = kb.index();
    let pending = index.vectors_for_read(kb, &embedder, crate::index::SEARCH_BUDGET)?;
    if pending > 0 {
        kb.note_vectors_pending(pending);
        kb.warn(format!(
            "semantic search: {pending} objects are not embedded yet and are found by words \
             only; `vouch index rebuild` embeds them all now"
        ));
    }
    Ok(index
        .nearest(&vector, q.kinds, q.currency, q.limit)?
        .into_iter()
        .map(|(kind, id, status, score)| SearchHit {
            confidence: None,
            cosine: Some(score),
            snippet: String::new(),
            highlights: Vec::new(),
            kind,
            id,
            score: (score as f64 * 10_000.0).round() / 10_000.0,
            backend: "embedding".into(),
            status,
            meta: Default::default(),
        })
        .collect())
}

/// How close in meaning a claim must be to be called a possible duplicate.
pub(crate) const DUPLICATE_COSINE: f32 = 0.95;

/// Whether [`near_duplicates`] may run the model on the proposed text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProposedText {
    /// A proposal being made (a write): embed it, and keep its vector.
    Embed,
    /// The review queue (a read): only a vector the keeper or the proposal
    /// kept ([`Kb::embed_pending_proposals`]); `None` without one.
    KeptOnly,
}

/// Current approved claims almost the same in meaning as `text`, for a
/// reviewer. Empty without a model; a model failure is a warning, never a
/// failed proposal. `None` when `how` is [`ProposedText::KeptOnly`] and
/// no vector of the text is kept.
pub(crate) fn near_duplicates(
    kb: &Kb,
    text: &str,
    how: ProposedText,
) -> Option<Vec<crate::model::meta::NearDuplicate>> {
    let Some(embedder) = kb.embedder().cloned() else {
        return Some(Vec::new());
    };
    let vector = match how {
        ProposedText::Embed => kb.proposal_vectors().get(embedder.as_ref(), text),
        ProposedText::KeptOnly => Ok(kb.proposal_vectors().kept(embedder.as_ref(), text)?),
    };
    let found = (|| -> Result<Vec<(String, f32)>> {
        let vector = vector?;
        let index = kb.index();
        index.vectors_for_read(kb, &embedder, std::time::Duration::from_millis(500))?;
        Ok(index
            .nearest(&vector, &[DocKind::Claim], super::Currency::Current, 5)?
            .into_iter()
            .filter(|(_, _, _, s)| *s >= DUPLICATE_COSINE)
            .map(|(_, id, _, s)| (id, s))
            .collect())
    })();
    Some(match found {
        Ok(list) => list
            .into_iter()
            .map(|(id, s)| {
                let text = kb
                    .load::<crate::model::Claim>(&id)
                    .ok()
                    .flatten()
                    .map(|c| c.text)
                    .unwrap_or_default();
                crate::model::meta::NearDuplicate {
                    id,
                    text,
                    similarity: (s as f64 * 1000.0).round() / 1000.0,
                }
            })
            .collect(),
        Err(e) => {
            kb.warn(format!("possible duplicates not checked: {e}"));
            Vec::new()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An embedder that counts how often it runs.
    struct Counting {
        id: &'static str,
        runs: AtomicUsize,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            self.id
        }
        fn dimensions(&self) -> usize {
            2
        }
        fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Ok(vec![text.len() as f32, 1.0])
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
            Ok(texts
                .iter()
                .map(|t| vec![vec![t.len() as f32, 1.0]])
                .collect())
        }
    }

    /// Where a background step keeps the vectors (a server) and it has
    /// not caught up, a search by meaning answers from what is embedded
    /// and its call says so: partial, with the count still waiting (never
    /// a silent short or empty answer). Once embedded, nothing is said.
    #[test]
    fn a_search_missing_vectors_says_it_is_partial() {
        let (_dir, mut kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "notes");
        for text in [
            "rate limits apply per tenant",
            "deploys are frozen on fridays",
        ] {
            crate::testing::test_claim(&kb, &src, text);
        }
        let model: Arc<dyn Embedder> = Arc::new(Counting {
            id: "counting@test/2/0",
            runs: AtomicUsize::new(0),
        });
        kb.set_embedder(model.clone());
        kb.configure_index(|o| o.upkeep = crate::index::IndexUpkeep::Background);
        let search = |kb: &Kb| {
            crate::stored::Store::collecting_notes(|| {
                crate::methods::dispatch(
                    kb,
                    &crate::Caller::new("agent", crate::Transport::Jsonl),
                    "kb.search",
                    serde_json::json!({"query": "tenant limits", "backend": "embedding"}),
                )
                .unwrap()
            })
        };
        let (_, notes) = search(&kb);
        assert!(notes.vectors_pending.is_some_and(|n| n >= 2), "{notes:?}");
        let meta = notes.meta(kb.layout().root()).unwrap();
        assert_eq!(meta["partial"], true, "{meta:?}");
        // kb.status counts them too, embedding nothing.
        let waiting = |kb: &Kb| {
            let status = crate::reads::status(kb).unwrap();
            let v = status.retrieval.vectors.unwrap();
            assert_eq!(v.model, "counting@test/2/0");
            v.pending
        };
        assert!(waiting(&kb) >= 2);
        assert!(waiting(&kb) >= 2, "a status embedded");
        kb.index()
            .embed(
                &kb,
                &model,
                crate::index::Budget::Unlimited,
                true,
                &mut |_, _| {},
            )
            .unwrap();
        let (hits, notes) = search(&kb);
        assert_eq!(notes.vectors_pending, None, "{notes:?}");
        assert_eq!(waiting(&kb), 0);
        assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
    }

    /// The review queue is a read: it names near-duplicates by vectors a
    /// proposal or the keeper's step made, and never runs the model. A
    /// process that kept none says its answer is partial until the
    /// keeper's step (taken before a one-shot dispatch) embeds them.
    #[test]
    fn the_review_queue_names_near_duplicates_without_running_the_model() {
        let (dir, mut kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "notes");
        let kept = crate::testing::test_claim(&kb, &src, "deploys are frozen on fridays");
        let counting = |id| {
            Arc::new(Counting {
                id,
                runs: AtomicUsize::new(0),
            })
        };
        let model = counting("counting@test/2/0");
        kb.set_embedder(model.clone());
        let agent = crate::Caller::new("agent", crate::Transport::Jsonl);
        let proposed = crate::methods::dispatch(
            &kb,
            &agent,
            "kb.propose_claim",
            serde_json::json!({"text": "deploys are frozen on friday!", "evidence": [src]}),
        )
        .unwrap();
        assert_eq!(
            proposed["_meta"]["possible_duplicates"][0]["id"], kept,
            "{proposed}"
        );
        let after_proposing = model.runs.load(Ordering::SeqCst);
        assert!(after_proposing >= 1, "the proposal embedded its text");
        let queue = |kb: &Kb| {
            crate::stored::Store::collecting_notes(|| {
                crate::reads::list_pending(kb, Default::default()).unwrap()
            })
        };
        let (page, _) = queue(&kb);
        assert_eq!(page[0].meta.possible_duplicates[0].id, kept);
        assert_eq!(model.runs.load(Ordering::SeqCst), after_proposing);

        // Another process: nothing kept. The read runs no model and says
        // it is partial; the keeper's step embeds, then the read names it.
        let mut other = Kb::open(
            &dir.path().join(".vouch"),
            Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        let fresh = counting("counting@test/2/0");
        other.set_embedder(fresh.clone());
        other
            .catch_up(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let (page, notes) = queue(&other);
        assert!(page[0].meta.possible_duplicates.is_empty());
        assert_eq!(notes.vectors_pending, Some(1), "{notes:?}");
        assert_eq!(fresh.runs.load(Ordering::SeqCst), 0, "a read ran the model");
        assert_eq!(other.embed_pending_proposals().unwrap(), 1);
        let (page, notes) = queue(&other);
        assert_eq!(page[0].meta.possible_duplicates[0].id, kept);
        assert_eq!(notes.vectors_pending, None, "{notes:?}");
        assert_eq!(fresh.runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_question_asked_again_is_not_embedded_again_by_the_same_model_only() {
        let (_dir, kb) = crate::testing::test_kb();
        let a = Counting {
            id: "a",
            runs: AtomicUsize::new(0),
        };
        let b = Counting {
            id: "b",
            runs: AtomicUsize::new(0),
        };
        let first = query_vector(&kb, &a, "card retries").unwrap();
        assert_eq!(query_vector(&kb, &a, "card retries").unwrap(), first);
        assert_eq!(a.runs.load(Ordering::SeqCst), 1);
        // Another model never gets the first one's vector.
        query_vector(&kb, &b, "card retries").unwrap();
        assert_eq!(b.runs.load(Ordering::SeqCst), 1);
        // Only the last few are kept: the oldest is embedded again.
        for i in 0..crate::services::QUERY_VECTORS_KEPT {
            query_vector(&kb, &a, &format!("question {i}")).unwrap();
        }
        let before = a.runs.load(Ordering::SeqCst);
        query_vector(&kb, &a, "card retries").unwrap();
        assert_eq!(a.runs.load(Ordering::SeqCst), before + 1);
    }
}
