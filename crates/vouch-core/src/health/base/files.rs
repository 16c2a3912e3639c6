//! What `--base` says of the files a branch changed: each must be what a
//! new event recorded writing, and what that event may write; an approval
//! writes what its proposal's payload held.

use super::config::config_changes;
use super::lifecycle::{fields_differing, fields_of, fields_of_object, same_field, sets};
use super::{Change, ChangedFile, NewEvents, ids, is_knowledge_path, str_of};
use crate::error::Result;
use crate::stored::Store;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// A changed file with the kind and id its path names.
type Named<'a> = (&'a ChangedFile, &'a str, &'a str);

/// Step 3 of [`super::check`]: every changed file under `.vouch/` has a
/// new event behind it that may write it. Pushes what is wrong and
/// answers the settings `config.yaml` changed.
pub(super) fn changed_files(
    kb: &Store,
    changed: &[ChangedFile],
    new: &NewEvents,
    decided_by_new: &HashMap<&str, &str>,
    problems: &mut Vec<String>,
) -> Result<Vec<String>> {
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
            config = config_changes(f.before.as_deref(), now.as_deref(), problems);
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
        if new.redacted.contains(path.as_str()) {
            problems.extend(redaction_problem(kb, (f, kind, id), new)?);
            continue;
        }
        // A redacted source's content back (a merge of a branch that still
        // holds it, or a hand copy): the redacted bytes return.
        if dir == "sources"
            && path.ends_with("/content")
            && f.change != Change::Deleted
            && kb.load_source(id).ok().flatten().is_some_and(|s| {
                s.extra
                    .contains_key(crate::review::gate::redact::REDACTED_KEY)
            })
        {
            problems.push(format!(
                "{path}: source {id} was redacted (its meta.yaml is a tombstone), and this brings \
                 its bytes back; remove the file (a merge keeps the redaction: take its side)"
            ));
            continue;
        }
        if is_knowledge_path(path) && f.change != Change::Deleted {
            problems.extend(knowledge_problem(kb, (f, kind, id), new)?);
            continue;
        }
        if is_knowledge_path(path) {
            problems.extend(removal_problem(f, kind, new));
            continue;
        }
        match f.change {
            Change::Deleted => problems.push(format!(
                "{path}: a {kind} was removed; knowledge is never deleted by hand (archive or \
                 supersede it through the gate)"
            )),
            Change::Modified if dir == "decided" => problems.push(format!(
                "{path}: a decision record was edited after it was made"
            )),
            // A person's import brings the decisions of the KB it came
            // from, by proposal id.
            Change::Added if dir == "decided" && new.imported.contains(id) => {
                let now = kb.read_file(&kb.layout().root().join(path))?;
                problems.extend(not_as_written(new, path, kind, now.as_deref()));
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
    Ok(config)
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
    (f, kind, id): Named<'_>,
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

/// What is wrong with a file a new redaction recorded rewriting or
/// removing: a removed one (a source's content) must be gone and be what
/// the redaction recorded taking out (bytes hashing to the source's id); a
/// rewritten one must be what it recorded writing, carry the redaction's
/// mark, and — a claim or a page — differ from the base only in what a
/// redaction masks (the text or body, the status, the time, the mark).
fn redaction_problem(
    kb: &Store,
    (f, kind, id): Named<'_>,
    new: &NewEvents,
) -> Result<Option<String>> {
    use crate::review::gate::redact::{MASK, REDACTED_KEY};
    let path = &f.path;
    if f.change == Change::Deleted {
        let content_of = path
            .strip_prefix("sources/")
            .and_then(|p| p.strip_suffix("/content"));
        let taken = new.removed.get(path.as_str());
        return Ok(match (content_of, taken) {
            (Some(source), Some((sha, _))) if sha == source => None,
            _ => Some(format!(
                "{path}: removed, but the redaction that names it removes only a source's \
                 content, and records its bytes as hashing to the source's id"
            )),
        });
    }
    let now = kb.read_file(&kb.layout().root().join(path))?;
    if let Some(wrong) = not_as_written(new, path, kind, now.as_deref()) {
        return Ok(Some(wrong));
    }
    let text = now
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or("");
    if !text
        .lines()
        .any(|l| l.starts_with(&format!("{REDACTED_KEY}:")))
    {
        return Ok(Some(format!(
            "{path}: a redaction records writing this {kind}, which does not carry its mark \
             (`{REDACTED_KEY}:`)"
        )));
    }
    let dir = path.split('/').next().unwrap_or("");
    if !is_knowledge_path(path) {
        return Ok(None);
    }
    let (Some(before), Some(after)) = (
        f.before.as_deref().and_then(|b| fields_of(dir, b)),
        now.as_deref().and_then(|b| fields_of(dir, b)),
    ) else {
        return Ok(Some(format!(
            "{path}: this {kind} was redacted, and its version at the base cannot be read to \
             tell what the redaction changed"
        )));
    };
    let masked = if dir == "claims" { "text" } else { "body" };
    let may = [masked, "status", "updated_at", REDACTED_KEY];
    let moved: Vec<String> = fields_differing(&before, &after)
        .into_iter()
        .filter(|k| !may.contains(&k.as_str()))
        .collect();
    let mask_ok = after
        .get(masked)
        .and_then(Value::as_str)
        .is_some_and(|t| t.trim_end() == MASK);
    let status_ok = after.get("status").and_then(Value::as_str) == Some("redacted");
    if !moved.is_empty() || !mask_ok || !status_ok {
        return Ok(Some(format!(
            "{path}: {kind} {id} was rewritten by a redaction, which masks only its {masked} \
             and sets its status to redacted; {}: edited by hand",
            if moved.is_empty() {
                format!("its {masked} or status is not what a redaction writes")
            } else {
                format!("it also changed {}", moved.join(", "))
            }
        )));
    }
    Ok(None)
}

/// What is wrong with a claim, page, entity or relation file the branch
/// removed: the last new event that recorded writing it must be an
/// approved delete that removed it, and what it removed must be the file
/// as it was at the base (the sha256 its event recorded).
fn removal_problem(f: &ChangedFile, kind: &str, new: &NewEvents) -> Option<String> {
    let path = &f.path;
    let by_hand = || {
        format!(
            "{path}: a {kind} was removed with no approved delete in this branch's audit log: \
             removed by hand, which no review decided (restore it, or propose its deletion \
             with `vouch propose-delete` and have a person approve it; archive or supersede \
             keep the history)"
        )
    };
    let Some((sha, event)) = new.removed.get(path.as_str()) else {
        return Some(by_hand());
    };
    // A later event wrote it again: that is what the branch must hold.
    if new
        .written
        .get(path.as_str())
        .is_none_or(|(w, _)| w != crate::audit::trail::REMOVED)
    {
        return Some(by_hand());
    }
    match f.before.as_deref() {
        Some(before) if crate::ids::content_sha256(before) == *sha => None,
        Some(before) => Some(format!(
            "{path}: event {event} (an approved delete) records removing bytes of sha256 {sha}, \
             but the {kind} at the base was {}: what was removed is not what was approved for \
             removal",
            crate::ids::content_sha256(before)
        )),
        None => Some(format!(
            "{path}: this {kind} was removed, and its version at the base cannot be read to \
             tell whether it is what event {event} approved removing"
        )),
    }
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

/// Check what a new `proposal.approve` wrote against the proposal it
/// decides: its `decided/` record must be this very decision, hold what
/// the proposal's `proposal.create` fingerprinted, and the object is what
/// approving that payload writes. Answers that object's fields (`None`
/// when it cannot be told) and pushes what is wrong.
pub(super) fn approved_from_payload(
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
