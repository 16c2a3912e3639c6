//! Read-only methods: status, read_*, list_*, pending with citations, audit.

use crate::error::{Error, Result};
use crate::ids::{check_id, is_source_id};
use crate::kb::Kb;
use crate::model::{Evidence, Page, Proposal, Source};
use crate::params::*;
use crate::store::Dir;
use crate::stored::Stored;
use serde::Serialize;
use serde_json::Value;

/// Items a list returns when the caller gives no `limit`.
pub const DEFAULT_LIST_LIMIT: usize = 100;
/// The largest `limit` a list honours; a larger one is cut to it.
pub const MAX_LIST_LIMIT: usize = 100_000;

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::internal(format!("encoding: {e}")))
}

/// How many proposals are pending: a team's queue out of reach counts
/// none, and the answer says why ([`Kb::warn`] reaches the caller); any
/// other failure is the status's.
fn pending_count(kb: &Kb) -> Result<usize> {
    match crate::review::gate::list_pending(kb) {
        Ok(pending) => Ok(pending.len()),
        Err(e) if kb.shared_queue().is_some() => {
            kb.warn(format!(
                "the pending proposals could not be counted ({}); `pending` is 0 here",
                e.message
            ));
            Ok(0)
        }
        Err(e) => Err(e),
    }
}

/// `kb.status`: counts of stored objects, pending proposals, the last
/// audit time, and how retrieval and review are set up.
pub fn status(kb: &Kb) -> Result<StatusResult> {
    let count = |d: Dir| kb.count(d);
    Ok(StatusResult {
        root: kb.layout().root().display().to_string(),
        kb_name: kb.settings().kb_name.clone(),
        counts: StatusCounts {
            claims: count(Dir::Claims)?,
            pages: count(Dir::Pages)?,
            sources: kb.count_sources()?,
            entities: count(Dir::Entities)?,
            relations: count(Dir::Relations)?,
            evidence: count(Dir::Evidence)?,
            sessions: count(Dir::Sessions)?,
            decided: count(Dir::Decided)?,
        },
        pending: pending_count(kb)?,
        last_audit_at: kb.audit_log().last_created_at(),
        retrieval: StatusRetrieval {
            backend: crate::retrieval::retriever(kb).name().to_string(),
            state: crate::retrieval::backend::RetrievalState::of(kb),
            watcher: kb.index().watcher(kb),
            vectors: match kb.embedder() {
                Some(embedder) => {
                    let (documents, pending) = kb.index().vector_counts(kb, embedder)?;
                    Some(StatusVectors {
                        model: embedder.model_id().to_string(),
                        documents,
                        pending,
                        shared: kb.shared_vectors().map(|s| {
                            let (taken, kept) = s.counts();
                            StatusSharedVectors {
                                database: s.describe(),
                                taken,
                                kept,
                            }
                        }),
                    })
                }
                None => None,
            },
        },
        review: StatusReview {
            reviewers: kb.trust().reviewers.clone(),
            trusted_agent: kb.trust().trusted_agent,
            require_citations: kb.require_citations(),
            ignored_settings: kb
                .settings()
                .ignored_widenings()
                .into_iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect(),
        },
        shared_lock: kb.shared_lock().map(|l| l.describe()),
    })
}

/// `kb.read_<kind>`: the object, or `null` when it does not exist.
pub fn read<T: Stored + Serialize>(kb: &Kb, p: IdParams) -> Result<Option<Read<T>>> {
    read_as(kb, p, |o: &T| o.id())
}

/// `kb.read_page`: a page with its body, or `null`.
pub fn read_page(kb: &Kb, p: IdParams) -> Result<Option<Read<PageWithBody>>> {
    read_as::<Page, _>(kb, p, |pg: &PageWithBody| &pg.page.id)
}

