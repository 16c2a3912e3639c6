//! The check a pull request runs: `vouch audit verify --base REV`. Given
//! the audit log as it is at REV (the target branch) and the files under
//! `.vouch/` that changed since (the app asks git for both), it says
//! whether the branch only added to REV's history through the gate.
//!
//! Problems, each named: an event of REV removed or changed; a knowledge
//! file added, changed or removed with no new event behind it (removed:
//! no approved delete that recorded removing those very bytes; a claim
//! written by hand, an edited decision); a file an approval wrote that is
//! not its proposal's payload; a change a lifecycle event does not make (a
//! confirm that un-archives); a revert of what no sound lifecycle change
//! recorded; a proposal decided twice; a decision by its own proposer; an
//! import by an agent; a gated change by a name the base does not know
//! (under `review.gate_lifecycle`); a name posing as a base decider's in
//! letters of other scripts; a loosened gate in `config.yaml`;
//! a source whose bytes do not match its id; a file `.gitignore` keeps out
//! of git committed anyway (`state.db`, `.staging/`, `proposed/`).

use crate::audit::trail::{Actors, Admits, Logged, ProposalStep};
use crate::error::Result;
use crate::stored::Store;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

mod config;
mod files;
mod lifecycle;

use files::approved_from_payload;
use lifecycle::{
    Approved, Reverted, Verified, meant_state, same_field, same_state, state_before, state_of,
};

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
    /// Its bytes at REV, for a changed or removed claim, page, entity or
    /// relation (what a lifecycle change may and may not have touched, and
    /// whether a delete removed what was approved, is read from them);
    /// `None` otherwise.
    pub before: Option<Vec<u8>>,
}

/// Whether a claim, page, entity or relation file's folder.
pub fn is_knowledge_path(path: &str) -> bool {
    matches!(
        path.split('/').next(),
        Some("claims" | "pages" | "entities" | "relations")
    )
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
    /// Of those, how many are still here, unchanged.
    pub kept_events: usize,
    /// Events this branch added.
    pub new_events: usize,
    /// Files under `.vouch/` changed since REV.
    pub changed_files: usize,
    /// The decisions this branch records, one line each, for the person
    /// reviewing the pull request: who approved or rejected what, proposed
    /// by whom, and who imported which objects from which bundle.
    pub decisions: Vec<String>,
    /// Every lifecycle change the branch records (archive, supersede,
    /// contradict, confirm, cite, revert), one line each: who, what, on
    /// which objects, through which transport and when the event says.
    pub lifecycle_changes: Vec<String>,
    /// Every setting of `.vouch/config.yaml` the branch changed, one line
    /// each (`review.gate_lifecycle: true -> (absent)`).
    pub config_changes: Vec<String>,
    /// What the person reviewing the pull request must confirm, one line
    /// each: a decision or import by an actor who never decided at the base
    /// (a new decider: confirm it is a person, or a reviewer a person
    /// named), a change the gate reviews by a name the base does not know,
    /// an ASCII name that reads as a base decider's. These do not fail the
    /// check.
    pub warnings: Vec<String>,
    /// Every problem found, one line each, naming what is wrong.
    pub problems: Vec<String>,
}

/// What the branch's new events say about the objects they touch.
#[derive(Default)]
struct NewEvents<'a> {
    /// Sources and evidence records a new `source.register` or
    /// `evidence.register` event registered: what lets such a file be
    /// added.
    registered: HashSet<&'a str>,
    /// A new import by someone who is not an agent: it may add sources and
    /// evidence (it does not name them).
    imports_sources: bool,
    /// Objects a new import (not an agent's) let in.
    imported: HashSet<String>,
    /// Objects a new approval wrote, with what approving its proposal
    /// writes from the payload (`None` when that cannot be told: the
    /// approval's problems say why) and the proposal's id.
    approved: Approved,
    /// What new events recorded they wrote, by path: the last one's sha256
    /// and event id.
    written: HashMap<String, (String, &'a str)>,
    /// Each knowledge file a new lifecycle event (or an approval that
    /// supersedes) rewrote, by path: the events' names.
    rewritten: HashMap<String, Vec<&'a str>>,
    /// Each object's lifecycle state as the last new lifecycle event left
    /// it (`data.after`).
    after: HashMap<String, Value>,
    /// Knowledge files a new approved delete (or source contents a new
    /// redaction) removed, by path: the sha256 of the bytes it removed
    /// (`data.removed`) and its event id.
    removed: HashMap<String, (String, &'a str)>,
    /// Files a new redaction rewrote or removed, by path.
    redacted: HashSet<String>,
}

/// A name as the report shows it: anything beyond printable ASCII
/// escaped (`\u{430}lice`), so a look-alike never reads as the name it
/// imitates.
fn shown(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c.to_string()
            } else {
                format!("\\u{{{:x}}}", c as u32)
            }
        })
        .collect()
}

