//! Lint and doctor.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
