//! Writing the deterministic answer: claims grouped into topic clusters,
//! one paragraph per cluster, each sentence a fixed template filled with
//! claim texts and ending in its citations.

use super::{Candidate, Dropped, Sentence};
use crate::index::STOP_WORDS;
use crate::kb::Kb;
use std::collections::HashMap;

/// The only words an answer adds to its claims' own.
///
/// - `statement`: `{claim} [{id}].`
/// - `contested`: `Contested: {claim} [{id}].` (a contested claim whose
///   counterpart is not in the answer)
/// - `disagreement`: `Sources disagree: {a} [{a-id}]; {b} [{b-id}].`
pub const TEMPLATES: &[&str] = &["statement", "contested", "disagreement"];

/// Words of a question that ask rather than name a topic.
const QUESTION_WORDS: &[&str] = &[
    "our", "us", "my", "me", "your", "tell", "know", "should", "would", "could", "any", "about",
    "there", "please", "explain", "describe", "much", "many", "long", "often", "did", "done",
    "get", "got", "use", "used", "using",
];

/// A claim's text as a sentence body: whitespace runs made one space, one
/// final period dropped (the template ends the sentence).
pub fn normalize(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.strip_suffix('.').unwrap_or(&flat).to_string()
}

/// A sentence from its template, the texts of its claims and their ids;
/// `None` for an unknown template or the wrong number of claims.
pub fn render(template: &str, texts: &[&str], ids: &[String]) -> Option<String> {
    let part = |i: usize| format!("{} [{}]", normalize(texts[i]), ids[i]);
    match (template, texts.len(), ids.len()) {
        ("statement", 1, 1) => Some(format!("{}.", part(0))),
        ("contested", 1, 1) => Some(format!("Contested: {}.", part(0))),
        ("disagreement", 2, 2) => Some(format!("Sources disagree: {}; {}.", part(0), part(1))),
        _ => None,
    }
}

/// Append a sentence to an answer: a blank line before a new paragraph,
/// a space between sentences of one.
pub fn append(answer: &mut String, sentence: &str, new_paragraph: bool) {
    if !answer.is_empty() {
        answer.push_str(if new_paragraph { "\n\n" } else { " " });
    }
    answer.push_str(sentence);
}

/// What a question asks about: its words without stop words and question
/// words, in order. English clitics go first (`what's` is `what`, `don't`
/// is `do`): split at the apostrophe, their `s` or `t` would be a topic no
/// claim covers, and the question would go unanswered.
pub fn content_terms(query: &str) -> Vec<String> {
    crate::retrieval::query_terms(&without_clitics(query))
        .into_iter()
        .filter(|t| !STOP_WORDS.contains(&t.as_str()) && !QUESTION_WORDS.contains(&t.as_str()))
        .collect()
}

