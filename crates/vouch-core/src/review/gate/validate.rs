//! Validation (protocol §3): what a draft must satisfy, at propose time and
//! again at approve time.

use super::*;

/// Collects every problem so an agent can fix them in one go.
pub(super) struct Problems(pub(super) Vec<String>);

impl Problems {
    pub(super) fn push(&mut self, msg: impl Into<String>) {
        self.0.push(msg.into());
    }
}

pub(super) fn check_confidence(p: &mut Problems, c: f64) {
    if !c.is_finite() || !(0.0..=1.0).contains(&c) {
        p.push(format!("confidence: {c} is not a number between 0 and 1"));
    }
}

pub(super) fn check_refs(kb: &Kb, p: &mut Problems, field: &str, dir: Dir, ids: &[String]) {
    for (i, id) in ids.iter().enumerate() {
        if let Some(why) = crate::rules::reference_problem(kb, dir, id) {
            p.push(format!("{field}[{i}]: {why}"));
        }
    }
}

/// Check one citation: an existing source, an existing evidence, or a quote
/// that occurs in an existing source's content.
pub(super) fn check_citation(kb: &Kb, p: &mut Problems, field: &str, c: &Citation) {
    match c {
        Citation::Id(id) => {
            if let Some(why) = crate::rules::citation_problem(kb, id) {
                p.push(format!("{field}: {why}"));
            }
        }
        Citation::Span { source_id, quote } => {
            if let Err(e) = crate::sources::locate_quote(kb, source_id, quote) {
                p.push(format!("{field}: {e}"));
            }
        }
    }
}

pub(super) fn check_session(kb: &Kb, p: &mut Problems, session_id: &Option<String>) {
    if let Some(sid) = session_id {
        match check_id("session id", sid).and_then(|_| kb.load::<Session>(sid)) {
            Err(e) => p.push(format!("session_id: {e}")),
            Ok(None) => p.push(format!("session_id: session {sid:?} does not exist")),
            Ok(Some(s)) if s.status == SessionStatus::Ended => {
                p.push(format!("session_id: session {sid} has ended"))
            }
            Ok(Some(_)) => {}
        }
    }
}

pub(super) fn check_text(p: &mut Problems, field: &str, text: &str) {
    if text.trim().is_empty() {
        p.push(format!("{field}: must not be empty or whitespace"));
    }
    check_controls(p, field, text);
}

pub(super) fn check_controls(p: &mut Problems, field: &str, text: &str) {
    if let Some((at, c)) = crate::ids::hidden_char(text) {
        let what = if c.is_control() {
            "control character"
        } else {
            "invisible format character"
        };
        p.push(format!(
            "{field}: contains the {what} U+{:04X} at byte {at}; it could hide or reorder \
             text the reviewer sees (what agents read must be what the person approved), so \
             remove it",
            c as u32
        ));
    }
}

/// Every string in a JSON value (keys too), checked as text: claim
/// metadata becomes durable and is served, so it is held to the same rule.
pub(super) fn check_value_controls(p: &mut Problems, field: &str, v: &serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => check_controls(p, field, s),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                check_value_controls(p, &format!("{field}[{i}]"), x);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                check_controls(p, &format!("{field} key"), k);
                check_value_controls(p, &format!("{field}.{k}"), x);
            }
        }
        _ => {}
    }
}

pub(super) fn check_all_controls<'a>(
    p: &mut Problems,
    field: &str,
    texts: impl IntoIterator<Item = &'a String>,
) {
    for (i, t) in texts.into_iter().enumerate() {
        check_controls(p, &format!("{field}[{i}]"), t);
    }
}

