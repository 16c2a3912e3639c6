//! The pages about where knowledge came from and how the gate fares: any
//! object's provenance (`/ui/why/ID`: `kb.why`, with `kb.impact` and
//! `kb.neighbors` beside it) and the gate's health (`/ui/stats`:
//! `kb.gate_stats`). Both only read, through the `kb.*` registry; every
//! value from the knowledge base is escaped.

use super::pages::{citation, field_row};
use super::{Host, html::*, object_page, signed_page};
use crate::human::insight::{percent, span};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;
use vouch_core::params::*;
use vouch_core::{Caller, Error, Kb, methods};

/// A pending proposal waiting longer than this stands out as stale.
const STALE_SECONDS: i64 = 7 * 86_400;
/// Pending proposals the gate page lists, the longest waiting first.
const LONGEST_WAITING: i64 = 10;
/// Characters of an object's stored fields shown at most.
const FIELDS_CHARS: usize = 20_000;

/// `/ui/why/ID[?kind=K]`: an object's provenance, impact and neighbors.
pub(crate) async fn why<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let kind = q.get("kind").filter(|k| !k.is_empty()).cloned();
    object_page(app, headers, id, move |kb, caller, frame, id| {
        provenance(kb, caller, frame, id, kind.as_deref()).map(Some)
    })
    .await
}

/// `/ui/stats[?since=30d]`: the review gate's health.
pub(crate) async fn stats<H: Host>(
    State(app): State<Arc<H>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let since = q
        .get("since")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    signed_page(app.clone(), &headers, move |app, caller, frame| {
        gate_health(app.kb(), caller, frame, since.as_deref()).map(Some)
    })
    .await
}

/// What an object says, in one line: a claim's text, a page's title, an
/// entity's name, a relation's ends, evidence's quote, a source's locator.
fn what(kind: &str, o: &Value) -> String {
    if kind == "relation" {
        return format!(
            "{} {} {}",
            str_of(o, "source"),
            str_of(o, "relation"),
            str_of(o, "target")
        );
    }
    ["text", "title", "name", "quote", "locator"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))
        .unwrap_or("")
        .to_string()
}

/// An object's whole story as `kb.why` tells it, with what rests on it
/// (`kb.impact`) and what lies around it (`kb.neighbors`, one hop) beside.
/// An id nothing holds is the method's `not_found` (a 404 saying so).
pub(crate) fn provenance(
    kb: &Kb,
    caller: &Caller,
    frame: &Frame,
    id: &str,
    kind: Option<&str>,
) -> Result<String, Error> {
    let asked = ObjectParams {
        id: id.to_string(),
        kind: kind.map(str::to_string),
    };
    let why = call_typed::<methods::kb::Why>(kb, caller, asked.clone())?;
    let impact = call_typed::<methods::kb::Impact>(kb, caller, asked)?;
    let around = call_typed::<methods::kb::Neighbors>(
        kb,
        caller,
        NeighborsParams {
            id: id.to_string(),
            depth: Some(1),
            limit: None,
        },
    )?;
    let kind = why.kind.as_str();
    let status = str_of(&why.object, "status");
    let mut body = format!(
        "<h1>Provenance: {} {}</h1><div class=\"card\"><p class=\"text\" id=\"text\">{}</p>",
        esc(kind),
        if status.is_empty() {
            String::new()
        } else {
            badge(status)
        },
        esc(&what(kind, &why.object))
    );
    body.push_str(&gate_mark(why.unaudited, why.approved_by.as_deref()));
    body.push_str("<dl>");
    field_row(&mut body, "id", &why.id);
    field_row(&mut body, "kind", kind);
    // The proposal that made it: the first of its kind approved, else the
    // first that names it.
    let made = why
        .proposals
        .iter()
        .find(|p| p.kind == kind && p.status == "approved")
        .or(why.proposals.first());
    if let Some(p) = made {
        field_row(&mut body, "proposed by", &p.proposed_by);
        field_row(&mut body, "proposed at", &p.created_at);
        field_row(
            &mut body,
            "decided by",
            p.decided_by.as_deref().unwrap_or(""),
        );
        field_row(
            &mut body,
            "decided at",
            p.decided_at.as_deref().unwrap_or(""),
        );
    }
    field_row(
        &mut body,
        "approved by (its file)",
        why.approved_by.as_deref().unwrap_or(""),
    );
    body.push_str("</dl>");
    if kind == "claim" {
        let _ = write!(
            body,
            "<p><a href=\"/ui/claim/{}\">the claim's page</a></p>",
            url_id(&why.id)
        );
    }
    body.push_str("</div><div class=\"beside\"><div>");
    story(&mut body, kb, caller, &why);
    body.push_str("</div><aside>");
    impact_html(&mut body, &impact);
    neighbors_html(&mut body, &around);
    body.push_str("</aside></div>");
    Ok(layout(&format!("Why {kind} {id}"), frame, &body))
}

