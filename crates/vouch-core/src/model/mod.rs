//! The object model of protocol §2, in the on-disk form of docs/format.md:
//! fields in the order of the spec's tables, optional fields omitted when
//! empty, unknown keys kept in `extra` and written back after known ones.

mod enums;
pub mod meta;
mod time;
mod written;

pub use enums::*;
pub use time::Timestamp;
pub use written::Written;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Keys a file carries that this version does not know (vouch 1.x fields,
/// future fields). Kept so a rewrite does not drop them.
pub type Extra = BTreeMap<String, Value>;

fn default_true() -> bool {
    true
}
fn default_confidence() -> f64 {
    0.7
}
fn is_true(b: &bool) -> bool {
    *b
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    pub id: String,
    #[serde(rename = "type", default = "default_source_type")]
    pub source_type: SourceType,
    pub locator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub immutable: bool,
    /// A scope name (`project`) or, in files written by vouch 1.x, a map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_size: Option<u64>,
    #[serde(default = "default_media_type")]
    pub media_type: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn default_source_type() -> SourceType {
    SourceType::File
}
fn default_media_type() -> String {
    "text/plain".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    pub id: String,
    pub source_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<SourceType>,
    pub locator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    pub created_at: Timestamp,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Claim {
    pub id: String,
    pub text: String,
    #[serde(rename = "type")]
    pub claim_type: ClaimType,
    pub status: ClaimStatus,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    #[serde(default)]
    pub evidence: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradicts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_confirmed_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Claim {
    /// The one supersede mutation, for `kb.supersede` and for approving a
    /// claim proposed with `supersedes`: this claim is replaced by `new_id`
    /// as of `at`. The replacing claim's own `supersedes` list is the
    /// caller's to keep.
    pub fn superseded(&mut self, new_id: &str, at: Timestamp) {
        self.status = ClaimStatus::Superseded;
        self.superseded_by = Some(new_id.to_string());
        self.updated_at = at;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Entity {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Relation {
    pub id: String,
    pub source: String,
    pub relation: RelationType,
    pub target: String,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A page: YAML frontmatter (these fields) plus a markdown body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Page {
    pub id: String,
    pub title: String,
    #[serde(rename = "type", default = "default_page_type")]
    pub page_type: PageType,
    #[serde(default = "default_page_status")]
    pub status: PageStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
    /// The markdown after the frontmatter; not a frontmatter key.
    #[serde(skip)]
    pub body: String,
}

fn default_page_type() -> PageType {
    PageType::Concept
}
fn default_page_status() -> PageStatus {
    PageStatus::Active
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Session {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default = "default_session_status")]
    pub status: SessionStatus,
    pub started_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// Proposal ids created within this session, in order.
    #[serde(default)]
    pub proposals: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn default_session_status() -> SessionStatus {
    SessionStatus::Open
}

/// The review-gate primitive (§4): what an agent asked to add, and what a
/// reviewer decided. `payload` holds the normalized propose params; the
/// durable artifact is built from it at approve time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Proposal {
    pub id: String,
    pub kind: ProposalKind,
    pub status: ProposalStatus,
    /// The id the durable artifact will get (reserved at propose time).
    /// vouch 1.x does not write it; loading fills it in (see
    /// `Kb::load_proposal`).
    #[serde(default)]
    pub object_id: String,
    pub proposed_by: String,
    /// vouch 1.x calls it `proposed_at`.
    #[serde(alias = "proposed_at")]
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    pub payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<Timestamp>,
    /// vouch 1.x calls it `decision_reason`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "decision_reason"
    )]
    pub reason: Option<String>,
    /// The `hash` of the audit event that decided it: ties the decision on
    /// disk to the log, so a log cut or rewritten after it is detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_hash: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One line of `audit.log.jsonl`. Written as canonical JSON (sorted keys,
/// compact); `hash = sha256_hex(prev_hash + canonical_json(event without hash))`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEvent {
    pub id: String,
    pub event: String,
    pub actor: String,
    pub created_at: Timestamp,
    #[serde(default)]
    pub object_ids: Vec<String>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub reversible: bool,
    #[serde(default)]
    pub data: Value,
    #[serde(default)]
    pub prev_hash: String,
    #[serde(default)]
    pub hash: String,
    #[serde(flatten)]
    pub extra: Extra,
}
