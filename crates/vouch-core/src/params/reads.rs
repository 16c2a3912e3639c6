//! Reading: lists, status, the audit log, and the shape every read answers in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// The lock this process takes before it writes, beside the file lock,
    /// when writers share more than one machine (a team server's
    /// database, named without its password); none otherwise.
    pub shared_lock: Option<String>,
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
    /// The vectors, when a model is configured: how many documents have
    /// them and how many wait (searches by meaning say they are partial
    /// until none does; `kb.index_rebuild` embeds them all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors: Option<StatusVectors>,
}

/// The vectors of the configured model, as `kb.status` reports them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusVectors {
    /// The model's identity.
    pub model: String,
    /// Documents with vectors.
    pub documents: usize,
    /// Documents without vectors yet.
    pub pending: usize,
    /// Where the replicas of a team server share their vectors, and what
    /// this process took and kept there; none outside a team server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<StatusSharedVectors>,
}

/// A team server's shared vectors, as one replica has used them since it
/// started.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusSharedVectors {
    /// The team database, named without its password.
    pub database: String,
    /// Texts whose vectors this process took (another replica's model
    /// made them).
    pub taken: usize,
    /// Texts whose vectors this process's model made and kept there.
    pub kept: usize,
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