/// Validate a draft against the KB as it is now. Runs at propose and approve.
/// `supersedes`: each an existing claim that nothing else supersedes yet.
/// `object_id` is the claim being approved: an interrupted approval of it
/// may already have marked the old claim superseded by it.
pub(super) fn check_supersedes(kb: &Kb, p: &mut Problems, ids: &[String], object_id: Option<&str>) {
    for (i, id) in ids.iter().enumerate() {
        if let Err(e) = check_id("supersedes", id) {
            p.push(format!("supersedes[{i}]: {e}"));
            continue;
        }
        if ids[..i].contains(id) {
            p.push(format!("supersedes[{i}]: claim {id} is listed twice"));
            continue;
        }
        match kb.load::<Claim>(id) {
            Ok(Some(c)) => {
                if let Some(why) = crate::rules::supersede_problem(&c, object_id) {
                    p.push(format!("supersedes[{i}]: {why}"));
                }
            }
            Ok(None) => p.push(format!("supersedes[{i}]: claim {id} does not exist")),
            Err(e) => p.push(format!("supersedes[{i}]: claim {id} is unreadable: {e}")),
        }
    }
}

/// `awaiting`: claims not approved yet that a relation may join — at
/// propose time the claims a knowledge import just proposed (the relation
/// is approved after them), at approve time those approved in the same
/// list.
pub(super) fn validate(
    kb: &Kb,
    draft: &Draft,
    citations: Option<&[Citation]>,
    object_id: Option<&str>,
    awaiting: &HashSet<String>,
) -> Vec<String> {
    let mut p = Problems(Vec::new());
    match draft {
        Draft::Claim(d) => {
            check_supersedes(kb, &mut p, &d.supersedes, object_id);
            check_text(&mut p, "text", &d.text);
            if let Some(at) = d.text.find(['\n', '\r']) {
                // Sixty line breaks scroll the first line and the id off a
                // reviewer's screen; a claim is one sentence.
                p.push(format!(
                    "text: contains a line break at byte {at}; a claim is one sentence on one \
                     line (put longer material in a page, or split it into claims)"
                ));
            }
            check_all_controls(&mut p, "tags", &d.tags);
            if let Some(m) = &d.metadata {
                check_value_controls(&mut p, "metadata", &serde_json::Value::Object(m.clone()));
            }
            let cites: Vec<Citation> = match citations {
                Some(c) => c.to_vec(),
                None => d.evidence.iter().cloned().map(Citation::Id).collect(),
            };
            if cites.is_empty() && kb.require_citations() {
                p.push(
                    "evidence: a claim must cite at least one source or evidence id \
                     (register a source first with kb.register_source)",
                );
            }
            for (i, c) in cites.iter().enumerate() {
                check_citation(kb, &mut p, &format!("evidence[{i}]"), c);
            }
            check_confidence(&mut p, d.confidence);
            check_refs(kb, &mut p, "entities", Dir::Entities, &d.entities);
        }
        Draft::Page(d) => {
            check_text(&mut p, "title", &d.title);
            check_controls(&mut p, "body", &d.body);
            check_all_controls(&mut p, "tags", &d.tags);
            check_refs(kb, &mut p, "claims", Dir::Claims, &d.claims);
            check_refs(kb, &mut p, "entities", Dir::Entities, &d.entities);
            for (i, s) in d.sources.iter().enumerate() {
                if !is_source_id(s) {
                    p.push(format!("sources[{i}]: {s:?} is not a source id"));
                } else if !kb.source_exists(s) {
                    p.push(format!("sources[{i}]: source {s} is not registered"));
                }
            }
        }
        Draft::Entity(d) => {
            check_text(&mut p, "name", &d.name);
            check_all_controls(&mut p, "aliases", &d.aliases);
            check_all_controls(&mut p, "tags", &d.tags);
            if let Some(desc) = &d.description {
                check_controls(&mut p, "description", desc);
            }
        }
        Draft::Relation(d) => {
            for (field, id) in [("source", &d.source), ("target", &d.target)] {
                if awaiting.contains(id) {
                    continue;
                }
                if let Some(why) = crate::rules::endpoint_problem(kb, id) {
                    p.push(format!("{field}: {why}"));
                }
            }
            check_confidence(&mut p, d.confidence);
            let cites: Vec<Citation> = match citations {
                Some(c) => c.to_vec(),
                None => d.evidence.iter().cloned().map(Citation::Id).collect(),
            };
            for (i, c) in cites.iter().enumerate() {
                check_citation(kb, &mut p, &format!("evidence[{i}]"), c);
            }
        }
    }
    p.0
}
