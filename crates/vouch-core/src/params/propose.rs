//! Proposing knowledge and deciding proposals.

use super::sources::{Citation, SecretsPolicy};
use super::vocab::{strict, strict_opt};
use crate::model::meta::ReadMeta;
use crate::model::{ClaimType, EntityType, PageType, RelationType, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A `kb.propose_*` params struct: its own fields, then the four every
/// proposal takes, written once: the session to file it under, why (of
/// `what`), a dry run, and the secrets policy (naming what it `stores`).
macro_rules! propose_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($fields:tt)* }
        what = $what:literal, stores = $stores:literal
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($fields)*
            /// An open session (from kb.session_start) to file the proposal under.
            #[serde(default)]
            pub session_id: Option<String>,
            #[doc = concat!(" Why this ", $what, "; recorded on the proposal.")]
            #[serde(default)]
            pub rationale: Option<String>,
            /// Validate only: write nothing.
            #[serde(default)]
            pub dry_run: bool,
            #[doc = concat!(
                " A secret in what this proposal would store (", $stores, ",\n",
                "docs/secrets.md) refuses the call (`refuse`, the default). `mask`\n",
                "stores each secret as `[REDACTED:<kind>]` (a quote cannot be\n",
                "masked) and `allow` as is: a person's choice, refused from an agent."
            )]
            #[serde(default)]
            pub secrets: SecretsPolicy,
        }
    };
}

propose_params! {
    /// Params of kb.propose_claim.
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
    }
    what = "claim", stores = "the text, the rationale, quoted spans"
}

propose_params! {
    /// Params of kb.propose_page.
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
    }
    what = "page", stores = "the title, the body, the rationale"
}

propose_params! {
    /// Params of kb.propose_entity.
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
    }
    what = "entity", stores = "the name, aliases, description and rationale"
}

propose_params! {
    /// Params of kb.propose_relation.
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
    }
    what = "relation", stores = "the rationale, quoted spans"
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
    /// Where a person decides it: this proposal's page on vouch's review
    /// pages, when the server knows their address (the person's own
    /// `review.url`, or an HTTP server's own loopback address). Show it to
    /// the person; the decision is made there, signed in as a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_url: Option<String>,
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
