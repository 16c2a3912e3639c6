//! `kb.synthesize`: an answer built only from current approved claims,
//! every sentence cited, what the KB does not know named in `gaps`.
//!
//! Deterministic by default: the `kb.context` ranking (hybrid when a model
//! is installed) picks the claims, [`compose`] groups them into topic
//! clusters and writes one paragraph per cluster from the claims' own
//! words and a fixed set of connectives ([`compose::TEMPLATES`]), so every
//! sentence can be re-derived as template + claim text. `mode: llm` lets a
//! configured command reword the answer; what it returns is kept only when
//! every sentence cites claims it was offered and uses their words
//! ([`llm`]). The shape is documented in docs/synthesize.md.

pub mod compose;
pub mod llm;
pub mod recall;

use crate::error::{Error, Result};
use crate::kb::{Caller, Kb};
use crate::model::{Claim, ClaimStatus};
use crate::retrieval::pack::Citation;
use crate::retrieval::{self, Currency, Query, SearchHit, Snippets};
use crate::settings::RetrievalBackend;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Default `depth`: how many topic clusters (paragraphs) an answer has at most.
pub const DEFAULT_DEPTH: usize = 3;
/// Largest `depth` allowed.
pub const MAX_DEPTH: usize = 20;
/// Default `max_chars` of an answer.
pub const DEFAULT_MAX_CHARS: usize = 4000;
/// Largest `max_chars` allowed.
pub const MAX_MAX_CHARS: usize = 100_000;
/// Claims considered before the relevance check.
const POOL: usize = 40;

/// Params of `kb.synthesize`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SynthesizeParams {
    /// The question, in plain words.
    pub query: String,
    /// How many topic clusters (paragraphs) at most (default 3, 1..=20).
    #[serde(default)]
    pub depth: Option<i64>,
    /// Upper bound on `answer` in characters (default 4000, 1..=100000).
    #[serde(default)]
    pub max_chars: Option<i64>,
    /// fts5 | substring | embedding | hybrid (default: hybrid when a model
    /// is installed, else retrieval.backend).
    #[serde(default)]
    pub backend: Option<String>,
    /// `deterministic` (default) or `llm` (a command configured by the
    /// person running vouch rewords the answer; see docs/synthesize.md).
    #[serde(default)]
    pub mode: Option<String>,
    /// File the answer as a page proposal citing the claims (default false).
    #[serde(default)]
    pub propose_page: bool,
}

/// One sentence of an answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Sentence {
    /// The sentence as it stands in `answer`, its `[claim-id]` citations
    /// included.
    pub text: String,
    /// Claim ids this sentence states.
    pub citations: Vec<String>,
    /// The connective template it was written with (`compose::TEMPLATES`),
    /// or `llm` for a sentence a language model wrote and vouch checked.
    pub template: String,
    /// Which paragraph (topic cluster) it belongs to, from 0.
    pub paragraph: usize,
}

/// A claim an answer cites, as read from its file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct CitedClaim {
    /// The claim's id.
    pub id: String,
    /// The claim's text.
    pub text: String,
    /// Its status: `stable`, `actionable`, `working` or `contested`.
    pub status: String,
    /// Its confidence, 0 to 1.
    pub confidence: f64,
    /// Its evidence that still resolves: source, locator, quoted span.
    pub evidence: Vec<Citation>,
}

/// Something left out of an answer, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Dropped {
    /// A claim id, or `llm` for something a language model returned.
    pub what: String,
    /// Why it was left out, in words.
    pub reason: String,
}

/// How an answer was made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct SynthesisMeta {
    /// `high` (every cited claim stable), `medium` (some working, draft,
    /// actionable), `low` (a contested claim or a disagreement, or no
    /// answer).
    pub synthesis_confidence: String,
    /// The retrieval backend that found the claims.
    pub backend: String,
    /// `deterministic`, or `llm` when the model's answer was kept.
    pub mode: String,
    /// Claims and model output left out, and why.
    pub dropped: Vec<Dropped>,
    /// Why `answer` is empty, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The page proposal filed with `propose_page`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
}

