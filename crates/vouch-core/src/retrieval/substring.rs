//! The spec's fallback retrieval backend: case-insensitive substring match
//! over the files themselves, no index. Slow on large KBs, always correct.

use crate::error::Result;
use crate::kb::Kb;
use crate::model::{Claim, DocKind, Entity, Page};
use crate::retrieval::{Query, SearchHit};

pub(crate) fn search(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    let Query {
        terms,
        limit,
        kinds,
        currency,
        ..
    } = *q;
    type Row = (DocKind, String, String, Option<String>, Option<f64>);
    let mut docs: Vec<Row> = Vec::new();
    for kind in kinds {
        match *kind {
            DocKind::Claim => {
                for c in kb.load_all::<Claim>()? {
                    let status = c.status.to_string();
                    docs.push((
                        DocKind::Claim,
                        c.id,
                        c.text,
                        Some(status),
                        Some(c.confidence),
                    ));
                }
            }
            DocKind::Page => {
                for p in kb.load_all::<Page>()? {
                    docs.push((
                        DocKind::Page,
                        p.id,
                        format!("{}\n{}", p.title, p.body),
                        Some(p.status.to_string()),
                        None,
                    ));
                }
            }
            DocKind::Entity => {
                for e in kb.load_all::<Entity>()? {
                    let text = format!(
                        "{} {} {}",
                        e.name,
                        e.aliases.join(" "),
                        e.description.unwrap_or_default()
                    );
                    docs.push((DocKind::Entity, e.id, text, None, None));
                }
            }
            DocKind::Source => {
                for id in kb.source_ids()? {
                    if let Ok(Some(s)) = kb.load_source(&id) {
                        docs.push((
                            DocKind::Source,
                            id,
                            format!("{} {}", s.title.unwrap_or_default(), s.locator),
                            None,
                            None,
                        ));
                    }
                }
            }
        }
    }
    let mut hits: Vec<SearchHit> = docs
        .into_iter()
        .filter(|(_, _, _, status, _)| currency.admits(status.as_deref()))
        .filter_map(|(kind, id, text, status, confidence)| {
            let lower = text.to_lowercase();
            let counts: Vec<usize> = terms
                .iter()
                .map(|t| lower.matches(t.as_str()).count())
                .collect();
            if counts.contains(&0) {
                return None;
            }
            let (snippet, highlights) = mark(&text, terms);
            Some(SearchHit {
                kind,
                id,
                snippet,
                highlights,
                score: counts.iter().sum::<usize>() as f64,
                backend: "substring".into(),
                status,
                confidence,
                cosine: None,
                meta: Default::default(),
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.kind.as_str().cmp(b.kind.as_str()))
            .then_with(|| a.id.cmp(&b.id))
    });
    hits.truncate(limit);
    Ok(hits)
}

/// Up to 200 characters around the first match, and where the matched
/// words are in it.
fn mark(text: &str, terms: &[String]) -> (String, Vec<[usize; 2]>) {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = text.to_lowercase().chars().collect();
    if lower.len() != chars.len() {
        return (text.chars().take(200).collect(), Vec::new());
    }
    let mut out = String::new();
    let mut i = 0;
    let mut taken = 0;
    while i < chars.len() && taken < 200 {
        let hit = terms.iter().find(|t| {
            let tc: Vec<char> = t.chars().collect();
            lower[i..].starts_with(&tc)
        });
        match hit {
            Some(t) => {
                let n = t.chars().count();
                out.push(crate::index::MARK_OPEN);
                out.extend(&chars[i..i + n]);
                out.push(crate::index::MARK_CLOSE);
                i += n;
                taken += n;
            }
            None => {
                out.push(chars[i]);
                i += 1;
                taken += 1;
            }
        }
    }
    crate::index::unmark(&out)
}
