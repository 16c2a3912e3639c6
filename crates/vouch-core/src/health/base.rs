//! The check a pull request runs: `vouch audit verify --base REV`. Given
//! the audit log as it is at REV (the target branch) and the files under
//! `.vouch/` that changed since (the app asks git for both), it says
//! whether the branch only added to REV's history through the gate.
//!
//! Problems, each named: an event of REV removed or changed; a knowledge
//! file added, changed or removed with no new event behind it (a claim
//! written by hand, an edited decision); a decision by its own proposer; a
//! source whose bytes do not match its id; a file `.gitignore` keeps out
//! of git committed anyway (`state.db`, `.staging/`, `proposed/`).

use crate::audit::trail::ProposalStep;
use crate::error::Result;
use crate::stored::Store;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
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
    /// Its bytes at REV, for a changed claim, page, entity or relation
    /// (what a lifecycle change may and may not have touched is read from
    /// them); `None` otherwise.
    pub before: Option<Vec<u8>>,
}

/// Whether a claim, page, entity or relation file's folder.
pub fn is_knowledge_path(path: &str) -> bool {
    matches!(
        path.split('/').next(),
        Some("claims" | "pages" | "entities" | "relations")
    )
}

/// A knowledge file decoded, as its fields in JSON (a page's body among
/// them); `None` for another kind or a file that does not parse.
fn fields_of(dir: &str, bytes: &[u8]) -> Option<Map<String, Value>> {
    use crate::model::{Claim, Entity, Page, Relation};
    use crate::stored::Stored;
    let text = std::str::from_utf8(bytes).ok()?;
    let at = std::path::Path::new(dir);
    let v = match dir {
        "claims" => serde_json::to_value(Claim::decode(at, text).ok()?),
        "pages" => {
            let page = Page::decode(at, text).ok()?;
            let body = page.body.clone();
            serde_json::to_value(page).map(|mut v| {
                v["body"] = Value::String(body);
                v
            })
        }
        "entities" => serde_json::to_value(Entity::decode(at, text).ok()?),
        "relations" => serde_json::to_value(Relation::decode(at, text).ok()?),
        _ => return None,
    };
    match v.ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The fields a lifecycle change may set in a file of `dir`.
fn lifecycle_fields(dir: &str) -> &'static [&'static str] {
    match dir {
        "claims" => crate::model::Claim::LIFECYCLE_FIELDS,
        "pages" => crate::model::Page::LIFECYCLE_FIELDS,
        _ => &[],
    }
}

/// What the gate approved of a file's fields: all but the lifecycle ones.
fn approved_part(dir: &str, fields: &Map<String, Value>) -> Map<String, Value> {
    let mut approved = fields.clone();
    for field in lifecycle_fields(dir) {
        approved.remove(*field);
    }
    approved
}

