//! The review gate (protocol §3, §4): the only path from `proposed/` to durable
//! knowledge. Validation runs at propose time and again at approve time.
//!
//! Approve writes in the order protocol §10 fixes — audit event, durable
//! file, `decided/` file, unlink from `proposed/` — each atomically. A crash
//! between steps is finished by the next approve of the same proposal: the
//! audit event is the commit record, found by walking the log back to the
//! proposal's own `proposal.create` event.

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{check_id, is_source_id, slugify};
use crate::kb::{Caller, Kb};
use crate::model::*;
use crate::params::*;
use crate::store::{Dir, atomic};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

// ----- drafts: the normalized payload a proposal carries ---------------------

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClaimDraft {
    pub text: String,
    #[serde(rename = "type")]
    pub claim_type: ClaimType,
    pub confidence: f64,
    pub evidence: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// Approved claims this one replaces: approving it supersedes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageDraft {
    pub title: String,
    #[serde(default)]
    pub body: String,
    #[serde(rename = "type")]
    pub page_type: PageType,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EntityDraft {
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelationDraft {
    pub source: String,
    pub relation: RelationType,
    pub target: String,
    pub confidence: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// Any draft, by kind.
#[derive(Debug, Clone)]
pub enum Draft {
    Claim(ClaimDraft),
    Page(PageDraft),
    Entity(EntityDraft),
    Relation(RelationDraft),
}

impl Draft {
    pub fn kind(&self) -> ProposalKind {
        match self {
            Draft::Claim(_) => ProposalKind::Claim,
            Draft::Page(_) => ProposalKind::Page,
            Draft::Entity(_) => ProposalKind::Entity,
            Draft::Relation(_) => ProposalKind::Relation,
        }
    }
    fn slug_seed(&self) -> String {
        match self {
            Draft::Claim(d) => d.text.clone(),
            Draft::Page(d) => d.title.clone(),
            Draft::Entity(d) => d.name.clone(),
            Draft::Relation(d) => format!("{} {} {}", d.source, d.relation, d.target),
        }
    }
    fn to_payload(&self) -> Result<Value> {
        let v = match self {
            Draft::Claim(d) => serde_json::to_value(d),
            Draft::Page(d) => serde_json::to_value(d),
            Draft::Entity(d) => serde_json::to_value(d),
            Draft::Relation(d) => serde_json::to_value(d),
        };
        v.map_err(|e| Error::internal(format!("payload encoding: {e}")))
    }
    /// The payload a proposal file carries: the draft, plus the object's
    /// id at `id`, where vouch 1.x reads it (it builds the object from the
    /// payload). The fingerprint covers the draft; approval uses
    /// `object_id`.
    fn stored_payload(&self, object_id: &str) -> Result<Value> {
        let mut v = self.to_payload()?;
        if let Value::Object(m) = &mut v {
            m.insert("id".into(), json!(object_id));
        }
        Ok(v)
    }
    fn from_proposal(p: &Proposal) -> Result<Draft> {
        let bad = |e: serde_json::Error| {
            Error::new(
                ErrorKind::Corrupt,
                format!("proposal {} has an unreadable payload: {e}", p.id),
            )
        };
        let payload = p.payload.clone();
        Ok(match p.kind {
            ProposalKind::Claim => Draft::Claim(serde_json::from_value(payload).map_err(bad)?),
            ProposalKind::Page => Draft::Page(serde_json::from_value(payload).map_err(bad)?),
            ProposalKind::Entity => Draft::Entity(serde_json::from_value(payload).map_err(bad)?),
            ProposalKind::Relation => {
                Draft::Relation(serde_json::from_value(payload).map_err(bad)?)
            }
            ProposalKind::Lifecycle => {
                return Err(Error::internal(format!(
                    "proposal {} is a lifecycle change, not a draft",
                    p.id
                )));
            }
            ProposalKind::Delete => {
                return Err(Error::invalid(format!(
                    "proposal {} asks vouch 1.x to delete {}; this vouch does not delete \
                     reviewed knowledge (archive or supersede it instead): reject it here, or \
                     decide it with vouch 1.x",
                    p.id, p.object_id
                )));
            }
        })
    }
}

fn object_dir(kind: ProposalKind) -> Dir {
    match kind {
        ProposalKind::Claim => Dir::Claims,
        ProposalKind::Page => Dir::Pages,
        ProposalKind::Entity => Dir::Entities,
        ProposalKind::Relation => Dir::Relations,
        // Lifecycle (and 1.x delete) proposals change existing objects;
        // they reserve no new id.
        ProposalKind::Lifecycle | ProposalKind::Delete => Dir::Claims,
    }
}

fn object_key(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Claim => "claim_id",
        ProposalKind::Page => "page_id",
        ProposalKind::Entity => "entity_id",
        ProposalKind::Relation => "relation_id",
        ProposalKind::Lifecycle | ProposalKind::Delete => "object_id",
    }
}

// ----- validation (§3) --------------------------------------------------------

/// Collects every problem so an agent can fix them in one go.
struct Problems(Vec<String>);

impl Problems {
    fn push(&mut self, msg: impl Into<String>) {
        self.0.push(msg.into());
    }
}

fn check_confidence(p: &mut Problems, c: f64) {
    if !c.is_finite() || !(0.0..=1.0).contains(&c) {
        p.push(format!("confidence: {c} is not a number between 0 and 1"));
    }
}

fn check_refs(kb: &Kb, p: &mut Problems, field: &str, dir: Dir, ids: &[String]) {
    for (i, id) in ids.iter().enumerate() {
        if let Some(why) = crate::rules::reference_problem(kb, dir, id) {
            p.push(format!("{field}[{i}]: {why}"));
        }
    }
}

/// Check one citation: an existing source, an existing evidence, or a quote
/// that occurs in an existing source's content.
fn check_citation(kb: &Kb, p: &mut Problems, field: &str, c: &Citation) {
    match c {
        Citation::Id(id) => {
            if let Some(why) = crate::rules::citation_problem(kb, id) {
                p.push(format!("{field}: {why}"));
            }
        }
        Citation::Span { source_id, quote } => {
            if let Err(e) = crate::sources::locate_quote(kb, source_id, quote) {
                p.push(format!("{field}: {e}"));
            }
        }
    }
}

fn check_session(kb: &Kb, p: &mut Problems, session_id: &Option<String>) {
    if let Some(sid) = session_id {
        match check_id("session id", sid).and_then(|_| kb.load::<Session>(sid)) {
            Err(e) => p.push(format!("session_id: {e}")),
            Ok(None) => p.push(format!("session_id: session {sid:?} does not exist")),
            Ok(Some(s)) if s.status == SessionStatus::Ended => {
                p.push(format!("session_id: session {sid} has ended"))
            }
            Ok(Some(_)) => {}
        }
    }
}

fn check_text(p: &mut Problems, field: &str, text: &str) {
    if text.trim().is_empty() {
        p.push(format!("{field}: must not be empty or whitespace"));
    }
    check_controls(p, field, text);
}

/// The first control character in `text` that a reviewer's terminal could
/// act on (C0 other than newline and tab, DEL, C1): `ESC[8m` hides the
/// rest of a line, `\r` overwrites it. None belongs in prose.
/// A `\r` before a newline (a file saved on Windows) moves nothing.
pub fn control_char(text: &str) -> Option<(usize, char)> {
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let crlf = c == '\r' && chars.peek().is_some_and(|(_, n)| *n == '\n');
        if c.is_control() && c != '\n' && c != '\t' && !crlf {
            return Some((at, c));
        }
    }
    None
}

fn check_controls(p: &mut Problems, field: &str, text: &str) {
    if let Some((at, c)) = control_char(text) {
        p.push(format!(
            "{field}: contains the control character U+{:04X} at byte {at}; control \
             characters other than newline and tab could hide text from the reviewer, so \
             remove it",
            c as u32
        ));
    }
}

fn check_all_controls<'a>(
    p: &mut Problems,
    field: &str,
    texts: impl IntoIterator<Item = &'a String>,
) {
    for (i, t) in texts.into_iter().enumerate() {
        check_controls(p, &format!("{field}[{i}]"), t);
    }
}

