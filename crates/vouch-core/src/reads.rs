//! Read-only methods: status, read_*, list_*, pending with citations, audit.

use crate::error::{Error, Result};
use crate::ids::{check_id, is_source_id};
use crate::kb::{Kb, Stored};
use crate::model::{Evidence, Page, Proposal};
use crate::params::*;
use crate::store::Dir;
use serde::Serialize;
use serde_json::{Value, json};

pub const DEFAULT_LIST_LIMIT: usize = 100;
pub const MAX_LIST_LIMIT: usize = 100_000;

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::internal(format!("encoding: {e}")))
}

/// JSON form of a page includes its markdown body.
pub fn page_value(p: &Page) -> Result<Value> {
    let mut v = to_value(p)?;
    v["body"] = Value::String(p.body.clone());
    Ok(v)
}

pub fn status(kb: &Kb) -> Result<StatusResult> {
    let count = |d: Dir| kb.ids(d).map(|v| v.len());
    Ok(StatusResult {
        root: kb.layout().root().display().to_string(),
        kb_name: kb.settings().kb_name.clone(),
        counts: StatusCounts {
            claims: count(Dir::Claims)?,
            pages: count(Dir::Pages)?,
            sources: kb.source_ids()?.len(),
            entities: count(Dir::Entities)?,
            relations: count(Dir::Relations)?,
            evidence: count(Dir::Evidence)?,
            sessions: count(Dir::Sessions)?,
            decided: count(Dir::Decided)?,
        },
        pending: crate::review::gate::list_pending(kb)?.len(),
        last_audit_at: kb.audit_log().last_created_at(),
        retrieval: StatusRetrieval {
            backend: kb.retriever().name().to_string(),
            state: kb.retrieval_state(),
            watcher: crate::retrieval::watch::watcher(kb),
        },
    })
}

/// `kb.read_<kind>`: the object, or `null` when it does not exist.
pub fn read<T: Stored + Serialize>(kb: &Kb, p: IdParams) -> Result<Value> {
    check_id(T::DIR.id_label(), &p.id)?;
    match kb.load::<T>(&p.id)? {
        Some(v) => {
            let mut out = vec![to_value(&v)?];
            mark_unaudited::<T>(kb, &mut out);
            Ok(out.pop().unwrap_or(Value::Null))
        }
        None => Ok(Value::Null),
    }
}

/// Gated kinds (claims, pages, entities, relations) that no approval or
/// import let in carry `_meta.unaudited`, as search hits do.
fn mark_unaudited<T: Stored>(kb: &Kb, objects: &mut [Value]) {
    if !matches!(
        T::DIR,
        Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations
    ) {
        return;
    }
    let ids: Vec<String> = objects
        .iter()
        .filter_map(|o| o.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let unaudited = crate::retrieval::unaudited(kb, &refs);
    for o in objects.iter_mut() {
        let flagged = o
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| unaudited.contains(id));
        if flagged && let Value::Object(m) = o {
            let meta = m.entry("_meta").or_insert_with(|| serde_json::json!({}));
            if let Value::Object(meta) = meta {
                meta.insert("unaudited".into(), Value::Bool(true));
            }
        }
    }
}

pub fn read_page(kb: &Kb, p: IdParams) -> Result<Value> {
    check_id("page id", &p.id)?;
    match kb.load::<Page>(&p.id)? {
        Some(pg) => page_value(&pg),
        None => Ok(Value::Null),
    }
}

