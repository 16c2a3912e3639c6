//! Agent sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