/// Validate a draft against the KB as it is now. Runs at propose and approve.
/// `supersedes`: each an existing claim that nothing else supersedes yet.
/// `object_id` is the claim being approved: an interrupted approval of it
/// may already have marked the old claim superseded by it.
fn check_supersedes(kb: &Kb, p: &mut Problems, ids: &[String], object_id: Option<&str>) {
    for (i, id) in ids.iter().enumerate() {
        if let Err(e) = check_id("supersedes", id) {
            p.push(format!("supersedes[{i}]: {e}"));
            continue;
        }
        if ids[..i].contains(id) {
            p.push(format!("supersedes[{i}]: claim {id} is listed twice"));
            continue;
        }
        match kb.load::<Claim>(id) {
            Ok(Some(c)) => {
                if let Some(why) = crate::rules::supersede_problem(&c, object_id) {
                    p.push(format!("supersedes[{i}]: {why}"));
                }
            }
            Ok(None) => p.push(format!("supersedes[{i}]: claim {id} does not exist")),
            Err(e) => p.push(format!("supersedes[{i}]: claim {id} is unreadable: {e}")),
        }
    }
}

fn validate(
    kb: &Kb,
    draft: &Draft,
    citations: Option<&[Citation]>,
    object_id: Option<&str>,
) -> Vec<String> {
    let mut p = Problems(Vec::new());
    match draft {
        Draft::Claim(d) => {
            check_supersedes(kb, &mut p, &d.supersedes, object_id);
            check_text(&mut p, "text", &d.text);
            check_all_controls(&mut p, "tags", &d.tags);
            let cites: Vec<Citation> = match citations {
                Some(c) => c.to_vec(),
                None => d.evidence.iter().cloned().map(Citation::Id).collect(),
            };
            if cites.is_empty() && kb.settings().review.require_citations {
                p.push(
                    "evidence: a claim must cite at least one source or evidence id \
                     (register a source first with kb.register_source)",
                );
            }
            for (i, c) in cites.iter().enumerate() {
                check_citation(kb, &mut p, &format!("evidence[{i}]"), c);
            }
            check_confidence(&mut p, d.confidence);
            check_refs(kb, &mut p, "entities", Dir::Entities, &d.entities);
        }
        Draft::Page(d) => {
            check_text(&mut p, "title", &d.title);
            check_controls(&mut p, "body", &d.body);
            check_all_controls(&mut p, "tags", &d.tags);
            check_refs(kb, &mut p, "claims", Dir::Claims, &d.claims);
            check_refs(kb, &mut p, "entities", Dir::Entities, &d.entities);
            for (i, s) in d.sources.iter().enumerate() {
                if !is_source_id(s) {
                    p.push(format!("sources[{i}]: {s:?} is not a source id"));
                } else if !kb.source_exists(s) {
                    p.push(format!("sources[{i}]: source {s} is not registered"));
                }
            }
        }
        Draft::Entity(d) => {
            check_text(&mut p, "name", &d.name);
            check_all_controls(&mut p, "aliases", &d.aliases);
            check_all_controls(&mut p, "tags", &d.tags);
            if let Some(desc) = &d.description {
                check_controls(&mut p, "description", desc);
            }
        }
        Draft::Relation(d) => {
            for (field, id) in [("source", &d.source), ("target", &d.target)] {
                if let Some(why) = crate::rules::endpoint_problem(kb, id) {
                    p.push(format!("{field}: {why}"));
                }
            }
            check_confidence(&mut p, d.confidence);
            let cites: Vec<Citation> = match citations {
                Some(c) => c.to_vec(),
                None => d.evidence.iter().cloned().map(Citation::Id).collect(),
            };
            for (i, c) in cites.iter().enumerate() {
                check_citation(kb, &mut p, &format!("evidence[{i}]"), c);
            }
        }
    }
    p.0
}

// ----- propose ------------------------------------------------------------------

struct ProposeInput {
    draft: Draft,
    /// Citations as given (spans not yet minted), for claims and relations.
    citations: Vec<Citation>,
    session_id: Option<String>,
    rationale: Option<String>,
    dry_run: bool,
}

fn ids_only(cites: &[Citation]) -> Vec<String> {
    cites
        .iter()
        .map(|c| match c {
            Citation::Id(id) => id.clone(),
            Citation::Span { source_id, .. } => source_id.clone(),
        })
        .collect()
}

pub fn propose_claim(kb: &Kb, caller: &Caller, p: ProposeClaimParams) -> Result<ProposeResult> {
    let text = p.text.trim().to_string();
    let mut result = propose_claim_draft(kb, caller, p)?;
    if result.valid {
        result.meta.possible_duplicates = crate::retrieval::semantic::near_duplicates(kb, &text);
    }
    Ok(result)
}

fn propose_claim_draft(kb: &Kb, caller: &Caller, p: ProposeClaimParams) -> Result<ProposeResult> {
    let draft = Draft::Claim(ClaimDraft {
        text: p.text.trim().to_string(),
        claim_type: p.claim_type.unwrap_or(ClaimType::Observation),
        confidence: p.confidence.unwrap_or(0.7),
        evidence: ids_only(&p.evidence),
        entities: p.entities,
        scope: p.scope.map(|s| Value::String(s.as_str().into())),
        tags: p.tags,
        metadata: p.metadata,
        supersedes: p.supersedes,
    });
    propose(
        kb,
        caller,
        ProposeInput {
            draft,
            citations: p.evidence,
            session_id: p.session_id,
            rationale: p.rationale,
            dry_run: p.dry_run,
        },
    )
}