/// `text` with the English clitics of its words removed: `n't`, `'s`,
/// `'re`, `'ll`, `'ve`, `'d`, `'m` (straight or curly apostrophe), ahead
/// of any trailing punctuation.
fn without_clitics(text: &str) -> String {
    const CLITICS: &[&str] = &["n't", "'s", "'re", "'ll", "'ve", "'d", "'m"];
    // Where dropping `n't` would leave a fragment (`ca`, `wo`, `sha`).
    const IRREGULAR: &[(&str, &str)] = &[("can't", "can"), ("won't", "will"), ("shan't", "shall")];
    text.split_whitespace()
        .map(|word| {
            let word = word.replace('\u{2019}', "'");
            let core = word.trim_end_matches(|c: char| !c.is_alphanumeric());
            let tail = &word[core.len()..];
            let lower = core.to_lowercase();
            if let Some((_, whole)) = IRREGULAR.iter().find(|(short, _)| *short == lower) {
                return format!("{whole}{tail}");
            }
            match CLITICS
                .iter()
                .find(|c| lower.len() > c.len() && lower.ends_with(*c))
            {
                Some(c) => format!("{}{tail}", &core[..core.len() - c.len()]),
                None => word.clone(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) struct Composed {
    pub answer: String,
    pub sentences: Vec<Sentence>,
    pub dropped: Vec<Dropped>,
    /// The answer states a disagreement between current claims.
    pub disagreement: bool,
}

impl Composed {
    pub(crate) fn cites(&self, id: &str) -> bool {
        self.sentences
            .iter()
            .any(|s| s.citations.iter().any(|c| c == id))
    }

    /// Replace the sentences with checked ones from a language model (one
    /// paragraph).
    pub(crate) fn adopt(&mut self, sentences: Vec<Sentence>) {
        self.answer.clear();
        for s in &sentences {
            append(&mut self.answer, &s.text, false);
        }
        self.disagreement = false;
        self.sentences = sentences;
    }
}

/// The cluster a claim belongs to: its first entity, else its first tag,
/// else the question words it contains (claims found by meaning alone
/// share one cluster).
fn cluster_key(c: &Candidate, terms: &[String]) -> String {
    if let Some(e) = c.claim.entities.first() {
        return format!("entity:{e}");
    }
    if let Some(t) = c.claim.tags.first() {
        return format!("tag:{t}");
    }
    let words = crate::retrieval::query_terms_unbounded(&c.claim.text);
    let covered: Vec<&str> = terms
        .iter()
        .filter(|t| crate::retrieval::hybrid::word_matches(t, &words))
        .map(String::as_str)
        .collect();
    format!("terms:{}", covered.join(" "))
}

/// One sentence to place: its template and claims (indexes into the
/// admitted list).
struct Planned {
    template: &'static str,
    claims: Vec<usize>,
}

pub(crate) fn compose(
    admitted: &[Candidate],
    terms: &[String],
    depth: usize,
    max_chars: usize,
) -> Composed {
    let index: HashMap<&str, usize> = admitted
        .iter()
        .enumerate()
        .map(|(i, c)| (c.claim.id.as_str(), i))
        .collect();
    // Clusters in the order of their best-ranked claim.
    let mut order: Vec<String> = Vec::new();
    let mut clusters: HashMap<String, Vec<Planned>> = HashMap::new();
    let mut placed = vec![false; admitted.len()];
    let mut dropped = Vec::new();
    let mut disagreement = false;
    for (i, c) in admitted.iter().enumerate() {
        if placed[i] {
            continue;
        }
        placed[i] = true;
        // A current claim it contradicts, also in the answer: one sentence
        // says both, rather than picking one.
        let partner = c
            .claim
            .contradicts
            .iter()
            .filter_map(|id| index.get(id.as_str()).copied())
            .find(|j| !placed[*j]);
        let planned = match partner {
            Some(j) => {
                placed[j] = true;
                Planned {
                    template: "disagreement",
                    claims: vec![i, j],
                }
            }
            None if c.claim.status == crate::model::ClaimStatus::Contested => Planned {
                template: "contested",
                claims: vec![i],
            },
            None => Planned {
                template: "statement",
                claims: vec![i],
            },
        };
        let key = cluster_key(c, terms);
        if !clusters.contains_key(&key) {
            order.push(key.clone());
        }
        clusters.entry(key).or_default().push(planned);
    }
    let mut answer = String::new();
    let mut sentences = Vec::new();
    for (n, key) in order.iter().enumerate() {
        let planned = clusters.remove(key).unwrap_or_default();
        if n >= depth {
            for p in planned {
                for i in p.claims {
                    dropped.push(Dropped {
                        what: admitted[i].claim.id.clone(),
                        reason: format!("beyond depth {depth} (a further topic)"),
                    });
                }
            }
            continue;
        }
        let mut opened = false;
        for p in planned {
            let ids: Vec<String> = p
                .claims
                .iter()
                .map(|i| admitted[*i].claim.id.clone())
                .collect();
            let texts: Vec<&str> = p
                .claims
                .iter()
                .map(|i| admitted[*i].claim.text.as_str())
                .collect();
            let Some(text) = render(p.template, &texts, &ids) else {
                continue;
            };
            let sep = match (answer.is_empty(), opened) {
                (true, _) => 0,
                (false, true) => 1,
                (false, false) => 2,
            };
            if answer.chars().count() + sep + text.chars().count() > max_chars {
                for id in ids {
                    dropped.push(Dropped {
                        what: id,
                        reason: format!("did not fit in max_chars {max_chars}"),
                    });
                }
                continue;
            }
            append(&mut answer, &text, !opened);
            if p.template == "disagreement" {
                disagreement = true;
            }
            sentences.push(Sentence {
                text,
                citations: ids,
                template: p.template.to_string(),
                paragraph: n,
            });
            opened = true;
        }
    }
    Composed {
        answer,
        sentences,
        dropped,
        disagreement,
    }
}

/// Question concepts no cited claim covers: a word no cited claim
/// contains (by stem) and — with a model — none is close to in meaning.
pub(crate) fn gaps(kb: &Kb, terms: &[String], query: &str, cited: &[&Candidate]) -> Vec<String> {
    if cited.is_empty() {
        return if terms.is_empty() {
            vec![query.to_string()]
        } else {
            terms.to_vec()
        };
    }
    let words: Vec<Vec<String>> = cited
        .iter()
        .map(|c| crate::retrieval::query_terms_unbounded(&c.claim.text))
        .collect();
    let lexically_open: Vec<&String> = terms
        .iter()
        .filter(|t| {
            !words
                .iter()
                .any(|w| crate::retrieval::hybrid::word_matches(t, w))
        })
        .collect();
    let Some(embedder) = kb.embedder() else {
        return lexically_open.into_iter().cloned().collect();
    };
    lexically_open
        .into_iter()
        .filter(|t| {
            let Ok(v) = crate::retrieval::semantic::query_vector(kb, embedder.as_ref(), t) else {
                return true;
            };
            // A claim whose vector cannot be read does not cover the
            // term: it stays open, named as a gap.
            !cited.iter().any(|c| {
                crate::retrieval::semantic::claim_cosine(kb, &c.claim.id, &v)
                    .ok()
                    .flatten()
                    .is_some_and(|s| s >= TERM_COSINE)
            })
        })
        .cloned()
        .collect()
}

/// How close in meaning a question word must be to a cited claim to count
/// as covered by it.
pub const TERM_COSINE: f32 = 0.4;

#[cfg(test)]
mod clitic_tests {
    use super::*;

    #[test]
    fn a_contraction_leaves_no_fragment_as_a_topic() {
        assert_eq!(content_terms("what's our auth model?"), ["auth", "model"]);
        assert_eq!(
            content_terms("What\u{2019}s the deploy key's rotation?"),
            ["deploy", "key", "rotation"]
        );
        assert_eq!(
            without_clitics("Why don't builds we'll sign?"),
            "Why do builds we sign?"
        );
        assert_eq!(
            without_clitics("Why can't we? It won't."),
            "Why can we? It will."
        );
        assert_eq!(content_terms("why can't we deploy?"), ["deploy"]);
        // An apostrophe inside a name stays.
        assert_eq!(content_terms("O'Brien tokens"), ["o", "brien", "tokens"]);
    }
}
