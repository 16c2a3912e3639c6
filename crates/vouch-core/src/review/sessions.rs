//! Sessions: a work block that groups the proposals an agent made, so
//! `kb.crystallize` can summarise it and flag what is ready for review.

use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::kb::{Caller, Kb};
use crate::model::{PageType, Proposal, ProposalKind, ProposalStatus, Session, SessionStatus};
use crate::params::*;
use crate::store::Dir;
use serde_json::json;

fn load(kb: &Kb, id: &str) -> Result<Session> {
    check_id("session id", id)?;
    kb.load::<Session>(id)?
        .ok_or_else(|| Error::not_found(format!("session {id:?} does not exist")))
}

/// `kb.session_start`: open a session for `caller` under a new
/// `sess-<time>-<hex>` id.
pub fn start(kb: &Kb, caller: &Caller, p: SessionStartParams) -> Result<SessionStartResult> {
    let _lock = kb.lock()?;
    let now = kb.now();
    let id = loop {
        let id = format!(
            "sess-{}-{}",
            now.0.format("%Y%m%d-%H%M%S"),
            crate::clock::random_hex(kb.clock(), 6)
        );
        if !kb.exists(Dir::Sessions, &id) {
            break id;
        }
    };
    let session = Session {
        id: id.clone(),
        task: p.task,
        note: p.note,
        actor: Some(caller.actor.clone()),
        status: SessionStatus::Open,
        started_at: now,
        ended_at: None,
        proposals: Vec::new(),
        extra: Default::default(),
    };
    let mut ev = kb.event("session.start", &caller.actor, vec![id.clone()], json!({}));
    kb.audited(std::slice::from_mut(&mut ev), || kb.store(&session))?;
    Ok(SessionStartResult { session_id: id })
}

/// `kb.session_end`: close an open session, answering how many proposals
/// it produced; refused when it already ended.
pub fn end(kb: &Kb, caller: &Caller, p: SessionIdParams) -> Result<SessionEndResult> {
    let _lock = kb.lock()?;
    let mut s = load(kb, &p.session_id)?;
    if s.status == SessionStatus::Ended {
        return Err(Error::conflict(format!(
            "session {} already ended at {}",
            s.id,
            s.ended_at.map(|t| t.to_string()).unwrap_or_default()
        )));
    }
    s.status = SessionStatus::Ended;
    s.ended_at = Some(kb.now());
    let mut ev = kb.event(
        "session.end",
        &caller.actor,
        vec![s.id.clone()],
        json!({"proposals": s.proposals.len()}),
    );
    kb.audited(std::slice::from_mut(&mut ev), || kb.store(&s))?;
    Ok(SessionEndResult {
        ok: true,
        proposals: s.proposals.len(),
    })
}

/// The proposal as it stands now: decided if in `decided/`, else pending.
fn current(kb: &Kb, id: &str) -> Option<Proposal> {
    kb.load_proposal(Dir::Decided, id)
        .ok()
        .flatten()
        .or_else(|| kb.load_proposal(Dir::Proposed, id).ok().flatten())
}

fn describe(p: &Proposal) -> String {
    let what = p
        .payload
        .get("text")
        .or_else(|| p.payload.get("title"))
        .or_else(|| p.payload.get("name"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| p.object_id.clone());
    format!("{} `{}` — {}", p.kind, p.object_id, what)
}

/// `kb.crystallize`: summarise a session's proposals (approved, awaiting
/// review, rejected) as a session page proposal, unless `no_page`, and
/// flag its pending claim proposals as promotable.
pub fn crystallize(kb: &Kb, caller: &Caller, p: CrystallizeParams) -> Result<CrystallizeResult> {
    let s = load(kb, &p.session_id)?;
    let proposals: Vec<Proposal> = s
        .proposals
        .iter()
        .filter_map(|id| current(kb, id))
        .collect();
    let mut approved = Vec::new();
    let mut pending = Vec::new();
    let mut rejected = Vec::new();
    for pr in &proposals {
        match pr.status {
            ProposalStatus::Approved => approved.push(pr),
            ProposalStatus::Pending => pending.push(pr),
            ProposalStatus::Rejected => rejected.push(pr),
        }
    }
    let promotable: Vec<String> = pending
        .iter()
        .filter(|pr| pr.kind == ProposalKind::Claim)
        .map(|pr| pr.id.clone())
        .collect();
    let mut body = format!("# Session {}\n\n", s.id);
    if let Some(t) = &s.task {
        body.push_str(&format!("Task: {t}\n\n"));
    }
    body.push_str(&format!(
        "Started {} by {}; {}.\n",
        s.started_at,
        s.actor.as_deref().unwrap_or("unknown"),
        match s.ended_at {
            Some(t) => format!("ended {t}"),
            None => "still open".to_string(),
        }
    ));
    for (title, list) in [
        ("Approved", &approved),
        ("Awaiting review (promotable)", &pending),
        ("Rejected", &rejected),
    ] {
        body.push_str(&format!("\n## {title}\n\n"));
        if list.is_empty() {
            body.push_str("- none\n");
        }
        for pr in list.iter() {
            body.push_str(&format!("- {} (proposal {})\n", describe(pr), pr.id));
        }
    }
    let approved_claims: Vec<String> = approved
        .iter()
        .filter(|pr| pr.kind == ProposalKind::Claim && kb.exists(Dir::Claims, &pr.object_id))
        .map(|pr| pr.object_id.clone())
        .collect();
    let (page_id, proposal_id) = if p.no_page {
        (None, None)
    } else {
        let title = match &s.task {
            Some(t) => format!("Session {}: {t}", s.id),
            None => format!("Session {}", s.id),
        };
        let r = crate::review::gate::propose_page(
            kb,
            caller,
            ProposePageParams {
                title,
                body: Some(body),
                page_type: Some(PageType::Session),
                claims: approved_claims,
                entities: Vec::new(),
                sources: Vec::new(),
                tags: vec!["session".into()],
                session_id: None,
                rationale: Some(format!("crystallized from session {}", s.id)),
                dry_run: false,
                secrets: Default::default(),
            },
        )?;
        if !r.valid {
            return Err(Error::invalid(format!(
                "summary page did not validate: {}",
                r.errors.join("; ")
            )));
        }
        (r.object.get("page_id").cloned(), Some(r.proposal_id))
    };
    let _lock = kb.lock()?;
    let mut ev = kb.event(
        "session.crystallize",
        &caller.actor,
        vec![s.id.clone()],
        json!({"page_proposal": proposal_id, "promotable": promotable}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(CrystallizeResult {
        page_id,
        proposal_id,
        claims_promoted: promotable.len(),
        promotable,
    })
}