/// A stored object as the wire shows it (`W`), marked when unaudited.
fn read_as<T: Stored, W: From<T>>(
    kb: &Kb,
    p: IdParams,
    id: impl Fn(&W) -> &str,
) -> Result<Option<Read<W>>> {
    check_id(T::DIR.id_label(), &p.id)?;
    let mut found: Vec<Read<W>> = kb
        .load::<T>(&p.id)?
        .into_iter()
        .map(|o| Read::plain(o.into()))
        .collect();
    mark_unaudited(kb, T::DIR, &mut found, id);
    Ok(found.pop())
}

/// Gated kinds (claims, pages, entities, relations) that no approval or
/// import let in carry `_meta.unaudited`, as search hits do.
fn mark_unaudited<T>(kb: &Kb, dir: Dir, objects: &mut [Read<T>], id: impl Fn(&T) -> &str) {
    if !matches!(
        dir,
        Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations
    ) {
        return;
    }
    let ids: Vec<(Dir, &str)> = objects.iter().map(|o| (dir, id(&o.object))).collect();
    let unaudited = crate::retrieval::unaudited(kb, &ids);
    for o in objects.iter_mut() {
        o.meta.unaudited = unaudited.contains(&(dir, id(&o.object).to_string()));
    }
}

/// `kb.read_source`: a source's metadata, or `null`; an id that is not a
/// sha256 is refused.
pub fn read_source(kb: &Kb, p: IdParams) -> Result<Option<Read<Source>>> {
    if !is_source_id(&p.id) {
        return Err(Error::invalid(format!(
            "source id {:?} is not a lowercase hex sha256",
            crate::ids::truncate_for_message(&p.id)
        )));
    }
    Ok(kb.load_source(&p.id)?.map(Read::plain))
}

/// Checked `limit` and `offset`.
pub fn window(p: &ListParams) -> Result<(usize, usize)> {
    let limit = match p.limit {
        None => DEFAULT_LIST_LIMIT,
        Some(n) if n < 1 => {
            return Err(Error::invalid(format!(
                "limit: {n} is not allowed; use 1..={MAX_LIST_LIMIT}"
            )));
        }
        Some(n) => (n as usize).min(MAX_LIST_LIMIT),
    };
    let offset = match p.offset {
        None => 0,
        Some(n) if n < 0 => return Err(Error::invalid(format!("offset: {n} is negative"))),
        Some(n) => n as usize,
    };
    Ok((limit, offset))
}

/// Field equality; an array field matches when it contains the value. For
/// relations, `end` matches either end (`source` or `target`).
fn matches(v: &Value, filter: &serde_json::Map<String, Value>) -> bool {
    filter.iter().all(|(k, want)| match v.get(k) {
        None if k == "end" && v.get("relation").is_some() => {
            v.get("source") == Some(want) || v.get("target") == Some(want)
        }
        Some(Value::Array(items)) if !want.is_array() => items.contains(want),
        Some(have) => have == want,
        None => want.is_null(),
    })
}

/// Page through ids, parsing only the window unless a filter needs all
/// (a filter compares the JSON form, as the wire shows it).
fn list_by_ids<T: Serialize>(
    ids: Vec<String>,
    p: ListParams,
    load: impl Fn(&[String]) -> Vec<T>,
) -> Result<Vec<T>> {
    let (limit, offset) = window(&p)?;
    match p.filter.filter(|f| !f.is_empty()) {
        None => {
            let slice: Vec<String> = ids.into_iter().skip(offset).take(limit).collect();
            Ok(load(&slice))
        }
        Some(f) => {
            let mut kept = Vec::new();
            for object in load(&ids) {
                if matches(&to_value(&object)?, &f) {
                    kept.push(object);
                }
            }
            Ok(kept.into_iter().skip(offset).take(limit).collect())
        }
    }
}

/// `kb.list_<kind>`: stored objects of one kind, sorted by id, windowed
/// and filtered by `p`, marked when unaudited.
pub fn list<T: Stored + Serialize>(kb: &Kb, p: ListParams) -> Result<Vec<Read<T>>> {
    list_as(kb, p, |o: &T| o.id())
}

