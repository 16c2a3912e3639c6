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
pub mod redact;
mod validate;

pub use approve::*;
pub use delete::propose_delete;
pub(crate) use lifecycle_proposals::*;
pub use propose::*;
pub use redact::{propose_redact, redact};
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
    /// What the object's id is a slug of, with every secret the scan
    /// finds in it masked: an id is never redacted (the audit log names it
    /// in every event), so a text a person let in with a secret as is must
    /// not carry the secret into its id.
    fn slug_seed(&self) -> String {
        let seed = match self {
            Draft::Claim(d) => d.text.clone(),
            Draft::Page(d) => d.title.clone(),
            Draft::Entity(d) => d.name.clone(),
            Draft::Relation(d) => format!("{} {} {}", d.source, d.relation, d.target),
        };
        let found = crate::secrets::scan(seed.as_bytes());
        if found.is_empty() {
            return seed;
        }
        String::from_utf8_lossy(&crate::secrets::mask(seed.as_bytes(), &found)).into_owned()
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
            ProposalKind::Delete | ProposalKind::Redact => {
                return Err(Error::internal(format!(
                    "proposal {} asks to {} {}, not to add a draft",
                    p.id, p.kind, p.object_id
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
        // Lifecycle, delete and redact proposals change existing objects;
        // they reserve no new id.
        ProposalKind::Lifecycle | ProposalKind::Delete | ProposalKind::Redact => Dir::Claims,
    }
}

pub(super) fn object_key(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Claim => "claim_id",
        ProposalKind::Page => "page_id",
        ProposalKind::Entity => "entity_id",
        ProposalKind::Relation => "relation_id",
        ProposalKind::Lifecycle | ProposalKind::Delete | ProposalKind::Redact => "object_id",
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

/// [`logged_decision`] of an interrupted approval being finished (a
/// delete, a redaction): refused when the one who logged it proposed it.
pub(super) fn logged_approval(
    kb: &Kb,
    ev: &Value,
    approver: &str,
    proposal: &Proposal,
) -> Result<(String, Timestamp, Option<String>)> {
    let (actor, at, hash) = logged_decision(kb, ev, approver);
    if actor == proposal.proposed_by {
        return Err(Error::denied(format!(
            "{actor} proposed {} and cannot also approve it",
            proposal.id
        )));
    }
    Ok((actor, at, hash))
}

/// Approve a change proposal whose change logs its own event, naming the
/// proposal, as the decision — a lifecycle change or a redaction (checked
/// for integrity and self-approval by the caller, who holds the lock): make
/// the change as the approver, then file the decision. A crash in between
/// is finished by approving again: the event is found by its
/// `proposal_id` and the change not made twice.
pub(super) fn approve_change(
    kb: &Kb,
    caller: &Caller,
    approver: &str,
    proposal: Proposal,
    reason: Option<String>,
) -> Result<ApproveResult> {
    // A redaction's payload is read first: one that cannot be read is
    // refused even where its redaction was made already.
    let redaction = match proposal.kind {
        ProposalKind::Redact => Some(redact::payload_of(&proposal)?),
        _ => None,
    };
    let logged = match redaction {
        Some(_) => redact::redaction_of(kb, &proposal.id)?,
        None => lifecycle_decision(kb, &proposal.id)?,
    };
    let (actor, at, hash, recovered) = match logged {
        Some(ev) => {
            let (actor, at, hash) = logged_approval(kb, &ev, approver, &proposal)?;
            (actor, at, hash, true)
        }
        None => {
            match &redaction {
                Some(payload) => {
                    redact::redact_as_approver(kb, caller, approver, &proposal.id, payload)?
                }
                None => apply_as_approver(kb, caller, approver, &proposal)?,
            }
            let last = kb.audit_log().hash_before(kb.audit_log().len()?)?;
            (approver.to_string(), kb.now(), last, false)
        }
    };
    let decided = decided(&proposal, ProposalStatus::Approved, actor, at, reason, hash);
    file_decision(kb, &decided)?;
    Ok(ApproveResult {
        ok: true,
        // A redaction names what it redacts in its payload.
        object_id: redaction.map_or_else(|| proposal.object_id.clone(), |r| r.id),
        object_kind: proposal.kind.as_str().to_string(),
        proposal_id: proposal.id,
        recovered,
    })
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

/// File a pending proposal of a change to an existing object (a delete, a
/// redaction) by `caller`: its `proposal.create` event — `data` with the
/// proposal's kind and fingerprint added — is logged, then the file is
/// created; a session it names lists it. Caller holds the lock. Returns
/// the proposal's id.
pub(super) fn file_change_proposal(
    kb: &Kb,
    caller: &Caller,
    kind: ProposalKind,
    object_id: &str,
    payload: Value,
    session_id: Option<String>,
    mut data: Value,
) -> Result<String> {
    let now = kb.now();
    let id = new_proposal_id(kb, &now)?;
    let proposal = Proposal {
        id: id.clone(),
        kind,
        status: ProposalStatus::Pending,
        object_id: object_id.to_string(),
        proposed_by: caller.actor.clone(),
        created_at: now,
        session_id: session_id.clone(),
        rationale: None,
        payload,
        decided_by: None,
        decided_at: None,
        reason: None,
        decision_hash: None,
        extra: Default::default(),
    };
    data["kind"] = json!(kind.as_str());
    data[FINGERPRINT_KEY] = json!(proposal_fingerprint(&proposal)?);
    let mut ev = kb.event(
        "proposal.create",
        &caller.actor,
        vec![id.clone(), object_id.to_string()],
        data,
    );
    let path = kb.layout().file(Dir::Proposed, &id)?;
    let yaml = crate::store::yaml::to_yaml(&proposal)?;
    kb.audited(std::slice::from_mut(&mut ev), || {
        if atomic::create_new(kb.layout().root(), &path, yaml.as_bytes())? {
            Ok(())
        } else {
            Err(Error::internal(format!("proposal id {id} collided; retry")))
        }
    })?;
    if let Some(sid) = &session_id
        && let Some(mut s) = kb.load::<Session>(sid)?
    {
        s.proposals.push(id.clone());
        kb.store(&s)?;
    }
    Ok(id)
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
    batch.commit()?;
    kb.forget_pending(std::slice::from_ref(&decided.id));
    Ok(())
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
