//! Retrieval: how approved knowledge is found — the derived index
//! (`state.db`, SQLite FTS5), the substring fallback, context packs and the
//! retrieval-quality evaluation. Only `state.db` is ever written here.

pub mod backend;
pub mod eval;
pub(crate) mod hybrid;
pub use hybrid::LEXICAL_WEIGHT;
pub mod pack;
pub(crate) mod semantic;
pub(crate) mod substring;

pub use crate::index::{Currency, Query, RebuildResult, SEARCH_KINDS, SearchHit, Snippets};
pub use crate::services::Embedder;
pub use backend::{Retriever, retriever};

use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::DocKind;
pub use crate::model::Written;
use crate::store::Dir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Params of `kb.search`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Plain words. Quotes, operators and punctuation are treated as text.
    pub query: String,
    /// Max hits (default 10, 1..=1000).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Any of claim, page, entity, source (default all).
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
    /// fts5 | substring | embedding | hybrid (default: `retrieval.backend`
    /// of config.yaml). `embedding` and `hybrid` need a local model
    /// (`vouch model import`); without one they are refused.
    #[serde(default)]
    pub backend: Option<String>,
}

/// Largest `limit` of a search; a larger one is capped to it.
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// Words of a query: runs of letters and digits, lowercased, deduplicated,
/// at most 64.
pub fn query_terms(query: &str) -> Vec<String> {
    words(query, 64)
}

/// Every distinct word of a text, as [`query_terms`] makes them.
pub(crate) fn query_terms_unbounded(text: &str) -> Vec<String> {
    words(text, usize::MAX)
}

fn words(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        let w = w.to_lowercase();
        if seen.insert(w.clone()) {
            out.push(w);
        }
        if out.len() >= max {
            break;
        }
    }
    out
}

fn checked_search(p: &SearchParams) -> Result<(usize, Vec<DocKind>)> {
    if p.query.trim().is_empty() {
        return Err(Error::invalid("query: must not be empty"));
    }
    let limit = match p.limit {
        None => 10,
        Some(n) if n < 1 => {
            return Err(Error::invalid(format!(
                "limit: {n} is not allowed; use 1..={MAX_SEARCH_LIMIT}"
            )));
        }
        Some(n) => (n as usize).min(MAX_SEARCH_LIMIT),
    };
    let kinds = match &p.kinds {
        None => SEARCH_KINDS.to_vec(),
        Some(list) if list.is_empty() => SEARCH_KINDS.to_vec(),
        Some(list) => list
            .iter()
            .map(|k| {
                DocKind::parse_or_explain(k).map_err(|e| Error::invalid(format!("kinds: {e}")))
            })
            .collect::<Result<Vec<_>>>()?,
    };
    Ok((limit, kinds))
}

/// `kb.search`: ranked hits for the query's words, current knowledge first,
/// from the backend asked for or the configured one.
pub fn search(kb: &Kb, p: SearchParams) -> Result<Vec<SearchHit>> {
    let (limit, kinds) = checked_search(&p)?;
    let backend = p.backend.as_deref().map(backend::parse).transpose()?;
    let terms = query_terms(&p.query);
    retrieve(
        kb,
        &Query {
            text: &p.query,
            terms: &terms,
            limit,
            kinds: &kinds,
            currency: Currency::Any,
            snippets: Snippets::Yes,
            explicit: backend.is_some(),
            backend,
        },
    )
}

/// Ranked hits from the backend asked for (or the configured one), each
/// gated kind (claim, page, entity) that never went through the gate
/// marked `_meta.unaudited`. Current knowledge comes first in every
/// backend: a superseded or archived claim ranks below every current hit.
pub fn retrieve(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    let retriever = match q.backend {
        Some(b) if backend::needs_model(b) && kb.embedder().is_none() => {
            return Err(semantic::no_model(kb, backend::name_of(b)));
        }
        Some(b) => backend::for_backend(b),
        None => {
            // Only a degraded KB pays for the state's message.
            if backend::used(kb) != kb.settings().retrieval.backend
                && let Some(why) = backend::RetrievalState::of(kb).degraded_reason
            {
                kb.warn(why);
            }
            retriever(kb)
        }
    };
    let mut hits = match current_first(kb, retriever, q) {
        // The model failed (damaged files, a load error): a search that
        // did not ask for meaning by name is answered by words, and says
        // so; one that did gets the error.
        Err(e) if !q.explicit && retriever.needs_model() => {
            kb.warn(format!("{}; answered by fts5", e.message));
            current_first(
                kb,
                backend::for_backend(crate::settings::RetrievalBackend::Fts5),
                q,
            )?
        }
        other => other?,
    };
    drop_unbacked(kb, &mut hits);
    mark_unaudited(kb, &mut hits);
    Ok(hits)
}

