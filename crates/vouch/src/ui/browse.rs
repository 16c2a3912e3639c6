//! The pages for looking around rather than deciding: approved knowledge
//! by kind and field (`/ui/browse`, with what changed lately) and the
//! knowledge base's health (`/ui/health`, what `vouch doctor` reports),
//! and the audit log's tail (`/ui/audit`).

use super::html::*;
use serde_json::{Value, json};
use std::fmt::Write;
use vouch_core::params::{AuditParams, ListParams, NoParams};
use vouch_core::{Caller, Error, Kb, methods};

/// What the browse page is asked: a kind and, for claims, field filters.
#[derive(Default, Debug, Clone)]
pub(crate) struct Browse {
    /// claims (default), pages or entities.
    pub kind: String,
    pub status: String,
    pub claim_type: String,
    pub tag: String,
    pub entity: String,
}

/// Events that change what is known, for "recent changes".
const CHANGE_EVENTS: &[&str] = &[
    "proposal.approve",
    "claim.supersede",
    "claim.contradict",
    "claim.archive",
    "claim.redact",
    "claim.revert",
    "bundle.import",
];

/// `/ui/browse`: approved knowledge by kind, claims filtered by status,
/// type, tag and entity, and what changed lately.
pub(crate) fn browse(kb: &Kb, caller: &Caller, frame: &Frame, q: &Browse) -> Result<String, Error> {
    const SHOWN: i64 = 200;
    let kind = match q.kind.as_str() {
        "pages" | "entities" => q.kind.as_str(),
        _ => "claims",
    };
    let mut body = String::from("<h1>Browse</h1><form method=\"get\" action=\"/ui/browse\">");
    let _ = write!(body, "<select name=\"kind\">");
    for k in ["claims", "pages", "entities"] {
        let _ = write!(
            body,
            "<option{}>{k}</option>",
            if k == kind { " selected" } else { "" }
        );
    }
    body.push_str("</select> ");
    let mut filter = serde_json::Map::new();
    if kind == "claims" {
        for (name, value, choices) in [
            (
                "status",
                &q.status,
                &[
                    "",
                    "working",
                    "stable",
                    "contested",
                    "superseded",
                    "archived",
                    "redacted",
                ][..],
            ),
            (
                "type",
                &q.claim_type,
                &[
                    "",
                    "observation",
                    "fact",
                    "decision",
                    "preference",
                    "procedure",
                    "warning",
                ][..],
            ),
        ] {
            let _ = write!(body, "{name} <select name=\"{name}\">");
            for c in choices {
                let _ = write!(
                    body,
                    "<option value=\"{c}\"{}>{}</option>",
                    if c == value { " selected" } else { "" },
                    if c.is_empty() { "any" } else { c }
                );
            }
            body.push_str("</select> ");
            if !value.is_empty() {
                filter.insert(name.into(), json!(value));
            }
        }
        for (name, value) in [("tag", &q.tag), ("entity", &q.entity)] {
            let _ = write!(
                body,
                "{name} <input name=\"{name}\" value=\"{}\" size=\"14\"> ",
                esc(value)
            );
            if !value.is_empty() {
                let field = if name == "tag" { "tags" } else { "entities" };
                filter.insert(field.into(), json!(value));
            }
        }
    }
    body.push_str("<button>Show</button></form>");
    let params = ListParams {
        limit: Some(SHOWN),
        offset: None,
        filter: Some(filter),
    };
    // Each row: id, status, what it says, and its type and tags.
    let rows: Vec<(String, &'static str, String, String)> = match kind {
        "pages" => call_typed::<methods::kb::ListPages>(kb, caller, params)?
            .into_iter()
            .map(|r| {
                let p = r.object.page;
                let what = p.page_type.as_str().to_string();
                (p.id, p.status.as_str(), p.title, what)
            })
            .collect(),
        "entities" => call_typed::<methods::kb::ListEntities>(kb, caller, params)?
            .into_iter()
            .map(|r| {
                let e = r.object;
                let what = e.entity_type.as_str().to_string();
                (e.id, "", e.name, what)
            })
            .collect(),
        _ => call_typed::<methods::kb::ListClaims>(kb, caller, params)?
            .into_iter()
            .map(|r| {
                let c = r.object;
                let what = format!("{} · {}", c.claim_type.as_str(), c.tags.join(", "));
                (
                    c.id,
                    c.status.as_str(),
                    c.text.chars().take(200).collect(),
                    what,
                )
            })
            .collect(),
    };
    let _ = write!(
        body,
        "<p class=\"muted\" id=\"listed\">{} {kind}{}</p>",
        rows.len(),
        if rows.len() as i64 == SHOWN {
            format!(" (the first {SHOWN}; narrow the filters)")
        } else {
            String::new()
        }
    );
    body.push_str("<table id=\"browse\"><tbody>");
    for (id, status, what, extra) in &rows {
        let link = match kind {
            "claims" => claim_link(id),
            "pages" => why_link(id, Some("page")),
            _ => why_link(id, Some("entity")),
        };
        let _ = write!(
            body,
            "<tr><td>{link} {}</td><td>{}</td><td class=\"small muted\">{}</td></tr>",
            if status.is_empty() {
                String::new()
            } else {
                badge(status)
            },
            esc(what),
            esc(extra)
        );
    }
    body.push_str("</tbody></table>");
    // What changed lately.
    let params = AuditParams {
        tail: Some(2000),
        filter: None,
    };
    let changes: Vec<Value> = audit_events(kb, caller, params)?
        .into_iter()
        .rev()
        .filter(|e| CHANGE_EVENTS.contains(&str_of(e, "event")))
        .take(50)
        .collect();
    let _ = write!(body, "<h2>Recent changes ({})</h2>", changes.len());
    body.push_str(&events_table(&changes));
    Ok(layout("Browse", frame, &body))
}

