//! Bundles: export, check, import.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Claims, pages, entities and relations in the bundle that no review
    /// let in here (written or edited by hand), by bundle path: the
    /// manifest lists them as `unreviewed`, and an import keeps them
    /// unaudited. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreviewed: Vec<String>,
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
    /// Members no review let in: claims, pages, entities and relations no
    /// approval by a person among the bundle's own `decided/` records wrote
    /// as they are (an approver this KB's log shows to be an agent is no
    /// person), and whatever the manifest lists as `unreviewed`. An import
    /// writes them, but not as reviewed knowledge — they are marked
    /// unaudited here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreviewed: Vec<String>,
}

/// An object by kind (`claim`, `page`, `entity`, `relation`, `evidence`,
/// `session`, `decided`, `source`) and id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
pub struct ObjectRef {
    /// The object's kind.
    pub kind: String,
    /// The object's id.
    pub id: String,
    /// What a claim, page, entity or relation says, as an import would
    /// serve it: a claim's text, a page's title and body, an entity's name,
    /// a relation's ends and type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// True when no approval by a person among the bundle's `decided/`
    /// records wrote it as it is (or the manifest lists it `unreviewed`):
    /// an import writes it marked unaudited, never as reviewed knowledge.
    /// An approver this KB's log shows to be an agent is no person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreviewed: bool,
    /// Who approved it, as the bundle's own `decided/` record that wrote
    /// it says (`decided_by`). Absent when no record did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// Who that approver is in this KB's eyes. An approval by an agent of
    /// this KB does not count: the object arrives unreviewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<ApproverStanding>,
}

/// Who a bundle's approver is in the importing KB's eyes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApproverStanding {
    /// This KB's audit log shows them deciding: a person.
    Decider,
    /// A reviewer the person named in their own config (`review.reviewers`).
    Reviewer,
    /// An agent here: this KB's log shows them proposing and never
    /// deciding. Their approval does not count; the object arrives
    /// unreviewed.
    Agent,
    /// A name this KB has never seen decide (nor propose). Their approval
    /// counts, as a person's elsewhere; check who they are before importing.
    Unknown,
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
    /// How many objects written were listed `unreviewed` by the bundle:
    /// not admitted by this import, so marked unaudited here as they were
    /// where they came from.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreviewed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
