//! `kb.context`: a context pack for a task — the current approved knowledge
//! most relevant to it, with citations, ranked and cut to a character budget.
//!
//! The exact shape and the meaning of every param are in `docs/context.md`;
//! keep the two in step.

use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::DocKind;
use crate::model::{Claim, Evidence, Page};
use crate::retrieval::{self, Currency, SearchHit};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default `max_chars` of a context pack.
pub const DEFAULT_MAX_CHARS: usize = 4000;
/// Largest `max_chars`; a larger one is capped to it.
pub const MAX_MAX_CHARS: usize = 1_000_000;
/// Largest `min_items`; a larger one is capped to it.
pub const MAX_MIN_ITEMS: usize = 1000;
/// Quotes are cut to this many characters, in `text` and in `items` alike.
const QUOTE_CHARS: usize = 200;
/// A page contributes its title and at most this much of its body.
const PAGE_EXCERPT_CHARS: usize = 600;
/// No rendered item is shorter than this; below it the budget is spent.
const MIN_ITEM_CHARS: usize = 32;
/// At most this many omitted items are listed (all are counted).
const OMITTED_LISTED: usize = 50;
const SEPARATOR: &str = "\n\n";

/// Params of `kb.context`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    /// The task, in natural language; its words are the query.
    pub task: String,
    /// Upper bound on the length of `text` in characters (default 4000,
    /// 1..=1000000; larger values are capped).
    #[serde(default)]
    pub max_chars: Option<i64>,
    /// How many items the caller needs; a pack with fewer says so in
    /// `min_items_met` and `gaps` (default 0).
    #[serde(default)]
    pub min_items: Option<i64>,
    /// Leave out items without a resolvable citation (default false).
    #[serde(default)]
    pub require_citations: Option<bool>,
}

/// What `kb.context` returns (docs/context.md).
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ContextPack {
    /// The task, as given.
    pub task: String,
    /// The budget applied: `max_chars` as given (default 4000), capped at
    /// 1000000.
    pub max_chars: usize,
    /// Characters in `text`; never more than `max_chars`.
    pub used_chars: usize,
    /// The pack rendered for a prompt: the items in rank order.
    pub text: String,
    /// The items in `text`, in rank order.
    pub items: Vec<ContextItem>,
    /// The `min_items` applied (default 0, capped at 1000).
    pub min_items: usize,
    /// Whether the pack has at least `min_items` items.
    pub min_items_met: bool,
    /// Whether items without a resolvable citation were left out.
    pub require_citations: bool,
    /// Matching current items that are not in the pack, best first
    /// (at most 50 listed; `omitted_counts` counts them all).
    pub omitted: Vec<Omitted>,
    /// How many candidates were left out, by reason (all of them, listed or
    /// not).
    pub omitted_counts: OmittedCounts,
    /// What the pack lacks, in words: no matches, too few items, budget.
    pub gaps: Vec<String>,
    /// The backend that ranked the candidates: `hybrid` when a model is
    /// installed, else the one that answered.
    pub backend: String,
}

/// One claim or page in a context pack.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ContextItem {
    /// `claim` or `page`.
    pub kind: DocKind,
    /// The claim's or page's id.
    pub id: String,
    /// Claim text, or page title and body excerpt.
    pub text: String,
    /// Its status: a current claim's, or a page's other than `archived`.
    pub status: String,
    /// A claim's confidence, 0 to 1; absent for pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Relevance to the task relative to the best match (1.0).
    pub score: f64,
    /// A contested claim: read with the claims it contradicts.
    pub contested: bool,
    /// The claims it contradicts; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contradicts: Vec<String>,
    /// Its evidence (a claim) or sources (a page) that still resolve.
    pub citations: Vec<Citation>,
    /// Characters this item takes in `text`.
    pub chars: usize,
    /// `unaudited` when no approval or import in the audit log let this
    /// item in (see kb.search).
    #[serde(
        rename = "_meta",
        default,
        skip_serializing_if = "crate::model::meta::ReadMeta::is_empty"
    )]
    pub meta: crate::model::meta::ReadMeta,
}