pub fn read_source(kb: &Kb, p: IdParams) -> Result<Value> {
    if !is_source_id(&p.id) {
        return Err(Error::invalid(format!(
            "source id {:?} is not a lowercase hex sha256",
            crate::ids::truncate_for_message(&p.id)
        )));
    }
    match kb.load_source(&p.id)? {
        Some(s) => to_value(&s),
        None => Ok(Value::Null),
    }
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

/// Page through ids, parsing only the window unless a filter needs all.
fn list_by_ids(
    ids: Vec<String>,
    p: ListParams,
    load: impl Fn(&[String]) -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let (limit, offset) = window(&p)?;
    match p.filter.filter(|f| !f.is_empty()) {
        None => {
            let slice: Vec<String> = ids.into_iter().skip(offset).take(limit).collect();
            load(&slice)
        }
        Some(f) => Ok(load(&ids)?
            .into_iter()
            .filter(|v| matches(v, &f))
            .skip(offset)
            .take(limit)
            .collect()),
    }
}

pub fn list<T: Stored + Serialize>(kb: &Kb, p: ListParams) -> Result<Vec<Value>> {
    let mut out = list_by_ids(kb.ids(T::DIR)?, p, |ids| {
        kb.load_many::<T>(ids).iter().map(to_value).collect()
    })?;
    mark_unaudited::<T>(kb, &mut out);
    Ok(out)
}

pub fn list_pages(kb: &Kb, p: ListParams) -> Result<Vec<Value>> {
    list_by_ids(kb.ids(Dir::Pages)?, p, |ids| {
        kb.load_many::<Page>(ids).iter().map(page_value).collect()
    })
}

pub fn list_sources(kb: &Kb, p: ListParams) -> Result<Vec<Value>> {
    list_by_ids(kb.source_ids()?, p, |ids| {
        let mut out = Vec::new();
        for id in ids {
            match kb.load_source(id) {
                Ok(Some(s)) => out.push(to_value(&s)?),
                Ok(None) => kb.warn(format!("source {id} has no meta.yaml")),
                Err(e) => kb.warn(format!("skipped unreadable file: {e}")),
            }
        }
        Ok(out)
    })
}

/// What a proposal cites, resolved for a reviewer: each citation with its
/// source's locator and title and, for evidence, the quoted text.
pub fn citations(kb: &Kb, p: &Proposal) -> Vec<Value> {
    let ids: Vec<String> = p
        .payload
        .get("evidence")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ids.iter()
        .map(|id| {
            if is_source_id(id) {
                match kb.load_source(id).ok().flatten() {
                    Some(s) => {
                        json!({"id": id, "kind": "source", "locator": s.locator, "title": s.title})
                    }
                    None => json!({"id": id, "kind": "source", "missing": true}),
                }
            } else {
                match kb.load::<Evidence>(id).ok().flatten() {
                    Some(e) => {
                        let src = kb.load_source(&e.source_id).ok().flatten();
                        json!({"id": id, "kind": "evidence", "source_id": e.source_id,
                               "locator": e.locator, "quote": e.quote,
                               "source_locator": src.map(|s| s.locator)})
                    }
                    None => json!({"id": id, "kind": "evidence", "missing": true}),
                }
            }
        })
        .collect()
}

/// `kb.list_pending`: oldest first, each with `_meta.citations`.
pub fn list_pending(kb: &Kb, p: ListParams) -> Result<Vec<Value>> {
    let (limit, offset) = window(&p)?;
    let filter = p.filter.unwrap_or_default();
    let mut out = Vec::new();
    for pr in crate::review::gate::list_pending(kb)? {
        let v = to_value(&pr)?;
        if matches(&v, &filter) {
            out.push((pr, v));
        }
    }
    // Citations are read for the page asked for only.
    let mut page: Vec<Value> = out
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(pr, mut v)| {
            v["_meta"] = json!({"citations": citations(kb, &pr)});
            v
        })
        .collect();
    // With a local model, claims the KB already holds in other words.
    if kb.embedder().is_some() {
        for v in page.iter_mut() {
            let is_claim = v.get("kind").and_then(Value::as_str) == Some("claim");
            let text = v
                .pointer("/payload/text")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let (true, Some(text)) = (is_claim, text) {
                let dups = crate::retrieval::semantic::near_duplicates(kb, &text);
                if !dups.is_empty() {
                    v["_meta"]["possible_duplicates"] = json!(dups);
                }
            }
        }
    }
    Ok(page)
}

/// `kb.audit`: events oldest first, filtered, optionally only the last N.
pub fn audit(kb: &Kb, p: AuditParams) -> Result<Vec<Value>> {
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
                        out.push(ev.clone());
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
            .collect()),
    }
}
