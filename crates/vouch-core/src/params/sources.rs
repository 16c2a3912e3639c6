//! Sources and evidence: registering, verifying, citing.

use super::vocab::strict_opt;
use crate::model::SourceType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to do with a secret found in what a call would store (docs/secrets.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretsPolicy {
    /// Refuse the call, naming each secret's field, line, column and kind.
    #[default]
    Refuse,
    /// Store it with each secret replaced by `[REDACTED:<kind>]` (before a
    /// source is hashed: its id is the hash of what is stored). A person's
    /// choice only.
    Mask,
    /// Store it as is. A person's choice only.
    Allow,
}

impl SecretsPolicy {
    /// Its name in params.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretsPolicy::Refuse => "refuse",
            SecretsPolicy::Mask => "mask",
            SecretsPolicy::Allow => "allow",
        }
    }
}

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
    /// A secret in the content (a private key, a cloud or API token, a
    /// password assignment: docs/secrets.md) refuses the call (`refuse`,
    /// the default). `mask` and `allow` store it masked or as is: a
    /// person's choice, refused from an agent.
    #[serde(default)]
    pub secrets: SecretsPolicy,
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
    /// A secret in the file (a private key, a cloud or API token, a
    /// password assignment: docs/secrets.md) refuses the call (`refuse`,
    /// the default). `mask` and `allow` store it masked or as is: a
    /// person's choice, refused from an agent.
    #[serde(default)]
    pub secrets: SecretsPolicy,
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
    /// `missing` (no meta or no content, or a tombstone no redaction
    /// wrote), `unparseable` (meta.yaml does not parse), `drifted` (content
    /// hash differs), `unredacted` (content put back after a redaction),
    /// `unreadable`.
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
    /// Sources a person redacted: their content is a tombstone (meta.yaml
    /// keeps the id, the length and who/when/why), as the audit log's
    /// `object.redact` event records. Not an issue.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
}

/// Params of kb.register_evidence.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterEvidenceParams {
    /// The source the quote comes from.
    pub source_id: String,
    /// Exact text that occurs in the source's stored content.
    pub quote: String,
    /// A secret in the quote refuses the call (`refuse`, the default);
    /// `allow` stores it as is: a person's choice, refused from an agent.
    /// A quote is the source's own bytes, so it cannot be masked.
    #[serde(default)]
    pub secrets: SecretsPolicy,
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