/// `/ui/health`: every `doctor` finding (lint's included), errors first,
/// each with what to do; the command that repairs what is derivable.
pub(crate) fn health(kb: &Kb, caller: &Caller, frame: &Frame) -> Result<String, Error> {
    let report = vouch_core::health::doctor(kb, caller, Default::default())?;
    let mut issues = report.issues.clone();
    issues.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.id.cmp(&b.id)));
    let errors = issues
        .iter()
        .filter(|f| f.severity == vouch_core::params::Severity::Error)
        .count();
    let mut body = format!(
        "<h1>Health</h1><p class=\"{}\" id=\"health\">{} error(s), {} warning(s).</p>",
        if errors == 0 { "notice" } else { "error" },
        errors,
        issues.len() - errors
    );
    body.push_str(
        "<p class=\"muted\">What <code>vouch doctor</code> reports. Each finding says what to \
         do; <code>vouch doctor --fix</code> repairs what is derived (the index, the merge rule, \
         joined branches) and never touches knowledge.</p>",
    );
    body.push_str(
        "<table id=\"findings\"><thead><tr><th></th><th>Finding</th><th>What to do</th>\
         <th>File</th></tr></thead><tbody>",
    );
    for f in &issues {
        let sev = serde_json::to_value(f.severity)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr class=\"{sev}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td></tr>",
            badge(&sev),
            esc(&f.id.chars().take(80).collect::<String>()),
            esc(&f.message),
            esc(f.path.as_deref().unwrap_or(""))
        );
    }
    body.push_str("</tbody></table>");
    Ok(layout("Health", frame, &body))
}

/// The audit log's tail with the chain's verify result.
pub(crate) fn audit(kb: &Kb, caller: &Caller, frame: &Frame, tail: usize) -> Result<String, Error> {
    let verify = call_typed::<methods::kb::AuditVerify>(kb, caller, NoParams {})?;
    let events = audit_events(
        kb,
        caller,
        AuditParams {
            tail: Some(tail as i64),
            filter: None,
        },
    )?;
    let mut body = String::from("<h1>Audit log</h1>");
    if verify.ok {
        let _ = write!(
            body,
            "<p class=\"notice\" id=\"verify\">The hash chain verifies: {} events.</p>",
            verify.events
        );
    } else {
        let _ = write!(
            body,
            "<p class=\"error\" id=\"verify\">The hash chain does not verify at line {}: {}</p>",
            verify
                .first_bad_line
                .map_or("?".to_string(), |l| l.to_string()),
            esc(verify.problem.as_deref().unwrap_or(""))
        );
    }
    let _ = write!(body, "<h2>Last {} events</h2>", events.len());
    body.push_str(&events_table(&events));
    Ok(layout("Audit log", frame, &body))
}
