//! Removing what must go: a reviewed delete of approved knowledge.

use crate::model::DeleteKind;
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
