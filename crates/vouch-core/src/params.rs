//! Params and results of the `kb.*` methods (protocol §5, docs/methods.md). Doc comments here
//! become the JSON Schema descriptions agents see over MCP.

use crate::model::{ClaimType, EntityType, PageType, RelationType, Scope, SourceType};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Params of a method that takes none: pass `{}` (or null).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

// ----- sources and evidence -------------------------------------------------

/// Params of kb.register_source.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterSourceParams {
    /// UTF-8 text content; its sha256 becomes the source id.
    pub content: String,
    /// Where the content came from (path, URL, commit, ...).
    pub locator: String,
    /// What kind of source it is (default `file`).
    #[serde(default, rename = "type", deserialize_with = "strict_opt")]
    pub source_type: Option<SourceType>,
    /// Human-readable title, shown beside quotes from it.
    #[serde(default)]
    pub title: Option<String>,
    /// MIME type of the content (default `text/plain`).
    #[serde(default)]
    pub media_type: Option<String>,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Params of kb.register_source_from_path.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterSourceFromPathParams {
    /// Absolute or project-relative path of a regular file inside the project.
    pub path: String,
    /// What kind of source it is (default `file`).
    #[serde(default, rename = "type", deserialize_with = "strict_opt")]
    pub source_type: Option<SourceType>,
    /// Human-readable title (default: the file name).
    #[serde(default)]
    pub title: Option<String>,
}

/// Result of kb.register_source and kb.register_source_from_path.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct RegisterSourceResult {
    /// The source id: the sha256 of the content.
    pub id: String,
    /// True when this content was already registered (nothing written).
    pub deduplicated: bool,
}

/// Params of kb.source_verify.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceVerifyParams {
    /// A source id; omit to verify every source.
    #[serde(default)]
    pub id: Option<String>,
}

/// A source whose stored content is not what was registered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceIssue {
    /// The source id.
    pub id: String,
    /// `missing` (no meta or no content), `unparseable` (meta.yaml does not parse),
    /// `drifted` (content hash differs), `unreadable`.
    pub kind: String,
    /// What was found, in words.
    pub detail: String,
}

/// Result of kb.source_verify.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceVerifyResult {
    /// True when no issue was found.
    pub ok: bool,
    /// One entry per problem found.
    pub issues: Vec<SourceIssue>,
}

/// Params of kb.register_evidence.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterEvidenceParams {
    /// The source the quote comes from.
    pub source_id: String,
    /// Exact text that occurs in the source's stored content.
    pub quote: String,
}

/// Result of kb.register_evidence.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RegisterEvidenceResult {
    /// The evidence id to cite (derived from the source and the quote).
    pub evidence_id: String,
    /// `L<first>-L<last>` line range of the quote in the source.
    pub locator: String,
    /// sha256 of the quoted span.
    pub hash: String,
    /// True when this quote of this source was already registered.
    pub deduplicated: bool,
}

/// A citation: a source id, an evidence id, or a quote to locate in a source
/// (minted into an Evidence when the proposal is written).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum Citation {
    /// A source id (64-hex sha256) or an evidence id.
    Id(String),
    /// A quote to locate in a source; minted into an Evidence on write.
    Span {
        /// The source the quote comes from.
        source_id: String,
        /// Exact text that occurs in the source's stored content.
        quote: String,
    },
}

// ----- proposals --------------------------------------------------------------