/// What a name reads as ([`crate::ids::name_skeleton`]), with a capital
/// `I` read as the `l` it draws as in many fonts (`aIice`).
fn reads_as(name: &str) -> String {
    crate::ids::name_skeleton(&name.replace('I', "l"))
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

/// The proposal an event decides: an approval's or rejection's, or the
/// lifecycle proposal a lifecycle event applies (`data.proposal_id`).
fn decides(ev: &Value) -> Option<&str> {
    match ProposalStep::of(str_of(ev, "event")) {
        Some(ProposalStep::Approve | ProposalStep::Reject) => ids(ev).first().copied(),
        Some(ProposalStep::Create) => None,
        None => ev
            .get("data")
            .and_then(|d| d.get("proposal_id"))
            .and_then(Value::as_str),
    }
}

/// What an approval's `data.kind` says it approves (`delete` for an
/// approved delete).
fn kind_of(ev: &Value) -> Option<&str> {
    ev.get("data")
        .and_then(|d| d.get("kind"))
        .and_then(Value::as_str)
}

/// An approved delete or a redaction in the decisions' words: the object
/// and each file it removed or rewrote with the sha256 of the bytes it
/// took out.
fn removed_line(ev: &Value) -> String {
    let data = ev.get("data");
    let files: Vec<String> = data
        .and_then(|d| d.get(crate::review::gate::delete::REMOVED_KEY))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(path, sha)| format!("{path} sha256 {}", sha.as_str().unwrap_or("?")))
                .collect()
        })
        .unwrap_or_default();
    let approval = str_of(ev, "event") == "proposal.approve";
    format!(
        "{} {} ({} {})",
        data.and_then(|d| d.get("object_kind"))
            .and_then(Value::as_str)
            .unwrap_or("object"),
        // An approval names its proposal first, a redaction its object.
        ids(ev).get(usize::from(approval)).copied().unwrap_or("?"),
        if approval {
            "removes"
        } else {
            "takes the bytes out of"
        },
        if files.is_empty() {
            "nothing".to_string()
        } else {
            files.join(", ")
        }
    )
}

/// What a new approved delete removed, or a new redaction removed or
/// rewrote: each file in `data.removed`. A delete's `data.written` must
/// mark each [`REMOVED`] (the only thing a delete writes); a redaction's
/// may also record what it rewrote. Anything else it records is a problem.
///
/// [`REMOVED`]: crate::audit::trail::REMOVED
fn removals<'a>(
    ev: &'a Value,
    written: &[(String, String)],
    new: &mut NewEvents<'a>,
    problems: &mut Vec<String>,
) {
    use crate::audit::trail::REMOVED;
    let event = str_of(ev, "id");
    let removed = ev
        .get("data")
        .and_then(|d| d.get(crate::review::gate::delete::REMOVED_KEY))
        .and_then(Value::as_object);
    let redacts = str_of(ev, "event") == crate::review::gate::redact::EVENT;
    for (path, sha) in written {
        let recorded = removed.and_then(|m| m.get(path)).and_then(Value::as_str);
        if redacts && recorded.is_some() {
            new.redacted.insert(path.clone());
        }
        match recorded {
            Some(was) if sha == REMOVED => {
                new.removed.insert(path.clone(), (was.to_string(), event));
            }
            Some(_) if redacts => {}
            _ => problems.push(format!(
                "event {event} ({}) records writing {path}, which it does not write (it \
                 removes or rewrites only the files it names in data.removed)",
                str_of(ev, "event")
            )),
        }
    }
}

