//! How provenance and the gate's health read: `why`, `impact`,
//! `neighbors`, `stats`, `expire`.

use super::Human;
use serde_json::Value;
use vouch_core::params::*;

/// A span of seconds as a person says it: `3d 4h`, `12m`, `40s`.
pub(crate) fn span(seconds: i64) -> String {
    let (d, h, m) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, m) => format!("{h}h {m}m"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}

pub(crate) fn percent(rate: Option<f64>) -> String {
    rate.map_or("-".into(), |r| format!("{:.0}%", r * 100.0))
}

impl Human for WhyResult {
    fn human(&self) -> String {
        let field = |k: &str| self.object.get(k).and_then(Value::as_str);
        let mut out = format!("{} {}\n", self.kind, self.id);
        if let Some(what) = field("text")
            .or_else(|| field("title"))
            .or_else(|| field("name"))
            .or_else(|| field("locator"))
        {
            out.push_str(&format!("  {what}\n"));
        }
        if let Some(status) = field("status") {
            out.push_str(&format!("  status: {status}\n"));
        }
        if let Some(by) = &self.approved_by {
            out.push_str(&format!("  approved by: {by}\n"));
        }
        match self.unaudited {
            Some(true) => out.push_str(
                "  UNAUDITED: its file is not what an approval wrote (edited or added by hand)\n",
            ),
            Some(false) => out.push_str("  its file is what the gate wrote\n"),
            None => {}
        }
        out.push_str(&format!("\nProposals ({}):\n", self.proposals.len()));
        for p in &self.proposals {
            // Who proposed and the state it is in, never in one phrase
            // that could read as the proposer deciding it.
            out.push_str(&format!(
                "  {} {}, proposed by {} at {} ({})\n",
                p.id, p.kind, p.proposed_by, p.created_at, p.status
            ));
            if let Some(r) = &p.rationale {
                out.push_str(&format!("    rationale: {r}\n"));
            }
            if let (Some(by), Some(at)) = (&p.decided_by, &p.decided_at) {
                out.push_str(&format!("    decided by {by} at {at}\n"));
            }
            if let Some(r) = &p.reason {
                out.push_str(&format!("    reason: {r}\n"));
            }
        }
        out.push_str(&format!("\nCitations ({}):\n", self.citations.len()));
        for c in &self.citations {
            let place = c.locator.as_deref().unwrap_or("");
            let missing = if c.missing { " (MISSING)" } else { "" };
            out.push_str(&format!("  {} {} {place}{missing}\n", c.kind, c.id));
            if let Some(q) = &c.quote {
                out.push_str(&format!("    > {q}\n"));
            }
            if let Some(src) = &c.source_locator {
                out.push_str(&format!("    from {src}\n"));
            }
        }
        if !self.chain.is_empty() {
            out.push_str("\nChain:\n");
            for l in &self.chain {
                out.push_str(&format!(
                    "  {} {} [{}] {}\n",
                    l.relation,
                    l.id,
                    l.status.as_deref().unwrap_or("missing"),
                    l.text.as_deref().unwrap_or("")
                ));
            }
        }
        out.push_str(&format!("\nAudit events ({}):\n", self.audit.len()));
        for ev in &self.audit {
            let s = |k: &str| ev.0.get(k).and_then(Value::as_str).unwrap_or("?");
            out.push_str(&format!(
                "  {} {} by {}\n",
                s("created_at"),
                s("event"),
                s("actor")
            ));
        }
        out
    }
}

impl Human for ImpactResult {
    fn human(&self) -> String {
        if self.referrers.is_empty() {
            return format!("Nothing refers to {} {}.\n", self.kind, self.id);
        }
        let mut out = format!(
            "{} object(s) rest on {} {}:\n",
            self.referrers.len(),
            self.kind,
            self.id
        );
        for r in &self.referrers {
            out.push_str(&format!("  {} {} ({})\n", r.kind, r.id, r.how.join(", ")));
        }
        out
    }
}

impl Human for NeighborsResult {
    fn human(&self) -> String {
        let label = |n: &Neighbor| {
            n.label
                .as_deref()
                .map(|l| format!("  {l}"))
                .unwrap_or_default()
        };
        let mut out = format!(
            "{} {}{} — {} node(s) within {} hop(s)\n",
            self.start.kind,
            self.start.id,
            label(&self.start),
            self.nodes.len(),
            self.depth
        );
        for n in &self.nodes {
            out.push_str(&format!(
                "  [{}] {} {}{}\n",
                n.depth,
                n.kind,
                n.id,
                label(n)
            ));
        }
        if !self.edges.is_empty() {
            out.push_str("Edges:\n");
            for e in &self.edges {
                out.push_str(&format!("  {} {} {}\n", e.source, e.relation, e.target));
            }
        }
        if self.truncated {
            out.push_str("(cut at the limit; pass --limit for more)\n");
        }
        out
    }
}

impl Human for GateStats {
    fn human(&self) -> String {
        let mut out = match &self.since {
            Some(s) => format!("Review gate since {s}\n"),
            None => "Review gate, all time\n".to_string(),
        };
        let q = &self.queue;
        out.push_str(&format!("Queue: {} pending", q.pending));
        if let (Some(id), Some(age)) = (&q.oldest_id, q.oldest_age_seconds) {
            out.push_str(&format!("; oldest {id} waiting {}", span(age)));
        }
        if let Some(m) = q.median_age_seconds {
            out.push_str(&format!("; median wait {}", span(m)));
        }
        out.push_str(&format!(
            "\nProposed: {}  approved: {}  rejected: {}  approval rate: {}  rejection rate: {}\n",
            self.proposed,
            self.approved,
            self.rejected,
            percent(self.approval_rate),
            percent(self.rejection_rate)
        ));
        if let Some(m) = self.median_seconds_to_decision {
            out.push_str(&format!("Median time to decision: {}\n", span(m)));
        }
        let table = |out: &mut String, title: &str, rows: &[ActorStats], proposer: bool| {
            if rows.is_empty() {
                return;
            }
            out.push_str(&format!("\n{title}:\n"));
            for r in rows {
                let wait = r.median_seconds_to_decision.map_or("-".into(), span);
                if proposer {
                    out.push_str(&format!(
                        "  {:<20} proposed {:>4}  pending {:>4}  approved {:>4}  rejected {:>4}  rate {:>4}  median {wait}\n",
                        r.actor, r.proposed, r.pending, r.approved, r.rejected, percent(r.approval_rate)
                    ));
                } else {
                    out.push_str(&format!(
                        "  {:<20} approved {:>4}  rejected {:>4}  rate {:>4}  median {wait}\n",
                        r.actor,
                        r.approved,
                        r.rejected,
                        percent(r.approval_rate)
                    ));
                }
            }
        };
        table(&mut out, "By agent", &self.by_agent, true);
        table(&mut out, "By reviewer", &self.by_reviewer, false);
        out
    }
}

impl Human for ExpireResult {
    fn human(&self) -> String {
        let mut out = if self.expired.is_empty() {
            return "No pending proposal is that old.\n".into();
        } else if self.dry_run {
            format!(
                "Would reject {} proposal(s) (dry run; --apply rejects them):\n",
                self.expired.len()
            )
        } else {
            format!("Rejected {} proposal(s):\n", self.expired.len())
        };
        for e in &self.expired {
            out.push_str(&format!(
                "  {} {} by {}, waiting {}\n",
                e.id,
                e.kind,
                e.proposed_by,
                span(e.age_seconds)
            ));
        }
        out.push_str(&format!("Reason: {}\n", self.reason));
        out
    }
}
