//! The `embedding` backend: ranking by meaning. The query is embedded by
//! the model `Kb::embedder` holds and compared (cosine) with every
//! document's vectors ([`super::embed::vectors`]); a document's best chunk
//! answers for it.

use super::embed::Embedder;
use super::{Query, SearchHit, Snippets};
use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::DocKind;

/// Documents the semantic side offers a fusion (and the most it ranks).
pub const CANDIDATES: usize = 50;

/// The message for a semantic search on a knowledge base without a model.
pub fn no_model(kb: &Kb, backend: &str) -> Error {
    Error::invalid(format!(
        "backend `{backend}` needs a local embedding model and the one configured is not \
         installed. {}",
        kb.model_hint()
    ))
}

/// The vector of a question (or a term of one) for `embedder`: kept for
/// the last few, since one search may ask twice (current knowledge first)
/// and an answer weighs the same terms again. The key holds the model's
/// identity, so another model never gets these vectors.
pub(crate) fn query_vector(kb: &Kb, embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>> {
    let model = embedder.model_id();
    let kept = |cache: &std::collections::VecDeque<(String, String, Vec<f32>)>| {
        cache
            .iter()
            .find(|(m, t, _)| m == model && t == text)
            .map(|(_, _, v)| v.clone())
    };
    let cache = &kb.index_state.query_vectors;
    if let Some(v) = kept(&cache.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(v);
    }
    let vector = embedder.embed_query(text)?;
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if kept(&cache).is_none() {
        if cache.len() == super::state::QUERY_VECTORS_KEPT {
            cache.pop_front();
        }
        cache.push_back((model.to_string(), text.to_string(), vector.clone()));
    }
    Ok(vector)
}

/// A document the semantic side found: kind, id, status, cosine.
pub(crate) type Near = (DocKind, String, Option<String>, f32);

/// The query's vector and the best `want` documents by cosine. Reads
/// only, unless no background step keeps the vectors up to date
/// ([`crate::kb::IndexUpkeep`]): then what is new is embedded first,
/// within the search budget.
pub(crate) fn nearest(kb: &Kb, q: &Query, want: usize) -> Result<(Vec<f32>, Vec<Near>)> {
    let embedder = kb
        .embedder()
        .ok_or_else(|| no_model(kb, "embedding"))?
        .clone();
    // The query first: loading the model before the vectors keeps the
    // load's transient copy of the weights off the peak.
    let vector = query_vector(kb, embedder.as_ref(), q.text)?;
    super::embed::before_read(kb, &embedder, super::embed::vectors::SEARCH_BUDGET)?;
    let guard = kb.index_state.read_vectors();
    let Some(vectors) = guard.as_ref() else {
        return Ok((vector, Vec::new()));
    };
    if vectors.pending() > 0 {
        kb.warn(format!(
            "semantic search: {} objects are not embedded yet and are found by words only; \
             `vouch index rebuild` embeds them all now",
            vectors.pending()
        ));
    }
    let found = vectors
        .nearest(&vector, q.kinds, q.currency, want)
        .into_iter()
        .filter_map(|(k, s)| {
            Some((
                DocKind::parse(k.kind)?,
                k.id.to_string(),
                k.status.map(str::to_string),
                s,
            ))
        })
        .collect();
    Ok((vector, found))
}

/// Each document's confidence (claims) and, where its flag asks, its
/// text, in one trip to the index for all of them: a hit of the semantic
/// side carries its confidence (its rank in a context pack) and its text
/// only for an excerpt; fusion measures each lexical hit's text. A
/// document the index no longer has gets empty text.
pub(crate) fn texts_and_confidence(
    kb: &Kb,
    keys: &[(DocKind, &str, bool)],
) -> Result<Vec<(String, Option<f64>)>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    super::fts5::with_index(kb, |idx| {
        keys.iter()
            .map(|(kind, id, with_text)| {
                Ok(idx
                    .text_and_confidence(kind.as_str(), id, *with_text)?
                    .unwrap_or_default())
            })
            .collect()
    })
}

/// How close in meaning claim `id` is to `query` (a vector of the
/// knowledge base's model): its best chunk's cosine, `None` while it has
/// no vector. For answers, which weigh what a search found; the vectors
/// stay retrieval's.
pub(crate) fn claim_cosine(kb: &Kb, id: &str, query: &[f32]) -> Option<f32> {
    kb.index_state
        .read_vectors()
        .as_ref()?
        .similarity("claim", id, query)
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
    let (_, found) = nearest(kb, q, q.limit)?;
    let snippets = q.snippets == Snippets::Yes;
    let keys: Vec<(DocKind, &str, bool)> = found
        .iter()
        .map(|(k, id, _, _)| (*k, id.as_str(), snippets))
        .collect();
    let facts = texts_and_confidence(kb, &keys)?;
    Ok(found
        .into_iter()
        .zip(facts)
        .map(
            |((kind, id, status, score), (text, confidence))| SearchHit {
                confidence,
                cosine: Some(score),
                snippet: if q.snippets == Snippets::Yes {
                    excerpt(&text)
                } else {
                    String::new()
                },
                highlights: Vec::new(),
                kind,
                id,
                score: (score as f64 * 10_000.0).round() / 10_000.0,
                backend: "embedding".into(),
                status,
                meta: Default::default(),
            },
        )
        .collect())
}

/// How close in meaning a claim must be to be called a possible duplicate.
pub const DUPLICATE_COSINE: f32 = 0.95;

/// Current approved claims almost the same in meaning as `text`, for a
/// reviewer. Empty without a model; a model failure is a warning, never a
/// failed proposal.
pub(crate) fn near_duplicates(kb: &Kb, text: &str) -> Vec<crate::model::meta::NearDuplicate> {
    let Some(embedder) = kb.embedder().cloned() else {
        return Vec::new();
    };
    let found = (|| -> Result<Vec<(String, f32)>> {
        let vector = embedder.embed_query(text)?;
        super::embed::before_read(kb, &embedder, std::time::Duration::from_millis(500))?;
        let guard = kb.index_state.read_vectors();
        Ok(guard
            .as_ref()
            .map(|v| {
                v.nearest(&vector, &[DocKind::Claim], super::Currency::Current, 5)
                    .into_iter()
                    .filter(|(_, s)| *s >= DUPLICATE_COSINE)
                    .map(|(k, s)| (k.id.to_string(), s))
                    .collect()
            })
            .unwrap_or_default())
    })();
    match found {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        for i in 0..crate::retrieval::state::QUERY_VECTORS_KEPT {
            query_vector(&kb, &a, &format!("question {i}")).unwrap();
        }
        let before = a.runs.load(Ordering::SeqCst);
        query_vector(&kb, &a, "card retries").unwrap();
        assert_eq!(a.runs.load(Ordering::SeqCst), before + 1);
    }
}
