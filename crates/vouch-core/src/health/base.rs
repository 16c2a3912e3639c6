//! The check a pull request runs: `vouch audit verify --base REV`. Given
//! the audit log as it is at REV (the target branch) and the files under
//! `.vouch/` that changed since (the app asks git for both), it says
//! whether the branch only added to REV's history through the gate.
//!
//! Problems, each named: an event of REV removed or changed; a knowledge
//! file added, changed or removed with no new event behind it (a claim
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
    use crate::model::{Claim, Entity, Page, Relation, Written};
    use crate::stored::Stored;
    let text = std::str::from_utf8(bytes).ok()?;
    let at = std::path::Path::new(dir);
    fields_of_object(&match dir {
        "claims" => Written::Claim(Claim::decode(at, text).ok()?),
        "pages" => Written::Page(Page::decode(at, text).ok()?),
        "entities" => Written::Entity(Entity::decode(at, text).ok()?),
        "relations" => Written::Relation(Relation::decode(at, text).ok()?),
        _ => return None,
    })
}

/// An object's fields in JSON, a page's body among them.
fn fields_of_object(object: &crate::model::Written) -> Option<Map<String, Value>> {
    use crate::model::Written;
    let v = match object {
        Written::Claim(c) => serde_json::to_value(c),
        Written::Page(page) => serde_json::to_value(page).map(|mut v| {
            v["body"] = Value::String(page.body.clone());
            v
        }),
        Written::Entity(e) => serde_json::to_value(e),
        Written::Relation(r) => serde_json::to_value(r),
        Written::Source(_) => return None,
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

/// The fields of a file of `dir` that a lifecycle event named `event` sets
/// (an approval's: of a claim it supersedes). A confirm cannot un-archive a
/// claim nor swap its citations.
fn sets(event: &str, dir: &str) -> &'static [&'static str] {
    match (dir, event) {
        ("claims", "claim.confirm") => &["last_confirmed_at", "updated_at"],
        ("claims", "claim.archive") | ("pages", "page.archive") => &["status", "updated_at"],
        ("claims", "claim.cite") => &["evidence", "updated_at"],
        ("claims", "claim.supersede") => &["status", "superseded_by", "supersedes", "updated_at"],
        ("claims", "claim.contradict") => &["status", "contradicts", "updated_at"],
        ("claims", "proposal.approve") => &["status", "superseded_by", "updated_at"],
        (_, "lifecycle.revert") => lifecycle_fields(dir),
        _ => &[],
    }
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

/// The lifecycle state of a claim or page, as lifecycle events record it
/// (`data.before`, `data.after`).
fn state_of(dir: &str, fields: &Map<String, Value>) -> Map<String, Value> {
    lifecycle_fields(dir)
        .iter()
        .filter(|k| **k != "updated_at")
        .map(|k| {
            (
                k.to_string(),
                fields.get(*k).cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// Two lifecycle states say the same ([`same_field`] for each field).
fn same_state(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.keys()
        .chain(b.keys())
        .all(|k| same_field(a.get(k), b.get(k)))
}

/// `item` added to the list `key` of `state`, unless it is there.
fn with_item(state: &mut Map<String, Value>, key: &str, item: &str) {
    let mut list = state
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !list.iter().any(|v| v.as_str() == Some(item)) {
        list.push(Value::String(item.to_string()));
    }
    state.insert(key.to_string(), Value::Array(list));
}

/// The state a lifecycle event named `name` leaves object `id` in, given
/// its state `before`, as the runtime makes it: an archive archives, a
/// supersede marks the old claim superseded by the new one and adds the
/// old to the new's `supersedes`, a contradict links both (contested
/// unless superseded, archived or redacted), a cite adds its one evidence
/// id, a confirm sets `last_confirmed_at`, and a revert puts back what the
/// event it reverts (an earlier lifecycle event that changed `id`, whose
/// `after` is `before`) changed it from ([`Reverted::change`]). `Err` says
/// why `id` is not something this event changes.
fn meant_state(
    name: &str,
    ev: &Value,
    id: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    reverted: &Reverted,
) -> std::result::Result<Map<String, Value>, String> {
    let mut want = before.clone();
    let set = |want: &mut Map<String, Value>, k: &str, v: &str| {
        want.insert(k.to_string(), Value::String(v.to_string()));
    };
    match (name, ids(ev).as_slice()) {
        ("claim.confirm", [c, ..]) if *c == id => match after.get("last_confirmed_at") {
            Some(Value::String(at)) => set(&mut want, "last_confirmed_at", at),
            _ => return Err("a confirm sets last_confirmed_at to a time".into()),
        },
        ("claim.archive" | "page.archive", [c, ..]) if *c == id => {
            set(&mut want, "status", "archived")
        }
        ("claim.cite", [c, e, ..]) if *c == id => {
            let cites = before
                .get("evidence")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|v| v.as_str() == Some(e)));
            if cites {
                return Err(format!("it cites {e} already"));
            }
            with_item(&mut want, "evidence", e);
        }
        ("claim.supersede", [old, new, ..]) if *old == id => {
            set(&mut want, "status", "superseded");
            set(&mut want, "superseded_by", new);
        }
        ("claim.supersede", [old, new, ..]) if *new == id => {
            with_item(&mut want, "supersedes", old);
        }
        ("claim.contradict", [a, b, ..]) if *a == id || *b == id => {
            with_item(&mut want, "contradicts", if *a == id { b } else { a });
            let status = before.get("status").and_then(Value::as_str);
            if !matches!(status, Some("superseded" | "archived" | "redacted")) {
                set(&mut want, "status", "contested");
            }
        }
        ("lifecycle.revert", _) => {
            let reverted_by = reverted;
            let Some(reverted) = ev
                .get("data")
                .and_then(|d| d.get("reverts"))
                .and_then(Value::as_str)
            else {
                return Err("it names no event it reverts (data.reverts)".into());
            };
            let (was, made) = reverted_by.change(reverted, id)?;
            if !same_state(&made, before) {
                return Err(format!(
                    "{id} changed again after event {reverted}, and a revert puts back only \
                     the last change"
                ));
            }
            want = was;
        }
        _ => {
            return Err(format!(
                "a {name} naming {} does not change {id}",
                ids(ev).join(", ")
            ));
        }
    }
    Ok(want)
}

/// What the event a revert names changed, as far as it can be trusted.
struct Reverted<'a> {
    /// The events before the revert, by id.
    earlier: &'a HashMap<&'a str, &'a Value>,
    /// The hashes of the base's events: merged, so what they record stands.
    at_base: &'a HashSet<String>,
    /// Each change a branch's lifecycle event made that this check found
    /// sound, by (event, object): its state before and after.
    verified: &'a Verified,
    /// The file of the object the revert changes.
    path: &'a str,
}

/// An object's lifecycle state before an event, and after it.
type StateChange = (Map<String, Value>, Map<String, Value>);

/// [`Reverted::verified`].
type Verified = HashMap<(String, String), StateChange>;

impl Reverted<'_> {
    /// The state object `id` was in before event `reverted` and the one it
    /// left it in: what a base's lifecycle event that recorded writing the
    /// object's file recorded, or what this check found a branch's
    /// lifecycle event did. Anything else — an event that is no lifecycle
    /// change (its `data.before` is anyone's words), one that wrote no file
    /// of `id`, one whose own checks failed — puts nothing back.
    fn change(&self, reverted: &str, id: &str) -> std::result::Result<StateChange, String> {
        let Some(target) = self.earlier.get(reverted) else {
            return Err(format!(
                "it reverts event {reverted}, which is not earlier in the log"
            ));
        };
        let name = str_of(target, "event");
        if !crate::audit::is_lifecycle_event(name) {
            return Err(format!(
                "event {reverted} ({name}) is not a lifecycle change: only a lifecycle change \
                 records a state a revert may put back, and what another event says of {id} \
                 is anyone's words"
            ));
        }
        let dir = self.path.split('/').next().unwrap_or("");
        if !self.at_base.contains(str_of(target, "hash")) {
            return self
                .verified
                .get(&(reverted.to_string(), id.to_string()))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "event {reverted} ({name}) made no change of {id} that this check \
                         found sound (it wrote no file of {id}, or its own problems are \
                         named), so there is nothing to put back"
                    )
                });
        }
        let wrote = target
            .get("data")
            .and_then(|d| d.get("written"))
            .and_then(|w| w.get(self.path))
            .is_some();
        let recorded = |key: &str| {
            target
                .get("data")
                .and_then(|d| d.get(key))
                .and_then(|m| m.get(id))
                .and_then(Value::as_object)
                .map(|m| state_of(dir, m))
        };
        match (wrote, recorded("before"), recorded("after")) {
            (true, Some(was), Some(made)) => Ok((was, made)),
            _ => Err(format!(
                "event {reverted} ({name}) recorded no change of {id} it wrote ({}) to put back",
                self.path
            )),
        }
    }
}