/// Params of kb.propose_claim.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeClaimParams {
    /// One-sentence assertion.
    pub text: String,
    /// Non-empty list of citations: source ids, evidence ids, or
    /// `{"source_id", "quote"}` spans.
    pub evidence: Vec<Citation>,
    /// What kind of claim it is (default `observation`).
    #[serde(default, rename = "type", deserialize_with = "strict_opt")]
    pub claim_type: Option<ClaimType>,
    /// 0..1, default 0.7.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Ids of approved entities the claim is about.
    #[serde(default)]
    pub entities: Vec<String>,
    /// How widely the claim applies; none by default.
    #[serde(default)]
    pub scope: Option<Scope>,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where the claim came from in another format (e.g. `{"knowledge":
    /// {"id": "global:pitfall:007", ...}}` from a knowledge file); kept on
    /// the approved claim under `metadata`.
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// Approved claims this one corrects or replaces: approving the
    /// proposal supersedes them (the reviewer sees them side by side).
    #[serde(default)]
    pub supersedes: Vec<String>,
    /// An open session (from kb.session_start) to file the proposal under.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Why this claim; recorded on the proposal.
    #[serde(default)]
    pub rationale: Option<String>,
    /// Validate only: write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Params of kb.propose_page.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposePageParams {
    /// Page title; the page id is a slug of it.
    pub title: String,
    /// Markdown body.
    #[serde(default)]
    pub body: Option<String>,
    /// What kind of page it is (default `concept`).
    #[serde(default, rename = "type", deserialize_with = "strict_opt")]
    pub page_type: Option<PageType>,
    /// Ids of approved claims the page references.
    #[serde(default)]
    pub claims: Vec<String>,
    /// Ids of approved entities the page references.
    #[serde(default)]
    pub entities: Vec<String>,
    /// Ids of registered sources the page references.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// An open session (from kb.session_start) to file the proposal under.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Why this page; recorded on the proposal.
    #[serde(default)]
    pub rationale: Option<String>,
    /// Validate only: write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Params of kb.propose_entity.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeEntityParams {
    /// The entity's name; the entity id is a slug of it.
    pub name: String,
    /// What kind of thing it is.
    #[serde(rename = "type", deserialize_with = "strict")]
    pub entity_type: EntityType,
    /// Other names it goes by.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// A short description of it.
    #[serde(default)]
    pub description: Option<String>,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// An open session (from kb.session_start) to file the proposal under.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Why this entity; recorded on the proposal.
    #[serde(default)]
    pub rationale: Option<String>,
    /// Validate only: write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Params of kb.propose_relation.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeRelationParams {
    /// Id of the object at the start of the edge: any approved claim,
    /// entity, page, relation or evidence, or a source id.
    pub source: String,
    /// The edge type, read from `source` to `target`.
    #[serde(deserialize_with = "strict")]
    pub relation: RelationType,
    /// Id of the object at the end of the edge (as `source`).
    pub target: String,
    /// 0..1, default 0.7.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Optional citations: source ids, evidence ids, or
    /// `{"source_id", "quote"}` spans.
    #[serde(default)]
    pub evidence: Vec<Citation>,
    /// An open session (from kb.session_start) to file the proposal under.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Why this relation; recorded on the proposal.
    #[serde(default)]
    pub rationale: Option<String>,
    /// Validate only: write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Result of every `kb.propose_*`; the object id key is named per kind
/// (`claim_id`, `page_id`, `entity_id`, `relation_id`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProposeResult {
    /// Empty when invalid or dry_run.
    pub proposal_id: String,
    /// The reserved id of the object under its kind's key (`claim_id`, ...);
    /// empty when invalid.
    #[serde(flatten)]
    pub object: std::collections::BTreeMap<String, String>,
    /// False when the proposal cannot be accepted; `errors` says why.
    pub valid: bool,
    /// Every problem found, each naming its field; empty when valid.
    pub errors: Vec<String>,
    /// True when this was a dry run: nothing was written.
    pub dry_run: bool,
    /// `possible_duplicates`: current approved claims whose meaning is
    /// almost the same (cosine ≥ 0.95 with the local model; absent
    /// without one), for the reviewer.
    #[serde(rename = "_meta", default, skip_serializing_if = "ReadMeta::is_empty")]
    pub meta: ReadMeta,
}

/// Params of kb.approve.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveParams {
    /// One proposal id, or several for a bulk approval (all or nothing).
    pub proposal_id: OneOrMany,
    /// Why it is approved; recorded with the decision.
    #[serde(default)]
    pub reason: Option<String>,
    /// Approver identity; defaults to the caller. On agent transports (MCP,
    /// JSONL, HTTP) it may only name the caller's own actor: any other name
    /// is refused. A person at the command line may name who approves.
    #[serde(default)]
    pub approver: Option<String>,
}

/// One id, or a list of ids.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    /// A single id.
    One(String),
    /// Several ids.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The ids as a list.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// Result of approving one proposal (kb.approve).
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ApproveResult {
    /// Always true; a refusal is an error, not a result.
    pub ok: bool,
    /// The id of the object written, or the subject of a lifecycle proposal.
    pub object_id: String,
    /// `claim`, `page`, `entity`, `relation` or `lifecycle`.
    pub object_kind: String,
    /// The proposal approved.
    pub proposal_id: String,
    /// Set when this call finished an approval a crash had interrupted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
}

/// Params of kb.reject.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectParams {
    /// The pending proposal to reject.
    pub proposal_id: String,
    /// Required: why the proposal is rejected.
    pub reason: String,
}

