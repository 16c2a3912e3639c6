//! What a read adds about an object beyond its stored fields (citations
//! resolved for a reviewer, the unaudited mark, near duplicates): types the
//! method layer answers with and retrieval fills in, so they live below
//! both.

use schemars::JsonSchema;
use serde::Serialize;

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a read adds about an object, beyond its stored fields.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq)]
pub struct ReadMeta {
    /// A gated object (claim, page, entity, relation) that no approval or
    /// import let in, or whose file is not what the last event that wrote
    /// it recorded: written or edited by hand, or by another program.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unaudited: bool,
    /// Proposals: what they cite, resolved for a reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Vec<ResolvedCitation>>,
    /// Pending claim proposals, with a local embedding model: current
    /// approved claims almost the same in meaning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub possible_duplicates: Vec<NearDuplicate>,
    /// Lifecycle and delete proposals: what the change does, in words, and
    /// the approved objects it would change or remove as they read now (a
    /// claim's text, a page's title), so the person sees what agents will
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeView>,
}

/// A lifecycle proposal as a reviewer reads it.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ChangeView {
    /// What approving it does, in one sentence.
    pub summary: String,
    /// The objects it changes.
    pub objects: Vec<ChangedObject>,
}

/// An approved object a lifecycle proposal would change.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ChangedObject {
    /// `claim` or `page`.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// A claim's text or a page's title, as it reads now.
    pub text: String,
    /// Its status now.
    pub status: String,
}

impl ReadMeta {
    /// Nothing to add: the read carries no `_meta`.
    pub fn is_empty(&self) -> bool {
        !self.unaudited
            && self.citations.is_none()
            && self.possible_duplicates.is_empty()
            && self.change.is_none()
    }
}

/// A current approved claim almost the same in meaning as a proposed one.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct NearDuplicate {
    /// The approved claim's id.
    pub id: String,
    /// The approved claim's text.
    pub text: String,
    /// Cosine similarity, rounded to three places.
    pub similarity: f64,
}

/// One citation of a proposal, looked up: a source with its locator and
/// title, or an evidence span with its quote; `missing` when the id names
/// nothing.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ResolvedCitation {
    /// The id cited: a source's sha256 or an evidence id.
    pub id: String,
    /// `source` or `evidence`.
    pub kind: String,
    /// The id names no registered source or evidence record.
    #[serde(default, skip_serializing_if = "is_false")]
    pub missing: bool,
    /// Evidence: the source it quotes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// A source's locator, or an evidence span's place in its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    /// A cited source's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Evidence: the quoted text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// Evidence: the locator of the source it quotes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_locator: Option<String>,
    /// Who registered the source (recorded since this version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_by: Option<String>,
    /// `read_from_file` when vouch read the bytes from the file the locator
    /// names; `supplied` when the caller gave them and only named a
    /// locator (recorded since this version, and taken from the audit
    /// log); `read_from_missing_file` when said to be read from a file the
    /// project no longer holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The locator names a project file whose bytes are not the source's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub locator_differs: bool,
}

impl ResolvedCitation {
    /// Where the cited source's bytes came from, in words for a reviewer:
    /// who registered it, whether vouch read the file or the caller
    /// supplied the text, and whether the file the locator names now says
    /// something else. `None` when nothing is known.
    pub fn provenance(&self) -> Option<String> {
        provenance_text(
            self.registered_by.as_deref(),
            self.content.as_deref(),
            self.locator_differs,
        )
    }
}

/// A source's provenance in words (see [`ResolvedCitation::provenance`]).
pub fn provenance_text(by: Option<&str>, content: Option<&str>, differs: bool) -> Option<String> {
    {
        let mut parts = Vec::new();
        if let Some(by) = by {
            parts.push(format!("registered by {by}"));
        }
        match content {
            Some("supplied") => parts
                .push("text supplied by the caller, not read from the file it names".to_string()),
            Some("read_from_file") => parts.push("read from the file".to_string()),
            Some("read_from_missing_file") => parts.push(
                "WARNING: said to be read from the file it names, which is not in the project"
                    .to_string(),
            ),
            _ => {}
        }
        if differs {
            parts.push("WARNING: the project file it names holds different text now".to_string());
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
