//! The lifecycle state of claims and pages as `--base` reads it: what a
//! file's fields are, what a lifecycle event may set, what state each
//! event leaves an object in, and what a revert may put back.

use super::{Change, ChangedFile, ids, str_of};
use crate::stored::Store;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// A knowledge file decoded, as its fields in JSON (a page's body among
/// them); `None` for another kind or a file that does not parse.
pub(super) fn fields_of(dir: &str, bytes: &[u8]) -> Option<Map<String, Value>> {
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
pub(super) fn fields_of_object(object: &crate::model::Written) -> Option<Map<String, Value>> {
    use crate::model::Written;
    let v = match object {
        Written::Claim(c) => serde_json::to_value(c),
        Written::Page(page) => serde_json::to_value(page).map(|mut v| {
            v["body"] = Value::String(page.body.clone());
            v
        }),
        Written::Entity(e) => serde_json::to_value(e),
        Written::Relation(r) => serde_json::to_value(r),
        Written::Source(_) | Written::Removed { .. } => return None,
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
pub(super) fn sets(event: &str, dir: &str) -> &'static [&'static str] {
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
pub(super) fn fields_differing(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
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
pub(super) fn state_of(dir: &str, fields: &Map<String, Value>) -> Map<String, Value> {
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
pub(super) fn same_state(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
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
pub(super) fn meant_state(
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
pub(super) struct Reverted<'a> {
    /// The events before the revert, by id.
    pub(super) earlier: &'a HashMap<&'a str, &'a Value>,
    /// The hashes of the base's events: merged, so what they record stands.
    pub(super) at_base: &'a HashSet<String>,
    /// Each change a branch's lifecycle event made that this check found
    /// sound, by (event, object): its state before and after.
    pub(super) verified: &'a Verified,
    /// The file of the object the revert changes.
    pub(super) path: &'a str,
}

/// An object's lifecycle state before an event, and after it.
pub(super) type StateChange = (Map<String, Value>, Map<String, Value>);

/// [`Reverted::verified`].
pub(super) type Verified = HashMap<(String, String), StateChange>;

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
pub(super) type Approved = HashMap<String, (Option<Map<String, Value>>, String)>;

/// Object `id`'s (file `path`'s) lifecycle state before the branch's next
/// event: as the branch's events left it so far (`states`), else as the
/// base has it, or as the approval that added it in this branch writes it.
/// `None` when that cannot be told.
pub(super) fn state_before(
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

/// `a` and `b` say the same of a lifecycle field: absent, null and an
/// empty list are one.
pub(super) fn same_field(a: Option<&Value>, b: Option<&Value>) -> bool {
    let none = |v: Option<&Value>| {
        v.is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
    };
    (none(a) && none(b)) || a == b
}