/// Result of kb.reject.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OkResult {
    /// Always true; a refusal is an error, not a result.
    pub ok: bool,
}

// ----- lifecycle --------------------------------------------------------------

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

// ----- sessions ---------------------------------------------------------------

/// Params of kb.session_start.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionStartParams {
    /// What the session is for; titles its summary page.
    #[serde(default)]
    pub task: Option<String>,
    /// A free-form note kept on the session.
    #[serde(default)]
    pub note: Option<String>,
}

/// Result of kb.session_start.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionStartResult {
    /// Pass it to propose_* calls and kb.crystallize.
    pub session_id: String,
}

/// Params of kb.session_end.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionIdParams {
    /// The session to end.
    pub session_id: String,
}

/// Result of kb.session_end.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionEndResult {
    /// Always true; a refusal is an error, not a result.
    pub ok: bool,
    /// How many proposals the session produced.
    pub proposals: usize,
}

/// Params of kb.crystallize.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CrystallizeParams {
    /// The session to summarise.
    pub session_id: String,
    /// Only report; do not propose the summary page.
    #[serde(default)]
    pub no_page: bool,
}

/// Result of kb.crystallize.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CrystallizeResult {
    /// The proposed summary page's id (pending review).
    pub page_id: Option<String>,
    /// The summary page's proposal id (none with `no_page`).
    pub proposal_id: Option<String>,
    /// Pending claim proposals of the session flagged for review.
    pub claims_promoted: usize,
    /// Those proposals' ids.
    pub promotable: Vec<String>,
}

// ----- reads ------------------------------------------------------------------

pub use crate::model::meta::{NearDuplicate, ReadMeta, ResolvedCitation, provenance_text};

/// Params of the kb.list_* methods.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// At most this many items (default 100, max 100000).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Skip this many items first (default 0).
    #[serde(default)]
    pub offset: Option<i64>,
    /// Field equality, e.g. `{"status": "stable"}`.
    #[serde(default)]
    pub filter: Option<serde_json::Map<String, Value>>,
}

/// How many objects of each kind the knowledge base holds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusCounts {
    /// Approved claims, whatever their status.
    pub claims: usize,
    /// Approved pages.
    pub pages: usize,
    /// Registered sources.
    pub sources: usize,
    /// Approved entities.
    pub entities: usize,
    /// Approved relations.
    pub relations: usize,
    /// Evidence records (quoted spans).
    pub evidence: usize,
    /// Sessions, open or ended.
    pub sessions: usize,
    /// Decided proposals (approved or rejected).
    pub decided: usize,
}

/// Result of kb.status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusResult {
    /// The knowledge base's `.vouch/` folder.
    pub root: String,
    /// `kb_name` from config.yaml, if set.
    pub kb_name: Option<String>,
    /// Objects held, by kind.
    pub counts: StatusCounts,
    /// Proposals awaiting review.
    pub pending: usize,
    /// When the last audit event was written (RFC 3339); none for an empty log.
    pub last_audit_at: Option<String>,
    /// Which backend answers searches.
    pub retrieval: StatusRetrieval,
    /// Who may turn proposals into knowledge.
    pub review: StatusReview,
}

/// Who may turn proposals into knowledge here.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusReview {
    /// Actors the person's own config lets decide over agent transports.
    pub reviewers: Vec<String>,
    /// The person's own config says `approver_role: trusted-agent`.
    pub trusted_agent: bool,
    /// Claims must cite evidence.
    pub require_citations: bool,
    /// Settings in the repository's config.yaml that would widen the gate
    /// or name the actor, ignored (`key: value`).
    pub ignored_settings: Vec<String>,
}

/// Which backend answers searches, and why if it is not the configured one.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusRetrieval {
    /// The backend that answers searches without a `backend` param (the
    /// same as `used`; kept for readers of earlier versions).
    pub backend: String,
    /// What `retrieval.backend` asks for and what answers.
    #[serde(flatten)]
    pub state: crate::retrieval::backend::RetrievalState,
    /// The process keeping the index in step with the files as they change
    /// (`vouch serve`, `vouch ui` or `vouch watch`), if one is running:
    /// one-shot commands then skip their scan of the files.
    pub watcher: Option<crate::index::Watcher>,
}

/// Params of kb.audit.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    /// Only the last N matching events.
    #[serde(default)]
    pub tail: Option<i64>,
    /// Keep only events matching every field given.
    #[serde(default)]
    pub filter: Option<AuditFilter>,
}

