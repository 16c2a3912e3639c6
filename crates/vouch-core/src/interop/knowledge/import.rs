//! `kb.knowledge_import`: every fact becomes a claim proposal citing the
//! span of its file that states it. The files are registered as sources
//! (content-addressed), so each imported claim can be verified against the
//! bytes it came from; the gate holds on every transport.

use super::parse::Fact;
use super::parse::KnowledgeDir;
use super::{Problem, read, report};
use crate::error::{Error, Result};
use crate::kb::{Caller, Kb};
use crate::model::{Claim, ClaimType, Proposal, ProposalKind, Relation, RelationType, Scope};
use crate::params::{Citation, ProposeClaimParams, ProposeRelationParams, RegisterSourceParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Params of `kb.knowledge_import`.
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

/// One `related` entry of a fact (`from` lists `to`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportedRelation {
    pub from: String,
    pub to: String,
    /// `proposed` (with `reason` when a fact at either end is still a
    /// proposal: approve the relation after it, or together), `would
    /// propose`, `exists` (an approved relation says it), `pending` (already
    /// proposed), `waiting` (a fact at either end has no claim: it was
    /// refused or skipped), `refused`.
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `kb.knowledge_import` returns.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportResult {
    /// False when validation found errors and nothing was imported.
    pub ok: bool,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
    /// What became of each fact not skipped.
    pub facts: Vec<ImportedFact>,
    /// Facts left out for errors (with `skip_invalid`).
    pub skipped: Vec<String>,
    /// `related` between facts, as `references` relation proposals.
    pub relations: Vec<ImportedRelation>,
    /// Sources registered for the files.
    pub sources: BTreeMap<String, String>,
    /// Every problem the validation found (as `kb.knowledge_validate`).
    pub problems: Vec<Problem>,
}

/// A knowledge-file category → claim type (and an extra tag).
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

/// The source a knowledge file's bytes are registered as (once per run;
/// a dry run only computes the id).
fn source_for(
    kb: &Kb,
    caller: &Caller,
    p: &ImportParams,
    sources: &mut BTreeMap<String, String>,
    file: &str,
    bytes: &[u8],
) -> Result<String> {
    if let Some(id) = sources.get(file) {
        return Ok(id.clone());
    }
    let id = if p.dry_run {
        crate::ids::sha256_hex(bytes)
    } else {
        let content = String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::invalid(format!("{file}: not UTF-8 text")))?;
        crate::sources::register_source(
            kb,
            caller,
            RegisterSourceParams {
                content,
                locator: format!("knowledge/{file}"),
                title: Some(file.to_string()),
                source_type: None,
                media_type: Some("application/yaml".into()),
                tags: vec!["knowledge-file".into()],
                secrets: Default::default(),
            },
        )?
        .id
    };
    sources.insert(file.to_string(), id.clone());
    Ok(id)
}

/// `kb.knowledge_import`: propose each fact of a knowledge folder as a claim
/// citing the span of its file that states it.
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
        relations: Vec::new(),
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
    let queue = crate::review::gate::list_pending(kb)?;
    let mut pending: HashMap<String, String> = HashMap::new();
    // The claim each pending fact's proposal would create.
    let mut pending_claims: HashMap<String, String> = HashMap::new();
    for pr in &queue {
        if let Some(id) = knowledge_id(pr.payload.get("metadata")) {
            if pr.kind == ProposalKind::Claim {
                pending_claims.insert(id.clone(), pr.object_id.clone());
            }
            let text = pr
                .payload
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            pending.insert(id, text.to_string());
        }
    }
    let mut to_propose: Vec<(usize, ProposeClaimParams)> = Vec::new();
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
        let Some(bytes) = dir.bytes_of(&f.file) else {
            continue;
        };
        let source_id = source_for(kb, caller, &p, &mut out.sources, &f.file, bytes)?;
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
        // A dry run cannot cite a file it did not register: the text was
        // found in it, which is what the real run checks first.
        if p.dry_run && !matches!(kb.load_source(&source_id), Ok(Some(_))) {
            fact.outcome = "would propose".into();
            out.facts.push(fact);
            continue;
        }
        to_propose.push((
            out.facts.len(),
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
                // Approving the changed fact retires what it said before.
                supersedes: fact.replaces.iter().cloned().collect(),
                session_id: None,
                rationale: Some(format!("imported from knowledge file {} ({kid})", f.file)),
                dry_run: p.dry_run,
                secrets: Default::default(),
            },
        ));
        out.facts.push(fact);
    }
    // Every fact to propose in one pass: one lock, one journaled batch,
    // one audit append (10,000 facts took minutes one by one).
    let (at, params): (Vec<usize>, Vec<ProposeClaimParams>) = to_propose.into_iter().unzip();
    for (i, r) in at
        .into_iter()
        .zip(crate::review::gate::propose_claims(kb, caller, params)?)
    {
        let fact = &mut out.facts[i];
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
    }
    // Each fact's claim: approved as written (`unchanged`), or one its
    // proposal would create (approved: false).
    let ends: HashMap<String, End> = out
        .facts
        .iter()
        .filter_map(|f| {
            let approved = f.outcome == "unchanged";
            let claim = match f.outcome.as_str() {
                "pending" => pending_claims.get(&f.knowledge_id).cloned(),
                "refused" => None,
                _ => f.claim_id.clone(),
            }?;
            Some((f.knowledge_id.clone(), End { claim, approved }))
        })
        .collect();
    let run = Run {
        kb,
        caller,
        p: &p,
        dir: &dir,
    };
    out.relations = related(&run, &facts, &ends, &queue, &mut out)?;
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
                "relations_proposed": out
                    .relations
                    .iter()
                    .filter(|r| r.outcome == "proposed")
                    .count(),
            }),
        );
        kb.append_audit(std::slice::from_mut(&mut ev))?;
    }
    Ok(out)
}

