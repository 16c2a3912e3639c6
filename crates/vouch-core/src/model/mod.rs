//! The object model of protocol §2, in the on-disk form of docs/format.md:
//! fields in the order of the spec's tables, optional fields omitted when
//! empty, unknown keys kept in `extra` and written back after known ones.
//! The four reviewed kinds are each defined once with their draft (the
//! fields marked `@draft`; `model/kind.rs` has the macro that makes both).

mod enums;
mod kind;
pub mod meta;
mod time;
mod written;

pub use enums::*;
pub use time::Timestamp;
pub use written::Written;

use kind::knowledge_kind;

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

/// Captured material, content-addressed: `sources/<id>/meta.yaml`, with the
/// bytes beside it in `content`. Not gated (it asserts nothing), but audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// The lowercase hex sha256 of the bytes (64 chars), so the same bytes are
    /// one source; also its folder name.
    pub id: String,
    /// What kind of material it is; `file` when absent.
    #[serde(rename = "type", default = "default_source_type")]
    pub source_type: SourceType,
    /// Where the bytes came from: a project-relative path, URL, commit, ….
    /// Shown beside every quote of it.
    pub locator: String,
    /// A title shown beside its quotes (a file's name when registered by path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The sha256 of the bytes again: mirrors `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The bytes never change (other bytes make another source); `true` when
    /// absent.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub immutable: bool,
    /// A scope name (`project`) or, in files written by vouch 1.x, a map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Value>,
    /// Length of the bytes: a file of another size differs without being read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_size: Option<u64>,
    /// MIME type of the bytes; `text/plain` when absent.
    #[serde(default = "default_media_type")]
    pub media_type: String,
    /// When it was registered.
    pub created_at: Timestamp,
    /// Implementation-defined. vouch records the provenance reviewers see:
    /// `registered_by` (the actor) and `content` (`read_from_file` or `supplied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Free labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Keys this version does not know, kept and written back (see [`Extra`]).
    #[serde(flatten)]
    pub extra: Extra,
}

fn default_source_type() -> SourceType {
    SourceType::File
}
fn default_media_type() -> String {
    "text/plain".to_string()
}

/// A quoted span inside a source (`evidence/<id>.yaml`), for a claim to cite.
/// Not gated (it asserts nothing), but audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// As vouch mints it, `ev-` and 16 hex digits of sha256(`<source_id>\n<quote>`):
    /// the same quote of the same source always gets the same id.
    pub id: String,
    /// The sha256 id of the source it quotes; must be registered.
    pub source_id: String,
    /// The source's type, copied so a filter need not load the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<SourceType>,
    /// Where the span sits in the source: `L<first>-L<last>` (1-based lines)
    /// as vouch writes it; other writers use forms like `t=00:14:23` or `#sec-3`.
    pub locator: String,
    /// The exact text of the span; it must occur in the source's bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The sha256 hex of the quote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// When it was registered.
    pub created_at: Timestamp,
    /// Keys this version does not know, kept and written back (see [`Extra`]):
    /// vouch's `span` (`{start, end}` byte offsets of the quote), vouch 1.x's
    /// `byte_start` and `byte_end`.
    #[serde(flatten)]
    pub extra: Extra,
}

