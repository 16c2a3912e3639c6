//! `kb.gate_stats`: how the review gate fares — the queue's size and age,
//! proposals and decisions by agent and by reviewer, approval and
//! rejection rates, the median time to a decision — read from `proposed/`
//! and `decided/` (each decided record holds who decided it and when; the
//! audit log holds the same, chained).

use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::{Proposal, ProposalStatus, Timestamp};
use crate::params::*;
use crate::store::Dir;
use chrono::Duration;
use std::collections::BTreeMap;

/// An age as a person writes it: a whole number and a unit, `s`, `m`,
/// `h`, `d` or `w` (`30d`, `12h`, `2w`).
pub fn parse_age(s: &str) -> Result<Duration> {
    let s = s.trim();
    let bad = || {
        Error::invalid(format!(
            "{:?} is not an age: a whole number and a unit, s, m, h, d or w (30d, 12h, 2w)",
            crate::ids::truncate_for_message(s)
        ))
    };
    let unit = s.chars().last().ok_or_else(bad)?;
    let n: i64 = s[..s.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    if n < 0 {
        return Err(bad());
    }
    let seconds = match unit {
        's' => Some(n),
        'm' => n.checked_mul(60),
        'h' => n.checked_mul(3600),
        'd' => n.checked_mul(86_400),
        'w' => n.checked_mul(7 * 86_400),
        _ => None,
    }
    .filter(|s| *s <= 100 * 365 * 86_400)
    .ok_or_else(bad)?;
    Ok(Duration::seconds(seconds))
}

/// The window's start: an RFC 3339 time, or an age back from `now`.
fn window_start(since: &str, now: Timestamp) -> Result<Timestamp> {
    if let Some(t) = Timestamp::parse(since) {
        return Ok(t);
    }
    parse_age(since)
        .map(|age| Timestamp(now.0 - age))
        .map_err(|e| Error::invalid(format!("since: {} (or an RFC 3339 time)", e.message)))
}

fn median(mut v: Vec<i64>) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2
    })
}

fn rate(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// One actor's tally, filled as the proposals are read.
#[derive(Default)]
struct Tally {
    proposed: usize,
    pending: usize,
    approved: usize,
    rejected: usize,
    waits: Vec<i64>,
}

impl Tally {
    fn decided(&mut self, p: &Proposal, wait: Option<i64>) {
        match p.status {
            ProposalStatus::Approved => self.approved += 1,
            ProposalStatus::Rejected => self.rejected += 1,
            ProposalStatus::Pending => return,
        }
        self.waits.extend(wait);
    }

    fn into_stats(self, actor: String) -> ActorStats {
        ActorStats {
            actor,
            proposed: self.proposed,
            pending: self.pending,
            approval_rate: rate(self.approved, self.approved + self.rejected),
            approved: self.approved,
            rejected: self.rejected,
            median_seconds_to_decision: median(self.waits),
        }
    }
}

fn ranked(tallies: BTreeMap<String, Tally>, key: fn(&ActorStats) -> usize) -> Vec<ActorStats> {
    let mut out: Vec<ActorStats> = tallies
        .into_iter()
        .map(|(actor, t)| t.into_stats(actor))
        .collect();
    // Busiest first; the map's order (by name) breaks ties.
    out.sort_by_key(|s| std::cmp::Reverse(key(s)));
    out
}

/// `kb.gate_stats`: the queue now, and the gate's work since `p.since`.
pub fn gate_stats(kb: &Kb, p: GateStatsParams) -> Result<GateStats> {
    let now = kb.now();
    let since = p
        .since
        .as_deref()
        .map(|s| window_start(s, now))
        .transpose()?;
    let in_window = |t: &Timestamp| since.is_none_or(|s| *t >= s);
    let seconds = |from: &Timestamp, to: &Timestamp| (to.0 - from.0).num_seconds().max(0);

    let pending = crate::review::gate::list_pending(kb)?;
    let ages: Vec<i64> = pending
        .iter()
        .map(|p| seconds(&p.created_at, &now))
        .collect();
    let queue = QueueStats {
        pending: pending.len(),
        oldest_id: pending.first().map(|p| p.id.clone()),
        oldest_created_at: pending.first().map(|p| p.created_at.to_string()),
        oldest_age_seconds: ages.first().copied(),
        median_age_seconds: median(ages),
    };

    let decided = kb.load_proposals(Dir::Decided)?;
    let mut agents: BTreeMap<String, Tally> = BTreeMap::new();
    let mut reviewers: BTreeMap<String, Tally> = BTreeMap::new();
    let mut proposed = 0;
    for p in pending.iter().filter(|p| in_window(&p.created_at)) {
        proposed += 1;
        let t = agents.entry(p.proposed_by.clone()).or_default();
        t.proposed += 1;
        t.pending += 1;
    }
    let (mut approved, mut rejected, mut waits) = (0, 0, Vec::new());
    for p in &decided {
        if in_window(&p.created_at) {
            proposed += 1;
            agents.entry(p.proposed_by.clone()).or_default().proposed += 1;
        }
        // A decision without a time (an old or hand-written record) counts
        // only in the all-time figures.
        let counted = match &p.decided_at {
            Some(at) => in_window(at),
            None => since.is_none(),
        };
        if !counted {
            continue;
        }
        let wait = p.decided_at.map(|at| seconds(&p.created_at, &at));
        match p.status {
            ProposalStatus::Approved => approved += 1,
            ProposalStatus::Rejected => rejected += 1,
            ProposalStatus::Pending => continue,
        }
        waits.extend(wait);
        agents
            .entry(p.proposed_by.clone())
            .or_default()
            .decided(p, wait);
        let reviewer = p.decided_by.clone().unwrap_or_else(|| "(unknown)".into());
        reviewers.entry(reviewer).or_default().decided(p, wait);
    }
    Ok(GateStats {
        since: since.map(|s| s.to_string()),
        now: now.to_string(),
        queue,
        proposed,
        approval_rate: rate(approved, approved + rejected),
        rejection_rate: rate(rejected, approved + rejected),
        approved,
        rejected,
        median_seconds_to_decision: median(waits),
        by_agent: ranked(agents, |s| s.proposed),
        by_reviewer: ranked(reviewers, |s| s.approved + s.rejected),
    })
}
