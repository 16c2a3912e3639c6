//! The review gate (protocol §3, §4): the only path from `proposed/` to durable
//! knowledge. Validation runs at propose time and again at approve time.
//!
//! Approve writes in the order protocol §10 fixes — audit event, durable
//! file, `decided/` file, unlink from `proposed/` — each atomically. A crash
//! between steps is finished by the next approve of the same proposal: the
//! audit event is the commit record, found by walking the log back to the
//! proposal's own `proposal.create` event.

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{check_id, is_source_id, slugify};
use crate::kb::{Caller, Kb};
use crate::model::*;
use crate::params::*;
use crate::store::{Dir, atomic};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

mod approve;
pub mod delete;
mod lifecycle_proposals;
mod propose;
mod validate;

pub use approve::*;
pub(crate) use lifecycle_proposals::*;
pub use delete::propose_delete;
pub use propose::*;
use validate::*;

// ----- drafts: the normalized payload a proposal carries ---------------------

/// Any draft, by kind.
#[derive(Debug, Clone)]
pub enum Draft {
    /// A claim.
    Claim(ClaimDraft),
    /// A page.
    Page(PageDraft),
    /// An entity.
    Entity(EntityDraft),
    /// A relation.
    Relation(RelationDraft),
}

impl Draft {
    /// The kind of proposal it makes.
    pub fn kind(&self) -> ProposalKind {
        match self {
            Draft::Claim(_) => ProposalKind::Claim,
            Draft::Page(_) => ProposalKind::Page,
            Draft::Entity(_) => ProposalKind::Entity,
            Draft::Relation(_) => ProposalKind::Relation,
        }
    }
    fn slug_seed(&self) -> String {
        match self {
            Draft::Claim(d) => d.text.clone(),
            Draft::Page(d) => d.title.clone(),
            Draft::Entity(d) => d.name.clone(),
            Draft::Relation(d) => format!("{} {} {}", d.source, d.relation, d.target),
        }
    }
    fn to_payload(&self) -> Result<Value> {
        let v = match self {
            Draft::Claim(d) => serde_json::to_value(d),
            Draft::Page(d) => serde_json::to_value(d),
            Draft::Entity(d) => serde_json::to_value(d),
            Draft::Relation(d) => serde_json::to_value(d),
        };
        v.map_err(|e| Error::internal(format!("payload encoding: {e}")))
    }
    /// The payload a proposal file carries: the draft, plus the object's
    /// id at `id`, where vouch 1.x reads it (it builds the object from the
    /// payload). The fingerprint covers the draft; approval uses
    /// `object_id`.
    fn stored_payload(&self, object_id: &str) -> Result<Value> {
        let mut v = self.to_payload()?;
        if let Value::Object(m) = &mut v {
            m.insert("id".into(), json!(object_id));
        }
        Ok(v)
    }
    fn from_proposal(p: &Proposal) -> Result<Draft> {
        let bad = |e: serde_json::Error| {
            Error::new(
                ErrorKind::Corrupt,
                format!("proposal {} has an unreadable payload: {e}", p.id),
            )
        };
        let payload = p.payload.clone();
        Ok(match p.kind {
            ProposalKind::Claim => Draft::Claim(serde_json::from_value(payload).map_err(bad)?),
            ProposalKind::Page => Draft::Page(serde_json::from_value(payload).map_err(bad)?),
            ProposalKind::Entity => Draft::Entity(serde_json::from_value(payload).map_err(bad)?),
            ProposalKind::Relation => {
                Draft::Relation(serde_json::from_value(payload).map_err(bad)?)
            }
            ProposalKind::Lifecycle => {
                return Err(Error::internal(format!(
                    "proposal {} is a lifecycle change, not a draft",
                    p.id
                )));
            }
            ProposalKind::Delete => {
                return Err(Error::internal(format!(
                    "proposal {} asks to delete {}, not to add a draft",
                    p.id, p.object_id
                )));
            }
        })
    }
}

pub(super) fn object_dir(kind: ProposalKind) -> Dir {
    match kind {
        ProposalKind::Claim => Dir::Claims,
        ProposalKind::Page => Dir::Pages,
        ProposalKind::Entity => Dir::Entities,
        ProposalKind::Relation => Dir::Relations,
        // Lifecycle and delete proposals change existing objects; they
        // reserve no new id.
        ProposalKind::Lifecycle | ProposalKind::Delete => Dir::Claims,
    }
}