/// What `kb.synthesize` returns (docs/synthesize.md).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Synthesis {
    /// The question, trimmed.
    pub query: String,
    /// Markdown: one paragraph per topic, every sentence ending in its
    /// `[claim-id]` citations. Empty when the KB does not cover the
    /// question.
    pub answer: String,
    /// The sentences of `answer`, in order.
    pub sentences: Vec<Sentence>,
    /// Every claim the answer cites, with its evidence.
    pub citations: Vec<CitedClaim>,
    /// What the question asks about that no cited claim covers.
    pub gaps: Vec<String>,
    /// Confidence, backend, mode, and what was left out.
    #[serde(rename = "_meta")]
    pub meta: SynthesisMeta,
}

/// A claim that may be cited, with how it was found.
pub(crate) struct Candidate {
    pub claim: Claim,
    pub evidence: Vec<Citation>,
    /// Share of the question's content words the claim contains.
    pub coverage: f32,
    /// Cosine with the question, when a model ranked it.
    pub cosine: Option<f32>,
}

fn bounded(name: &str, v: Option<i64>, default: usize, max: usize) -> Result<usize> {
    match v {
        None => Ok(default),
        Some(n) if n >= 1 && n as usize <= max => Ok(n as usize),
        Some(n) => Err(Error::invalid(format!(
            "{name}: {n} is not allowed; use 1..={max}"
        ))),
    }
}

/// Whether a claim found for the question is about it: most of its content
/// words (lexical), or close in meaning (semantic), or some of both.
fn relevant(coverage: f32, cosine: Option<f32>) -> bool {
    coverage >= 0.5
        || cosine.is_some_and(|c| c >= 0.5)
        || (coverage > 0.0 && cosine.is_some_and(|c| c >= 0.3))
}

/// `kb.synthesize`: an answer to the question built only from current approved
/// claims, every sentence cited, what the KB does not cover named in `gaps`.
pub fn synthesize(kb: &Kb, caller: &Caller, p: SynthesizeParams) -> Result<Synthesis> {
    let query = p.query.trim().to_string();
    if query.is_empty() {
        return Err(Error::invalid("query: must not be empty"));
    }
    let depth = bounded("depth", p.depth, DEFAULT_DEPTH, MAX_DEPTH)?;
    let max_chars = bounded("max_chars", p.max_chars, DEFAULT_MAX_CHARS, MAX_MAX_CHARS)?;
    let mode = match p.mode.as_deref() {
        None | Some("deterministic") => "deterministic",
        Some("llm") => "llm",
        Some(m) => {
            return Err(Error::invalid(format!(
                "mode: unknown mode {:?}; expected deterministic or llm",
                crate::ids::truncate_for_message(m)
            )));
        }
    };
    if mode == "llm" && kb.llm().is_none() {
        return Err(Error::invalid(
            "mode llm: no language model command is configured; set synthesize.llm_command \
             in your user config (~/.config/vouch/config.yaml) or VOUCH_LLM_COMMAND, or use \
             mode deterministic",
        ));
    }
    let backend = match p.backend.as_deref() {
        Some(b) => Some(retrieval::backend::parse(b)?),
        None => kb.embedder().map(|_| RetrievalBackend::Hybrid),
    };
    let (found, backend_name) = candidates(kb, &query, backend, p.backend.is_some())?;
    let terms = compose::content_terms(&query);
    let mut dropped = Vec::new();
    let mut admitted = Vec::new();
    for c in found {
        if relevant(c.coverage, c.cosine) {
            admitted.push(c);
        } else {
            dropped.push(Dropped {
                what: c.claim.id.clone(),
                reason: "found by the search but not about the question".into(),
            });
        }
    }
    let mut composed = compose::compose(&admitted, &terms, depth, max_chars);
    dropped.append(&mut composed.dropped);
    let mut used_mode = "deterministic";
    if mode == "llm" {
        match llm::reword(kb, &query, &admitted, &composed, max_chars) {
            Ok((sentences, mut lies)) => {
                dropped.append(&mut lies);
                composed.adopt(sentences);
                used_mode = "llm";
            }
            Err(why) => dropped.push(Dropped {
                what: "llm".into(),
                reason: format!("{why}; the deterministic answer is given instead"),
            }),
        }
    }
    let cited: Vec<&Candidate> = admitted
        .iter()
        .filter(|c| composed.cites(&c.claim.id))
        .collect();
    let gaps = compose::gaps(kb, &terms, &query, &cited);
    let confidence = confidence(&cited, composed.disagreement);
    let reason = if composed.answer.is_empty() {
        Some(if admitted.is_empty() {
            "no current approved claim is about this question".to_string()
        } else {
            format!("no cited sentence fits in max_chars {max_chars}")
        })
    } else {
        None
    };
    let citations = cited
        .iter()
        .map(|c| CitedClaim {
            id: c.claim.id.clone(),
            text: c.claim.text.clone(),
            status: c.claim.status.to_string(),
            confidence: c.claim.confidence,
            evidence: c.evidence.clone(),
        })
        .collect();
    let mut out = Synthesis {
        query,
        answer: composed.answer,
        sentences: composed.sentences,
        citations,
        gaps,
        meta: SynthesisMeta {
            synthesis_confidence: confidence.into(),
            backend: backend_name,
            mode: used_mode.into(),
            dropped,
            reason,
            proposal_id: None,
        },
    };
    if p.propose_page {
        out.meta.proposal_id = Some(propose_page(kb, caller, &out)?);
    }
    Ok(out)
}