/// `kb.list_pages`: pages with their bodies (a filter sees the body too).
pub fn list_pages(kb: &Kb, p: ListParams) -> Result<Vec<Read<PageWithBody>>> {
    list_as::<Page, _>(kb, p, |pg: &PageWithBody| &pg.page.id)
}

/// Stored objects as the wire shows them (`W`), marked when unaudited.
fn list_as<T: Stored, W: From<T> + Serialize>(
    kb: &Kb,
    p: ListParams,
    id: impl Fn(&W) -> &str,
) -> Result<Vec<Read<W>>> {
    let mut out = list_by_ids(kb.ids(T::DIR)?, p, |ids| {
        kb.load_many::<T>(ids)
            .into_iter()
            .map(|o| Read::plain(o.into()))
            .collect()
    })?;
    mark_unaudited(kb, T::DIR, &mut out, id);
    Ok(out)
}

/// `kb.list_sources`: registered sources' metadata, sorted by id; a source
/// whose `meta.yaml` is missing or unreadable is skipped with a warning.
pub fn list_sources(kb: &Kb, p: ListParams) -> Result<Vec<Read<Source>>> {
    list_by_ids(kb.source_ids()?, p, |ids| {
        let mut out = Vec::new();
        for id in ids {
            match kb.load_source(id) {
                Ok(Some(s)) => out.push(Read::plain(s)),
                Ok(None) => kb.warn(format!("source {id} has no meta.yaml")),
                Err(e) => kb.warn(format!("skipped unreadable file: {e}")),
            }
        }
        out
    })
}

/// What a proposal cites, resolved for a reviewer: each citation (its
/// `evidence`, and a page's `sources`) with its source's locator and title
/// and, for evidence, the quoted text.
pub fn citations(kb: &Kb, p: &Proposal) -> Vec<ResolvedCitation> {
    let mut ids = crate::params::string_list(p.payload.get("evidence"));
    // A lifecycle `kb.cite`: the citation it attaches.
    if p.kind == crate::model::ProposalKind::Lifecycle
        && let Some(id) = p
            .payload
            .get("params")
            .and_then(|x| x.get("evidence"))
            .and_then(Value::as_str)
    {
        ids.push(id.to_string());
    }
    for id in crate::params::string_list(p.payload.get("sources")) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    resolve_citations(kb, ids)
}

/// Cited ids (sources' sha256 and evidence ids) resolved for a reader:
/// each source with its locator and title, each evidence span with its
/// quote and the locator of the source it quotes.
pub fn resolve_citations(kb: &Kb, ids: Vec<String>) -> Vec<ResolvedCitation> {
    ids.into_iter()
        .map(|id| {
            let mut c = ResolvedCitation {
                kind: if is_source_id(&id) {
                    "source"
                } else {
                    "evidence"
                }
                .into(),
                id,
                missing: false,
                source_id: None,
                locator: None,
                title: None,
                quote: None,
                source_locator: None,
                registered_by: None,
                content: None,
                locator_differs: false,
            };
            let provenance = |c: &mut ResolvedCitation, s: &crate::model::Source| {
                let (by, content) = crate::sources::provenance(kb, s);
                c.registered_by = by;
                c.content = content;
                c.locator_differs = crate::sources::locator_differs(kb, s) == Some(true);
            };
            if is_source_id(&c.id) {
                match kb.load_source(&c.id).ok().flatten() {
                    Some(s) => {
                        provenance(&mut c, &s);
                        c.locator = Some(s.locator);
                        c.title = s.title;
                    }
                    None => c.missing = true,
                }
            } else {
                match kb.load::<Evidence>(&c.id).ok().flatten() {
                    Some(e) => {
                        let src = kb.load_source(&e.source_id).ok().flatten();
                        if let Some(s) = &src {
                            provenance(&mut c, s);
                        }
                        c.source_locator = src.map(|s| s.locator);
                        c.source_id = Some(e.source_id);
                        c.locator = Some(e.locator);
                        c.quote = e.quote;
                    }
                    None => c.missing = true,
                }
            }
            c
        })
        .collect()
}

