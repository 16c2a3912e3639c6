//! Knowledge-base health (protocol §5 maintenance): `kb.lint` finds knowledge
//! that has rotted; `kb.doctor` adds the integrity of the files themselves.
//! Neither changes anything, except `doctor` with `fix`, which rebuilds the
//! derived index and never touches knowledge.
//!
//! Every finding has a stable id (`<kind>:<object id>[:<other id>]`), so a
//! CI job can track or silence one finding across runs.

pub mod base;
mod checkpoint;
mod doctor;
mod hosts;
mod setup;
use setup::*;
mod lint;

pub use checkpoint::checkpoint;
pub use doctor::doctor;
pub use lint::lint;
use lint::*;

use crate::error::Result;
use crate::ids::is_source_id;
use crate::kb::{Caller, Kb};
use crate::model::*;
use crate::params::{DoctorParams, Finding, HealthReport, LintParams, Severity};
use crate::store::Dir;
use crate::store::layout::{KbFile, id_from_file_name};
use crate::stored::Stored;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a `kb.doctor` step that can repair found: with `fix` it repairs
/// and says what in `fixed`; without, it names what is wrong in `issues`.
pub(crate) struct Repairs {
    pub(crate) fix: bool,
    pub(crate) issues: Vec<Finding>,
    pub(crate) fixed: Vec<String>,
}

/// Days a claim may go unconfirmed before `kb.lint` calls it stale
/// (`stale_days`).
pub const DEFAULT_STALE_DAYS: i64 = 90;
/// Days a proposal may wait for review before `kb.lint` reports it
/// (`pending_days`).
pub const DEFAULT_PENDING_DAYS: i64 = 14;

/// Everything readable in the KB, and what was not.
#[derive(Default)]
struct Loaded {
    claims: Vec<Claim>,
    pages: Vec<Page>,
    entities: Vec<Entity>,
    relations: Vec<Relation>,
    evidence: Vec<Evidence>,
    pending: Vec<Proposal>,
    proposed_ids: Vec<String>,
    decided_ids: HashSet<String>,
    decided: Vec<Proposal>,
    /// (path relative to .vouch/, why it could not be used)
    unreadable: Vec<(String, String)>,
    /// With a team's queue: why it could not be read, if it could not.
    queue_unreadable: Option<String>,
    /// With a team's queue: its proposals that could not be used (id,
    /// why), which no file holds.
    queued_unreadable: Vec<(String, String)>,
}

fn rel(f: KbFile) -> String {
    f.relative()
}

/// The file of a pending proposal, as findings name it: none for one a
/// team's queue keeps with no file in `proposed/`.
fn pending_file(kb: &Kb, id: &str) -> Option<String> {
    let in_tree = kb
        .layout()
        .file(Dir::Proposed, id)
        .is_ok_and(|p| crate::store::nofollow::is_file(&p));
    (in_tree || kb.shared_queue().is_none())
        .then(|| rel(KbFile::Object(Dir::Proposed, id.to_string())))
}

fn load_dir<T: Stored>(kb: &Kb, out: &mut Vec<T>, bad: &mut Vec<(String, String)>) -> Result<()> {
    for id in kb.ids(T::DIR)? {
        let path = rel(KbFile::Object(T::DIR, id.clone()));
        match kb.load::<T>(&id) {
            // `Kb::load` refuses a file whose id is not its name's.
            Ok(Some(v)) => out.push(v),
            Ok(None) => {}
            Err(e) => bad.push((path, e.message)),
        }
    }
    Ok(())
}