/// Current approved claims the ranking finds for the question, read from
/// their files with their evidence.
fn candidates(
    kb: &Kb,
    query: &str,
    backend: Option<RetrievalBackend>,
    explicit: bool,
) -> Result<(Vec<Candidate>, String)> {
    let terms = retrieval::query_terms(query);
    let content = compose::content_terms(query);
    let hits: Vec<SearchHit> = retrieval::retrieve(
        kb,
        &Query {
            text: query,
            terms: &terms,
            limit: POOL,
            kinds: &[crate::model::DocKind::Claim],
            currency: Currency::Current,
            snippets: Snippets::No,
            backend,
            explicit,
        },
    )?;
    let backend_name = match backend {
        Some(b) => retrieval::backend::name_of(b).to_string(),
        None => hits.first().map_or_else(
            || crate::retrieval::retriever(kb).name().to_string(),
            |h| h.backend.clone(),
        ),
    };
    // Only reviewed knowledge answers: a claim no approval let in (written
    // by hand) is left out, whatever its file says.
    let claims: Vec<(crate::store::Dir, &str)> = hits
        .iter()
        .map(|h| (crate::store::Dir::Claims, h.id.as_str()))
        .collect();
    let unreviewed = retrieval::unaudited(kb, &claims);
    let mut out = Vec::new();
    for hit in hits {
        if unreviewed.contains(&(crate::store::Dir::Claims, hit.id.clone())) {
            continue;
        }
        let Ok(Some(claim)) = kb.load::<Claim>(&hit.id) else {
            continue;
        };
        // Current and approved only: the index may lag a file edited by
        // hand; the file decides.
        if !claim.status.is_current() {
            continue;
        }
        // A retriever that ranks by meaning measured it already.
        let cosine = hit.cosine;
        out.push(Candidate {
            coverage: retrieval::hybrid::share(content.iter(), &claim.text),
            cosine,
            evidence: crate::retrieval::pack::citations(kb, &claim.evidence),
            claim,
        });
    }
    Ok((out, backend_name))
}