/// Whether the object's file is what the gate wrote: a mismatch is an
/// error on the page, never a quiet field.
fn gate_mark(unaudited: Option<bool>, approved_by: Option<&str>) -> String {
    match unaudited {
        Some(true) => format!(
            "<p class=\"error\" id=\"gate\"><b>UNAUDITED</b>: its file is not what an approval \
             or import wrote — it was written or edited by hand{}. Agents read it as knowledge \
             nobody reviewed.</p>",
            approved_by
                .map(|a| format!(" (the file names {} as approver)", esc(a)))
                .unwrap_or_default()
        ),
        Some(false) => {
            "<p class=\"notice\" id=\"gate\">Its file is what the gate wrote.</p>".into()
        }
        None => "<p class=\"muted\" id=\"gate\">Sources and evidence are not gated: they are \
                 registered, not approved.</p>"
            .into(),
    }
}

/// The proposals, citations, chain, audit events and stored fields.
fn story(body: &mut String, kb: &Kb, caller: &Caller, why: &WhyResult) {
    let _ = write!(body, "<h2>Proposals ({})</h2>", why.proposals.len());
    if why.proposals.is_empty() {
        body.push_str("<p class=\"muted\">No proposal made or changed it.</p>");
    } else {
        body.push_str(
            "<table id=\"proposals\"><thead><tr><th>Proposal</th><th>Proposed</th>\
             <th>Decided</th></tr></thead><tbody>",
        );
        // Why, in the words of whoever gave one: the proposer's rationale,
        // the decider's reason.
        let said = |label: &str, text: &Option<String>| {
            text.as_deref()
                .map(|t| format!("<div class=\"small\">{label}: “{}”</div>", esc(t)))
                .unwrap_or_default()
        };
        for p in &why.proposals {
            let decided = match (&p.decided_by, &p.decided_at) {
                (Some(by), at) => format!(
                    "{} by {}<br><span class=\"small\">{}</span>",
                    badge(&p.status),
                    esc(by),
                    esc(at.as_deref().unwrap_or(""))
                ),
                (None, _) => badge(&p.status),
            };
            let _ = write!(
                body,
                "<tr><td><a href=\"/ui/proposal/{}\">{}</a><br><span class=\"small\">{}{}</span></td>\
                 <td>{}<br><span class=\"small\">{}</span>{}</td><td>{decided}{}</td></tr>",
                url_id(&p.id),
                esc(&p.id),
                esc(&p.kind),
                p.session_id
                    .as_deref()
                    .map(|s| format!(" · session {}", esc(s)))
                    .unwrap_or_default(),
                esc(&p.proposed_by),
                esc(&p.created_at),
                said("rationale", &p.rationale),
                said("reason", &p.reason)
            );
        }
        body.push_str("</tbody></table>");
    }
    let _ = write!(body, "<h2>Citations ({})</h2>", why.citations.len());
    if why.citations.is_empty() {
        body.push_str("<p class=\"muted\">Cites nothing.</p>");
    }
    for c in &why.citations {
        let _ = write!(
            body,
            "<p class=\"small\">{} {}{}</p>",
            esc(&c.kind),
            why_link(&c.id, Some(&c.kind)),
            if c.missing { " · <b>missing</b>" } else { "" }
        );
        body.push_str(&citation(kb, caller, &c.id));
    }
    if !why.chain.is_empty() {
        let _ = write!(
            body,
            "<h2>Supersession and contradiction ({})</h2><table id=\"chain\"><tbody>",
            why.chain.len()
        );
        for l in &why.chain {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{} {}</td><td>{}</td></tr>",
                esc(&l.relation.replace('_', " ")),
                why_link(&l.id, Some("claim")),
                l.status.as_deref().map_or_else(|| badge("missing"), badge),
                esc(l.text.as_deref().unwrap_or(""))
            );
        }
        body.push_str("</tbody></table>");
    }
    let events: Vec<Value> = why.audit.iter().map(|r| r.0.clone()).collect();
    let _ = write!(body, "<h2>Audit events ({})</h2>", events.len());
    body.push_str(&events_table(&events));
    let fields = serde_json::to_string_pretty(&why.object).unwrap_or_default();
    let cut: String = fields.chars().take(FIELDS_CHARS).collect();
    let _ = write!(
        body,
        "<details><summary>Stored fields</summary><pre id=\"fields\">{}{}</pre></details>",
        esc(&cut),
        if cut.len() < fields.len() { "…" } else { "" }
    );
}

