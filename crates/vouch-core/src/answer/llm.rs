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
use crate::index::STOP_WORDS;
use crate::kb::Kb;
use crate::retrieval::hybrid::word_matches;
use serde_json::Value;

pub use crate::services::Llm;

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

/// The words of `text`, lowercased, split on anything but letters, digits
/// and the apostrophe (so `can't` stays one word).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('\u{2019}', "'"))
        .collect()
}

/// Words that turn a statement around.
fn is_negation(w: &str) -> bool {
    matches!(
        w,
        "not"
            | "no"
            | "never"
            | "none"
            | "nobody"
            | "nothing"
            | "neither"
            | "nor"
            | "nowhere"
            | "without"
            | "cannot"
            | "forbidden"
            | "prohibited"
    ) || w.ends_with("n't")
}

/// Number words, as the digits they stand for.
fn number_word(w: &str) -> Option<&'static str> {
    Some(match w {
        "zero" => "0",
        "one" | "once" | "single" => "1",
        "two" | "twice" | "double" => "2",
        "three" | "thrice" => "3",
        "four" => "4",
        "five" => "5",
        "six" => "6",
        "seven" => "7",
        "eight" => "8",
        "nine" => "9",
        "ten" => "10",
        "eleven" => "11",
        "twelve" => "12",
        "twenty" => "20",
        "thirty" => "30",
        "hundred" => "100",
        "thousand" => "1000",
        _ => return None,
    })
}

/// How much or how often a statement says, in classes whose members say
/// the same (`all` and `every`).
fn quantifier(w: &str) -> Option<&'static str> {
    Some(match w {
        "all" | "every" | "each" | "everyone" | "everything" | "any" | "anyone" => "all",
        "some" | "several" | "few" | "a few" | "certain" => "some",
        "most" | "majority" => "most",
        "many" | "much" => "many",
        "always" | "forever" => "always",
        "sometimes" | "occasionally" | "often" | "usually" | "rarely" | "seldom" => "sometimes",
        "only" | "solely" | "exclusively" => "only",
        "must" | "required" | "mandatory" | "shall" => "must",
        "may" | "can" | "allowed" | "optional" | "might" => "may",
        "should" => "should",
        _ => return None,
    })
}

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// What a sentence must say exactly as its claims do: how many negations,
/// which numbers and dates, which quantifiers and modals, which named
/// things (capitalized words past the first, and identifiers with digits,
/// dots, dashes or underscores).
#[derive(Debug, Default, PartialEq)]
struct Meaning {
    negations: usize,
    numbers: std::collections::BTreeSet<String>,
    quantifiers: std::collections::BTreeSet<&'static str>,
    names: std::collections::BTreeSet<String>,
}

fn meaning_of(text: &str) -> Meaning {
    let mut m = Meaning::default();
    for w in words(text) {
        if is_negation(&w) {
            m.negations += 1;
        }
        if w.chars().all(|c| c.is_ascii_digit()) {
            m.numbers.insert(w.trim_start_matches('0').to_string());
        } else if let Some(n) = number_word(&w) {
            m.numbers.insert(n.to_string());
        } else if MONTHS.contains(&w.as_str()) {
            m.numbers.insert(w.clone());
        }
        if let Some(q) = quantifier(&w) {
            m.quantifiers.insert(q);
        }
    }
    // Named things: a capitalized word that does not start its sentence,
    // or a token with a digit or an inner `.`, `-`, `_` (a service, a
    // table, a version).
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let token = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if token.is_empty() {
            continue;
        }
        let capitalized = token.chars().next().is_some_and(char::is_uppercase);
        let code = token.chars().any(|c| c.is_ascii_digit())
            && token.chars().any(|c| c.is_alphabetic())
            || token.contains(['_', '.'])
            || (token.contains('-') && token.chars().any(|c| c.is_ascii_digit()));
        if (capitalized && !sentence_start) || code {
            m.names.insert(token.to_lowercase());
        }
        sentence_start = raw.ends_with(['.', '!', '?', ':']);
    }
    m
}