/// Seed 002: high when every cited claim is stable, medium when some are
/// working / actionable / draft, low with a contested claim, a stated
/// disagreement, or nothing cited.
fn confidence(cited: &[&Candidate], disagreement: bool) -> &'static str {
    if cited.is_empty()
        || disagreement
        || cited
            .iter()
            .any(|c| c.claim.status == ClaimStatus::Contested)
    {
        "low"
    } else if cited.iter().all(|c| c.claim.status == ClaimStatus::Stable) {
        "high"
    } else {
        "medium"
    }
}

/// File the answer as a `report` page citing its claims, through the gate.
fn propose_page(kb: &Kb, caller: &Caller, s: &Synthesis) -> Result<String> {
    if s.answer.is_empty() {
        return Err(Error::invalid(
            "propose_page: the answer is empty (nothing approved covers the question); \
             nothing to propose",
        ));
    }
    let title: String = s.query.chars().take(120).collect();
    let mut sources: Vec<String> = s
        .citations
        .iter()
        .flat_map(|c| c.evidence.iter().map(|e| e.source_id.clone()))
        .collect();
    sources.sort();
    sources.dedup();
    let r = crate::review::gate::propose_page(
        kb,
        caller,
        crate::params::ProposePageParams {
            title,
            body: Some(s.answer.clone()),
            page_type: Some(crate::model::PageType::Report),
            claims: s.citations.iter().map(|c| c.id.clone()).collect(),
            entities: Vec::new(),
            sources,
            tags: vec!["synthesized".into()],
            session_id: None,
            rationale: Some("kb.synthesize answer, every sentence cited".into()),
            dry_run: false,
            secrets: Default::default(),
        },
    )?;
    if !r.valid {
        return Err(Error::invalid(format!(
            "propose_page: the page proposal was refused: {}",
            r.errors.join("; ")
        )));
    }
    Ok(r.proposal_id)
}

/// What a sentence of the answer must be: for tests and for callers that
/// want to check an answer themselves. Every sentence is its template
/// filled with its cited claims' texts, and cites only claims in
/// `citations`; the answer is its sentences in order.
pub fn rederive(s: &Synthesis) -> std::result::Result<(), String> {
    let text_of = |id: &str| {
        s.citations
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.text.as_str())
    };
    let mut rebuilt = String::new();
    let mut paragraph = None;
    for (i, sentence) in s.sentences.iter().enumerate() {
        if sentence.citations.is_empty() {
            return Err(format!("sentence {i} cites nothing"));
        }
        let texts: Vec<&str> = sentence
            .citations
            .iter()
            .map(|id| text_of(id).ok_or_else(|| format!("sentence {i} cites {id}, not listed")))
            .collect::<std::result::Result<_, _>>()?;
        if sentence.template != "llm" {
            let want = compose::render(&sentence.template, &texts, &sentence.citations)
                .ok_or_else(|| format!("sentence {i}: unknown template {}", sentence.template))?;
            if want != sentence.text {
                return Err(format!(
                    "sentence {i} is not its template and claims: {:?} vs {want:?}",
                    sentence.text
                ));
            }
        }
        let new_paragraph = paragraph != Some(sentence.paragraph);
        paragraph = Some(sentence.paragraph);
        compose::append(&mut rebuilt, &sentence.text, new_paragraph);
    }
    if rebuilt != s.answer {
        return Err(format!(
            "the answer is not its sentences: {:?} vs {rebuilt:?}",
            s.answer
        ));
    }
    Ok(())
}

/// The JSON request an LLM command receives (documented in
/// docs/synthesize.md).
pub fn llm_request(query: &str, offered: &[(String, String)]) -> Value {
    serde_json::json!({
        "question": query,
        "claims": offered.iter().map(|(id, text)| serde_json::json!({"id": id, "text": text})).collect::<Vec<_>>(),
        "instructions": "Answer the question using only these claims. Return JSON: {\"sentences\": [{\"text\": \"...\", \"citations\": [\"claim-id\", ...]}]}. Every sentence must cite the claims it states and use their words; sentences that add facts are dropped.",
    })
}