/// What rests on the object, each referrer linked, with how.
fn impact_html(body: &mut String, impact: &ImpactResult) {
    let _ = write!(
        body,
        "<h2>Impact ({})</h2><p class=\"small muted\">What rests on it: removing or \
         replacing it touches these.</p>",
        impact.referrers.len()
    );
    if impact.referrers.is_empty() {
        body.push_str("<p class=\"muted\" id=\"impact\">Nothing refers to it.</p>");
        return;
    }
    body.push_str("<table id=\"impact\"><tbody>");
    for r in &impact.referrers {
        let _ = write!(
            body,
            "<tr><td>{} {}</td><td class=\"small\">{}</td></tr>",
            esc(&r.kind),
            why_link(&r.id, Some(&r.kind)),
            esc(&r.how.join(", "))
        );
    }
    body.push_str("</tbody></table>");
}

/// The nodes one hop away, each linked, and the edges to them.
fn neighbors_html(body: &mut String, n: &NeighborsResult) {
    let _ = write!(body, "<h2>Neighbors ({})</h2>", n.nodes.len());
    if n.nodes.is_empty() {
        body.push_str("<p class=\"muted\" id=\"neighbors\">Nothing lies one hop away.</p>");
        return;
    }
    let node = |id: &str, kind: &str| match kind {
        "unknown" => format!(
            "{} <span class=\"small muted\">(not stored)</span>",
            esc(id)
        ),
        k => why_link(id, Some(k)),
    };
    let kind_of = |id: &str| {
        std::iter::once(&n.start)
            .chain(&n.nodes)
            .find(|x| x.id == id)
            .map_or("unknown", |x| x.kind.as_str())
    };
    body.push_str("<table id=\"neighbors\"><tbody>");
    for x in &n.nodes {
        let _ = write!(
            body,
            "<tr><td>{} {}</td><td class=\"small\">{}</td></tr>",
            esc(&x.kind),
            node(&x.id, &x.kind),
            esc(x.label.as_deref().unwrap_or(""))
        );
    }
    body.push_str("</tbody></table>");
    if n.truncated {
        body.push_str("<p class=\"small muted\">Cut at the first 100; <code>vouch neighbors ID --limit N</code> lists more.</p>");
    }
    if !n.edges.is_empty() {
        body.push_str("<p class=\"small\">");
        for e in &n.edges {
            let _ = write!(
                body,
                "{} <i>{}</i> {}<br>",
                node(&e.source, kind_of(&e.source)),
                esc(&e.relation),
                node(&e.target, kind_of(&e.target))
            );
        }
        body.push_str("</p>");
    }
}

/// The gate's health: the queue now (its oldest named and linked, stale
/// ones marked) and the decisions over the window, by agent and reviewer.
pub(crate) fn gate_health(
    kb: &Kb,
    caller: &Caller,
    frame: &Frame,
    since: Option<&str>,
) -> Result<String, Error> {
    let mut body = format!(
        "<h1>Gate health</h1><form method=\"get\" action=\"/ui/stats\">since \
         <input name=\"since\" value=\"{}\" size=\"24\" placeholder=\"30d, 2w or an RFC 3339 time\"> \
         <button>Show</button> <span class=\"small\"><a href=\"/ui/stats\">all time</a> · \
         <a href=\"/ui/stats?since=7d\">7 days</a> · <a href=\"/ui/stats?since=30d\">30 days</a> · \
         <a href=\"/ui/stats?since=90d\">90 days</a></span></form>",
        esc(since.unwrap_or(""))
    );
    let params = GateStatsParams {
        since: since.map(str::to_string),
    };
    let s = match call_typed::<methods::kb::GateStats>(kb, caller, params) {
        Ok(s) => s,
        Err(e) if e.kind == vouch_core::ErrorKind::InvalidParams => {
            let _ = write!(
                body,
                "<p class=\"error\" id=\"error\">{}</p>",
                esc(&e.message)
            );
            return Ok(layout("Gate health", frame, &body));
        }
        Err(e) => return Err(e),
    };
    queue_html(&mut body, kb, caller, &s.queue)?;
    let _ = write!(
        body,
        "<h2>Decisions {}</h2><table id=\"window\" style=\"width:auto\"><tbody>\
         <tr><th>Proposed</th><td>{}</td></tr><tr><th>Approved</th><td>{}</td></tr>\
         <tr><th>Rejected</th><td>{}</td></tr><tr><th>Approval rate</th><td>{}</td></tr>\
         <tr><th>Rejection rate</th><td>{}</td></tr>\
         <tr><th>Median time to decision</th><td>{}</td></tr></tbody></table>",
        match &s.since {
            Some(t) => format!("since {}", esc(t)),
            None => "over all time".into(),
        },
        s.proposed,
        s.approved,
        s.rejected,
        percent(s.approval_rate),
        percent(s.rejection_rate),
        s.median_seconds_to_decision.map_or("-".into(), span)
    );
    actors_table(&mut body, "By agent", "by-agent", &s.by_agent, true);
    actors_table(
        &mut body,
        "By reviewer",
        "by-reviewer",
        &s.by_reviewer,
        false,
    );
    let _ = write!(
        body,
        "<p class=\"small muted\">Figures taken at {}, from the pending queue and \
         <code>decided/</code> (<code>vouch stats</code> reads the same).</p>",
        esc(&s.now)
    );
    Ok(layout("Gate health", frame, &body))
}