/// Which audit events kb.audit keeps: every field given must match.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditFilter {
    /// The event name, e.g. `proposal.create` or `claim.supersede`.
    #[serde(default)]
    pub event: Option<String>,
    /// Who wrote the event.
    #[serde(default)]
    pub actor: Option<String>,
    /// Only events naming this id among their `object_ids` (a claim's,
    /// proposal's or source's history).
    #[serde(default)]
    pub object: Option<String>,
}

// ----- bundles ------------------------------------------------------------------

/// Params of kb.export.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// Where to write the `.tar.gz` (absolute, or relative to the project
    /// holding `.vouch/`). Never inside `.vouch/`; on agent transports it
    /// must be inside the project.
    pub out: String,
    /// Leave out `decided/` (the review records). vouch 1.x refuses bundles
    /// that carry them; the knowledge itself is complete without.
    #[serde(default)]
    pub without_decided: bool,
}

/// Result of kb.export.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExportResult {
    /// Where the bundle was written (absolute).
    pub path: String,
    /// Files in the bundle (not counting manifest.json).
    pub files: usize,
    /// Size of the archive.
    pub bytes: u64,
    /// sha256 of the archive.
    pub sha256: String,
    /// The manifest's `generated_at`: the time of the KB's last change.
    pub generated_at: String,
}

/// Params of kb.export_check and kb.import_check.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundlePathParams {
    /// The bundle (`.tar.gz`): absolute, or relative to the project.
    pub path: String,
}

/// One reason a bundle is refused.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct BundleProblem {
    /// The member (or manifest entry) concerned; `""` for the archive itself.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// Result of kb.export_check.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExportCheckResult {
    /// True when the bundle has no problems.
    pub ok: bool,
    /// Every problem as `path: reason`.
    pub issues: Vec<String>,
    /// The same problems, structured.
    pub problems: Vec<BundleProblem>,
    /// Files the manifest lists.
    pub files: usize,
}

/// Result of kb.import_check.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportCheckResult {
    /// True when the bundle has no problems (conflicts are not problems).
    pub ok: bool,
    /// Files this KB does not have.
    pub new: Vec<String>,
    /// Files this KB has with different content.
    pub conflict: Vec<String>,
    /// Files this KB has with the same content.
    pub identical: Vec<String>,
    /// Files import never writes (the bundle's config.yaml when it differs:
    /// this KB keeps its own review settings).
    pub ignored: Vec<String>,
    /// Every reason the bundle would be refused; import_apply writes nothing
    /// while any remain.
    pub problems: Vec<BundleProblem>,
    /// The objects the new files hold, by kind and id (a source once, for
    /// its content and its meta.yaml).
    pub new_objects: Vec<ObjectRef>,
    /// The objects this KB holds differently.
    pub conflict_objects: Vec<ObjectRef>,
}

/// An object by kind (`claim`, `page`, `entity`, `relation`, `evidence`,
/// `session`, `decided`, `source`) and id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
pub struct ObjectRef {
    /// The object's kind.
    pub kind: String,
    /// The object's id.
    pub id: String,
}

/// What kb.import_apply does with files that differ from this KB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnConflict {
    /// Keep this KB's version (default).
    #[default]
    Skip,
    /// Replace this KB's version with the bundle's.
    Overwrite,
    /// Refuse the whole import if any file conflicts.
    Fail,
}

/// Params of kb.import_apply.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportApplyParams {
    /// The bundle (`.tar.gz`): absolute, or relative to the project.
    pub path: String,
    /// What to do with files that differ from this KB: skip (default),
    /// overwrite, fail.
    #[serde(default)]
    pub on_conflict: Option<OnConflict>,
}

/// Result of kb.import_apply.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportApplyResult {
    /// New files written.
    pub imported: usize,
    /// Conflicting files left as they are.
    pub skipped: usize,
    /// Conflicting files replaced.
    pub overwritten: usize,
    /// Files already identical here.
    pub identical: usize,
    /// Gated objects (claims, pages, entities, relations) that arrived as
    /// pending proposals because the caller is an agent.
    pub proposed: usize,
    /// Those proposals' ids.
    pub proposal_ids: Vec<String>,
}

// ----- health ---------------------------------------------------------------------