pub fn propose_page(kb: &Kb, caller: &Caller, p: ProposePageParams) -> Result<ProposeResult> {
    let draft = Draft::Page(PageDraft {
        title: p.title.trim().to_string(),
        body: p.body.unwrap_or_default(),
        page_type: p.page_type.unwrap_or(PageType::Concept),
        claims: p.claims,
        entities: p.entities,
        sources: p.sources,
        tags: p.tags,
    });
    propose(
        kb,
        caller,
        ProposeInput {
            draft,
            citations: Vec::new(),
            session_id: p.session_id,
            rationale: p.rationale,
            dry_run: p.dry_run,
        },
    )
}

pub fn propose_entity(kb: &Kb, caller: &Caller, p: ProposeEntityParams) -> Result<ProposeResult> {
    let draft = Draft::Entity(EntityDraft {
        name: p.name.trim().to_string(),
        entity_type: p.entity_type,
        aliases: p.aliases,
        description: p.description,
        tags: p.tags,
    });
    propose(
        kb,
        caller,
        ProposeInput {
            draft,
            citations: Vec::new(),
            session_id: p.session_id,
            rationale: p.rationale,
            dry_run: p.dry_run,
        },
    )
}

pub fn propose_relation(
    kb: &Kb,
    caller: &Caller,
    p: ProposeRelationParams,
) -> Result<ProposeResult> {
    let draft = Draft::Relation(RelationDraft {
        source: p.source,
        relation: p.relation,
        target: p.target,
        confidence: p.confidence.unwrap_or(0.7),
        evidence: ids_only(&p.evidence),
    });
    propose(
        kb,
        caller,
        ProposeInput {
            draft,
            citations: p.evidence,
            session_id: p.session_id,
            rationale: p.rationale,
            dry_run: p.dry_run,
        },
    )
}

fn check_actor(actor: &str) -> Result<()> {
    if actor.trim().is_empty() {
        return Err(Error::invalid(
            "no actor: set VOUCH_AGENT, pass --agent, or set `agent` in config.yaml",
        ));
    }
    Ok(())
}