pub(super) fn object_key(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Claim => "claim_id",
        ProposalKind::Page => "page_id",
        ProposalKind::Entity => "entity_id",
        ProposalKind::Relation => "relation_id",
        ProposalKind::Lifecycle | ProposalKind::Delete => "object_id",
    }
}

/// Who decided, when, and the event's hash, as a logged decision event
/// records them (an interrupted decision is finished with its own
/// event's facts); `actor` when the event names none.
pub(super) fn logged_decision(
    kb: &Kb,
    ev: &Value,
    actor: &str,
) -> (String, Timestamp, Option<String>) {
    (
        ev.get("actor")
            .and_then(Value::as_str)
            .unwrap_or(actor)
            .to_string(),
        ev.get("created_at")
            .and_then(Value::as_str)
            .and_then(Timestamp::parse)
            .unwrap_or_else(|| kb.now()),
        ev.get("hash").and_then(Value::as_str).map(str::to_string),
    )
}

/// The proposal as decided: its status, who decided, when, why, and the
/// hash of the audit event that decided it.
pub(super) fn decided(
    proposal: &Proposal,
    status: ProposalStatus,
    actor: String,
    at: Timestamp,
    reason: Option<String>,
    event_hash: Option<String>,
) -> Proposal {
    let mut decided = proposal.clone();
    decided.status = status;
    decided.decided_by = Some(actor);
    decided.decided_at = Some(at);
    decided.reason = reason;
    decided.decision_hash = event_hash;
    decided
}

/// Write a decided proposal to `decided/` and drop it from `proposed/`,
/// as one batch.
pub(super) fn file_decision(kb: &Kb, decided: &Proposal) -> Result<()> {
    let mut batch = atomic::Batch::new(kb.layout().root());
    batch.write(
        kb.layout().file(Dir::Decided, &decided.id)?,
        crate::store::yaml::to_yaml(decided)?.into_bytes(),
    );
    batch.remove(kb.layout().file(Dir::Proposed, &decided.id)?);
    batch.commit()
}

#[cfg(test)]
mod object_ids {
    use crate::methods::dispatch;
    use crate::{Caller, Transport};
    use serde_json::json;

    /// One process proposing the same text again and again (a bulk
    /// import): the remembered queue still gives each its own object id.
    #[test]
    fn repeated_proposals_in_one_process_get_distinct_ids() {
        let (_dir, kb) = crate::testing::test_kb();
        let agent = Caller::new("agent", Transport::Jsonl);
        let src = dispatch(
            &kb,
            &agent,
            "kb.register_source",
            json!({"content": "x", "locator": "l"}),
        )
        .unwrap()["id"]
            .clone();
        let ids: Vec<String> = (0..4)
            .map(|_| {
                dispatch(
                    &kb,
                    &agent,
                    "kb.propose_claim",
                    json!({"text": "Same words", "evidence": [src]}),
                )
                .unwrap()["claim_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            ids,
            ["same-words", "same-words-2", "same-words-3", "same-words-4"]
        );
    }
}

#[cfg(test)]
mod shapes {
    use crate::model::{ClaimDraft, EntityDraft, PageDraft, RelationDraft};
    use crate::params::*;
    use schemars::JsonSchema;
    use std::collections::BTreeSet;

    /// The names of a type's fields as JSON reads them.
    fn fields<T: JsonSchema>() -> BTreeSet<String> {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    /// What an agent sends to `kb.propose_*` is its shape of the draft the
    /// proposal carries: the same fields, plus the four every proposal
    /// takes. A field added to a kind's draft (`@draft` in model/) and not
    /// to its params, or the other way round, fails here.
    fn same_fields<P: JsonSchema, D: JsonSchema>() {
        let mut params = fields::<P>();
        for every_proposal in ["session_id", "rationale", "dry_run", "secrets"] {
            assert!(params.remove(every_proposal), "{every_proposal}");
        }
        assert_eq!(params, fields::<D>(), "{}", std::any::type_name::<D>());
    }

    #[test]
    fn propose_params_and_drafts_name_the_same_fields() {
        same_fields::<ProposeClaimParams, ClaimDraft>();
        same_fields::<ProposePageParams, PageDraft>();
        same_fields::<ProposeEntityParams, EntityDraft>();
        same_fields::<ProposeRelationParams, RelationDraft>();
    }
}