/// A proposal with what it cites resolved.
fn with_citations(kb: &Kb, proposal: Proposal) -> Read<Proposal> {
    let meta = ReadMeta {
        citations: Some(citations(kb, &proposal)),
        change: crate::review::lifecycle::view(kb, &proposal)
            .or_else(|| crate::review::gate::delete::view(kb, &proposal))
            .or_else(|| crate::review::gate::redact::view(kb, &proposal)),
        ..ReadMeta::default()
    };
    Read {
        object: proposal,
        meta,
    }
}

/// `kb.read_proposal`: a proposal wherever it is (pending or decided),
/// with its citations resolved, or `null`.
pub fn read_proposal(kb: &Kb, p: IdParams) -> Result<Option<Read<Proposal>>> {
    check_id("proposal id", &p.id)?;
    for dir in [Dir::Decided, Dir::Proposed] {
        if let Some(pr) = kb.load_proposal(dir, &p.id)? {
            return Ok(Some(with_citations(kb, pr)));
        }
    }
    Ok(None)
}

/// `kb.list_pending`: oldest first, each with `_meta.citations`.
pub fn list_pending(kb: &Kb, p: ListParams) -> Result<Vec<Read<Proposal>>> {
    let (limit, offset) = window(&p)?;
    let filter = p.filter.unwrap_or_default();
    let mut out = Vec::new();
    for pr in crate::review::gate::list_pending(kb)? {
        if filter.is_empty() || matches(&to_value(&pr)?, &filter) {
            out.push(pr);
        }
    }
    // Citations are read for the page asked for only.
    let mut page: Vec<Read<Proposal>> = out
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|pr| with_citations(kb, pr))
        .collect();
    // With a local model, claims the KB already holds in other words —
    // by the vectors the keeper (or the proposal) made: a read never runs
    // the model. One without a kept vector is counted as partial.
    if kb.embedder().is_some() {
        let mut not_embedded = 0;
        for r in page.iter_mut() {
            if r.object.kind != crate::model::ProposalKind::Claim {
                continue;
            }
            if let Some(text) = r.object.payload.get("text").and_then(Value::as_str) {
                match crate::retrieval::semantic::near_duplicates(
                    kb,
                    text,
                    crate::retrieval::semantic::ProposedText::KeptOnly,
                ) {
                    Some(found) => r.meta.possible_duplicates = found,
                    None => not_embedded += 1,
                }
            }
        }
        if not_embedded > 0 {
            kb.note_vectors_pending(not_embedded);
            kb.warn(format!(
                "review queue: {not_embedded} proposals are not embedded yet, so their possible \
                 duplicates are not named; the index keeper embeds them on its next round"
            ));
        }
    }
    Ok(page)
}

/// `kb.audit`: events oldest first, filtered, optionally only the last N.
pub fn audit(kb: &Kb, p: AuditParams) -> Result<Vec<AuditRecord>> {
    let filter = p.filter.unwrap_or_default();
    let keep = |ev: &Value| {
        filter
            .event
            .as_deref()
            .is_none_or(|e| ev.get("event").and_then(Value::as_str) == Some(e))
            && filter
                .actor
                .as_deref()
                .is_none_or(|a| ev.get("actor").and_then(Value::as_str) == Some(a))
            && filter.object.as_deref().is_none_or(|o| {
                ev.get("object_ids")
                    .and_then(Value::as_array)
                    .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(o)))
            })
    };
    match p.tail {
        Some(n) if n < 0 => Err(Error::invalid(format!("tail: {n} is negative"))),
        Some(n) => {
            let n = n as usize;
            let mut out = Vec::new();
            if n > 0 {
                kb.audit_log().scan_back(|ev| {
                    if keep(ev) {
                        out.push(AuditRecord(ev.clone()));
                    }
                    out.len() >= n
                })?;
            }
            out.reverse();
            Ok(out)
        }
        None => Ok(kb
            .audit_log()
            .read_all()?
            .into_iter()
            .filter(keep)
            .map(AuditRecord)
            .collect()),
    }
}