/// The top-level fields in which two files' fields differ.
fn fields_differing(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
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

/// What is wrong with an added or changed claim, page, entity or relation
/// file: it must be what a new event recorded writing (when it recorded
/// that), and let in by a new approval or import — or, for a change,
/// differ from REV's only in the fields a lifecycle change of a new event
/// sets (a hand edit riding on a `kb.confirm` must not pass).
/// What the branch's new events say about the objects they touch.
struct NewEvents<'a> {
    /// Ids a new event names as written (not a proposal's creation or
    /// rejection).
    named: HashSet<&'a str>,
    /// Objects a new approval or import let in.
    admitted: HashSet<String>,
    /// What new events recorded they wrote, by path: the last one's sha256
    /// and event id.
    written: HashMap<String, (String, &'a str)>,
    /// Each object's lifecycle state as the last new lifecycle event left
    /// it (`data.after`).
    after: HashMap<String, Value>,
}

/// `a` and `b` say the same of a lifecycle field: absent, null and an
/// empty list are one.
fn same_field(a: Option<&Value>, b: Option<&Value>) -> bool {
    let none = |v: Option<&Value>| {
        v.is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
    };
    (none(a) && none(b)) || a == b
}

fn knowledge_problem(
    kb: &Store,
    f: &ChangedFile,
    kind: &str,
    id: &str,
    new: &NewEvents,
) -> Result<Option<String>> {
    let (named_by_new, admitted_by_new, written_by_new) = (&new.named, &new.admitted, &new.written);
    let path = &f.path;
    let now = kb.read_file(&kb.layout().root().join(path))?;
    if let (Some((sha, event)), Some(bytes)) = (written_by_new.get(path), &now)
        && crate::ids::content_sha256(bytes) != *sha
    {
        return Ok(Some(format!(
            "{path}: this {kind} is not what event {event} recorded writing: edited by hand \
             after the gate wrote it"
        )));
    }
    if admitted_by_new.contains(id) {
        // Admitted by id; but when the events recorded what they wrote,
        // this very file must be among it (a page written by hand under
        // the id of an entity the branch approved is not).
        let recorded_elsewhere = written_by_new
            .keys()
            .any(|p| p != path && crate::store::layout::id_of_inside(p) == id);
        if recorded_elsewhere && !written_by_new.contains_key(path) {
            return Ok(Some(format!(
                "{path}: no event in this branch's audit log wrote this {kind} (the events that \
                 let in `{id}` wrote another file): written by hand, not through the gate"
            )));
        }
        return Ok(None);
    }
    let by_hand = |how: &str| {
        format!(
            "{path}: this {kind} was {how} with no event behind it in this branch's audit log: \
             written by hand, not through the gate"
        )
    };
    if f.change == Change::Added || !named_by_new.contains(id) {
        return Ok(Some(by_hand(if f.change == Change::Added {
            "added"
        } else {
            "changed"
        })));
    }
    // Changed by lifecycle events only: nothing the gate approved may move,
    // and its lifecycle fields must be what the last lifecycle event
    // recorded setting (a hand edit of `evidence` or `status` riding on a
    // `confirm` must not pass).
    let dir = path.split('/').next().unwrap_or("");
    let before = f.before.as_deref().and_then(|b| fields_of(dir, b));
    let after = now.as_deref().and_then(|b| fields_of(dir, b));
    let (Some(before), Some(after)) = (before, after) else {
        return Ok(Some(format!(
            "{path}: this {kind} changed and its version at the base or now cannot be read to \
             tell what changed"
        )));
    };
    if let Some(state) = new.after.get(id).and_then(Value::as_object) {
        let differ: Vec<&str> = state
            .keys()
            .filter(|k| !same_field(state.get(*k), after.get(k.as_str())))
            .map(String::as_str)
            .collect();
        if !differ.is_empty() {
            return Ok(Some(format!(
                "{path}: this {kind}'s {} is not what the last lifecycle event in this \
                 branch set: edited by hand",
                differ.join(", ")
            )));
        }
    }
    let (before, after) = (approved_part(dir, &before), approved_part(dir, &after));
    if before == after {
        return Ok(None);
    }
    let sets = lifecycle_fields(dir);
    Ok(Some(format!(
        "{path}: this {kind} changed in {} since the base, which no approval or import in \
         this branch wrote (a lifecycle change sets only {}): edited by hand",
        fields_differing(&before, &after).join(", "),
        if sets.is_empty() {
            "nothing of it".to_string()
        } else {
            sets.join(", ")
        }
    )))
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
    // Objects a new approval or import let in: only these may be added, or
    // changed beyond a lifecycle change's fields.
    let mut admitted_by_new: HashSet<String> = HashSet::new();
    // What new events recorded they wrote, by path (the last one's).
    let mut written_by_new: HashMap<String, (String, &str)> = HashMap::new();
    // Each object's lifecycle state as the last new event left it.
    let mut after_by_new: HashMap<String, Value> = HashMap::new();
    // Proposals a new approval or rejection decided.
    let mut decided_by_new: HashSet<&str> = HashSet::new();
    let mut decisions = Vec::new();
    for ev in &added {
        let name = str_of(ev, "event");
        let logged = crate::audit::trail::Logged::of(ev);
        if let crate::audit::trail::Admits::Objects(ids) = logged.admits {
            admitted_by_new.extend(ids);
        }
        for (path, sha) in logged.written {
            written_by_new.insert(path, (sha, str_of(ev, "id")));
        }
        if let Some(after) = ev
            .get("data")
            .and_then(|d| d.get("after"))
            .and_then(Value::as_object)
        {
            after_by_new.extend(after.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
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

    let new = NewEvents {
        named: named_by_new,
        admitted: admitted_by_new,
        written: written_by_new,
        after: after_by_new,
    };
    // 3. Every changed knowledge file has a new event behind it.
    for f in changed {
        if f.change != Change::Deleted && crate::store::layout::never_committed(&f.path) {
            problems.push(format!(
                "{}: a file vouch keeps out of git (.vouch/.gitignore) was committed: a \
                 derived index, a pending proposal or a crash's half-write from another \
                 machine is never shared knowledge; remove it (git rm --cached)",
                f.path
            ));
            continue;
        }
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
        if is_knowledge_path(path) && f.change != Change::Deleted {
            problems.extend(knowledge_problem(kb, f, kind, id, &new)?);
            continue;
        }
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
            _ if !new.named.contains(id) => problems.push(format!(
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