/// What approving each object's proposal writes, by object id, with the
/// proposal's id ([`NewEvents::approved`]).
type Approved = HashMap<String, (Option<Map<String, Value>>, String)>;

/// Object `id`'s (file `path`'s) lifecycle state before the branch's next
/// event: as the branch's events left it so far (`states`), else as the
/// base has it, or as the approval that added it in this branch writes it.
/// `None` when that cannot be told.
fn state_before(
    kb: &Store,
    changed_at: &HashMap<&str, &ChangedFile>,
    approved: &Approved,
    states: &HashMap<String, Option<Map<String, Value>>>,
    id: &str,
    path: &str,
) -> Option<Map<String, Value>> {
    if let Some(s) = states.get(id) {
        return s.clone();
    }
    let dir = path.split('/').next().unwrap_or("");
    let fields = match changed_at.get(path) {
        Some(f) if f.change == Change::Modified => {
            f.before.as_deref().and_then(|b| fields_of(dir, b))
        }
        Some(f) if f.change == Change::Added => {
            approved.get(id).and_then(|(fields, _)| fields.clone())
        }
        Some(_) => None,
        None => kb
            .read_file(&kb.layout().root().join(path))
            .ok()
            .flatten()
            .and_then(|b| fields_of(dir, &b)),
    };
    fields.map(|f| state_of(dir, &f))
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
}

