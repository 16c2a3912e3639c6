//! Lifecycle proposals: an agent's supersede, contradict, archive, confirm,
//! cite or revert where the gate holds it for review — proposed, decided
//! and applied when a person approves.

use super::*;

/// The change a lifecycle proposal carries.
pub(super) fn lifecycle_change(p: &Proposal) -> Result<crate::review::lifecycle::Change> {
    serde_json::from_value(p.payload.clone()).map_err(|e| {
        Error::new(
            ErrorKind::Corrupt,
            format!("proposal {} has an unreadable lifecycle change: {e}", p.id),
        )
    })
}

/// Under `review.gate_lifecycle`, an agent's lifecycle call becomes a
/// pending proposal (kind `lifecycle`) that a person approves like any
/// other; approving it applies the change. It is checked first as applying
/// it would check it (a claim that does not exist, a source that is not
/// registered, a path for an id are refused now, never filed as a proposal
/// no one can approve). Returns the proposal id; `None` when the change
/// would change nothing (a citation the claim already has).
pub(crate) fn propose_lifecycle(
    kb: &Kb,
    caller: &Caller,
    change: &crate::review::lifecycle::Change,
) -> Result<Option<String>> {
    check_actor(&caller.actor)?;
    let subject = change.subject().to_string();
    check_id("id", &subject)?;
    let mut payload = serde_json::to_value(change)
        .map_err(|e| Error::internal(format!("payload encoding: {e}")))?;
    // A reason is shown to the reviewer like proposed text.
    pub(super) fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(o) => o.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    strings(&payload, &mut texts);
    let mut problems = Problems(Vec::new());
    check_all_controls(&mut problems, "params", &texts);
    if !problems.0.is_empty() {
        return Err(Error::invalid(problems.0.join("; ")));
    }
    let _lock = kb.lock()?;
    if !change.check(kb, caller)? {
        return Ok(None);
    }
    // A quoted span is kept as evidence now, as a proposed claim's is, and
    // the proposal names it by id: the reviewer sees the quote in its
    // source, as for a claim.
    use crate::review::lifecycle::Change;
    if let Change::Cite(CiteParams {
        id,
        evidence: Citation::Span { source_id, quote },
    }) = change
    {
        let ev = crate::sources::mint_evidence_locked(kb, caller, source_id, quote)?;
        let minted = Change::Cite(CiteParams {
            id: id.clone(),
            evidence: Citation::Id(ev.evidence_id),
        });
        payload = serde_json::to_value(&minted)
            .map_err(|e| Error::internal(format!("payload encoding: {e}")))?;
    }
    let id = file_change_proposal(
        kb,
        caller,
        ProposalKind::Lifecycle,
        &subject,
        payload,
        None,
        json!({}),
    )?;
    Ok(Some(id))
}

/// The lifecycle event that carried out (and so decided) a lifecycle
/// proposal, if one did.
pub(super) fn lifecycle_decision(kb: &Kb, proposal_id: &str) -> Result<Option<Value>> {
    Ok(kb.audit_log().read_all()?.into_iter().rev().find(|e| {
        e.get("data")
            .and_then(|d| d.get("proposal_id"))
            .and_then(Value::as_str)
            == Some(proposal_id)
    }))
}

/// Apply an approved lifecycle proposal's change as the approver: its
/// lifecycle event names the proposal and is the decision (see
/// [`approve_change`]).
pub(super) fn apply_as_approver(
    kb: &Kb,
    caller: &Caller,
    approver: &str,
    proposal: &Proposal,
) -> Result<()> {
    let as_approver = Caller {
        actor: approver.to_string(),
        ..caller.clone()
    };
    lifecycle_change(proposal)?
        .apply_locked(kb, &as_approver, Some(&proposal.id))
        .map_err(|e| {
            Error::new(
                e.kind,
                format!(
                    "lifecycle proposal {} no longer applies: {}",
                    proposal.id, e.message
                ),
            )
        })?;
    Ok(())
}
