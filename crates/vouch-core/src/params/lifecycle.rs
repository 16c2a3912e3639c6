//! Lifecycle changes of approved claims.

use super::sources::Citation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of kb.supersede.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupersedeParams {
    /// The approved claim being replaced; it becomes `superseded`.
    pub old_id: String,
    /// The approved claim that replaces it.
    pub new_id: String,
    /// Why; recorded in the audit event.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Params of kb.contradict.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContradictParams {
    /// One of the two approved claims.
    pub a_id: String,
    /// The other claim.
    pub b_id: String,
    /// Why; recorded in the audit event.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Params of kb.archive.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveParams {
    /// A claim id or page id.
    pub id: String,
    /// Why; recorded in the audit event.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Params naming one object by id (kb.read_*, kb.confirm).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdParams {
    /// The object's id (for kb.confirm, an approved claim's).
    pub id: String,
}

/// Params of kb.cite.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CiteParams {
    /// Claim id.
    pub id: String,
    /// A source id, an evidence id, or a `{"source_id", "quote"}` span.
    pub evidence: Citation,
}

/// Result of the lifecycle methods (supersede, contradict, archive,
/// confirm, cite, revert).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LifecycleResult {
    /// Always true; a refusal is an error, not a result.
    pub ok: bool,
    /// Ids of the objects whose files changed.
    pub updated: Vec<String>,
    /// Set instead when `review.gate_lifecycle` turned the change into a
    /// proposal for a person to approve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
}

/// Params of kb.revert.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertParams {
    /// The id of the lifecycle event to undo (`vouch changes` lists them).
    pub event_id: String,
    /// Why; recorded in the audit event.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Params of kb.lifecycle_changes.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LifecycleChangesParams {
    /// How far back to look, in days (default 7).
    #[serde(default)]
    pub days: Option<i64>,
    /// Include changes made at the command line, not only by agents.
    #[serde(default)]
    pub all: bool,
}

/// A lifecycle change (supersede, contradict, archive, confirm, cite,
/// revert) not reverted since.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LifecycleChange {
    /// The audit event's id; pass it to kb.revert to undo the change.
    pub event_id: String,
    /// `claim.supersede`, `claim.contradict`, `claim.archive`,
    /// `claim.confirm`, `claim.cite`, `page.archive` or `lifecycle.revert`.
    pub event: String,
    /// Who made the change.
    pub actor: String,
    /// The transport it came through (`MCP`, `JSONL`, `HTTP`,
    /// `command-line`); absent on events older vouch versions wrote.
    pub via: Option<String>,
    /// When, RFC 3339.
    pub created_at: String,
    /// The ids the event names: the objects changed, plus the cited id
    /// (`claim.cite`, last) or the undone event's id (`lifecycle.revert`, first).
    pub object_ids: Vec<String>,
    /// The reason given, if any.
    pub reason: Option<String>,
}