knowledge_kind! {
    /// A reviewed assertion (`claims/<id>.yaml`): the smallest thing that can be
    /// cited, contradicted, superseded or archived.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct Claim {
        /// Slug id (from the text), unique among claims.
        pub id: String,
        /// The assertion: one sentence, on one line.
        @draft pub text: String,
        /// What kind of assertion it is.
        #[serde(rename = "type")]
        @draft pub claim_type: ClaimType,
        /// Where it stands: approval writes `working`; lifecycle methods change it.
        pub status: ClaimStatus,
        /// How sure the proposer is, 0..1; `0.7` when absent. Breaks ties in
        /// context packs.
        #[serde(default = "default_confidence")]
        @draft pub confidence: f64,
        /// Citations: source ids (sha256) and evidence ids. At least one, unless
        /// `review.require_citations` is off and the claim is `working`.
        #[serde(default)]
        @draft pub evidence: Vec<String>,
        /// Ids of the entities it is about.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub entities: Vec<String>,
        /// Ids of the claims it replaces.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub supersedes: Vec<String>,
        /// The id of the claim that replaced it; set with status `superseded`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub superseded_by: Option<String>,
        /// Ids of the claims it conflicts with; each lists this one back.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub contradicts: Vec<String>,
        /// A scope name ([`Scope`]) or, in files written by vouch 1.x, a map.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        @draft pub scope: Option<Value>,
        /// Free labels, indexed with the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub tags: Vec<String>,
        /// When it was approved (became durable).
        pub created_at: Timestamp,
        /// When it last changed: approval, or a lifecycle change.
        pub updated_at: Timestamp,
        /// When `kb.confirm` last said it still holds; `lint` measures staleness
        /// from it, else from `updated_at`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub last_confirmed_at: Option<Timestamp>,
        /// The actor who approved it: the file's word; the audit log is the proof.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub approved_by: Option<String>,
        /// Keys this version does not know, kept and written back (see [`Extra`]);
        /// approval puts the proposal's `metadata` here.
        #[serde(flatten)]
        pub extra: Extra,
    }

    /// A claim as proposed: what approval turns into a [`Claim`]. Its text is
    /// trimmed, its quoted spans already minted as evidence ids.
    draft ClaimDraft {
        /// Where it came from in another format; kept on the approved claim under
        /// `metadata` (in its unknown keys).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub metadata: Option<serde_json::Map<String, Value>>,
    }
    record ClaimRecord;
}

impl Claim {
    /// The fields a lifecycle change (supersede, contradict, archive,
    /// confirm, cite, and their revert) may set: every other field is what
    /// the gate approved.
    pub const LIFECYCLE_FIELDS: &[&str] = &[
        "status",
        "superseded_by",
        "supersedes",
        "contradicts",
        "evidence",
        "last_confirmed_at",
        "updated_at",
    ];

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

knowledge_kind! {
    /// A typed, named thing that claims and pages are about: a graph node
    /// (`entities/<id>.yaml`).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct Entity {
        /// Slug id (from the name), unique among entities.
        pub id: String,
        /// The name it goes by; indexed as its title.
        @draft pub name: String,
        /// What kind of thing it is.
        #[serde(rename = "type")]
        @draft pub entity_type: EntityType,
        /// Other names for it, indexed so a search by any of them finds it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub aliases: Vec<String>,
        /// What it is, in prose; indexed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        @draft pub description: Option<String>,
        /// Free labels.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub tags: Vec<String>,
        @approval,
    }

    /// An entity as proposed: what approval turns into an [`Entity`].
    draft EntityDraft {}
    record EntityRecord;
}

knowledge_kind! {
    /// A typed edge between two objects, read `source relation target`
    /// (`relations/<id>.yaml`).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct Relation {
        /// Slug id (from `source relation target`), unique among relations.
        pub id: String,
        /// The id of the object the edge starts from: an entity, claim, page,
        /// relation, evidence or source.
        @draft pub source: String,
        /// What the edge says: `source relation target`.
        @draft pub relation: RelationType,
        /// The id of the object the edge points to (any kind, as `source`).
        @draft pub target: String,
        /// How sure the proposer is, 0..1; `0.7` when absent.
        #[serde(default = "default_confidence")]
        @draft pub confidence: f64,
        /// Citations, as a claim's: source ids (sha256) and evidence ids.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub evidence: Vec<String>,
        @approval,
    }

    /// A relation as proposed: what approval turns into a [`Relation`].
    draft RelationDraft {}
    record RelationRecord;
}

knowledge_kind! {
    /// A page: YAML frontmatter (these fields) plus a markdown body.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct Page {
        /// Slug id (from the title), unique among pages.
        pub id: String,
        /// The page's title; indexed, weighted above the body.
        @draft pub title: String,
        /// What the page is for; `concept` when absent.
        #[serde(rename = "type", default = "default_page_type")]
        @draft pub page_type: PageType,
        /// Where it stands; `active` when absent. Approval writes `active`,
        /// `kb.archive` `archived`.
        #[serde(default = "default_page_status")]
        pub status: PageStatus,
        /// Ids of the claims it draws on; `lint` flags an active page citing a
        /// retired one.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub claims: Vec<String>,
        /// Ids of the entities it is about.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub entities: Vec<String>,
        /// Ids (sha256) of the sources it cites.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub sources: Vec<String>,
        /// Free labels.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        @draft pub tags: Vec<String>,
        @approval,
        /// The markdown after the frontmatter; not a frontmatter key.
        #[serde(skip)]
        pub body: String,
    }

    /// A page as proposed: what approval turns into a [`Page`].
    draft PageDraft {
        /// The markdown body.
        #[serde(default)]
        pub body: String,
    }
    record PageRecord;
}

