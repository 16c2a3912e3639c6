//! `kb.knowledge_import`: every fact becomes a claim proposal citing the
//! span of its file that states it. The files are registered as sources
//! (content-addressed), so each imported claim can be verified against the
//! bytes it came from; the gate holds on every transport.

use super::parse::Fact;
use super::{Problem, read, report};
use crate::error::{Error, Result};
use crate::kb::{Caller, Kb};
use crate::model::{Claim, ClaimType, Scope};
use crate::params::{Citation, ProposeClaimParams, RegisterSourceParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportParams {
    /// The knowledge folder (holding index.json), inside the project.
    pub path: String,
    /// Report what would be proposed; write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Import the valid facts even when others have errors (they are
    /// listed under `skipped`). Default: nothing is proposed while any
    /// error stands.
    #[serde(default)]
    pub skip_invalid: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportedFact {
    pub knowledge_id: String,
    /// `proposed`, `would propose`, `unchanged` (an approved claim says
    /// it), `pending` (already proposed), `changed` (proposed; an approved
    /// claim said otherwise), `refused`.
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_id: Option<String>,
    /// The approved claim a changed fact replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportResult {
    /// False when validation found errors and nothing was imported.
    pub ok: bool,
    pub dry_run: bool,
    pub facts: Vec<ImportedFact>,
    /// Facts left out for errors (with `skip_invalid`).
    pub skipped: Vec<String>,
    /// Sources registered for the files.
    pub sources: BTreeMap<String, String>,
    pub problems: Vec<Problem>,
}

/// seed 003 category → claim type (and an extra tag).
fn claim_type(category: &str) -> (ClaimType, Option<&'static str>) {
    match category {
        "pitfall" => (ClaimType::Warning, None),
        "pattern" => (ClaimType::Workflow, None),
        "tool-quirk" => (ClaimType::Observation, Some("tool-quirk")),
        "question" => (ClaimType::Question, None),
        _ => (ClaimType::Fact, None),
    }
}

/// Where a domain applies: global knowledge is the team's, a repo's the
/// project's, an agent's its own.
fn scope_of(file: &str) -> Scope {
    if file.starts_with("repos/") {
        Scope::Project
    } else if file.starts_with("agents/") {
        Scope::Private
    } else {
        Scope::Team
    }
}

/// The knowledge id a claim or proposal payload was imported from.
pub(crate) fn knowledge_id(metadata: Option<&Value>) -> Option<String> {
    metadata?
        .get("knowledge")?
        .get("id")?
        .as_str()
        .map(str::to_string)
}

pub fn import(kb: &Kb, caller: &Caller, p: ImportParams) -> Result<ImportResult> {
    let dir = read(kb, &p.path)?;
    let rep = report(&dir, &kb.now().0.format("%Y-%m-%d").to_string());
    let errors: Vec<&Problem> = rep
        .problems
        .iter()
        .filter(|x| x.severity == "error")
        .collect();
    let mut out = ImportResult {
        // With skip_invalid the errors were expected: the import is what
        // was asked for (the skipped facts are listed).
        ok: errors.is_empty() || p.skip_invalid,
        dry_run: p.dry_run,
        facts: Vec::new(),
        skipped: Vec::new(),
        sources: BTreeMap::new(),
        problems: rep.problems.clone(),
    };
    if !errors.is_empty() && !p.skip_invalid {
        return Ok(out);
    }
    // Facts with an error of their own, or in a file with a file-level
    // error, are skipped.
    let bad_ids: Vec<&str> = errors.iter().filter_map(|x| x.id.as_deref()).collect();
    let bad_files: Vec<&str> = errors
        .iter()
        .filter(|x| x.id.is_none())
        .map(|x| x.file.as_str())
        .collect();
    // The YAML files are what people edit: their facts come first; a fact
    // only index.json holds cites index.json.
    let mut facts: Vec<Fact> = dir.facts().into_iter().cloned().collect();
    let in_yaml: Vec<String> = facts
        .iter()
        .filter_map(|f| f.id().map(str::to_string))
        .collect();
    facts.extend(
        dir.index_facts()
            .into_iter()
            .filter(|f| f.id().is_some_and(|id| !in_yaml.iter().any(|y| y == id))),
    );
    // What this KB already holds, by knowledge id.
    let mut approved: HashMap<String, (String, String)> = HashMap::new();
    for c in kb.load_all::<Claim>()? {
        if c.status.is_current()
            && let Some(id) = knowledge_id(c.extra.get("metadata"))
        {
            approved.insert(id, (c.id.clone(), c.text.clone()));
        }
    }
    let mut pending: HashMap<String, String> = HashMap::new();
    for pr in crate::review::gate::list_pending(kb)? {
        if let Some(id) = knowledge_id(pr.payload.get("metadata")) {
            let text = pr
                .payload
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            pending.insert(id, text.to_string());
        }
    }
    // Borrowed: a fact must not copy its whole file.
    let bytes_of = |file: &str| -> Option<&[u8]> {
        if file == "index.json" {
            return dir.index.as_ref().map(|(b, _)| b.as_slice());
        }
        dir.files
            .iter()
            .find(|f| f.path == file)
            .map(|f| f.bytes.as_slice())
    };
    for f in &facts {
        let (Some(kid), Some(text)) = (f.id(), f.text()) else {
            continue;
        };
        if bad_ids.contains(&kid) || bad_files.contains(&f.file.as_str()) {
            out.skipped.push(kid.to_string());
            continue;
        }
        let text = text.trim();
        let mut fact = ImportedFact {
            knowledge_id: kid.into(),
            outcome: String::new(),
            proposal_id: None,
            claim_id: None,
            replaces: None,
            reason: None,
        };
        if let Some((claim, said)) = approved.get(kid) {
            if said == text {
                fact.outcome = "unchanged".into();
                fact.claim_id = Some(claim.clone());
                out.facts.push(fact);
                continue;
            }
            fact.replaces = Some(claim.clone());
        }
        if pending.get(kid).is_some_and(|t| t == text) {
            fact.outcome = "pending".into();
            out.facts.push(fact);
            continue;
        }
        let Some(bytes) = bytes_of(&f.file) else {
            continue;
        };
        // The file's own bytes are the source; the fact is the span of
        // them that states it.
        let source_id = match out.sources.get(&f.file) {
            Some(id) => id.clone(),
            None => {
                let id = if p.dry_run {
                    crate::ids::sha256_hex(bytes)
                } else {
                    let content = String::from_utf8(bytes.to_vec())
                        .map_err(|_| Error::invalid(format!("{}: not UTF-8 text", f.file)))?;
                    crate::sources::register_source(
                        kb,
                        caller,
                        RegisterSourceParams {
                            content,
                            locator: format!("knowledge/{}", f.file),
                            title: Some(f.file.clone()),
                            source_type: None,
                            media_type: Some("application/yaml".into()),
                            tags: vec!["knowledge-file".into()],
                        },
                    )?
                    .id
                };
                out.sources.insert(f.file.clone(), id.clone());
                id
            }
        };
        if crate::sources::locate_in(bytes, text).is_none() {
            fact.outcome = "refused".into();
            fact.reason = Some(format!(
                "its text does not occur in {} as written (escapes or line breaks inside the \
                 quoted text?); write it on one line without escapes",
                f.file
            ));
            out.facts.push(fact);
            continue;
        }
        let category = f.str_field("category").unwrap_or("fact");
        let domain = f.str_field("domain").unwrap_or("global");
        let (claim_type, extra_tag) = claim_type(category);
        let mut tags = crate::params::string_list(f.fields.get("tags"));
        tags.push(domain.to_string());
        if let Some(t) = extra_tag {
            tags.push(t.to_string());
        }
        tags.sort();
        tags.dedup();
        let mut knowledge = serde_json::Map::new();
        knowledge.insert("id".into(), json!(kid));
        knowledge.insert("file".into(), json!(f.file));
        for k in [
            "domain",
            "category",
            "source_count",
            "first_seen",
            "last_confirmed",
            "expires",
            "related",
        ] {
            if let Some(v) = f.fields.get(k) {
                knowledge.insert(k.into(), v.clone());
            }
        }
        if let Some(old) = &fact.replaces {
            knowledge.insert("replaces".into(), json!(old));
        }
        // A dry run cannot cite a file it did not register: the text was
        // found in it, which is what the real run checks first.
        if p.dry_run && !matches!(kb.load_source(&source_id), Ok(Some(_))) {
            fact.outcome = "would propose".into();
            out.facts.push(fact);
            continue;
        }
        let r = crate::review::gate::propose_claim(
            kb,
            caller,
            ProposeClaimParams {
                text: text.to_string(),
                evidence: vec![Citation::Span {
                    source_id,
                    quote: text.to_string(),
                }],
                claim_type: Some(claim_type),
                confidence: f.fields.get("confidence").and_then(Value::as_f64),
                entities: Vec::new(),
                scope: Some(scope_of(&f.file)),
                tags,
                metadata: Some(
                    [("knowledge".to_string(), Value::Object(knowledge))]
                        .into_iter()
                        .collect(),
                ),
                session_id: None,
                rationale: Some(format!("imported from knowledge file {} ({kid})", f.file)),
                dry_run: p.dry_run,
            },
        )?;
        if !r.valid {
            fact.outcome = "refused".into();
            fact.reason = Some(r.errors.join("; "));
        } else {
            fact.outcome = match (p.dry_run, fact.replaces.is_some()) {
                (true, _) => "would propose",
                (false, true) => "changed",
                (false, false) => "proposed",
            }
            .into();
            fact.proposal_id = (!r.proposal_id.is_empty()).then(|| r.proposal_id.clone());
            fact.claim_id = r.object.get("claim_id").cloned();
        }
        out.facts.push(fact);
    }
    if !p.dry_run {
        let count = |o: &str| out.facts.iter().filter(|f| f.outcome == o).count();
        let _lock = kb.lock()?;
        let mut ev = kb.event(
            "knowledge.import",
            &caller.actor,
            Vec::new(),
            json!({
                "path": p.path,
                "proposed": count("proposed") + count("changed"),
                "unchanged": count("unchanged"),
                "pending": count("pending"),
                "refused": count("refused"),
                "skipped": out.skipped.len(),
            }),
        );
        kb.append_audit(std::slice::from_mut(&mut ev))?;
    }
    Ok(out)
}
