//! Provenance and the gate's health at the command line: `why`, `impact`,
//! `neighbors`, `stats` and `expire`, each one `kb.*` method.

use super::calls::Run;
use clap::Subcommand;
use vouch_core::Error;
use vouch_core::methods::kb;
use vouch_core::params::*;

#[derive(Subcommand, Debug)]
pub(crate) enum InsightCmd {
    /// How an object came to be: its proposal and who decided it, what it
    /// cites with the quotes, a claim's supersession and contradiction
    /// chain, every audit event naming it, and whether its file is what
    /// an approval wrote.
    Why {
        /// A claim, page, entity, relation or evidence id, or a source's
        /// sha256.
        id: String,
        /// claim, page, entity, relation, evidence or source, when two
        /// kinds share the id.
        #[arg(long)]
        kind: Option<String>,
    },
    /// What rests on an object: what cites a source or evidence, what
    /// supersedes or contradicts a claim, the pages and relations naming it.
    Impact {
        /// A claim, page, entity, relation or evidence id, or a source's
        /// sha256.
        id: String,
        /// claim, page, entity, relation, evidence or source, when two
        /// kinds share the id.
        #[arg(long)]
        kind: Option<String>,
    },
    /// The entities, claims, pages and relations around a node.
    Neighbors {
        /// The node to start from.
        id: String,
        /// How many hops to follow, 1 to 3.
        #[arg(long, default_value_t = 1)]
        depth: i64,
        /// Show at most this many nodes (max 1000).
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// How the review gate fares: the queue's size and age, proposals and
    /// decisions by agent and by reviewer, approval and rejection rates,
    /// the median time to a decision.
    Stats {
        /// Only proposals made and decisions taken since then: an age
        /// (30d, 12h, 2w) or an RFC 3339 time (default: all time).
        #[arg(long)]
        since: Option<String>,
    },
    /// Reject proposals pending longer than an age, with a recorded reason
    /// (a person's decision). Lists what it would reject unless --apply.
    Expire {
        /// How long a proposal may wait: 30d, 12h, 2w.
        #[arg(long, required = true)]
        older_than: String,
        /// The reason each rejection records (default: "expired: pending
        /// longer than AGE").
        #[arg(long)]
        reason: Option<String>,
        /// List what would be rejected; reject nothing (the default).
        #[arg(long, conflicts_with = "apply")]
        dry_run: bool,
        /// Reject them.
        #[arg(long)]
        apply: bool,
    },
}

impl InsightCmd {
    /// The method the command calls.
    pub(super) fn method(&self) -> &'static str {
        match self {
            InsightCmd::Why { .. } => "kb.why",
            InsightCmd::Impact { .. } => "kb.impact",
            InsightCmd::Neighbors { .. } => "kb.neighbors",
            InsightCmd::Stats { .. } => "kb.gate_stats",
            InsightCmd::Expire { .. } => "kb.expire",
        }
    }

    /// Call the command's method and print its result.
    pub(super) fn run(&self, run: &Run) -> Result<i32, Error> {
        match self {
            InsightCmd::Why { id, kind } => run.exec::<kb::Why>(ObjectParams {
                id: id.clone(),
                kind: kind.clone(),
            }),
            InsightCmd::Impact { id, kind } => run.exec::<kb::Impact>(ObjectParams {
                id: id.clone(),
                kind: kind.clone(),
            }),
            InsightCmd::Neighbors { id, depth, limit } => {
                run.exec::<kb::Neighbors>(NeighborsParams {
                    id: id.clone(),
                    depth: Some(*depth),
                    limit: Some(*limit),
                })
            }
            InsightCmd::Stats { since } => run.exec::<kb::GateStats>(GateStatsParams {
                since: since.clone(),
            }),
            InsightCmd::Expire {
                older_than,
                reason,
                apply,
                ..
            } => run.exec::<kb::Expire>(ExpireParams {
                older_than: older_than.clone(),
                reason: reason.clone(),
                dry_run: Some(!apply),
            }),
        }
    }
}