impl Page {
    /// The fields a lifecycle change (archive, and its revert) may set.
    pub const LIFECYCLE_FIELDS: &[&str] = &["status", "updated_at"];
}

fn default_page_type() -> PageType {
    PageType::Concept
}
fn default_page_status() -> PageStatus {
    PageStatus::Active
}

/// A block of an agent's work (`sessions/<id>.yaml`): it groups the proposals
/// made in it so `kb.crystallize` can summarise them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Session {
    /// `sess-YYYYMMDD-HHMMSS-<6 hex>`, so names sort in the order sessions began.
    pub id: String,
    /// What the session is for, as given at start; titles its crystallized page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// A free note given at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The actor who started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// `open` until `kb.session_end`; an ended session takes no proposals.
    #[serde(default = "default_session_status")]
    pub status: SessionStatus,
    /// When it started.
    pub started_at: Timestamp,
    /// When `kb.session_end` ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// Proposal ids created within this session, in order.
    #[serde(default)]
    pub proposals: Vec<String>,
    /// Keys this version does not know, kept and written back (see [`Extra`]).
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
    /// `YYYYMMDD-HHMMSS-<8 hex>`, unique across `proposed/` and `decided/`; kept
    /// when the proposal moves from one to the other.
    pub id: String,
    /// What it proposes to add (or, for `lifecycle` and `delete`, change).
    pub kind: ProposalKind,
    /// `pending` in `proposed/`; `approved` or `rejected` once in `decided/`.
    pub status: ProposalStatus,
    /// The id the durable artifact will get (reserved at propose time).
    /// vouch 1.x does not write it; loading fills it in (see
    /// `Kb::load_proposal`).
    #[serde(default)]
    pub object_id: String,
    /// The actor who proposed it, who may not approve it.
    pub proposed_by: String,
    /// vouch 1.x calls it `proposed_at`.
    #[serde(alias = "proposed_at")]
    pub created_at: Timestamp,
    /// The session it was made in (which lists it in `proposals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why the proposer wants it, for the reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// The normalized params: for the four object kinds the draft's fields,
    /// quoted spans already turned into evidence ids.
    pub payload: Value,
    /// The actor who approved or rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When it was approved or rejected.
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
    /// Keys this version does not know, kept and written back (see [`Extra`]).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One line of `audit.log.jsonl`. Written as canonical JSON (sorted keys,
/// compact); `hash = sha256_hex(prev_hash + canonical_json(event without hash))`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEvent {
    /// 32 random hex digits.
    pub id: String,
    /// What happened, a dotted verb: `proposal.approve`, `claim.supersede`, ….
    pub event: String,
    /// Who did it.
    pub actor: String,
    /// When it happened.
    pub created_at: Timestamp,
    /// The ids of the objects it concerns.
    #[serde(default)]
    pub object_ids: Vec<String>,
    /// A validation-only run that changed nothing (a spec field; vouch appends no
    /// event for a dry run, so writes `false`).
    #[serde(default)]
    pub dry_run: bool,
    /// `kb.revert` can undo it from `data.before`: set on lifecycle events.
    #[serde(default)]
    pub reversible: bool,
    /// Event-specific details, e.g. a lifecycle event's `before` and `after` states.
    #[serde(default)]
    pub data: Value,
    /// The `hash` of the event before it (64 zeros for the first): the link that
    /// shows an edit, cut or reordering of the log.
    #[serde(default)]
    pub prev_hash: String,
    /// sha256 hex of `prev_hash` and the canonical JSON of the event without
    /// `hash`; filled in on append.
    #[serde(default)]
    pub hash: String,
    /// Keys this version does not know, kept as read (see [`Extra`]).
    #[serde(flatten)]
    pub extra: Extra,
}
