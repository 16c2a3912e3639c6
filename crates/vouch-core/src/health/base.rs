//! The check a pull request runs: `vouch audit verify --base REV`. Given
//! the audit log as it is at REV (the target branch) and the files under
//! `.vouch/` that changed since (the app asks git for both), it says
//! whether the branch only added to REV's history through the gate.
//!
//! Problems, each named: an event of REV removed or changed; a knowledge
//! file added, changed or removed with no new event behind it (a claim
//! written by hand, an edited decision); a decision by its own proposer; a
//! source whose bytes do not match its id.

use crate::audit::trail::ProposalStep;
use crate::error::Result;
use crate::stored::Store;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// How a file changed since REV (git's `--name-status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// New since REV.
    Added,
    /// Changed since REV.
    Modified,
    /// Removed since REV.
    Deleted,
}

/// A file under `.vouch/` that differs from REV, by its path inside
/// `.vouch/` (`claims/x.yaml`).
#[derive(Debug, Clone)]
pub struct ChangedFile {
    /// How it changed.
    pub change: Change,
    /// Its path inside `.vouch/`, `/`-separated.
    pub path: String,
}

/// What `--base` found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BaseReport {
    /// True when nothing is wrong: the branch only added to REV's history,
    /// through the gate.
    pub ok: bool,
    /// The revision compared against, as given.
    pub base: String,
    /// Events in REV's log (all must still be here, unchanged).
    pub base_events: usize,
    /// Events this branch added.
    pub new_events: usize,
    /// Files under `.vouch/` changed since REV.
    pub changed_files: usize,
    /// The decisions this branch records, one line each (who decided
    /// what, proposed by whom), for the person reviewing the pull request.
    pub decisions: Vec<String>,
    /// Every problem found, one line each, naming what is wrong.
    pub problems: Vec<String>,
}

fn ids(ev: &Value) -> Vec<&str> {
    ev.get("object_ids")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn str_of<'a>(ev: &'a Value, key: &str) -> &'a str {
    ev.get(key).and_then(Value::as_str).unwrap_or("?")
}