fn propose(kb: &Kb, caller: &Caller, mut input: ProposeInput) -> Result<ProposeResult> {
    check_actor(&caller.actor)?;
    let kind = input.draft.kind();
    let key = object_key(kind).to_string();
    let mut errors = validate(kb, &input.draft, Some(&input.citations), None);
    {
        let mut p = Problems(Vec::new());
        check_session(kb, &mut p, &input.session_id);
        if let Some(r) = &input.rationale {
            check_controls(&mut p, "rationale", r);
        }
        errors.extend(p.0);
    }
    let result =
        |proposal_id: String, object_id: String, errors: Vec<String>, dry_run| ProposeResult {
            proposal_id,
            object: BTreeMap::from([(key.clone(), object_id)]),
            valid: errors.is_empty(),
            errors,
            dry_run,
            meta: ReadMeta::default(),
        };
    if !errors.is_empty() {
        return Ok(result(String::new(), String::new(), errors, input.dry_run));
    }
    let _lock = kb.lock()?;
    let object_id = unique_object_id(kb, kind, &input.draft.slug_seed())?;
    if input.dry_run {
        return Ok(result(String::new(), object_id, Vec::new(), true));
    }
    // Mint evidence for quoted spans (ungated: evidence is harmless and
    // content-addressed), then refer to it by id.
    if input
        .citations
        .iter()
        .any(|c| matches!(c, Citation::Span { .. }))
    {
        let mut ids = Vec::new();
        for c in &input.citations {
            ids.push(match c {
                Citation::Id(id) => id.clone(),
                Citation::Span { source_id, quote } => {
                    crate::sources::mint_evidence_locked(kb, caller, source_id, quote)?.evidence_id
                }
            });
        }
        match &mut input.draft {
            Draft::Claim(d) => d.evidence = ids,
            Draft::Relation(d) => d.evidence = ids,
            _ => {}
        }
    }
    let now = kb.now();
    let proposal_id = new_proposal_id(kb, &now)?;
    let proposal = Proposal {
        id: proposal_id.clone(),
        kind,
        status: ProposalStatus::Pending,
        object_id: object_id.clone(),
        proposed_by: caller.actor.clone(),
        created_at: now,
        session_id: input.session_id.clone(),
        rationale: input.rationale.clone(),
        payload: input.draft.stored_payload(&object_id)?,
        decided_by: None,
        decided_at: None,
        reason: None,
        decision_hash: None,
        extra: Default::default(),
    };
    let mut ev = kb.event(
        "proposal.create",
        &caller.actor,
        vec![proposal_id.clone(), object_id.clone()],
        json!({"kind": kind.as_str(), FINGERPRINT_KEY: proposal_fingerprint(&proposal)?}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    let path = kb.layout().file(Dir::Proposed, &proposal_id)?;
    if !atomic::create_new(
        kb.layout().root(),
        &path,
        crate::store::yaml::to_yaml(&proposal)?.as_bytes(),
    )? {
        return Err(Error::internal(format!(
            "proposal id {proposal_id} collided; retry"
        )));
    }
    if let Some(sid) = &input.session_id
        && let Some(mut s) = kb.load::<Session>(sid)?
    {
        s.proposals.push(proposal_id.clone());
        kb.store(&s)?;
    }
    Ok(result(proposal_id, object_id, Vec::new(), false))
}

/// `YYYYMMDD-HHMMSS-<8 hex>`, unique across `proposed/` and `decided/`.
fn new_proposal_id(kb: &Kb, now: &Timestamp) -> Result<String> {
    new_proposal_id_except(kb, now, &HashSet::new())
}

/// As [`new_proposal_id`], also avoiding ids minted earlier in one batch.
fn new_proposal_id_except(kb: &Kb, now: &Timestamp, taken: &HashSet<String>) -> Result<String> {
    for _ in 0..64 {
        let id = format!(
            "{}-{}",
            now.0.format("%Y%m%d-%H%M%S"),
            crate::clock::random_hex(kb.clock(), 8)
        );
        if !taken.contains(&id) && !kb.exists(Dir::Proposed, &id) && !kb.exists(Dir::Decided, &id) {
            return Ok(id);
        }
    }
    Err(Error::internal("could not mint a unique proposal id"))
}

/// The change a lifecycle proposal carries.
fn lifecycle_change(p: &Proposal) -> Result<crate::review::lifecycle::Change> {
    serde_json::from_value(p.payload.clone()).map_err(|e| {
        Error::new(
            ErrorKind::Corrupt,
            format!("proposal {} has an unreadable lifecycle change: {e}", p.id),
        )
    })
}

/// Under `review.gate_lifecycle`, an agent's lifecycle call becomes a
/// pending proposal (kind `lifecycle`) that a person approves like any
/// other; approving it applies the change. Returns the proposal id.
pub(crate) fn propose_lifecycle(
    kb: &Kb,
    caller: &Caller,
    change: &crate::review::lifecycle::Change,
) -> Result<String> {
    check_actor(&caller.actor)?;
    let subject = change.subject().to_string();
    check_id("id", &subject)?;
    let known = kb.exists(Dir::Claims, &subject)
        || kb.exists(Dir::Pages, &subject)
        || matches!(change, crate::review::lifecycle::Change::Revert(_));
    if !known {
        return Err(Error::not_found(format!(
            "no claim or page {subject:?} to change"
        )));
    }
    let payload = serde_json::to_value(change)
        .map_err(|e| Error::internal(format!("payload encoding: {e}")))?;
    // A reason is shown to the reviewer like proposed text.
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(o) => o.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    strings(&payload, &mut texts);
    let mut problems = Problems(Vec::new());
    check_all_controls(&mut problems, "params", &texts);
    if !problems.0.is_empty() {
        return Err(Error::invalid(problems.0.join("; ")));
    }
    let _lock = kb.lock()?;
    let now = kb.now();
    let id = new_proposal_id(kb, &now)?;
    let proposal = Proposal {
        id: id.clone(),
        kind: ProposalKind::Lifecycle,
        status: ProposalStatus::Pending,
        object_id: subject.clone(),
        proposed_by: caller.actor.clone(),
        created_at: now,
        session_id: None,
        rationale: None,
        payload,
        decided_by: None,
        decided_at: None,
        reason: None,
        decision_hash: None,
        extra: Default::default(),
    };
    let mut ev = kb.event(
        "proposal.create",
        &caller.actor,
        vec![id.clone(), subject],
        json!({"kind": ProposalKind::Lifecycle.as_str(),
               FINGERPRINT_KEY: proposal_fingerprint(&proposal)?}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    let path = kb.layout().file(Dir::Proposed, &id)?;
    if !atomic::create_new(
        kb.layout().root(),
        &path,
        crate::store::yaml::to_yaml(&proposal)?.as_bytes(),
    )? {
        return Err(Error::internal(format!("proposal id {id} collided; retry")));
    }
    Ok(id)
}

/// The lifecycle event that carried out (and so decided) a lifecycle
/// proposal, if one did.
fn lifecycle_decision(kb: &Kb, proposal_id: &str) -> Result<Option<Value>> {
    Ok(kb.audit_log().read_all()?.into_iter().rev().find(|e| {
        e.get("data")
            .and_then(|d| d.get("proposal_id"))
            .and_then(Value::as_str)
            == Some(proposal_id)
    }))
}

/// Approve a lifecycle proposal: apply the change as the approver (its
/// lifecycle event names the proposal and is the decision), then move the
/// proposal to `decided/`. A crash in between is finished by approving
/// again: the event is found by its `proposal_id` and not applied twice.
fn approve_lifecycle(
    kb: &Kb,
    caller: &Caller,
    approver: &str,
    proposal: Proposal,
    reason: Option<String>,
) -> Result<ApproveResult> {
    let applied = lifecycle_decision(kb, &proposal.id)?;
    let (actor, at, hash, recovered) = match applied {
        Some(ev) => (
            ev.get("actor")
                .and_then(Value::as_str)
                .unwrap_or(approver)
                .to_string(),
            ev.get("created_at")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse)
                .unwrap_or_else(|| kb.now()),
            ev.get("hash").and_then(Value::as_str).map(str::to_string),
            true,
        ),
        None => {
            let as_approver = Caller {
                actor: approver.to_string(),
                ..caller.clone()
            };
            lifecycle_change(&proposal)?
                .apply_locked(kb, &as_approver, Some(&proposal.id))
                .map_err(|e| {
                    Error::new(
                        e.kind,
                        format!(
                            "lifecycle proposal {} no longer applies: {}",
                            proposal.id, e.message
                        ),
                    )
                })?;
            let last = kb.audit_log().hash_before(kb.audit_log().len()?)?;
            (approver.to_string(), kb.now(), last, false)
        }
    };
    if recovered && actor == proposal.proposed_by && !kb.settings().self_approval_allowed() {
        return Err(Error::denied(format!(
            "{actor} proposed {} and cannot also approve it",
            proposal.id
        )));
    }
    let mut decided = proposal.clone();
    decided.status = ProposalStatus::Approved;
    decided.decided_by = Some(actor);
    decided.decided_at = Some(at);
    decided.reason = reason;
    decided.decision_hash = hash;
    let mut batch = atomic::Batch::new(kb.layout().root());
    batch.write(
        kb.layout().file(Dir::Decided, &decided.id)?,
        crate::store::yaml::to_yaml(&decided)?.into_bytes(),
    );
    batch.remove(kb.layout().file(Dir::Proposed, &decided.id)?);
    batch.commit()?;
    Ok(ApproveResult {
        ok: true,
        object_id: proposal.object_id.clone(),
        object_kind: ProposalKind::Lifecycle.as_str().to_string(),
        proposal_id: proposal.id,
        recovered,
    })
}

/// A pending proposal for an object that arrived in a bundle over an agent
/// transport: the gate stays on, so it becomes reviewed knowledge only when
/// someone approves it. Caller holds the lock and writes the proposal (with
/// its `proposal.create` event) in its own batch.
pub(crate) fn imported_proposal(
    kb: &Kb,
    caller: &Caller,
    draft: Draft,
    object_id: &str,
    rationale: String,
    taken: &mut HashSet<String>,
) -> Result<(Proposal, AuditEvent)> {
    check_actor(&caller.actor)?;
    let now = kb.now();
    let id = new_proposal_id_except(kb, &now, taken)?;
    taken.insert(id.clone());
    let kind = draft.kind();
    let proposal = Proposal {
        id: id.clone(),
        kind,
        status: ProposalStatus::Pending,
        object_id: object_id.to_string(),
        proposed_by: caller.actor.clone(),
        created_at: now,
        session_id: None,
        rationale: Some(rationale),
        payload: draft.stored_payload(object_id)?,
        decided_by: None,
        decided_at: None,
        reason: None,
        decision_hash: None,
        extra: Default::default(),
    };
    let ev = kb.event(
        "proposal.create",
        &caller.actor,
        vec![id, object_id.to_string()],
        json!({
            "kind": kind.as_str(),
            "via": "bundle.import",
            FINGERPRINT_KEY: proposal_fingerprint(&proposal)?,
        }),
    );
    Ok((proposal, ev))
}

impl Draft {
    /// The draft a durable object would have been approved from.
    pub(crate) fn of_claim(c: &Claim) -> Draft {
        Draft::Claim(ClaimDraft {
            text: c.text.clone(),
            claim_type: c.claim_type,
            confidence: c.confidence,
            evidence: c.evidence.clone(),
            entities: c.entities.clone(),
            scope: c.scope.clone(),
            tags: c.tags.clone(),
            metadata: c.extra.get("metadata").and_then(Value::as_object).cloned(),
            // A bundle's supersessions are checked and applied by the
            // bundle import itself.
            supersedes: Vec::new(),
        })
    }
    pub(crate) fn of_page(p: &Page) -> Draft {
        Draft::Page(PageDraft {
            title: p.title.clone(),
            body: p.body.clone(),
            page_type: p.page_type,
            claims: p.claims.clone(),
            entities: p.entities.clone(),
            sources: p.sources.clone(),
            tags: p.tags.clone(),
        })
    }
    pub(crate) fn of_entity(e: &Entity) -> Draft {
        Draft::Entity(EntityDraft {
            name: e.name.clone(),
            entity_type: e.entity_type,
            aliases: e.aliases.clone(),
            description: e.description.clone(),
            tags: e.tags.clone(),
        })
    }
    pub(crate) fn of_relation(r: &Relation) -> Draft {
        Draft::Relation(RelationDraft {
            source: r.source.clone(),
            relation: r.relation,
            target: r.target.clone(),
            confidence: r.confidence,
            evidence: r.evidence.clone(),
        })
    }
}

/// A slug not taken by a durable artifact or a pending proposal of the same
/// kind: `slug`, `slug-2`, `slug-3`, ... Caller holds the lock.
fn unique_object_id(kb: &Kb, kind: ProposalKind, seed: &str) -> Result<String> {
    let base = slugify(seed);
    let dir = object_dir(kind);
    // Which object ids the queue holds. Each file is read once per process
    // and remembered by its signature: a bulk import of 10,000 facts read
    // the whole queue for every proposal (O(n²)). A file is read by its
    // `kind:` and `object_id:` lines; only one without them (vouch 1.x
    // derives the id from the payload) is parsed whole.
    let mut pending: HashSet<String> = HashSet::new();
    let ids = kb.ids(Dir::Proposed)?;
    let mut cache = kb
        .proposal_objects
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut seen = crate::kb::ProposalObjects::new();
    for id in ids {
        let path = kb.layout().file(Dir::Proposed, &id)?;
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let sig = (crate::retrieval::fts5::mtime_ns(&meta), meta.len() as i64);
        let entry = match cache.remove(&id) {
            Some((s, v)) if s == sig => v,
            _ => read_object(kb, &path),
        };
        if let Some((k, oid)) = &entry
            && *k == kind
            && (*oid == base
                || oid
                    .strip_prefix(base.as_str())
                    .is_some_and(|r| r.starts_with('-')))
        {
            pending.insert(oid.clone());
        }
        seen.insert(id, (sig, entry));
    }
    *cache = seen;
    drop(cache);
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        if !kb.exists(dir, &candidate) && !pending.contains(&candidate) {
            return Ok(candidate);
        }
        n += 1;
    }
}

/// A pending proposal's (kind, object id): from its top-level lines, or by
/// parsing it when they are not there.
fn read_object(kb: &Kb, path: &std::path::Path) -> Option<(ProposalKind, String)> {
    let text = kb.read_text(path).ok().flatten()?;
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
    };
    if let (Some(k), Some(oid)) = (line("kind: "), line("object_id: "))
        && let Some(k) = ProposalKind::parse(&k)
        && !oid.is_empty()
    {
        return Some((k, oid));
    }
    match crate::store::yaml::from_yaml::<Proposal>(path, &text) {
        Ok(p) => Some((p.kind, p.object_id)),
        Err(e) => {
            kb.warn(format!("skipped unreadable file: {e}"));
            None
        }
    }
}

// ----- approve / reject ----------------------------------------------------------

/// Who approves: the caller, as its transport vouches for it. Only a person
/// at the CLI may name someone else with `approver`; on an agent transport
/// (MCP, JSONL, HTTP with or without a token) `approver` must equal the
/// transport's own actor — an identity a caller merely asserts is no
/// identity, and self-approval must hold for the identity the transport knows.
fn resolve_approver(caller: &Caller, param: Option<String>) -> Result<String> {
    let approver = match param {
        Some(a) if a != caller.actor && (caller.authenticated || caller.is_agent()) => {
            return Err(Error::denied(format!(
                "this {} connection acts as {:?}; `approver` cannot name someone else \
                 ({:?}). A person approves at the command line (`vouch approve`) or over \
                 HTTP with their own token",
                caller.transport.name(),
                caller.actor,
                crate::ids::truncate_for_message(&a)
            )));
        }
        Some(a) => a,
        None => caller.actor.clone(),
    };
    check_actor(&approver)?;
    Ok(approver)
}

/// The audit events of one proposal: its `proposal.create` event and, if a
/// previous run wrote one and then crashed, the event that decided it.
/// Walks back only as far as the proposal's creation.
struct ProposalEvents {
    create: Option<Value>,
    decision: Option<Value>,
}

fn proposal_events(kb: &Kb, proposal_id: &str) -> Result<ProposalEvents> {
    let mut found = ProposalEvents {
        create: None,
        decision: None,
    };
    kb.audit_log().scan_back(|ev| {
        let names = ev
            .get("object_ids")
            .and_then(Value::as_array)
            .is_some_and(|ids| ids.first().and_then(Value::as_str) == Some(proposal_id));
        if !names {
            return false;
        }
        use crate::audit::ProposalStep;
        match ev
            .get("event")
            .and_then(Value::as_str)
            .and_then(ProposalStep::of)
        {
            Some(ProposalStep::Approve | ProposalStep::Reject) => {
                if found.decision.is_none() {
                    found.decision = Some(ev.clone());
                }
                false
            }
            Some(ProposalStep::Create) => {
                found.create = Some(ev.clone());
                true
            }
            None => false,
        }
    })?;
    Ok(found)
}

/// What makes a proposal what it is — kind, reserved id, proposer, session,
/// rationale and the normalized payload — hashed. Recorded in the
/// `proposal.create` event, so a proposal file edited after it was proposed
/// (the words a reviewer saw, or who proposed them) is refused at approve.
pub fn proposal_fingerprint(p: &Proposal) -> Result<String> {
    let payload = match p.kind {
        ProposalKind::Lifecycle => serde_json::to_value(lifecycle_change(p)?)
            .map_err(|e| Error::internal(format!("payload encoding: {e}")))?,
        ProposalKind::Delete => p.payload.clone(),
        _ => Draft::from_proposal(p)?.to_payload()?,
    };
    let identity = json!({
        "kind": p.kind.as_str(),
        "object_id": p.object_id,
        "proposed_by": p.proposed_by,
        "session_id": p.session_id,
        "rationale": p.rationale,
        "payload": payload,
    });
    Ok(crate::ids::sha256_hex(
        crate::audit::canonical_json(&identity).as_bytes(),
    ))
}

/// The key of the fingerprint in a `proposal.create` event's data.
pub const FINGERPRINT_KEY: &str = "proposal_sha256";

/// Does the proposal file still say what its `proposal.create` event
/// recorded? `Err` names what differs and what to do.
pub fn check_integrity(p: &Proposal, create: Option<&Value>) -> std::result::Result<(), String> {
    let Some(create) = create else {
        return Err(format!(
            "proposal {} has no proposal.create event in the audit log: it did not come \
             through kb.propose (or the log was cut); reject it and re-propose",
            p.id
        ));
    };
    let actor = create.get("actor").and_then(Value::as_str).unwrap_or("");
    if actor != p.proposed_by {
        return Err(format!(
            "proposal {} says it was proposed by {:?} but its proposal.create event \
             records {:?}: the file was edited after it was proposed; reject it",
            p.id, p.proposed_by, actor
        ));
    }
    let recorded_object = create
        .get("object_ids")
        .and_then(Value::as_array)
        .and_then(|ids| ids.get(1))
        .and_then(Value::as_str);
    if recorded_object.is_some_and(|o| o != p.object_id) {
        return Err(format!(
            "proposal {} now targets {:?}, not the id its proposal.create event reserved: \
             the file was edited after it was proposed; reject it",
            p.id, p.object_id
        ));
    }
    // Events written before fingerprints existed (and vouch 1.x's) carry
    // none; the actor and object checks above are all they allow.
    if let Some(recorded) = create
        .get("data")
        .and_then(|d| d.get(FINGERPRINT_KEY))
        .and_then(Value::as_str)
    {
        let now = proposal_fingerprint(p).map_err(|e| e.message)?;
        if now != recorded {
            return Err(format!(
                "proposal {} was edited after it was proposed (its content no longer \
                 matches the fingerprint in its proposal.create event); what a reviewer \
                 saw is not what would be approved — reject it and re-propose",
                p.id
            ));
        }
    }
    Ok(())
}

fn already_decided(p: &Proposal) -> Error {
    Error::conflict(format!(
        "proposal {} is already {} (by {} at {}); a decided proposal cannot be decided again — \
         re-propose to create a new one",
        p.id,
        p.status,
        p.decided_by.as_deref().unwrap_or("unknown"),
        p.decided_at.map(|t| t.to_string()).unwrap_or_default()
    ))
}

/// Load a pending proposal, finishing a crashed decision's cleanup if the
/// proposal is already in `decided/`. Caller holds the lock.
fn load_pending(kb: &Kb, id: &str) -> Result<Proposal> {
    check_id("proposal id", id)?;
    let decided = kb.load_proposal(Dir::Decided, id)?;
    let pending = kb.load_proposal(Dir::Proposed, id)?;
    match (pending, decided) {
        (_, Some(d)) => {
            // A crash after the decided/ write left the pending copy behind:
            // remove it so the proposal is decided exactly once.
            atomic::remove(kb.layout().root(), &kb.layout().file(Dir::Proposed, id)?)?;
            Err(already_decided(&d))
        }
        (Some(p), None) => Ok(p),
        (None, None) => Err(Error::not_found(format!(
            "no proposal {id:?} in proposed/ or decided/ (see `vouch pending`)"
        ))),
    }
}

/// Approve one or many proposals. Bulk approval is all-or-nothing: every
/// proposal is checked first, then one audit append (one fsync) and one
/// batched write commit them all.
pub fn approve(kb: &Kb, caller: &Caller, p: ApproveParams) -> Result<Vec<ApproveResult>> {
    let approver = resolve_approver(caller, p.approver)?;
    let ids = p.proposal_id.into_vec();
    if ids.is_empty() {
        return Err(Error::missing("proposal_id"));
    }
    let _lock = kb.lock()?;
    let mut seen = HashSet::new();
    struct Plan {
        proposal: Proposal,
        draft: Draft,
        actor: String,
        at: Timestamp,
        recovered: bool,
        /// The hash of the audit event that decided it (set once appended).
        event_hash: Option<String>,
    }
    let mut plans = Vec::with_capacity(ids.len());
    let mut fresh: Vec<usize> = Vec::new();
    // Listed proposals already approved, with the error to give if the
    // list is not the re-run of an interrupted bulk approval.
    let mut done_before: Vec<(Proposal, Error)> = Vec::new();
    let self_approval_allowed = kb.settings().self_approval_allowed();
    let self_approval = |who: &str, p: &Proposal| {
        Error::denied(format!(
            "{who} proposed {} and cannot also approve it; another actor must review it \
             (or set review.approver_role: trusted-agent in config.yaml)",
            p.id
        ))
    };
    for id in &ids {
        if !seen.insert(id.clone()) {
            return Err(Error::invalid(format!("proposal {id} is listed twice")));
        }
        let proposal = match load_pending(kb, id) {
            Ok(p) => p,
            // Part of a list whose approval a crash interrupted: kept
            // aside, and accepted below only if another listed proposal is
            // such an interrupted approval too.
            Err(e) if e.kind == ErrorKind::Conflict && ids.len() > 1 => {
                match kb.load_proposal(Dir::Decided, id)? {
                    Some(d) if d.status == ProposalStatus::Approved => {
                        done_before.push((d, e));
                        continue;
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        if proposal.kind == ProposalKind::Lifecycle {
            let events = proposal_events(kb, id)?;
            check_integrity(&proposal, events.create.as_ref()).map_err(Error::denied)?;
            if let Some(ev) = &events.decision {
                return Err(Error::conflict(format!(
                    "proposal {id} was rejected (audit event {}); finish with `vouch reject`",
                    ev.get("id").and_then(Value::as_str).unwrap_or("?")
                )));
            }
            if approver == proposal.proposed_by && !self_approval_allowed {
                return Err(self_approval(&approver, &proposal));
            }
            if ids.len() > 1 {
                return Err(Error::invalid(format!(
                    "{id} is a lifecycle proposal; approve it on its own (a list is \
                     all-or-nothing only for new knowledge)"
                )));
            }
            return Ok(vec![approve_lifecycle(
                kb,
                caller,
                &approver,
                proposal,
                p.reason.clone(),
            )?]);
        }
        let draft = Draft::from_proposal(&proposal)?;
        let events = proposal_events(kb, id)?;
        // Every check of a fresh approve runs on a recovery too: a decision
        // event in the log is only a record that someone decided, never a
        // pass around the gate (a forged line would otherwise be one).
        check_integrity(&proposal, events.create.as_ref()).map_err(Error::denied)?;
        if approver == proposal.proposed_by && !self_approval_allowed {
            return Err(self_approval(&approver, &proposal));
        }
        let errors = validate(kb, &draft, None, Some(&proposal.object_id));
        if !errors.is_empty() {
            return Err(Error::denied(format!(
                "proposal {id} no longer validates: {}",
                errors.join("; ")
            )));
        }
        let dir = object_dir(proposal.kind);
        if let Some(ev) = events.decision {
            // A crash interrupted a decision already in the audit log.
            if ev
                .get("event")
                .and_then(Value::as_str)
                .and_then(crate::audit::ProposalStep::of)
                == Some(crate::audit::ProposalStep::Reject)
            {
                return Err(Error::conflict(format!(
                    "proposal {id} was rejected (audit event {}); finish with `vouch reject`",
                    ev.get("id").and_then(Value::as_str).unwrap_or("?")
                )));
            }
            let actor = ev
                .get("actor")
                .and_then(Value::as_str)
                .unwrap_or(&approver)
                .to_string();
            if actor == proposal.proposed_by && !self_approval_allowed {
                return Err(self_approval(&actor, &proposal));
            }
            check_actor(&actor)?;
            // The crashed run may have written the durable file already; any
            // other file under the reserved id is not ours to replace.
            if let Some(existing) = approved_by_of(kb, dir, &proposal.object_id)?
                && existing.as_deref() != Some(actor.as_str())
            {
                return Err(Error::conflict(format!(
                    "{} {} already exists and was not written by the interrupted approval \
                     of {id}; reject {id} and re-propose",
                    dir.id_label(),
                    proposal.object_id
                )));
            }
            let at = ev
                .get("created_at")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse)
                .unwrap_or_else(|| kb.now());
            plans.push(Plan {
                proposal,
                draft,
                actor,
                at,
                recovered: true,
                event_hash: ev.get("hash").and_then(Value::as_str).map(str::to_string),
            });
            continue;
        }
        if kb.exists(dir, &proposal.object_id) {
            return Err(Error::conflict(format!(
                "{} {} already exists; reject {id} and re-propose",
                dir.id_label(),
                proposal.object_id
            )));
        }
        fresh.push(plans.len());
        plans.push(Plan {
            proposal,
            draft,
            actor: approver.clone(),
            at: kb.now(),
            recovered: false,
            event_hash: None,
        });
    }
    // Re-running a bulk approval that a crash cut between its renames: the
    // proposals it finished are reported, the rest are finished below.
    // Otherwise a decided proposal in the list refuses the whole list.
    // Only proposals the same reviewer decided count as part of that list.
    let interrupted_by: HashSet<&str> = plans
        .iter()
        .filter(|pl| pl.recovered)
        .map(|pl| pl.actor.as_str())
        .collect();
    let mut results = Vec::with_capacity(ids.len());
    for (d, e) in done_before {
        if !d
            .decided_by
            .as_deref()
            .is_some_and(|by| interrupted_by.contains(by))
        {
            return Err(e);
        }
        results.push(ApproveResult {
            ok: true,
            object_id: d.object_id.clone(),
            object_kind: d.kind.as_str().to_string(),
            proposal_id: d.id.clone(),
            recovered: true,
        });
    }
    // Two approvals in one list cannot both replace the same claim.
    let mut replaced: HashMap<&str, &str> = HashMap::new();
    for pl in &plans {
        for old in supersedes_of(&pl.draft) {
            if let Some(first) = replaced.insert(old, &pl.proposal.id) {
                return Err(Error::conflict(format!(
                    "{first} and {} both supersede claim {old}; approve one of them",
                    pl.proposal.id
                )));
            }
        }
    }
    let mut events: Vec<AuditEvent> = fresh
        .iter()
        .map(|&i| {
            let pl = &plans[i];
            let mut data = json!({"kind": pl.proposal.kind.as_str()});
            if let Some(r) = &p.reason {
                data["reason"] = json!(r);
            }
            if pl.actor != caller.actor {
                data["caller"] = json!(caller.actor);
            }
            let mut object_ids = vec![pl.proposal.id.clone(), pl.proposal.object_id.clone()];
            let supersedes = supersedes_of(&pl.draft);
            if !supersedes.is_empty() {
                data["supersedes"] = json!(supersedes);
                object_ids.extend(supersedes.iter().map(|s| s.to_string()));
            }
            let mut ev = kb.event("proposal.approve", &pl.actor, object_ids, data);
            ev.created_at = pl.at;
            ev
        })
        .collect();
    kb.append_audit(&mut events)?;
    crate::fail::point("approve.logged");
    for (&i, ev) in fresh.iter().zip(&events) {
        plans[i].event_hash = Some(ev.hash.clone());
    }

    let mut batch = atomic::Batch::new(kb.layout().root());
    let mut written = Vec::new();
    for pl in &plans {
        let object = materialize(
            kb,
            &mut batch,
            pl.draft.clone(),
            &pl.proposal.object_id,
            pl.at,
            &pl.actor,
        )?;
        written.push(object);
        // After the new claim in the batch: a crash between the renames
        // leaves a replaced claim current, never one superseded by a claim
        // that does not exist; approving again finishes it.
        for old in supersedes_of(&pl.draft) {
            let mut c = kb
                .load::<Claim>(old)?
                .ok_or_else(|| Error::not_found(format!("claim {old:?} does not exist")))?;
            c.status = ClaimStatus::Superseded;
            c.superseded_by = Some(pl.proposal.object_id.clone());
            c.updated_at = pl.at;
            kb.stage(&mut batch, &c)?;
            written.push(crate::retrieval::Written::Claim(c));
        }
        let mut decided = pl.proposal.clone();
        // vouch 1.x finds the artifact of a decision at `payload.id`.
        if let Value::Object(payload) = &mut decided.payload {
            payload.insert("id".into(), json!(pl.proposal.object_id));
        }
        decided.status = ProposalStatus::Approved;
        decided.decided_by = Some(pl.actor.clone());
        decided.decided_at = Some(pl.at);
        decided.reason = p.reason.clone();
        decided.decision_hash = pl.event_hash.clone();
        batch.write(
            kb.layout().file(Dir::Decided, &decided.id)?,
            crate::store::yaml::to_yaml(&decided)?.into_bytes(),
        );
        results.push(ApproveResult {
            ok: true,
            object_id: pl.proposal.object_id.clone(),
            object_kind: pl.proposal.kind.as_str().to_string(),
            proposal_id: pl.proposal.id.clone(),
            recovered: pl.recovered,
        });
    }
    // Renames happen in order (durable files, decided/ files), unlinks last.
    for pl in &plans {
        batch.remove(kb.layout().file(Dir::Proposed, &pl.proposal.id)?);
    }
    batch.commit()?;
    kb.announce(&written);
    Ok(results)
}

/// The claims a draft replaces on approval.
fn supersedes_of(draft: &Draft) -> Vec<&str> {
    match draft {
        Draft::Claim(d) => d.supersedes.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `Some(approved_by)` when a durable object with this id exists.
fn approved_by_of(kb: &Kb, dir: Dir, id: &str) -> Result<Option<Option<String>>> {
    Ok(match dir {
        Dir::Claims => kb.load::<Claim>(id)?.map(|o| o.approved_by),
        Dir::Pages => kb.load::<Page>(id)?.map(|o| o.approved_by),
        Dir::Entities => kb.load::<Entity>(id)?.map(|o| o.approved_by),
        Dir::Relations => kb.load::<Relation>(id)?.map(|o| o.approved_by),
        _ => None,
    })
}

/// Stage the durable artifact for an approved draft.
fn materialize(
    kb: &Kb,
    batch: &mut atomic::Batch,
    draft: Draft,
    id: &str,
    at: Timestamp,
    approver: &str,
) -> Result<crate::retrieval::Written> {
    let approved_by = Some(approver.to_string());
    Ok(match draft {
        Draft::Claim(d) => {
            let c = Claim {
                id: id.to_string(),
                text: d.text,
                claim_type: d.claim_type,
                status: ClaimStatus::Working,
                confidence: d.confidence,
                evidence: d.evidence,
                entities: d.entities,
                supersedes: d.supersedes,
                superseded_by: None,
                contradicts: Vec::new(),
                scope: d.scope,
                tags: d.tags,
                created_at: at,
                updated_at: at,
                last_confirmed_at: None,
                approved_by,
                extra: d
                    .metadata
                    .map(|m| [("metadata".to_string(), Value::Object(m))].into())
                    .unwrap_or_default(),
            };
            kb.stage(batch, &c)?;
            crate::retrieval::Written::Claim(c)
        }
        Draft::Page(d) => {
            let pg = Page {
                id: id.to_string(),
                title: d.title,
                page_type: d.page_type,
                status: PageStatus::Active,
                claims: d.claims,
                entities: d.entities,
                sources: d.sources,
                tags: d.tags,
                created_at: at,
                updated_at: at,
                approved_by,
                extra: Default::default(),
                body: d.body,
            };
            kb.stage(batch, &pg)?;
            crate::retrieval::Written::Page(pg)
        }
        Draft::Entity(d) => {
            let e = Entity {
                id: id.to_string(),
                name: d.name,
                entity_type: d.entity_type,
                aliases: d.aliases,
                description: d.description,
                tags: d.tags,
                created_at: at,
                updated_at: at,
                approved_by,
                extra: Default::default(),
            };
            kb.stage(batch, &e)?;
            crate::retrieval::Written::Entity(e)
        }
        Draft::Relation(d) => {
            let r = Relation {
                id: id.to_string(),
                source: d.source,
                relation: d.relation,
                target: d.target,
                confidence: d.confidence,
                evidence: d.evidence,
                created_at: at,
                updated_at: at,
                approved_by,
                extra: Default::default(),
            };
            kb.stage(batch, &r)?;
            crate::retrieval::Written::Relation(r)
        }
    })
}

pub fn reject(kb: &Kb, caller: &Caller, p: RejectParams) -> Result<OkResult> {
    if p.reason.trim().is_empty() {
        return Err(Error::missing("reason"));
    }
    check_actor(&caller.actor)?;
    let _lock = kb.lock()?;
    let proposal = load_pending(kb, &p.proposal_id)?;
    // A lifecycle proposal's approval is the lifecycle event that names it.
    if proposal.kind == ProposalKind::Lifecycle
        && let Some(ev) = lifecycle_decision(kb, &proposal.id)?
    {
        return Err(Error::conflict(format!(
            "proposal {} was approved (audit event {}); run approve again to finish it",
            proposal.id,
            ev.get("id").and_then(Value::as_str).unwrap_or("?")
        )));
    }
    let (actor, at, event_hash) = match proposal_events(kb, &proposal.id)?.decision {
        Some(ev)
            if ev
                .get("event")
                .and_then(Value::as_str)
                .and_then(crate::audit::ProposalStep::of)
                == Some(crate::audit::ProposalStep::Approve) =>
        {
            return Err(Error::conflict(format!(
                "proposal {} was approved (audit event {}); run approve again to finish it",
                proposal.id,
                ev.get("id").and_then(Value::as_str).unwrap_or("?")
            )));
        }
        Some(ev) => (
            ev.get("actor")
                .and_then(Value::as_str)
                .unwrap_or(&caller.actor)
                .to_string(),
            ev.get("created_at")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse)
                .unwrap_or_else(|| kb.now()),
            ev.get("hash").and_then(Value::as_str).map(str::to_string),
        ),
        None => {
            let mut ev = kb.event(
                "proposal.reject",
                &caller.actor,
                vec![proposal.id.clone(), proposal.object_id.clone()],
                json!({"kind": proposal.kind.as_str(), "reason": p.reason}),
            );
            kb.append_audit(std::slice::from_mut(&mut ev))?;
            crate::fail::point("reject.logged");
            (caller.actor.clone(), ev.created_at, Some(ev.hash))
        }
    };
    let mut decided = proposal.clone();
    decided.status = ProposalStatus::Rejected;
    decided.decided_by = Some(actor);
    decided.decided_at = Some(at);
    decided.reason = Some(p.reason);
    decided.decision_hash = event_hash;
    let mut batch = atomic::Batch::new(kb.layout().root());
    batch.write(
        kb.layout().file(Dir::Decided, &decided.id)?,
        crate::store::yaml::to_yaml(&decided)?.into_bytes(),
    );
    batch.remove(kb.layout().file(Dir::Proposed, &decided.id)?);
    batch.commit()?;
    Ok(OkResult { ok: true })
}

/// Pending proposals, oldest first.
pub fn list_pending(kb: &Kb) -> Result<Vec<Proposal>> {
    let mut all = kb.load_proposals(Dir::Proposed)?;
    // A proposal also in decided/ was decided (a crash interrupted cleanup).
    all.retain(|p| !kb.exists(Dir::Decided, &p.id));
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(all)
}

#[cfg(test)]
mod object_ids {
    use crate::methods::dispatch;
    use crate::{Caller, Transport};
    use serde_json::json;

    /// One process proposing the same text again and again (a bulk
    /// import): the remembered queue still gives each its own object id.
    #[test]
    fn repeated_proposals_in_one_process_get_distinct_ids() {
        let (_dir, kb) = crate::kb::test_kb();
        let agent = Caller::new("agent", Transport::Jsonl);
        let src = dispatch(
            &kb,
            &agent,
            "kb.register_source",
            json!({"content": "x", "locator": "l"}),
        )
        .unwrap()["id"]
            .clone();
        let ids: Vec<String> = (0..4)
            .map(|_| {
                dispatch(
                    &kb,
                    &agent,
                    "kb.propose_claim",
                    json!({"text": "Same words", "evidence": [src]}),
                )
                .unwrap()["claim_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            ids,
            ["same-words", "same-words-2", "same-words-3", "same-words-4"]
        );
    }
}
