//! Provenance and the gate's health: kb.why, kb.impact, kb.neighbors,
//! kb.gate_stats, kb.expire.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AuditRecord, ResolvedCitation};

/// Params of kb.why and kb.impact.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectParams {
    /// The object's id: a claim, page, entity, relation or evidence id, or
    /// a source's sha256.
    pub id: String,
    /// Its kind, when an id could name objects of two kinds: claim, page,
    /// entity, relation, evidence or source (default: the first kind
    /// holding the id, in that order).
    #[serde(default)]
    pub kind: Option<String>,
}

/// A proposal that made or changed an object, as kb.why tells it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WhyProposal {
    /// The proposal's id.
    pub id: String,
    /// What it proposed (claim, page, lifecycle, delete, ...).
    pub kind: String,
    /// pending, approved or rejected.
    pub status: String,
    /// Who proposed it.
    pub proposed_by: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// Why the proposer wanted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// The session it was made in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Who approved or rejected it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When it was decided (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// The reason recorded with the decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One link of a claim's supersession and contradiction chain.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ChainLink {
    /// How the linked claim stands to the one asked about (or to the
    /// previous link): supersedes, superseded_by, contradicts or
    /// contradicted_by.
    pub relation: String,
    /// The linked claim's id.
    pub id: String,
    /// The linked claim's text; none when no such claim is stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The linked claim's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Result of kb.why: the whole story of one object.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WhyResult {
    /// claim, page, entity, relation, evidence or source.
    pub kind: String,
    /// The object's id.
    pub id: String,
    /// The object's stored fields (a page's with its body).
    pub object: Value,
    /// Who approved it, as its file records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// The proposals that made or changed it, oldest first.
    pub proposals: Vec<WhyProposal>,
    /// What it cites, resolved: sources with their locators, evidence with
    /// its quote.
    pub citations: Vec<ResolvedCitation>,
    /// A claim's supersession and contradiction chain, nearest first.
    pub chain: Vec<ChainLink>,
    /// Every audit event naming it or one of its proposals, oldest first.
    pub audit: Vec<AuditRecord>,
    /// Gated kinds: true when no approval or import let its file in as it
    /// is now (written or edited by hand); none for sources and evidence,
    /// which are not gated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unaudited: Option<bool>,
}

/// An object that refers to another, and how.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Referrer {
    /// claim, page, relation or evidence.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// How it refers: `cites it`, `supersedes it`, `draws on it`, ...
    pub how: Vec<String>,
}

/// Result of kb.impact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImpactResult {
    /// The kind of the object asked about.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// Every stored object that refers to it, claims then pages, relations
    /// and evidence, each sorted by id.
    pub referrers: Vec<Referrer>,
}

/// Params of kb.neighbors.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeighborsParams {
    /// The node to start from: an entity, claim, page, relation, evidence
    /// or source id.
    pub id: String,
    /// How many hops to follow, 1 to 3 (default 1).
    #[serde(default)]
    pub depth: Option<i64>,
    /// At most this many nodes besides the start (default 100, max 1000).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// A node kb.neighbors reached.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Neighbor {
    /// Its id.
    pub id: String,
    /// claim, page, entity, relation, evidence, source, or unknown when
    /// nothing stored holds the id.
    pub kind: String,
    /// A name to show: an entity's name, a claim's text, a page's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Hops from the start.
    pub depth: u8,
}

/// An edge kb.neighbors followed.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct NeighborEdge {
    /// One end.
    pub source: String,
    /// What links them: a relation's type (uses, depends_on, ...), or
    /// `about` (a claim or page naming an entity) and `draws_on` (a page
    /// drawing on a claim).
    pub relation: String,
    /// The other end.
    pub target: String,
    /// The relation object's id, for edges that are relations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation_id: Option<String>,
}

/// Result of kb.neighbors.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NeighborsResult {
    /// The start node.
    pub start: Neighbor,
    /// The depth followed.
    pub depth: u8,
    /// The nodes reached, nearest first, then by id.
    pub nodes: Vec<Neighbor>,
    /// The edges between the start and the nodes reached.
    pub edges: Vec<NeighborEdge>,
    /// The limit cut the nodes short.
    pub truncated: bool,
}

/// Params of kb.gate_stats.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateStatsParams {
    /// The window: proposals made and decisions taken since then. An RFC
    /// 3339 time or an age (`30d`, `12h`, `2w`); default all time. The
    /// queue is counted whole whatever the window.
    #[serde(default)]
    pub since: Option<String>,
}

/// The review queue now.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueueStats {
    /// Proposals awaiting review.
    pub pending: usize,
    /// The oldest pending proposal's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_id: Option<String>,
    /// When it was made (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_created_at: Option<String>,
    /// How long it has waited, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_age_seconds: Option<i64>,
    /// The median wait of the pending proposals, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_age_seconds: Option<i64>,
}

/// One actor's share of the gate's work in the window.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ActorStats {
    /// The actor.
    pub actor: String,
    /// Proposals made (as a proposer) in the window.
    pub proposed: usize,
    /// Of those, still pending.
    pub pending: usize,
    /// Approved: as a proposer, their proposals approved in the window; as
    /// a reviewer, the approvals they gave.
    pub approved: usize,
    /// Rejected, likewise.
    pub rejected: usize,
    /// approved / (approved + rejected); none before any decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_rate: Option<f64>,
    /// The median time from proposal to decision, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_seconds_to_decision: Option<i64>,
}

/// Result of kb.gate_stats.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateStats {
    /// The window's start (RFC 3339); none for all time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// When the figures were taken (RFC 3339).
    pub now: String,
    /// The review queue now, whatever the window.
    pub queue: QueueStats,
    /// Proposals made in the window.
    pub proposed: usize,
    /// Decisions taken in the window: approvals.
    pub approved: usize,
    /// Decisions taken in the window: rejections.
    pub rejected: usize,
    /// approved / (approved + rejected); none before any decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_rate: Option<f64>,
    /// rejected / (approved + rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection_rate: Option<f64>,
    /// The median time from proposal to decision, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_seconds_to_decision: Option<i64>,
    /// By proposer, most proposals first.
    pub by_agent: Vec<ActorStats>,
    /// By reviewer, most decisions first (`proposed` and `pending` are 0).
    pub by_reviewer: Vec<ActorStats>,
}

/// Params of kb.expire.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpireParams {
    /// Reject proposals pending longer than this: `30d`, `12h`, `2w`.
    pub older_than: String,
    /// The reason each rejection records (default: `expired: pending
    /// longer than <older_than>`).
    #[serde(default)]
    pub reason: Option<String>,
    /// List what would be rejected and reject nothing (default true: pass
    /// false to reject).
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// One proposal kb.expire rejected, or would.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Expired {
    /// The proposal's id.
    pub id: String,
    /// What it proposed.
    pub kind: String,
    /// Who proposed it.
    pub proposed_by: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// How long it waited, in seconds.
    pub age_seconds: i64,
}

/// Result of kb.expire.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExpireResult {
    /// Nothing was rejected: the list says what would be.
    pub dry_run: bool,
    /// The reason recorded (or that would be).
    pub reason: String,
    /// The proposals rejected, oldest first.
    pub expired: Vec<Expired>,
}