/// What one import works with.
struct Run<'a> {
    kb: &'a Kb,
    caller: &'a Caller,
    p: &'a ImportParams,
    dir: &'a KnowledgeDir,
}

/// A fact's claim, as a relation's end.
struct End {
    claim: String,
    /// Approved as written; else a pending proposal would create it.
    approved: bool,
}

/// `related` → `references` relation proposals between the claims of two
/// facts, citing the file that lists them, in the same import as the facts:
/// a relation joins reviewed knowledge only, so one whose ends are still
/// proposals is approved after them or together with them (it says so in
/// `reason`); approving it alone first is refused, naming them. An end
/// with no claim (its fact refused or skipped) leaves it `waiting`.
fn related(
    run: &Run,
    facts: &[Fact],
    ends: &HashMap<String, End>,
    queue: &[Proposal],
    out: &mut ImportResult,
) -> Result<Vec<ImportedRelation>> {
    let (kb, p) = (run.kb, run.p);
    let edge = |source: &str, target: &str| (source.to_string(), target.to_string());
    let mut existing: HashSet<(String, String)> = HashSet::new();
    for r in kb.load_all::<Relation>()? {
        // Export writes both as `related`.
        if matches!(
            r.relation,
            RelationType::References | RelationType::RelatesTo
        ) {
            existing.insert(edge(&r.source, &r.target));
        }
    }
    let mut pending: HashSet<(String, String)> = HashSet::new();
    for pr in queue {
        let field = |k: &str| pr.payload.get(k).and_then(Value::as_str).unwrap_or("");
        if pr.kind == ProposalKind::Relation
            && [RelationType::References, RelationType::RelatesTo]
                .iter()
                .any(|t| field("relation") == t.as_str())
        {
            pending.insert(edge(field("source"), field("target")));
        }
    }
    let mut relations = Vec::new();
    let mut seen = HashSet::new();
    for f in facts {
        let Some(from) = f.id() else { continue };
        if out.skipped.iter().any(|s| s == from) {
            continue;
        }
        for to in crate::params::string_list(f.fields.get("related")) {
            if !seen.insert((from.to_string(), to.clone())) {
                continue;
            }
            let mut rel = ImportedRelation {
                from: from.to_string(),
                to: to.clone(),
                outcome: String::new(),
                proposal_id: None,
                reason: None,
            };
            let (Some(source), Some(target)) = (ends.get(from), ends.get(&to)) else {
                let missing: Vec<&str> = [from, to.as_str()]
                    .into_iter()
                    .filter(|k| !ends.contains_key(*k))
                    .collect();
                rel.outcome = "waiting".into();
                rel.reason = Some(format!(
                    "{} has no claim (refused or skipped: see its outcome); fix it and import \
                     again",
                    missing.join(" and ")
                ));
                relations.push(rel);
                continue;
            };
            let awaiting: HashSet<String> = [source, target]
                .into_iter()
                .filter(|e| !e.approved)
                .map(|e| e.claim.clone())
                .collect();
            let (source, target) = (&source.claim, &target.claim);
            let key = edge(source, target);
            if existing.contains(&key) || pending.contains(&key) {
                rel.outcome = if existing.contains(&key) {
                    "exists"
                } else {
                    "pending"
                }
                .into();
                relations.push(rel);
                continue;
            }
            let Some(bytes) = run.dir.bytes_of(&f.file) else {
                continue;
            };
            let source_id = source_for(kb, run.caller, p, &mut out.sources, &f.file, bytes)?;
            if p.dry_run && !matches!(kb.load_source(&source_id), Ok(Some(_))) {
                rel.outcome = "would propose".into();
                relations.push(rel);
                continue;
            }
            let r = crate::review::gate::propose_relation_awaiting(
                kb,
                run.caller,
                ProposeRelationParams {
                    source: source.clone(),
                    relation: RelationType::References,
                    target: target.clone(),
                    confidence: None,
                    evidence: vec![Citation::Id(source_id)],
                    session_id: None,
                    rationale: Some(format!(
                        "{from} lists {to} as related in knowledge file {}",
                        f.file
                    )),
                    dry_run: p.dry_run,
                    secrets: Default::default(),
                },
                awaiting.clone(),
            )?;
            if !r.valid {
                rel.outcome = "refused".into();
                rel.reason = Some(r.errors.join("; "));
            } else {
                rel.outcome = if p.dry_run {
                    "would propose"
                } else {
                    "proposed"
                }
                .into();
                rel.proposal_id = (!r.proposal_id.is_empty()).then(|| r.proposal_id.clone());
                if !awaiting.is_empty() {
                    let mut names: Vec<&String> = awaiting.iter().collect();
                    names.sort();
                    rel.reason = Some(format!(
                        "approve it after the claim(s) {names:?} it joins, or together with them"
                    ));
                }
                pending.insert(key);
            }
            relations.push(rel);
        }
    }
    Ok(relations)
}