/// Leave out hits their files do not back (a row planted in `state.db`,
/// or one left by a file that is gone), saying so: the index is derived,
/// and only what a file says is served as that file.
fn drop_unbacked(kb: &Kb, hits: &mut Vec<SearchHit>) {
    let keys: Vec<(DocKind, &str)> = hits.iter().map(|h| (h.kind, h.id.as_str())).collect();
    let unbacked = match kb.index().unbacked(kb, &keys) {
        Ok(set) => set,
        Err(e) => {
            kb.warn(format!(
                "search: could not check hits against their files ({}); run `vouch doctor`",
                e.message
            ));
            return;
        }
    };
    if unbacked.is_empty() {
        return;
    }
    hits.retain(|h| !unbacked.contains(&(h.kind, h.id.clone())));
    let mut named: Vec<String> = unbacked
        .iter()
        .map(|(k, id)| format!("{} {id}", k.as_str()))
        .collect();
    named.sort();
    kb.warn(format!(
        "search: left out {} hit(s) the index holds but no file backs ({}); state.db was \
         written outside vouch or is behind the files: `vouch doctor` names the rows, \
         `vouch doctor --fix` rebuilds the index",
        named.len(),
        named.join(", ")
    ));
}

/// Hits with every current one before every retired one. When the first
/// answer holds retired hits and is full, current hits may have been cut
/// below them: ask again for current ones only and fill with the retired.
fn current_first(kb: &Kb, retriever: &dyn Retriever, q: &Query) -> Result<Vec<SearchHit>> {
    if q.terms.is_empty() && !retriever.needs_model() {
        return Ok(Vec::new());
    }
    let hits = retriever.search(kb, q)?;
    let retired = |h: &SearchHit| !Currency::Current.admits(h.status.as_deref());
    if q.currency == Currency::Current || !hits.iter().any(retired) {
        return Ok(hits);
    }
    let (mut current, old): (Vec<SearchHit>, Vec<SearchHit>) =
        hits.iter().cloned().partition(|h| !retired(h));
    if hits.len() >= q.limit {
        current = retriever.search(
            kb,
            &Query {
                currency: Currency::Current,
                ..*q
            },
        )?;
    }
    current.extend(old);
    current.truncate(q.limit);
    Ok(current)
}

/// Mark hits that no approval or import in the audit log admitted: a
/// `claims/x.yaml` written by hand (or a cut log). The index follows the
/// log incrementally; if it cannot be used, the log is read whole.
fn mark_unaudited(kb: &Kb, hits: &mut [SearchHit]) {
    let dir = |kind: DocKind| match kind {
        DocKind::Claim => Some(Dir::Claims),
        DocKind::Page => Some(Dir::Pages),
        DocKind::Entity => Some(Dir::Entities),
        DocKind::Source => None,
    };
    let objects: Vec<(Dir, &str)> = hits
        .iter()
        .filter_map(|h| Some((dir(h.kind)?, h.id.as_str())))
        .collect();
    let unaudited = unaudited(kb, &objects);
    for h in hits.iter_mut() {
        if let Some(d) = dir(h.kind)
            && unaudited.contains(&(d, h.id.clone()))
        {
            h.meta.unaudited = true;
        }
    }
}

/// Which of these durable objects (folder and id) no approval or import in
/// the audit log let in, or whose file is not what the last event that
/// wrote it recorded. The index follows the log incrementally; if it cannot
/// be used, the log is read whole.
pub fn unaudited(kb: &Kb, objects: &[(Dir, &str)]) -> HashSet<(Dir, String)> {
    unaudited_as(kb, objects, false)
}

/// [`unaudited`] for a refusal: where the index cannot tell, the log is
/// read whole rather than nothing marked.
pub fn unaudited_strictly(kb: &Kb, objects: &[(Dir, &str)]) -> HashSet<(Dir, String)> {
    unaudited_as(kb, objects, true)
}

fn unaudited_as(kb: &Kb, objects: &[(Dir, &str)], strict: bool) -> HashSet<(Dir, String)> {
    if objects.is_empty() {
        return HashSet::new();
    }
    match kb.index().unaudited(kb, objects, strict) {
        Ok(set) => set,
        Err(_) => match crate::audit::trail::Trail::read(kb.audit_log()) {
            Ok(t) => objects
                .iter()
                .filter(|(dir, id)| !reviewed(kb, &t, *dir, id))
                .map(|(dir, id)| (*dir, id.to_string()))
                .collect(),
            // Neither the index nor the log can tell what was reviewed:
            // nothing is vouched for, so everything is marked (an export
            // or a refusal never fails open).
            Err(e) => {
                kb.warn(format!(
                    "audit: the log cannot be read ({e}); every object read is marked unaudited"
                ));
                objects
                    .iter()
                    .map(|(dir, id)| (*dir, id.to_string()))
                    .collect()
            }
        },
    }
}