/// Check this KB's log and files against REV's.
/// `base_config` is `.vouch/config.yaml` at REV (`None` when it had none):
/// whether REV gated agents' lifecycle changes.
pub fn check(
    kb: &Store,
    base: &str,
    base_log: &[u8],
    base_config: Option<&[u8]>,
    changed: &[ChangedFile],
) -> Result<BaseReport> {
    let now = kb.audit_log().read_parsed()?;
    let now_hashes: HashSet<&str> = now.iter().map(|e| str_of(e, "hash")).collect();
    let mut problems = Vec::new();

    // 1. REV's history is all still here, byte for byte (hash for hash).
    let mut base_hashes = HashSet::new();
    let (mut base_events, mut kept_events) = (0, 0);
    // Who proposed and decided at REV; which proposals REV decided.
    let mut actors = Actors::default();
    let mut decided_at_base: HashMap<String, String> = HashMap::new();
    for (i, line) in base_log.split(|b| *b == b'\n').enumerate() {
        let Ok(ev) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        base_events += 1;
        let h = str_of(&ev, "hash").to_string();
        if now_hashes.contains(h.as_str()) {
            kept_events += 1;
        } else {
            problems.push(format!(
                "event {} of {base} (line {}: {} by {}) was removed or changed: history was \
                 rewritten",
                str_of(&ev, "id"),
                i + 1,
                str_of(&ev, "event"),
                str_of(&ev, "actor")
            ));
        }
        actors.take(&mut Logged::of(&ev), true);
        if let Some(pid) = decides(&ev) {
            decided_at_base.insert(pid.to_string(), str_of(&ev, "id").to_string());
        }
        base_hashes.insert(h);
    }
    // Who decided at REV: anyone else deciding here is a new decider.
    let base_deciders = actors.decided.clone();
    let gate_lifecycle = base_config
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|t| {
            crate::settings::Settings::parse(
                std::path::Path::new(crate::store::layout::CONFIG_FILE),
                t,
            )
            .ok()
        })
        .is_some_and(|s| s.review.gate_lifecycle);
    let changed_at: HashMap<&str, &ChangedFile> =
        changed.iter().map(|f| (f.path.as_str(), f)).collect();
    // Each event by id, with its place in the log (a revert names an
    // earlier one).
    let at_of: HashMap<&str, usize> = now
        .iter()
        .enumerate()
        .map(|(i, e)| (str_of(e, "id"), i))
        .collect();
    // Each claim's or page's lifecycle state as the branch's events left
    // it so far, by id (`None`: what it was cannot be told).
    let mut states: HashMap<String, Option<Map<String, Value>>> = HashMap::new();
    let mut lifecycle = Vec::new();
    let mut warnings = Vec::new();
    let mut new_deciders = HashSet::new();
    // Actors whose name was compared with the base's deciders'.
    let mut looked = HashSet::new();
    // What each branch lifecycle event that passed its checks changed.
    let mut verified: Verified = HashMap::new();

    // 2. What this branch added, and who proposed what.
    let added: Vec<&Value> = now
        .iter()
        .filter(|e| !base_hashes.contains(str_of(e, "hash")))
        .collect();
    let created: HashMap<&str, &Value> = now
        .iter()
        .filter(|e| ProposalStep::of(str_of(e, "event")) == Some(ProposalStep::Create))
        .filter_map(|e| Some((*ids(e).first()?, e)))
        .collect();
    let proposer = |pid: &str| created.get(pid).map(|e| str_of(e, "actor"));
    let mut new = NewEvents::default();
    // Proposals a new approval or rejection decided, by the event.
    let mut decided_by_new: HashMap<&str, &str> = HashMap::new();
    let mut decisions = Vec::new();
    for ev in &added {
        let (name, event, actor) = (str_of(ev, "event"), str_of(ev, "id"), str_of(ev, "actor"));
        let who = shown(actor);
        let problems_before = problems.len();
        let mut logged = Logged::of(ev);
        // Decisions made in the branch never make an agent one who decides.
        let by_agent = actors.take(&mut logged, false);
        let agent = actors.is_agent(actor);
        // Neither proposed nor decided at the base: a name the base does
        // not know.
        let unknown = !agent && !base_deciders.contains(actor);
        let decision = decides(ev);
        // A name that reads as a base decider's and is not it.
        if unknown && looked.insert(actor) {
            let alike = reads_as(actor);
            if let Some(like) = base_deciders.iter().find(|d| reads_as(d) == alike) {
                let line = format!(
                    "event {event} ({name}) is by {who}, which reads as {}, who decided at \
                     {base}, but is another name",
                    shown(like)
                );
                if actor.is_ascii() {
                    warnings.push(format!(
                        "look-alike name: {line}: confirm {who} is not posing as {}",
                        shown(like)
                    ));
                } else {
                    problems.push(format!(
                        "{line} (its letters from other scripts pass for Latin ones): a \
                         look-alike name posing as a decider"
                    ));
                }
            }
        }
        // Who decides or imports must have decided at the base before
        // (or be confirmed a person by whoever reviews this).
        // (One line for each such actor, naming its first such event.)
        if (decision.is_some() || logged.import) && unknown && new_deciders.insert(actor) {
            warnings.push(format!(
                "new decider: {who} decides here ({name}, event {event}) but never decided at \
                 {base}: confirm {who} is a person, or a reviewer a person named"
            ));
        }
        let redacts = name == crate::review::gate::redact::EVENT;
        if redacts && decision.is_none() && agent {
            problems.push(format!(
                "event {event} ({name}) by {who:?}, who files proposals and decided nothing \
                 before (an agent), redacts {} directly: a redaction is a person's decision — an \
                 agent proposes it (kb.propose_redact)",
                ids(ev).join(", ")
            ));
        }
        if redacts {
            let applying = decision
                .map(|pid| {
                    format!(
                        "; proposal {pid} by {}",
                        proposer(pid).map_or_else(|| "nobody".to_string(), shown)
                    )
                })
                .unwrap_or_default();
            decisions.push(format!("{who} {name} {}{applying}", removed_line(ev)));
        }
        if decision.is_some() && agent {
            problems.push(format!(
                "event {event} ({name}) by {who:?}, who files proposals (at {base} or in this \
                 branch) and decided nothing before: an agent, and an agent never decides — a \
                 person does (`vouch review`)"
            ));
        }
        match name {
            "source.register" | "evidence.register" => {
                new.registered.extend(ids(ev).first().copied());
            }
            "bundle.import" if !agent => new.imports_sources = true,
            _ => {}
        }
        if logged.import {
            let named: Vec<&str> = ev
                .get("data")
                .and_then(|d| d.get("objects"))
                .and_then(Value::as_array)
                .map(|o| o.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let objects = named.join(", ");
            let bundle = ev
                .get("data")
                .and_then(|d| d.get("path"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            decisions.push(format!(
                "{who} bundle.import [{objects}] from bundle {bundle} ({})",
                ids(ev).first().copied().unwrap_or("?")
            ));
            let wrote = !named.is_empty() || !logged.written.is_empty();
            if by_agent && wrote {
                problems.push(format!(
                    "event {event} (bundle.import) by {who:?}, who proposes and never decided \
                     at {base}, writes knowledge: an agent's import files proposals, it never \
                     writes knowledge — what it names is not let in"
                ));
            }
        }
        if let Admits::Objects(ids) = logged.admits
            && logged.import
        {
            new.imported.extend(ids);
        }
        let rewrites = crate::audit::is_lifecycle_event(name);
        let after = ev
            .get("data")
            .and_then(|d| d.get("after"))
            .and_then(Value::as_object);
        // The report's line for this lifecycle event, once written.
        let mut line_at = None;
        if rewrites {
            let data = ev.get("data");
            let via = data
                .and_then(|d| d.get("via"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            let applying = data
                .and_then(|d| d.get("proposal_id"))
                .and_then(Value::as_str)
                .map(|p| format!(", applying proposal {p}"))
                .unwrap_or_default();
            line_at = Some(lifecycle.len());
            lifecycle.push(format!(
                "{who} {name} {} (via {via}{applying}; event {event}, dated {})",
                ids(ev).join(", "),
                str_of(ev, "created_at")
            ));
            // What the runtime would have made a proposal, made directly by
            // an agent.
            let reverts_other = name == "lifecycle.revert"
                && data
                    .and_then(|d| d.get("reverts"))
                    .and_then(Value::as_str)
                    .and_then(|r| at_of.get(r))
                    .is_none_or(|i| str_of(&now[*i], "actor") != actor);
            // (Why an agent may not; what the change is.)
            let gated = if decision.is_some() {
                None
            } else if name == "claim.cite" {
                Some((
                    "an agent's citation is always a proposal a person decides",
                    "a citation",
                ))
            } else if gate_lifecycle {
                Some((
                    "the base's review.gate_lifecycle makes an agent's lifecycle change a proposal a person decides",
                    "a lifecycle change",
                ))
            } else if reverts_other {
                Some((
                    "an agent reverts only its own lifecycle changes",
                    "a revert of another's lifecycle change",
                ))
            } else {
                None
            };
            match gated {
                Some((why, _)) if agent => problems.push(format!(
                    "event {event} ({name}) by {who:?}, who files proposals and decided \
                     nothing at {base} (an agent), changes {} directly: {why}, so this change \
                     did not go through the gate",
                    ids(ev).join(", ")
                )),
                Some((_, what)) if unknown && gate_lifecycle => problems.push(format!(
                    "event {event} ({name}) by {who:?}, a name that neither proposed nor decided \
                     at {base}, makes {what} of {} directly, which the gate reviews: under the \
                     base's review.gate_lifecycle a name the base does not know is no person; \
                     if {who} is one, merge a decision of theirs first (the check asks to \
                     confirm them) or have a person who decides make the change",
                    ids(ev).join(", ")
                )),
                Some((_, what)) if unknown && new_deciders.insert(actor) => warnings.push(format!(
                    "unknown name: {who} makes {what} here, which the gate reviews \
                         ({name}, event {event}), but neither proposed nor decided at {base}: \
                         confirm {who} is a person, or a reviewer a person named"
                )),
                _ => {}
            }
        }
        if rewrites && (after.is_none() || logged.written.is_empty()) {
            problems.push(format!(
                "event {event} ({name}) names {} but records no `after` state or no `written` \
                 files, as every lifecycle change records both: it changes nothing here",
                ids(ev).join(", ")
            ));
        }
        let approve = name == "proposal.approve";
        // An approved delete writes no object: it removes one.
        let deletes = approve && kind_of(ev) == Some("delete");
        let object = ids(ev).get(1).copied();
        let pid = ids(ev).first().copied().unwrap_or("?");
        let fields = match (approve, object) {
            (true, Some(_)) => {
                approved_from_payload(kb, ev, created.get(pid).copied(), &mut problems)
            }
            _ => None,
        };
        // The claims approving this payload supersedes: the only files an
        // approval writes besides its object.
        let supersedes: Vec<String> = fields
            .as_ref()
            .and_then(|f| f.get("supersedes"))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut paths: HashMap<&str, String> = HashMap::new();
        // A decision of a proposal that is not open is named below (decided
        // twice, never proposed); what it wrote is judged as it recorded it.
        let written = if logged.unfounded {
            Logged::of(ev).written
        } else {
            std::mem::take(&mut logged.written)
        };
        for (path, sha) in &written {
            let id = crate::store::layout::id_of_inside(path);
            let counts = if rewrites {
                after.is_some_and(|a| a.contains_key(id))
            } else if approve && Some(id) != object {
                let superseded = path.starts_with("claims/") && supersedes.iter().any(|s| s == id);
                if !superseded {
                    problems.push(format!(
                        "event {event} (proposal.approve of {pid}) records writing {path}, which \
                         approving the proposal does not write (it writes {} and the claims its \
                         payload supersedes): a file rewritten by hand riding on an approval",
                        object.unwrap_or("?")
                    ));
                }
                superseded
            } else {
                false
            };
            if counts {
                new.rewritten.entry(path.clone()).or_default().push(name);
                paths.insert(id, path.clone());
            }
            new.written.insert(path.clone(), (sha.clone(), event));
        }
        if deletes || redacts {
            removals(ev, &written, &mut new, &mut problems);
        }
        if approve && let Some(object) = object {
            for old in &supersedes {
                let path = format!("claims/{old}.yaml");
                let mut next = state_before(kb, &changed_at, &new.approved, &states, old, &path);
                if let Some(s) = &mut next {
                    s.insert("status".into(), json!("superseded"));
                    s.insert("superseded_by".into(), json!(object));
                    new.after.insert(old.clone(), Value::Object(s.clone()));
                }
                states.insert(old.clone(), next);
            }
        }
        // The changes of this event found sound, kept (for a revert of it)
        // when the event has no problem at all.
        let mut sound = Vec::new();
        if rewrites && let Some(after) = after {
            let before = ev
                .get("data")
                .and_then(|d| d.get("before"))
                .and_then(Value::as_object);
            let earlier: HashMap<&str, &Value> = at_of
                .iter()
                .filter(|(_, i)| at_of.get(event).is_some_and(|here| *i < here))
                .map(|(id, i)| (*id, &now[*i]))
                .collect();
            for (id, made) in after {
                let problems_here = problems.len();
                let Some(made) = made.as_object() else {
                    problems.push(format!(
                        "event {event} ({name}) records no state it set for {id}"
                    ));
                    continue;
                };
                let Some(path) = paths.get(id.as_str()) else {
                    continue; // it wrote no file of it: it changes nothing here
                };
                let dir = path.split('/').next().unwrap_or("");
                let made = state_of(dir, made);
                let was = state_before(kb, &changed_at, &new.approved, &states, id, path);
                let reverted = Reverted {
                    earlier: &earlier,
                    at_base: &base_hashes,
                    verified: &verified,
                    path,
                };
                if let Some(was) = &was {
                    let said = before
                        .and_then(|b| b.get(id))
                        .and_then(Value::as_object)
                        .map(|b| state_of(dir, b));
                    if !said.as_ref().is_some_and(|s| same_state(s, was)) {
                        problems.push(format!(
                            "event {event} ({name}) records {id} as it was not before it \
                             (data.before): its lifecycle state was {}",
                            Value::Object(was.clone())
                        ));
                    }
                    match meant_state(name, ev, id, was, &made, &reverted) {
                        Ok(want) if same_state(&want, &made) => {
                            if name == "lifecycle.revert"
                                && let Some(line) = line_at.and_then(|at| lifecycle.get_mut(at))
                            {
                                line.push_str(&format!(
                                    "; puts {id} back to {}",
                                    Value::Object(want.clone())
                                ));
                            }
                        }
                        Ok(want) => {
                            let differ: Vec<String> = want
                                .keys()
                                .filter(|k| !same_field(want.get(*k), made.get(*k)))
                                .map(|k| {
                                    let value = |m: &Map<String, Value>| {
                                        m.get(k).cloned().unwrap_or(Value::Null).to_string()
                                    };
                                    format!("{k} {} (it makes it {})", value(&made), value(&want))
                                })
                                .collect();
                            problems.push(format!(
                                "event {event} ({name}) sets {id}'s {}: a {name} changes only \
                                 what its kind changes, so this one was written by hand",
                                differ.join(", ")
                            ))
                        }
                        Err(why) => {
                            problems.push(format!("event {event} ({name}) changes {id}, but {why}"))
                        }
                    }
                }
                if let Some(was) = was
                    && problems.len() == problems_here
                {
                    sound.push((id.clone(), was, made.clone()));
                }
                new.after.insert(id.clone(), Value::Object(made.clone()));
                states.insert(id.clone(), Some(made));
            }
        }
        if approve
            && !deletes
            && let Some(object) = object
        {
            new.approved
                .insert(object.to_string(), (fields, pid.to_string()));
        }
        if let Some(pid) = decision {
            let by = proposer(pid);
            let what = if deletes {
                format!("delete {}", removed_line(ev))
            } else {
                ids(ev).get(1).copied().unwrap_or("").to_string()
            };
            if !redacts {
                decisions.push(format!(
                    "{who} {name} {what} (proposal {pid} by {})",
                    by.map_or_else(|| "nobody".to_string(), shown)
                ));
            }
            if by.is_none() {
                problems.push(format!(
                    "event {event} ({name}) decides proposal {pid}, which no proposal.create event \
                     ever proposed"
                ));
            }
            if by == Some(actor) {
                problems.push(format!(
                    "event {event} ({name}): {who} decided proposal {pid}, which they proposed \
                     themselves"
                ));
            }
            let before = decided_at_base
                .get(pid)
                .map(|e| format!("event {e} of {base}"))
                .or_else(|| {
                    decided_by_new
                        .get(pid)
                        .map(|e| format!("event {e} of this branch"))
                });
            if let Some(before) = before {
                problems.push(format!(
                    "event {event} ({name}) decides proposal {pid} again: {before} decided it \
                     already, and a proposal is decided once (re-propose to change what it says)"
                ));
            }
            decided_by_new.insert(pid, event);
        }
        if problems.len() == problems_before {
            for (id, was, made) in sound {
                verified.insert((event.to_string(), id), (was, made));
            }
        }
    }

    // 3. Every changed knowledge file has a new event behind it.
    let config = files::changed_files(kb, changed, &new, &decided_by_new, &mut problems)?;
    let mut seen = HashSet::new();
    problems.retain(|p| seen.insert(p.clone()));
    Ok(BaseReport {
        ok: problems.is_empty(),
        base: base.to_string(),
        base_events,
        kept_events,
        new_events: added.len(),
        changed_files: changed.len(),
        decisions,
        lifecycle_changes: lifecycle,
        config_changes: config,
        warnings,
        problems,
    })
}