/// Whether `text` keeps what its cited claims say: the same number of
/// negations (a dropped "never" turns "Agents must never force-push" into
/// its opposite), the same numbers and dates, the same quantifiers and
/// modals, and every named thing. Bag-of-words support cannot see these;
/// a sentence that changes one is dropped with the reason.
fn meaning_kept(text: &str, cited: &[&str]) -> Result<(), String> {
    let got = meaning_of(text);
    let mut want = Meaning::default();
    for c in cited {
        let m = meaning_of(c);
        want.negations += m.negations;
        want.numbers.extend(m.numbers);
        want.quantifiers.extend(m.quantifiers);
        want.names.extend(m.names);
    }
    if got.negations != want.negations {
        return Err(format!(
            "it has {} negation(s) where its claims have {}: it would say the opposite",
            got.negations, want.negations
        ));
    }
    if got.numbers != want.numbers {
        return Err(format!(
            "its numbers and dates {:?} are not its claims' {:?}",
            got.numbers, want.numbers
        ));
    }
    if got.quantifiers != want.quantifiers {
        return Err(format!(
            "its quantifiers {:?} are not its claims' {:?}",
            got.quantifiers, want.quantifiers
        ));
    }
    let dropped: Vec<&String> = want.names.difference(&got.names).collect();
    if !dropped.is_empty() {
        return Err(format!("it leaves out what its claims name: {dropped:?}"));
    }
    Ok(())
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
        if let Err(why) = meaning_kept(&body, &texts) {
            drop(why);
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

    #[test]
    fn the_meaning_of_its_claims_is_kept_or_the_sentence_goes() {
        let never = ["Agents must never force-push to main"];
        assert!(meaning_kept("Agents must never force-push to main", &never).is_ok());
        assert!(meaning_kept("Agents must not force-push to main", &never).is_ok());
        assert!(
            meaning_kept("Agents must force-push to main", &never)
                .unwrap_err()
                .contains("opposite")
        );
        // Two claims recombined into what neither says.
        let two = [
            "The staging database can be dropped freely",
            "The production database must never be dropped",
        ];
        assert!(meaning_kept("The production database can be dropped freely", &two).is_err());
        assert!(
            meaning_kept(
                "Tokens expire after 48 hours",
                &["Tokens expire after 24 hours"]
            )
            .is_err()
        );
        assert!(
            meaning_kept(
                "Tokens expire after twenty-four hours",
                &["Tokens expire after 24 hours"]
            )
            .is_err(),
            "a number it cannot read is a different number"
        );
        assert!(
            meaning_kept(
                "Every deploy needs a review",
                &["Some deploys need a review"]
            )
            .is_err()
        );
        assert!(
            meaning_kept(
                "Deploys need a review",
                &["Deploys to Kubernetes need a review"]
            )
            .is_err(),
            "a named thing dropped"
        );
        assert!(meaning_kept("All deploys need review", &["Every deploy needs review"]).is_ok());
    }

    use proptest::prelude::*;

    /// Claims built from parts, and one mutation each of what must not
    /// change: the claim itself is kept; every mutation is dropped.
    fn claim_and_mutation() -> impl Strategy<Value = (String, String)> {
        let subject =
            prop::sample::select(vec!["Agents", "The billing service", "Deploys to api-v2"]);
        let verb = prop::sample::select(vec!["retry", "run", "page the on-call engineer"]);
        let n = 2u32..500;
        let negated = any::<bool>();
        let quant = prop::sample::select(vec!["always", "only", "sometimes"]);
        let mutation = 0u8..4;
        (subject, verb, n, negated, quant, mutation).prop_map(|(s, v, n, neg, q, m)| {
            let not = if neg { " never" } else { "" };
            let claim = format!("{s}{not} {q} {v} {n} times");
            let mutated = match m {
                // Drop or add a negation.
                0 if neg => format!("{s} {q} {v} {n} times"),
                0 => format!("{s} never {q} {v} {n} times"),
                // Change the number.
                1 => format!("{s}{not} {q} {v} {} times", n + 1),
                // Change the quantifier.
                2 => {
                    let other = if q == "always" { "sometimes" } else { "always" };
                    format!("{s}{not} {other} {v} {n} times")
                }
                // Drop the number altogether.
                _ => format!("{s}{not} {q} {v} many times"),
            };
            (claim, mutated)
        })
    }

    proptest! {
        #[test]
        fn a_mutated_claim_is_never_kept((claim, mutated) in claim_and_mutation()) {
            prop_assert!(meaning_kept(&claim, &[claim.as_str()]).is_ok(), "{claim}");
            prop_assert!(
                meaning_kept(&mutated, &[claim.as_str()]).is_err(),
                "kept {mutated:?} for {claim:?}"
            );
        }
    }
}