/// Whether the object is reviewed knowledge as the log says
/// ([`crate::audit::trail::Trail::reviewed`]); one whose file is gone or
/// unreadable is judged by id.
fn reviewed(kb: &Kb, trail: &crate::audit::trail::Trail, dir: Dir, id: &str) -> bool {
    match kb.layout().file(dir, id) {
        Ok(path) => match kb.read_file(&path) {
            Ok(Some(bytes)) => trail.reviewed(&kb.layout().inside(&path), &bytes),
            _ => trail.admits(id),
        },
        Err(_) => trail.admits(id),
    }
}

/// Params of `kb.index_rebuild`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexRebuildParams {
    /// Return only once every document has its vectors too (default true;
    /// only when a model is configured). false returns once the words are
    /// indexed, with `embeddings.pending` saying how many documents still
    /// wait for vectors (a server's background refresh embeds them; until
    /// then searches by meaning say they are partial).
    #[serde(default)]
    pub wait: Option<bool>,
}

/// What `kb.index_rebuild` did: the words, and the vectors when a model
/// is configured.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IndexRebuildResult {
    /// The words: documents indexed from the files.
    #[serde(flatten)]
    pub index: RebuildResult,
    /// The vectors (absent without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<RebuiltVectors>,
}

/// The vectors after a rebuild.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RebuiltVectors {
    /// The model they are of.
    pub model: String,
    /// Documents with vectors now.
    pub documents: usize,
    /// Documents the model embedded in this call.
    pub embedded: usize,
    /// Documents whose vectors were reused (same text).
    pub reused: usize,
    /// Documents whose vectors another replica's model made, taken from
    /// the team database (a team server's).
    pub shared: usize,
    /// Documents still without vectors: 0 unless `wait: false` (or the
    /// model failed on some, named in the warnings).
    pub pending: usize,
}

/// `kb.index_rebuild`: the words from the files, then (unless `wait` is
/// false) every document's vectors, so the first search after it is whole
/// by meaning as by words.
pub fn rebuild_index(
    kb: &Kb,
    caller: &crate::Caller,
    p: IndexRebuildParams,
) -> Result<IndexRebuildResult> {
    let index = rebuild_audited(kb, caller)?;
    let Some(embedder) = kb.embedder().cloned() else {
        return Ok(IndexRebuildResult {
            index,
            embeddings: None,
        });
    };
    // `wait: false`: a budget already spent counts what waits and embeds
    // nothing.
    let wait = p.wait.unwrap_or(true);
    let budget = if wait {
        crate::index::Budget::Unlimited
    } else {
        crate::index::Budget::Until(std::time::Instant::now())
    };
    // Without waiting, a step already embedding (a server's background
    // one) is not waited for: what waits is counted instead.
    let stats = match kb
        .index()
        .embed(kb, &embedder, budget, wait, &mut |done, total| {
            kb.embedded(done, total)
        })? {
        Some(stats) => stats,
        None => {
            let (documents, pending) = kb.index().vector_counts(kb, &embedder)?;
            crate::index::EmbedStats {
                documents,
                pending,
                ..Default::default()
            }
        }
    };
    if stats.pending > 0 {
        kb.note_vectors_pending(stats.pending);
    }
    Ok(IndexRebuildResult {
        index,
        embeddings: Some(RebuiltVectors {
            model: embedder.model_id().to_string(),
            documents: stats.documents,
            embedded: stats.embedded,
            reused: stats.reused,
            shared: stats.shared,
            pending: stats.pending,
        }),
    })
}

/// Build the derived index again from the files, and log who did.
pub fn rebuild_audited(kb: &Kb, caller: &crate::Caller) -> Result<RebuildResult> {
    let r = kb.index().rebuild(kb)?;
    let _lock = kb.lock()?;
    let mut ev = kb.event(
        "index.rebuild",
        &caller.actor,
        Vec::new(),
        serde_json::json!({"indexed": r.indexed}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(r)
}

#[cfg(test)]
mod marks {
    use super::{unaudited, unaudited_strictly};
    use crate::store::Dir;

    /// Where neither the index nor the audit log can say what was
    /// reviewed, nothing is vouched for: every object is marked, for a
    /// read as for an export or a refusal (never an empty set: that would
    /// serve hand-written knowledge unmarked).
    #[test]
    fn with_no_log_to_read_every_object_is_marked() {
        let (_dir, kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "notes");
        let id = crate::testing::test_claim(&kb, &src, "rate limits apply per tenant");
        let objects = [(Dir::Claims, id.as_str())];
        assert!(unaudited_strictly(&kb, &objects).is_empty());
        // The log replaced by a folder: it cannot be read, and the index,
        // which follows the log, cannot tell either.
        let log = kb.layout().audit_log();
        std::fs::remove_file(&log).unwrap();
        std::fs::create_dir(&log).unwrap();
        kb.index().rebuild(&kb).ok();
        let want = std::collections::HashSet::from([(Dir::Claims, id.clone())]);
        assert_eq!(unaudited_strictly(&kb, &objects), want);
        assert_eq!(unaudited(&kb, &objects), want);
    }
}