/// Params of kb.lint.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintParams {
    /// A claim not confirmed (or updated) for this many days is stale (default 90).
    #[serde(default)]
    pub stale_days: Option<i64>,
    /// A proposal pending for this many days is old (default 14).
    #[serde(default)]
    pub pending_days: Option<i64>,
}

/// Params of kb.doctor.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorParams {
    /// A claim not confirmed (or updated) for this many days is stale (default 90).
    #[serde(default)]
    pub stale_days: Option<i64>,
    /// A proposal pending for this many days is old (default 14).
    #[serde(default)]
    pub pending_days: Option<i64>,
    /// Repair what is derivable (rebuild the index). Never touches knowledge.
    #[serde(default)]
    pub fix: bool,
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth fixing; the report stays ok.
    Warn,
    /// Must be fixed; the report is not ok.
    Error,
}

/// One problem kb.lint or kb.doctor found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Finding {
    /// Stable: `<kind>:<object id>[:<other id>]`.
    pub id: String,
    /// The check that found it, e.g. `uncited-claim` or `stale-claim`.
    pub kind: String,
    /// `warn` or `error`.
    pub severity: Severity,
    /// What is wrong and what to do about it.
    pub message: String,
    /// The file concerned, relative to `.vouch/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Result of kb.lint and kb.doctor.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HealthReport {
    /// False when any finding has severity `error`.
    pub ok: bool,
    /// Every problem found, warnings and errors.
    pub issues: Vec<Finding>,
    /// What `fix` repaired.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<String>,
}

/// The strings of a JSON list (other items and other values: none).
pub fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A vocabulary value in params: only the vocabulary's own values (files
/// may hold others another writer added; new input may not).
fn strict<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: crate::model::Vocabulary,
{
    let s = <std::borrow::Cow<'de, str> as Deserialize>::deserialize(d)?;
    T::parse_or_explain(&s).map_err(serde::de::Error::custom)
}

fn strict_opt<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: crate::model::Vocabulary,
{
    let s = <Option<std::borrow::Cow<'de, str>> as Deserialize>::deserialize(d)?;
    s.map(|s| T::parse_or_explain(&s))
        .transpose()
        .map_err(serde::de::Error::custom)
}

// ----- reads ------------------------------------------------------------------

/// An object as the read and list methods answer it: its stored fields,
/// and `_meta` when there is something to say about it. `_meta` is ours:
/// one a file carries among its unknown keys is never passed on (a cloned
/// repository's file could claim citations it does not have).
#[derive(Debug, Clone, JsonSchema)]
#[schemars(rename = "Read_{T}")]
pub struct Read<T> {
    /// The object's stored fields.
    #[serde(flatten)]
    pub object: T,
    /// What the read adds about the object (citations, near duplicates, the
    /// unaudited mark); absent when there is nothing to say.
    #[serde(rename = "_meta", default, skip_serializing_if = "ReadMeta::is_empty")]
    pub meta: ReadMeta,
}

impl<T: Serialize> Serialize for Read<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = serde_json::to_value(&self.object).map_err(serde::ser::Error::custom)?;
        if let Value::Object(m) = &mut v {
            m.shift_remove("_meta");
            if !self.meta.is_empty() {
                let meta = serde_json::to_value(&self.meta).map_err(serde::ser::Error::custom)?;
                m.insert("_meta".into(), meta);
            }
        }
        v.serialize(s)
    }
}

impl<T> Read<T> {
    pub(crate) fn plain(object: T) -> Self {
        Read {
            object,
            meta: ReadMeta::default(),
        }
    }
}

/// A page as the wire carries it: frontmatter fields and the markdown body.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PageWithBody {
    /// The page's frontmatter fields.
    #[serde(flatten)]
    pub page: crate::model::Page,
    /// The markdown after the frontmatter.
    pub body: String,
}

impl From<crate::model::Page> for PageWithBody {
    fn from(page: crate::model::Page) -> Self {
        let body = page.body.clone();
        PageWithBody { page, body }
    }
}

/// One event of the audit log as the log holds it: this vouch's fields
/// (`id`, `event`, `actor`, `created_at`, `object_ids`, `data`, the hash
/// chain) and whatever another implementation wrote beside them.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(transparent)]
pub struct AuditRecord(pub Value);

impl JsonSchema for AuditRecord {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AuditRecord".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Events other writers appended need not carry every field, so
        // none is required.
        let mut schema = crate::model::AuditEvent::json_schema(generator);
        if let Some(o) = schema.as_object_mut() {
            o.remove("required");
        }
        schema
    }
}