/// Check this KB's log and files against REV's.
pub fn check(
    kb: &Store,
    base: &str,
    base_log: &[u8],
    changed: &[ChangedFile],
) -> Result<BaseReport> {
    let now = kb.audit_log().read_parsed()?;
    let now_hashes: HashSet<&str> = now.iter().map(|e| str_of(e, "hash")).collect();
    let mut problems = Vec::new();

    // 1. REV's history is all still here, byte for byte (hash for hash).
    let mut base_hashes = HashSet::new();
    let mut base_events = 0;
    for (i, line) in base_log.split(|b| *b == b'\n').enumerate() {
        let Ok(ev) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        base_events += 1;
        let h = str_of(&ev, "hash").to_string();
        if !now_hashes.contains(h.as_str()) {
            problems.push(format!(
                "event {} of {base} (line {}: {} by {}) was removed or changed: history was \
                 rewritten",
                str_of(&ev, "id"),
                i + 1,
                str_of(&ev, "event"),
                str_of(&ev, "actor")
            ));
        }
        base_hashes.insert(h);
    }

    // 2. What this branch added, and who proposed what.
    let added: Vec<&Value> = now
        .iter()
        .filter(|e| !base_hashes.contains(str_of(e, "hash")))
        .collect();
    let proposer: HashMap<&str, &str> = now
        .iter()
        .filter(|e| ProposalStep::of(str_of(e, "event")) == Some(ProposalStep::Create))
        .filter_map(|e| Some((*ids(e).first()?, str_of(e, "actor"))))
        .collect();
    // Ids a new event wrote: not a proposal's creation or rejection, which
    // name an object without writing it (a branch that proposes claim X and
    // writes claims/X.yaml by hand must not pass).
    let mut named_by_new: HashSet<&str> = HashSet::new();
    // Proposals a new approval or rejection decided.
    let mut decided_by_new: HashSet<&str> = HashSet::new();
    let mut decisions = Vec::new();
    for ev in &added {
        let name = str_of(ev, "event");
        match ProposalStep::of(name) {
            Some(ProposalStep::Create) => {}
            Some(ProposalStep::Reject) => decided_by_new.extend(ids(ev).first().copied()),
            Some(ProposalStep::Approve) => {
                decided_by_new.extend(ids(ev).first().copied());
                named_by_new.extend(ids(ev));
            }
            _ => named_by_new.extend(ids(ev)),
        }
        let decided = match ProposalStep::of(name) {
            Some(ProposalStep::Approve) | Some(ProposalStep::Reject) => ids(ev).first().copied(),
            _ => ev
                .get("data")
                .and_then(|d| d.get("proposal_id"))
                .and_then(Value::as_str),
        };
        if let Some(pid) = decided {
            let by = proposer.get(pid).copied();
            decisions.push(format!(
                "{} {name} {} (proposal {pid} by {})",
                str_of(ev, "actor"),
                ids(ev).get(1).copied().unwrap_or(""),
                by.unwrap_or("nobody")
            ));
            if by.is_none() {
                problems.push(format!(
                    "event {} ({name}) decides proposal {pid}, which no proposal.create event \
                     ever proposed",
                    str_of(ev, "id")
                ));
            }
        }
        if let Some(pid) = decided
            && proposer.get(pid) == Some(&str_of(ev, "actor"))
        {
            problems.push(format!(
                "event {} ({name}): {} decided proposal {pid}, which they proposed themselves",
                str_of(ev, "id"),
                str_of(ev, "actor")
            ));
        }
    }

    // 3. Every changed knowledge file has a new event behind it.
    for f in changed {
        let mut parts = f.path.splitn(3, '/');
        let (Some(dir), Some(name)) = (parts.next(), parts.next()) else {
            continue;
        };
        let id = name
            .strip_suffix(".yaml")
            .or_else(|| name.strip_suffix(".md"))
            .unwrap_or(name);
        let kind = match dir {
            "claims" => "claim",
            "pages" => "page",
            "entities" => "entity",
            "relations" => "relation",
            "evidence" => "evidence",
            "decided" => "decision record",
            "sources" => "source",
            _ => continue, // the log, config, sessions, ignored files
        };
        let path = &f.path;
        match f.change {
            Change::Deleted => problems.push(format!(
                "{path}: a {kind} was removed; knowledge is never deleted (archive or supersede \
                 it through the gate)"
            )),
            Change::Modified if dir == "decided" => problems.push(format!(
                "{path}: a decision record was edited after it was made"
            )),
            Change::Added if dir == "decided" && !decided_by_new.contains(id) => {
                problems.push(format!(
                    "{path}: a decision record with no approval or rejection of proposal {id} \
                     in this branch's audit log: written by hand, not through the gate"
                ))
            }
            _ if dir == "decided" => {}
            _ if !named_by_new.contains(id) => problems.push(format!(
                "{path}: this {kind} was {} with no event behind it in this branch's audit \
                 log: written by hand, not through the gate",
                if f.change == Change::Added {
                    "added"
                } else {
                    "changed"
                }
            )),
            _ => {}
        }
        if dir == "sources"
            && f.change != Change::Deleted
            && let Ok(content) = kb.layout().source_content(id)
            && let Some(bytes) = kb.read_file(&content)?
            && crate::ids::sha256_hex(&bytes) != id
        {
            problems.push(format!(
                "sources/{id}/content: its bytes do not hash to its id (sha256 {})",
                crate::ids::sha256_hex(&bytes)
            ));
        }
    }
    let mut seen = HashSet::new();
    problems.retain(|p| seen.insert(p.clone()));
    Ok(BaseReport {
        ok: problems.is_empty(),
        base: base.to_string(),
        base_events,
        new_events: added.len(),
        changed_files: changed.len(),
        decisions,
        problems,
    })
}