/// `a` and `b` say the same of a lifecycle field: absent, null and an
/// empty list are one.
fn same_field(a: Option<&Value>, b: Option<&Value>) -> bool {
    let none = |v: Option<&Value>| {
        v.is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
    };
    (none(a) && none(b)) || a == b
}

/// What is wrong with an added or changed claim, page, entity or relation
/// file. It must be what the last new event that wrote it recorded; then
/// either an import let it in, or it is what its approval writes from the
/// proposal's payload, or REV's version — in each of the last two cases
/// changed since only in the fields the new lifecycle events that rewrote
/// it set (a confirm sets `last_confirmed_at`; a hand edit of `evidence`
/// or `status` riding on it is named), and those as the last one recorded.
fn knowledge_problem(
    kb: &Store,
    f: &ChangedFile,
    kind: &str,
    id: &str,
    new: &NewEvents,
) -> Result<Option<String>> {
    let path = &f.path;
    let now = kb.read_file(&kb.layout().root().join(path))?;
    if let Some(wrong) = not_as_written(new, path, kind, now.as_deref()) {
        return Ok(Some(wrong));
    }
    if new.imported.contains(id) {
        // Admitted by id; but when the events recorded what they wrote,
        // this very file must be among it (a page written by hand under
        // the id of an entity the branch approved is not).
        let recorded_elsewhere = new
            .written
            .keys()
            .any(|p| p != path && crate::store::layout::id_of_inside(p) == id);
        if recorded_elsewhere && !new.written.contains_key(path) {
            return Ok(Some(format!(
                "{path}: no event in this branch's audit log wrote this {kind} (the events that \
                 let in `{id}` wrote another file): written by hand, not through the gate"
            )));
        }
        return Ok(None);
    }
    let dir = path.split('/').next().unwrap_or("");
    let rewritten = new.rewritten.get(path.as_str());
    let approved = new.approved.get(id);
    let (reference, since) = match approved {
        Some((Some(fields), pid)) => (
            fields.clone(),
            format!("what approving proposal {pid} writes"),
        ),
        // The approval's own problems say why it cannot be told.
        Some((None, _)) if f.change == Change::Added => return Ok(None),
        None if f.change == Change::Added || rewritten.is_none() => {
            return Ok(Some(format!(
                "{path}: this {kind} was {} with no event behind it in this branch's audit log: \
                 written by hand, not through the gate",
                if f.change == Change::Added {
                    "added"
                } else {
                    "changed"
                }
            )));
        }
        _ => match f.before.as_deref().and_then(|b| fields_of(dir, b)) {
            Some(fields) => (fields, "the base".to_string()),
            None => {
                return Ok(Some(format!(
                    "{path}: this {kind} changed and its version at the base cannot be read to \
                     tell what changed"
                )));
            }
        },
    };
    let Some(after) = now.as_deref().and_then(|b| fields_of(dir, b)) else {
        return Ok(Some(format!(
            "{path}: this {kind} cannot be read to tell what changed"
        )));
    };
    // Only the fields the events that rewrote it set may differ.
    let events = rewritten.cloned().unwrap_or_default();
    let may: HashSet<&str> = events.iter().flat_map(|e| sets(e, dir)).copied().collect();
    let moved: Vec<String> = fields_differing(&reference, &after)
        .into_iter()
        .filter(|k| !may.contains(k.as_str()))
        .collect();
    if !moved.is_empty() {
        let by = if events.is_empty() {
            "no lifecycle event in this branch rewrote it".to_string()
        } else {
            let mut names = events.clone();
            names.sort();
            names.dedup();
            let set: Vec<&str> = may
                .iter()
                .copied()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            format!(
                "the lifecycle events that rewrote it ({}) set only {}",
                names.join(", "),
                if set.is_empty() {
                    "nothing of it".to_string()
                } else {
                    set.join(", ")
                }
            )
        };
        return Ok(Some(format!(
            "{path}: this {kind} changed in {} since {since}, which no approval or import in \
             this branch wrote ({by}): edited by hand",
            moved.join(", ")
        )));
    }
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
    Ok(None)
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

/// Why the file at `path`, holding `now`, is not what the last new event
/// that recorded writing it recorded, if it is not.
fn not_as_written(new: &NewEvents, path: &str, kind: &str, now: Option<&[u8]>) -> Option<String> {
    let (sha, event) = new.written.get(path)?;
    (crate::ids::content_sha256(now?) != *sha).then(|| {
        format!(
            "{path}: this {kind} is not what event {event} recorded writing: edited by hand \
             after the gate wrote it"
        )
    })
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

/// Check what a new `proposal.approve` wrote against the proposal it
/// decides: its `decided/` record must be this very decision, hold what
/// the proposal's `proposal.create` fingerprinted, and the object is what
/// approving that payload writes. Answers that object's fields (`None`
/// when it cannot be told) and pushes what is wrong.
fn approved_from_payload(
    kb: &Store,
    ev: &Value,
    create: Option<&Value>,
    problems: &mut Vec<String>,
) -> Option<Map<String, Value>> {
    use crate::store::Dir;
    let (event, pid) = (str_of(ev, "id"), ids(ev).first().copied().unwrap_or("?"));
    let mut wrong = |why: String| {
        problems.push(format!("event {event} (proposal.approve of {pid}): {why}"));
        None
    };
    let decided = match kb.load_proposal(Dir::Decided, pid) {
        Ok(Some(d)) => d,
        Ok(None) => {
            return wrong(format!(
                "no decided/{pid}.yaml records the decision (an approval writes one): the \
                 approval was written by hand"
            ));
        }
        Err(e) => return wrong(format!("decided/{pid}.yaml cannot be read: {}", e.message)),
    };
    if decided.status != crate::model::ProposalStatus::Approved
        || decided.decision_hash.as_deref() != ev.get("hash").and_then(Value::as_str)
    {
        return wrong(format!(
            "decided/{pid}.yaml records another decision ({} by {}, event hash {}): the \
             proposal was decided before, and a proposal is decided once",
            decided.status,
            decided.decided_by.as_deref().unwrap_or("?"),
            decided.decision_hash.as_deref().unwrap_or("none")
        ));
    }
    if let Some(object) = ids(ev).get(1)
        && *object != decided.object_id
    {
        return wrong(format!(
            "it writes {object}, but the proposal is for {}",
            decided.object_id
        ));
    }
    let recorded = create
        .and_then(|c| c.get("data"))
        .and_then(|d| d.get(crate::review::gate::FINGERPRINT_KEY))
        .and_then(Value::as_str);
    if let Some(recorded) = recorded
        && crate::review::gate::proposal_fingerprint(&decided)
            .ok()
            .as_deref()
            != Some(recorded)
    {
        return wrong(format!(
            "decided/{pid}.yaml does not hold what was proposed (its content does not match the \
             fingerprint in the proposal.create event): what was approved is not what a \
             reviewer saw"
        ));
    }
    let at = crate::model::Timestamp::parse(str_of(ev, "created_at"))?;
    let object = crate::review::gate::approved_object(&decided, at, str_of(ev, "actor")).ok()?;
    fields_of_object(&object)
}

/// `config.yaml`'s settings, flattened to `a.b` keys; `None` when it does
/// not parse.
fn settings_of(bytes: &[u8]) -> Option<std::collections::BTreeMap<String, String>> {
    fn flatten(prefix: &str, v: &Value, out: &mut std::collections::BTreeMap<String, String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let tree: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str(text).ok()?
    };
    let mut out = std::collections::BTreeMap::new();
    flatten("", &tree, &mut out);
    out.remove("");
    Some(out)
}

/// Every setting `config.yaml` changed since REV (`before`, `None` when
/// REV had none), and each change that loosens the gate as a problem: a
/// repository cannot widen its own gate locally, nor through a pull
/// request.
fn config_changes(
    before: Option<&[u8]>,
    now: Option<&[u8]>,
    problems: &mut Vec<String>,
) -> Vec<String> {
    use crate::settings::Settings;
    let path = std::path::Path::new(crate::store::layout::CONFIG_FILE);
    let parse = |b: Option<&[u8]>| match b {
        None => Some(Settings::new("", None)),
        Some(b) => Settings::parse(path, std::str::from_utf8(b).ok()?).ok(),
    };
    let flat = |b: Option<&[u8]>| b.map_or_else(|| Some(Default::default()), settings_of);
    let (Some(old), Some(new)) = (flat(before), flat(now)) else {
        problems.push(
            "config.yaml: it does not parse as YAML, so what it changed cannot be told".into(),
        );
        return Vec::new();
    };
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let shown = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(absent)".into());
    let changes: Vec<String> = keys
        .into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .map(|k| format!("{k}: {} -> {}", shown(old.get(k)), shown(new.get(k))))
        .collect();
    if let (Some(old), Some(new)) = (parse(before), parse(now)) {
        if old.review.gate_lifecycle && !new.review.gate_lifecycle {
            problems.push(
                "config.yaml: review.gate_lifecycle is turned off: agents' lifecycle changes \
                 would apply without a person's decision; a pull request cannot loosen the gate"
                    .into(),
            );
        }
        let had: HashSet<&str> = old.ignored_widenings().iter().map(|(k, _)| *k).collect();
        for (key, value) in new.ignored_widenings() {
            if !had.contains(key) {
                problems.push(format!(
                    "config.yaml: {key}: {value} would widen the gate; a repository's config \
                     cannot (only the person's own config can), so a pull request must not \
                     add it"
                ));
            }
        }
    }
    changes
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
        if approve && let Some(object) = object {
            new.approved
                .insert(object.to_string(), (fields, pid.to_string()));
        }
        if let Some(pid) = decision {
            let by = proposer(pid);
            decisions.push(format!(
                "{who} {name} {} (proposal {pid} by {})",
                ids(ev).get(1).copied().unwrap_or(""),
                by.map_or_else(|| "nobody".to_string(), shown)
            ));
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
    let mut config = Vec::new();
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
        if f.path == crate::store::layout::CONFIG_FILE {
            let now = kb.read_file(&kb.layout().config())?;
            config = config_changes(f.before.as_deref(), now.as_deref(), &mut problems);
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
            _ => continue, // the log, sessions, ignored files
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
            // A person's import brings the decisions of the KB it came
            // from, by proposal id.
            Change::Added if dir == "decided" && new.imported.contains(id) => {
                let now = kb.read_file(&kb.layout().root().join(path))?;
                problems.extend(not_as_written(&new, path, kind, now.as_deref()));
            }
            Change::Added if dir == "decided" && !decided_by_new.contains_key(id) => {
                problems.push(format!(
                    "{path}: a decision record with no approval or rejection of proposal {id}, \
                     nor an import that names it, in this branch's audit log: written by hand, \
                     not through the gate"
                ))
            }
            _ if dir == "decided" => {}
            Change::Modified => problems.push(format!(
                "{path}: this {kind} file was changed; sources and evidence are written once, \
                 when registered, and never rewritten (register the new text as a new one)"
            )),
            Change::Added if !new.registered.contains(id) && !new.imports_sources => {
                problems.push(format!(
                    "{path}: this {kind} was added with no event that registers it \
                     ({}.register of {id}, or an import) in this branch's audit log: written \
                     by hand, not through the gate",
                    if dir == "sources" {
                        "source"
                    } else {
                        "evidence"
                    }
                ))
            }
            Change::Added if dir == "evidence" => match kb.load::<crate::model::Evidence>(id) {
                Ok(Some(ev)) => {
                    let content = kb
                        .layout()
                        .source_content(&ev.source_id)
                        .ok()
                        .and_then(|c| kb.read_file(&c).ok().flatten());
                    let why = crate::sources::evidence_id_mismatch(&ev)
                        .or_else(|| crate::sources::evidence_mismatch(&ev, content.as_deref()?));
                    if let Some(why) = why {
                        problems.push(format!("{path}: evidence {id}: {why}"));
                    }
                }
                Ok(None) => {}
                Err(e) => problems.push(format!("{path}: cannot be read: {}", e.message)),
            },
            Change::Added => {}
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