/// What a piece of knowledge cites: a quoted span of a source, or a whole
/// source.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Citation {
    /// The cited source's id (the sha256 of its content).
    pub source_id: String,
    /// Set when the citation is a span (an evidence record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_id: Option<String>,
    /// The span's locator (`L3-L5`), or the source's locator (path, URL).
    pub locator: String,
    /// The quoted span, cut to 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// A person redacted what it cited (`vouch redact`): the span's quote,
    /// or the source's content, is gone; the claim stands, its evidence
    /// shown as redacted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// A candidate left out of a pack, and why.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Omitted {
    /// `claim` or `page`.
    pub kind: DocKind,
    /// Its id.
    pub id: String,
    /// Its relevance relative to the best match (1.0), as in `items`.
    pub score: f64,
    /// `budget` (did not fit in max_chars) or `uncited` (require_citations).
    pub reason: String,
    /// Characters the item would take, when it was rendered in full (not
    /// when its text alone could not fit, nor when nothing more could).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars: Option<usize>,
}

/// How many candidates were left out, by reason.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq)]
pub struct OmittedCounts {
    /// Left out because they did not fit in `max_chars`.
    pub budget: usize,
    /// Left out for having no resolvable citation (`require_citations`).
    pub uncited: usize,
}

fn bounded(name: &str, v: Option<i64>, default: usize, min: i64, cap: usize) -> Result<usize> {
    match v {
        None => Ok(default),
        Some(n) if n < min => Err(Error::invalid(format!(
            "{name}: {n} is not allowed; use {min}..={cap}"
        ))),
        Some(n) => Ok((n as usize).min(cap)),
    }
}

/// Trust order within a relevance band: lower is more trustworthy.
fn trust_rank(kind: &str, status: Option<&str>) -> u8 {
    match (kind, status) {
        ("claim", Some("stable")) => 0,
        ("claim", Some("actionable")) => 1,
        ("claim", Some("working")) | ("page", Some("active")) => 2,
        ("claim", Some("contested")) => 4,
        _ => 3,
    }
}

/// Relevance band: 4 for hits scoring above 75% of the best, 3 above 50%,
/// and so on. Within a band, trust decides: BM25 differences that small
/// mostly reflect text length, not meaning.
fn band(relevance: f64) -> i64 {
    (relevance * 4.0).ceil() as i64
}