/// The queue now: its size, median wait and the longest waiting, each
/// linked; those waiting past [`STALE_SECONDS`] marked.
fn queue_html(body: &mut String, kb: &Kb, caller: &Caller, q: &QueueStats) -> Result<(), Error> {
    let _ = write!(
        body,
        "<h2>Queue now</h2><p id=\"queue\"><a href=\"/\">{} pending</a>{}</p>",
        q.pending,
        q.median_age_seconds
            .map(|m| format!(" · median wait {}", span(m)))
            .unwrap_or_default()
    );
    if let (Some(id), Some(age)) = (&q.oldest_id, q.oldest_age_seconds) {
        let stale = age >= STALE_SECONDS;
        let _ = write!(
            body,
            "<p class=\"{}\" id=\"oldest\">Oldest: <a href=\"/ui/proposal/{}\">{}</a>, proposed {}, \
             waiting <b>{}</b>{}</p>",
            if stale { "error" } else { "notice" },
            url_id(id),
            esc(id),
            esc(q.oldest_created_at.as_deref().unwrap_or("")),
            span(age),
            if stale {
                ": stale. Decide it, or sweep what waited too long with \
                 <code>vouch expire --older-than 30d</code>."
            } else {
                ""
            }
        );
    }
    if q.pending == 0 {
        return Ok(());
    }
    let longest = call_typed::<methods::kb::ListPending>(
        kb,
        caller,
        ListParams {
            limit: Some(LONGEST_WAITING),
            offset: None,
            filter: None,
        },
    )?;
    let now = kb.now();
    let _ = write!(
        body,
        "<table id=\"waiting\"><thead><tr><th>Waiting</th><th>Proposal</th><th>Kind</th>\
         <th>By</th></tr></thead><tbody>"
    );
    for r in &longest {
        let p = &r.object;
        let age = (now.0 - p.created_at.0).num_seconds().max(0);
        let _ = write!(
            body,
            "<tr{}><td>{}{}</td><td><a href=\"/ui/proposal/{}\">{}</a></td><td>{}</td><td>{}</td></tr>",
            if age >= STALE_SECONDS {
                " class=\"stale\""
            } else {
                ""
            },
            span(age),
            if age >= STALE_SECONDS {
                " · stale"
            } else {
                ""
            },
            url_id(&p.id),
            esc(&p.id),
            esc(p.kind.as_str()),
            esc(&p.proposed_by)
        );
    }
    body.push_str("</tbody></table>");
    Ok(())
}

/// One actor table: proposers with what they proposed and what is still
/// pending, reviewers with the decisions they took.
fn actors_table(body: &mut String, title: &str, id: &str, rows: &[ActorStats], proposer: bool) {
    let _ = write!(body, "<h2>{title} ({})</h2>", rows.len());
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">None in this window.</p>");
        return;
    }
    let _ = write!(
        body,
        "<table id=\"{id}\"><thead><tr><th>{}</th>{}<th>Approved</th><th>Rejected</th>\
         <th>Approval rate</th><th>Median time to decision</th></tr></thead><tbody>",
        if proposer { "Agent" } else { "Reviewer" },
        if proposer {
            "<th>Proposed</th><th>Pending</th>"
        } else {
            ""
        }
    );
    for r in rows {
        let _ = write!(
            body,
            "<tr><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.actor),
            if proposer {
                format!("<td>{}</td><td>{}</td>", r.proposed, r.pending)
            } else {
                String::new()
            },
            r.approved,
            r.rejected,
            percent(r.approval_rate),
            r.median_seconds_to_decision.map_or("-".into(), span)
        );
    }
    body.push_str("</tbody></table>");
}