fn load(kb: &Kb) -> Result<Loaded> {
    let mut l = Loaded::default();
    let mut bad = Vec::new();
    load_dir(kb, &mut l.claims, &mut bad)?;
    load_dir(kb, &mut l.pages, &mut bad)?;
    load_dir(kb, &mut l.entities, &mut bad)?;
    load_dir(kb, &mut l.relations, &mut bad)?;
    load_dir(kb, &mut l.evidence, &mut bad)?;
    let mut sessions: Vec<Session> = Vec::new();
    load_dir(kb, &mut sessions, &mut bad)?;
    for dir in [Dir::Proposed, Dir::Decided] {
        let queued = dir == Dir::Proposed && kb.shared_queue().is_some();
        let read = match kb.read_proposals(dir) {
            Ok(read) => read,
            // A team's queue out of reach: the rest is still checked.
            Err(e) if queued => {
                l.queue_unreadable = Some(e.message);
                continue;
            }
            Err(e) => return Err(e),
        };
        for (id, read) in read {
            match read {
                Ok(p) if dir == Dir::Proposed => {
                    l.proposed_ids.push(id);
                    l.pending.push(p);
                }
                Ok(p) => {
                    l.decided_ids.insert(id);
                    l.decided.push(p);
                }
                Err(e) if queued && pending_file(kb, &id).is_none() => {
                    l.queued_unreadable.push((id, e.message));
                }
                Err(e) => bad.push((rel(KbFile::Object(dir, id)), e.message)),
            }
        }
    }
    l.unreadable = bad;
    Ok(l)
}

fn finding(
    kind: &str,
    severity: Severity,
    key: &str,
    path: Option<String>,
    message: String,
) -> Finding {
    Finding {
        id: format!("{kind}:{key}"),
        kind: kind.to_string(),
        severity,
        message,
        path,
    }
}

fn claim_path(id: &str) -> Option<String> {
    Some(rel(KbFile::Object(Dir::Claims, id.to_string())))
}

fn days(p: Option<i64>, default: i64, name: &str) -> Result<i64> {
    match p {
        None => Ok(default),
        Some(n) if n < 0 => Err(crate::Error::invalid(format!(
            "{name}: {n} is negative; give a number of days"
        ))),
        Some(n) => Ok(n),
    }
}

/// Normalized claim text for duplicate detection.
fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!', '?'])
        .to_string()
}

/// Names that exist, for reference checks.
struct Known {
    claims: HashMap<String, ClaimStatus>,
    entities: HashSet<String>,
    evidence: HashSet<String>,
    sources: HashSet<String>,
}

impl Known {
    fn of(kb: &Kb, l: &Loaded) -> Result<Known> {
        // Ids whose files exist count as existing even when unparseable:
        // that problem is reported once, as unparseable, not as dangling.
        Ok(Known {
            claims: kb
                .ids(Dir::Claims)?
                .into_iter()
                .map(|id| {
                    let st = l
                        .claims
                        .iter()
                        .find(|c| c.id == id)
                        .map(|c| c.status)
                        .unwrap_or(ClaimStatus::Working);
                    (id, st)
                })
                .collect(),
            entities: kb.ids(Dir::Entities)?.into_iter().collect(),
            evidence: kb.ids(Dir::Evidence)?.into_iter().collect(),
            sources: kb
                .source_ids()?
                .into_iter()
                .filter(|id| kb.source_exists(id))
                .collect(),
        })
    }
    /// Why a citation does not resolve, if it does not.
    fn citation(&self, kb: &Kb, id: &str) -> Option<String> {
        if is_source_id(id) {
            return (!self.sources.contains(id))
                .then(|| format!("cites source {id}, which is not registered"));
        }
        if !self.evidence.contains(id) {
            return Some(format!(
                "cites {id:?}, which is neither a source nor evidence"
            ));
        }
        match kb.load::<Evidence>(id) {
            Ok(Some(ev)) if !self.sources.contains(&ev.source_id) => Some(format!(
                "cites evidence {id}, whose source {} is not registered",
                ev.source_id
            )),
            _ => None,
        }
    }
}

fn report(mut issues: Vec<Finding>, fixed: Vec<String>) -> HealthReport {
    issues.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.id.cmp(&b.id)));
    issues.dedup_by(|a, b| a.id == b.id);
    HealthReport {
        ok: !issues.iter().any(|f| f.severity == Severity::Error),
        issues,
        fixed,
    }
}