/// Order candidates by relevance band, then trust, then confidence.
fn rank(hits: Vec<SearchHit>) -> Vec<(SearchHit, f64)> {
    let best = hits.iter().map(|h| h.score).fold(0.0_f64, f64::max);
    let mut ranked: Vec<(SearchHit, f64)> = hits
        .into_iter()
        .map(|h| {
            let rel = if best > 0.0 { h.score / best } else { 0.0 };
            (h, (rel * 1000.0).round() / 1000.0)
        })
        .collect();
    ranked.sort_by(|(a, ra), (b, rb)| {
        band(*rb)
            .cmp(&band(*ra))
            .then_with(|| {
                trust_rank(a.kind.as_str(), a.status.as_deref())
                    .cmp(&trust_rank(b.kind.as_str(), b.status.as_deref()))
            })
            .then_with(|| {
                b.confidence
                    .unwrap_or(0.0)
                    .total_cmp(&a.confidence.unwrap_or(0.0))
            })
            .then_with(|| rb.total_cmp(ra))
            .then_with(|| a.kind.as_str().cmp(b.kind.as_str()))
            .then_with(|| a.id.cmp(&b.id))
    });
    ranked
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Every evidence reference of an object that still resolves.
pub(crate) fn citations(kb: &Kb, references: &[String]) -> Vec<Citation> {
    references.iter().filter_map(|r| citation(kb, r)).collect()
}

/// Resolve one evidence reference (an evidence id or a source id).
fn citation(kb: &Kb, reference: &str) -> Option<Citation> {
    let marked =
        |extra: &crate::model::Extra| extra.contains_key(crate::review::gate::redact::REDACTED_KEY);
    if let Ok(Some(ev)) = kb.load::<Evidence>(reference) {
        // Its quote redacted: nothing of it is served but that it was.
        if ev.quote.is_none() && marked(&ev.extra) {
            return Some(Citation {
                source_id: ev.source_id,
                evidence_id: Some(ev.id),
                locator: ev.locator,
                quote: None,
                redacted: true,
            });
        }
        // A record edited after approval no longer derives its id: its
        // quote is not what was reviewed, so it is not served. (A 1.x
        // span id binds the span, so its quote is checked against the
        // source's bytes there.)
        if crate::sources::evidence_id_mismatch(&ev).is_some() {
            return None;
        }
        if crate::sources::is_1x_span_id(&ev) {
            let bytes = kb.source_content(&ev.source_id).ok().flatten()?;
            if crate::sources::evidence_mismatch(&ev, &bytes).is_some() {
                return None;
            }
        }
        return Some(Citation {
            source_id: ev.source_id,
            evidence_id: Some(ev.id),
            locator: ev.locator,
            quote: ev.quote.map(|q| cut(&q, QUOTE_CHARS)),
            redacted: false,
        });
    }
    match kb.load_source(reference) {
        Ok(Some(s)) => Some(Citation {
            redacted: marked(&s.extra),
            source_id: s.id,
            evidence_id: None,
            locator: s.locator,
            quote: None,
        }),
        _ => None,
    }
}

/// Stage 2: a candidate read from its file, with its text and every
/// citation resolved (`None` if the file is gone or no longer current).
pub fn cited_item(kb: &Kb, hit: &SearchHit, score: f64) -> Option<ContextItem> {
    let (mut item, cites) = uncited_item(kb, hit, score)?;
    item.citations = citations(kb, &cites);
    Some(item)
}

/// [`cited_item`] before its citations are resolved: the item, and what
/// it cites (evidence or source ids).
fn uncited_item(kb: &Kb, hit: &SearchHit, score: f64) -> Option<(ContextItem, Vec<String>)> {
    match hit.kind {
        DocKind::Claim => {
            let c = kb.load::<Claim>(&hit.id).ok().flatten()?;
            if !c.status.is_current() {
                return None;
            }
            let item = ContextItem {
                kind: DocKind::Claim,
                id: c.id,
                text: c.text,
                status: c.status.to_string(),
                confidence: Some(c.confidence),
                score,
                contested: c.status == crate::model::ClaimStatus::Contested,
                contradicts: c.contradicts,
                citations: Vec::new(),
                chars: 0,
                meta: hit.meta.clone(),
            };
            Some((item, c.evidence))
        }
        DocKind::Page => {
            let p = kb.load::<Page>(&hit.id).ok().flatten()?;
            if !Currency::Current.admits(Some(p.status.as_str())) {
                return None;
            }
            let body = p.body.trim();
            let text = if body.is_empty() {
                p.title.clone()
            } else {
                format!("{}\n{}", p.title, cut(body, PAGE_EXCERPT_CHARS))
            };
            let item = ContextItem {
                kind: DocKind::Page,
                id: p.id,
                text,
                status: p.status.to_string(),
                confidence: None,
                score,
                contested: false,
                contradicts: Vec::new(),
                citations: Vec::new(),
                chars: 0,
                meta: hit.meta.clone(),
            };
            Some((item, p.sources))
        }
        _ => None,
    }
}

/// How text no approval let in (written or edited by hand since) is marked
/// in what agents paste: the context pack's items and `kb.recall`'s lines.
pub(crate) const UNAUDITED_MARK: &str =
    "UNAUDITED: no approval in the audit log let this text in, not reviewed";

/// One item as it appears in `text`.
fn render(n: usize, item: &ContextItem) -> String {
    let mut head = format!("[{n}] {} {} · {}", item.kind, item.id, item.status);
    if let Some(c) = item.confidence {
        head.push_str(&format!(" · confidence {c:.2}"));
    }
    if item.contested && !item.contradicts.is_empty() {
        head.push_str(&format!(" · contradicts {}", item.contradicts.join(", ")));
    }
    // In the text agents paste, not only in `_meta`: a file no approval
    // let in (written by hand) must not read like reviewed knowledge.
    if item.meta.unaudited {
        head.push_str(&format!(" · {UNAUDITED_MARK}"));
    }
    let mut out = format!("{head}\n{}", item.text);
    if !item.citations.is_empty() {
        let cites: Vec<String> = item
            .citations
            .iter()
            .map(|c| match (&c.evidence_id, &c.quote) {
                _ if c.redacted => format!(
                    "{} (evidence redacted; source {} {})",
                    c.evidence_id.as_deref().unwrap_or("source"),
                    short(&c.source_id),
                    c.locator
                ),
                (Some(ev), Some(q)) => format!(
                    "{ev} \"{q}\" (source {} {})",
                    short(&c.source_id),
                    c.locator
                ),
                (Some(ev), None) => format!("{ev} (source {} {})", short(&c.source_id), c.locator),
                (None, _) => format!("source {} ({})", short(&c.source_id), c.locator),
            })
            .collect();
        out.push_str(&format!("\ncites: {}", cites.join("; ")));
    }
    out
}

/// `kb.context`: the context pack for a task (docs/context.md).
pub fn context(kb: &Kb, p: ContextParams) -> Result<ContextPack> {
    if p.task.trim().is_empty() {
        return Err(Error::invalid("task: must not be empty"));
    }
    let max_chars = bounded(
        "max_chars",
        p.max_chars,
        DEFAULT_MAX_CHARS,
        1,
        MAX_MAX_CHARS,
    )?;
    let min_items = bounded("min_items", p.min_items, 0, 0, MAX_MIN_ITEMS)?;
    let require_citations = p.require_citations.unwrap_or(false);
    let pool = (max_chars / 80).clamp(20, 1000).max(min_items * 2);
    let found = candidates(kb, &p.task, pool)?;
    Ok(pack(
        kb,
        p.task,
        found,
        max_chars,
        min_items,
        require_citations,
    ))
}

/// Stage 1 of a pack (and of an answer): current approved claims and pages
/// matching the task, ordered by relevance and then trust. Cheap: nothing
/// is read from the files yet.
pub struct Candidates {
    /// The task's searchable words.
    pub terms: Vec<String>,
    /// The backend that answered (a locked index falls back to substring).
    pub backend: String,
    /// Hits with their relative relevance (1.0 = best), best first.
    pub ranked: Vec<(SearchHit, f64)>,
}

/// [`Candidates`] for `task`: at most `pool` hits, ranked.
pub fn candidates(kb: &Kb, task: &str, pool: usize) -> Result<Candidates> {
    let terms = retrieval::query_terms(task);
    // Packs rank by meaning and words together whenever a model is there.
    let hybrid = kb
        .embedder()
        .map(|_| crate::settings::RetrievalBackend::Hybrid);
    let hits = retrieval::retrieve(
        kb,
        &retrieval::Query {
            text: task,
            backend: hybrid,
            explicit: false,
            terms: &terms,
            limit: pool,
            kinds: &[DocKind::Claim, DocKind::Page],
            currency: Currency::Current,
            snippets: retrieval::Snippets::No,
        },
    )?;
    let backend = match hybrid {
        Some(_) => "hybrid".to_string(),
        None => hits.first().map_or_else(
            || super::retriever(kb).name().to_string(),
            |h| h.backend.clone(),
        ),
    };
    Ok(Candidates {
        terms,
        backend,
        ranked: rank(hits),
    })
}

/// Stage 3: render candidates into the budget, reading each item (stage 2,
/// [`cited_item`]) only while something can still fit.
fn pack(
    kb: &Kb,
    task: String,
    found: Candidates,
    max_chars: usize,
    min_items: usize,
    require_citations: bool,
) -> ContextPack {
    let Candidates {
        terms,
        backend,
        ranked,
    } = found;
    let matched = ranked.len();
    let mut text = String::new();
    let mut used = 0usize;
    let mut items: Vec<ContextItem> = Vec::new();
    let mut omitted: Vec<Omitted> = Vec::new();
    let mut counts = OmittedCounts::default();
    let mut omit = |hit: &SearchHit, score: f64, reason: &str, chars: Option<usize>| {
        match reason {
            "budget" => counts.budget += 1,
            _ => counts.uncited += 1,
        }
        if omitted.len() < OMITTED_LISTED {
            omitted.push(Omitted {
                kind: hit.kind,
                id: hit.id.clone(),
                score,
                reason: reason.into(),
                chars,
            });
        }
    };
    for (hit, score) in ranked {
        let sep = if items.is_empty() { 0 } else { SEPARATOR.len() };
        if used + sep + MIN_ITEM_CHARS > max_chars {
            // Nothing more can fit; count the rest without reading them.
            omit(&hit, score, "budget", None);
            continue;
        }
        let Some((mut item, cites)) = uncited_item(kb, &hit, score) else {
            continue;
        };
        // Citations only lengthen an item: one whose text alone cannot fit
        // is left out without reading what it cites (its evidence, and a
        // 1.x span's source, checked byte for byte). Not when citations
        // are required: an uncited item is counted as uncited first.
        if !require_citations {
            let bare = render(items.len() + 1, &item).chars().count();
            if used + sep + bare > max_chars {
                omit(&hit, score, "budget", None);
                continue;
            }
        }
        item.citations = citations(kb, &cites);
        if require_citations && item.citations.is_empty() {
            omit(&hit, score, "uncited", None);
            continue;
        }
        let rendered = render(items.len() + 1, &item);
        let chars = rendered.chars().count();
        if used + sep + chars > max_chars {
            omit(&hit, score, "budget", Some(chars));
            continue;
        }
        if sep > 0 {
            text.push_str(SEPARATOR);
        }
        text.push_str(&rendered);
        used += sep + chars;
        item.chars = chars;
        items.push(item);
    }

    let mut gaps = Vec::new();
    if terms.is_empty() {
        gaps.push("the task has no searchable words".to_string());
    } else if matched == 0 {
        gaps.push("no current approved knowledge matches this task".to_string());
    }
    if counts.budget > 0 {
        gaps.push(format!(
            "{} matching item(s) did not fit in max_chars {max_chars}",
            counts.budget
        ));
    }
    if counts.uncited > 0 {
        gaps.push(format!(
            "{} matching item(s) left out for having no resolvable citation",
            counts.uncited
        ));
    }
    let min_items_met = items.len() >= min_items;
    if !min_items_met {
        gaps.push(format!(
            "{} item(s) in the pack, {min_items} requested",
            items.len()
        ));
    }
    ContextPack {
        task,
        max_chars,
        used_chars: used,
        text,
        items,
        min_items,
        min_items_met,
        require_citations,
        omitted,
        omitted_counts: counts,
        gaps,
        backend,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(kind: &str, id: &str, score: f64, status: &str, confidence: f64) -> SearchHit {
        SearchHit {
            kind: DocKind::parse(kind).expect("a kind"),
            id: id.into(),
            snippet: String::new(),
            highlights: Vec::new(),
            score,
            backend: "fts5".into(),
            status: Some(status.into()),
            confidence: Some(confidence),
            cosine: None,
            meta: Default::default(),
        }
    }

    #[test]
    fn trust_orders_items_of_similar_relevance() {
        let ranked = rank(vec![
            hit("claim", "c-working", 10.0, "working", 0.9),
            hit("claim", "c-contested", 9.9, "contested", 0.9),
            hit("claim", "c-stable", 9.5, "stable", 0.5),
            hit("claim", "c-weak", 3.0, "stable", 1.0),
        ]);
        let ids: Vec<&str> = ranked.iter().map(|(h, _)| h.id.as_str()).collect();
        assert_eq!(ids, ["c-stable", "c-working", "c-contested", "c-weak"]);
        assert_eq!(ranked[1].1, 1.0);
        assert_eq!(ranked[3].1, 0.3);
    }

    #[test]
    fn cut_marks_what_it_removed() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(cut("ééééé", 3).chars().count(), 3);
    }
}
