//! Removing what must go: a reviewed delete of approved knowledge, and a
//! person's redaction of what holds a secret.

use crate::model::{DeleteKind, RedactKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of kb.propose_delete.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeDeleteParams {
    /// What the object is: `claim`, `page`, `entity` or `relation`.
    pub kind: DeleteKind,
    /// The approved object's id.
    pub id: String,
    /// Required: why it must go, for the reviewer and the audit log.
    pub reason: String,
    /// An open session (from kb.session_start) to file the proposal under.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Validate only: write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Params of kb.redact (a person) and kb.propose_redact (anyone).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactParams {
    /// What to redact: `source` (its content becomes a tombstone), `claim`
    /// (its text is masked), `evidence` (its quote goes) or `page` (its
    /// body is masked).
    pub kind: RedactKind,
    /// Its id (a source's sha256, an evidence, claim or page id).
    pub id: String,
    /// Required: why, for the reviewer and the audit log (never the secret
    /// itself).
    pub reason: String,
    /// Check only: write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Result of kb.redact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RedactResult {
    /// Always true; a refusal is an error, not a result.
    pub ok: bool,
    /// What was redacted.
    pub kind: RedactKind,
    /// Its id.
    pub id: String,
    /// Every file the redaction rewrote or removed, by its path inside
    /// `.vouch/`, with the sha256 of the bytes it took out (never the
    /// bytes).
    pub removed: std::collections::BTreeMap<String, String>,
    /// The paths, from the project folder (the one holding `.vouch/`),
    /// whose earlier versions in git still hold what was taken out: purge
    /// them from history (docs/redaction.md shows the `git filter-repo`
    /// commands), then rotate the credential.
    pub purge: Vec<String>,
    /// Of `purge`, the files the redaction removed (a source's content):
    /// their whole history can go (`git filter-repo --invert-paths`); the
    /// others were rewritten, and their history needs the secret replaced.
    pub gone: Vec<String>,
    /// What else still holds the bytes in the working tree, if anything
    /// (a source that a redacted quote came from): redact it too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub still_held: Vec<String>,
    /// The audit event that records it (empty on a dry run).
    pub event_id: String,
    /// True when this was a dry run: nothing was written.
    pub dry_run: bool,
}
