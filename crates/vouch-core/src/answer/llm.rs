//! `mode: llm`: a language model rewords the answer, and vouch keeps only
//! what it can check. The model is a service the app injects into `Kb`
//! ([`Llm`]; the app runs a command the person configured); the core only
//! builds the request and judges the reply.
//!
//! A sentence of the reply is kept when (1) it cites at least one claim,
//! (2) every claim it cites was offered, and (3) every content word of it
//! (not a stop word or one of [`CONNECTIVES`]) occurs in the claims it
//! cites — by stem, and numbers exactly. Anything else is dropped with the
//! reason under `_meta.dropped`. A reply that is not JSON, a command that
//! fails or times out, or a reply with no sentence left falls back to the
//! deterministic answer, and says so.

use super::compose::{Composed, append, normalize};
use super::{Candidate, Dropped, Sentence};
use crate::kb::Kb;
use crate::retrieval::fts5::STOP_WORDS;
use crate::retrieval::hybrid::word_matches;
use serde_json::Value;

/// A language model the app provides.
pub trait Llm: Send + Sync {
    /// Send the request (see `answer::llm_request`) and return the reply's
    /// text, or why there is none.
    fn complete(&self, request: &Value) -> Result<String, String>;
}

/// Words a reworded sentence may add to its claims' own.
pub const CONNECTIVES: &[&str] = &[
    "also",
    "additionally",
    "moreover",
    "however",
    "but",
    "while",
    "whereas",
    "both",
    "either",
    "neither",
    "nor",
    "although",
    "though",
    "yet",
    "sources",
    "source",
    "disagree",
    "according",
    "states",
    "state",
    "says",
    "say",
    "claims",
    "claim",
    "notes",
    "note",
    "other",
    "another",
    "one",
    "first",
    "second",
    "finally",
    "further",
    "furthermore",
    "therefore",
    "thus",
    "because",
];

/// Most sentences read from a reply.
const MAX_SENTENCES: usize = 100;

fn supported(text: &str, cited: &[&str]) -> Result<(), Vec<String>> {
    let words: Vec<String> = cited
        .iter()
        .flat_map(|t| crate::retrieval::query_terms_unbounded(t))
        .collect();
    let missing: Vec<String> = crate::retrieval::query_terms_unbounded(text)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()) && !CONNECTIVES.contains(&w.as_str()))
        .filter(|w| !word_matches(w, &words))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

/// Strip `[...]` citation marks a model wrote itself; vouch writes its own.
fn without_marks(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for ch in text.chars() {
        match ch {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out
}

/// Ask the model to reword `composed`; the sentences kept and what was
/// dropped, or why nothing can be used.
pub(crate) fn reword(
    kb: &Kb,
    query: &str,
    admitted: &[Candidate],
    composed: &Composed,
    max_chars: usize,
) -> Result<(Vec<Sentence>, Vec<Dropped>), String> {
    let llm = kb.llm().ok_or("no language model command is configured")?;
    let offered: Vec<(String, String)> = admitted
        .iter()
        .filter(|c| composed.cites(&c.claim.id))
        .map(|c| (c.claim.id.clone(), c.claim.text.clone()))
        .collect();
    if offered.is_empty() {
        return Err("nothing to reword: no claim is cited".into());
    }
    let reply = llm.complete(&super::llm_request(query, &offered))?;
    let v: Value = serde_json::from_str(reply.trim())
        .map_err(|e| format!("the model's reply is not JSON ({e})"))?;
    let Some(list) = v.get("sentences").and_then(Value::as_array) else {
        return Err("the model's reply has no `sentences` list".into());
    };
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut answer = String::new();
    for (n, s) in list.iter().take(MAX_SENTENCES).enumerate() {
        let mut drop = |reason: String| {
            dropped.push(Dropped {
                what: "llm".into(),
                reason: format!("sentence {n}: {reason}"),
            })
        };
        let Some(text) = s.get("text").and_then(Value::as_str) else {
            drop("has no text".into());
            continue;
        };
        let ids = crate::params::string_list(s.get("citations"));
        if ids.is_empty() {
            drop("cites no claim".into());
            continue;
        }
        let texts: Result<Vec<&str>, String> = ids
            .iter()
            .map(|id| {
                offered
                    .iter()
                    .find(|(o, _)| o == id)
                    .map(|(_, t)| t.as_str())
                    .ok_or_else(|| {
                        format!(
                            "cites {:?}, which was not offered",
                            crate::ids::truncate_for_message(id)
                        )
                    })
            })
            .collect();
        let texts = match texts {
            Ok(t) => t,
            Err(why) => {
                drop(why);
                continue;
            }
        };
        let body = normalize(&without_marks(text));
        if body.is_empty() {
            drop("is empty".into());
            continue;
        }
        if let Err(missing) = supported(&body, &texts) {
            drop(format!(
                "uses words its claims do not: {}",
                missing
                    .iter()
                    .take(8)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        }
        let marks: Vec<String> = ids.iter().map(|id| format!("[{id}]")).collect();
        let sentence = format!("{body} {}.", marks.join(" "));
        let sep = usize::from(!answer.is_empty());
        if answer.chars().count() + sep + sentence.chars().count() > max_chars {
            drop(format!("did not fit in max_chars {max_chars}"));
            continue;
        }
        append(&mut answer, &sentence, false);
        kept.push(Sentence {
            text: sentence,
            citations: ids,
            template: "llm".into(),
            paragraph: 0,
        });
    }
    if kept.is_empty() {
        let why = dropped
            .first()
            .map(|d| d.reason.clone())
            .unwrap_or_else(|| "no sentences".into());
        return Err(format!(
            "no sentence of the model's reply could be kept ({why})"
        ));
    }
    Ok((kept, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_is_supported_only_by_its_claims_words() {
        let claims = [
            "Access tokens expire after 24 hours",
            "Refresh tokens rotate daily",
        ];
        assert!(
            supported(
                "Access tokens expire after 24 hours, and refresh tokens rotate daily",
                &claims
            )
            .is_ok()
        );
        // Stems: "expiring" for "expire"; connectives are free.
        assert!(supported("Also, access tokens are expiring after 24 hours", &claims).is_ok());
        assert_eq!(
            supported("Access tokens expire after 48 hours", &claims).unwrap_err(),
            ["48"]
        );
        assert_eq!(
            supported("Tokens are encrypted with AES", &claims).unwrap_err(),
            ["encrypted", "aes"]
        );
        assert_eq!(without_marks("Tokens expire [a] [b]"), "Tokens expire  ");
    }
}
