//! The review pages as HTML: server-rendered (keyboard paths are one static
//! script, a progressive enhancement), no build step, nothing fetched from
//! elsewhere. Each function reads through the `kb.*`
//! registry (or the core's verified reads, for source text) and returns a
//! whole page; every piece of stored text is escaped here, since it came
//! from an agent or a cloned repository.

pub use super::html::Frame;
pub(crate) use super::html::*;
use serde_json::{Value, json};
use std::fmt::Write;
use vouch_core::params::{AuditFilter, AuditParams, IdParams, ListParams};
use vouch_core::retrieval::{SearchHit, SearchParams};
use vouch_core::{Caller, Error, Kb, methods};

/// A one-line summary of a proposal's payload.
fn summary(p: &Value) -> String {
    // A lifecycle change, in words.
    if let Some(s) = p["_meta"]["change"]["summary"].as_str() {
        return s.to_string();
    }
    let payload = &p["payload"];
    for k in ["text", "title", "name"] {
        if let Some(s) = payload.get(k).and_then(Value::as_str) {
            return s.to_string();
        }
    }
    if payload.get("relation").is_some() {
        return format!(
            "{} {} {}",
            str_of(payload, "source"),
            str_of(payload, "relation"),
            str_of(payload, "target")
        );
    }
    if let Some(m) = payload.get("method").and_then(Value::as_str) {
        return format!("{m} {}", str_of(p, "object_id"));
    }
    str_of(p, "object_id").to_string()
}

/// Rows the queue page shows at most (the oldest): a page of 100,000
/// rows helps nobody and takes seconds to render.
const QUEUE_ROWS: usize = 500;

/// The review queue, oldest first, with counts by kind. `notice` is a
/// fixed sentence the handler chose (never request text).
pub(crate) fn queue(
    kb: &Kb,
    _caller: &Caller,
    frame: &Frame,
    notice: Option<&str>,
) -> Result<String, Error> {
    // The queue itself, without each citation's quote (the proposal's
    // page shows those): a count is enough here.
    let items: Vec<Value> = vouch_core::review::gate::list_pending(kb)?
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .collect();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for p in &items {
        *counts.entry(str_of(p, "kind").to_string()).or_default() += 1;
    }
    let mut body = String::new();
    if let Some(n) = notice {
        let _ = write!(body, "<p class=\"notice\" id=\"notice\">{}</p>", esc(n));
    }
    let _ = write!(
        body,
        "<h1>Review queue <span class=\"muted\" id=\"count\">{}</span></h1>",
        items.len()
    );
    if items.is_empty() {
        body.push_str("<p>Nothing is waiting for review.</p>");
        return Ok(layout("Review queue", frame, &body));
    }
    let by_kind: Vec<String> = counts
        .iter()
        .map(|(k, n)| format!("{n} {}", esc(k)))
        .collect();
    let _ = write!(body, "<p class=\"muted\">{}</p>", by_kind.join(" · "));
    body.push_str(
        "<table id=\"queue\"><thead><tr><th>Proposed</th><th>Kind</th><th>What</th>\
         <th>By</th><th>Cites</th></tr></thead><tbody>",
    );
    // A session's proposals together (its task shown), then each agent's
    // proposals outside any session: reviewed a group at a time.
    let shown: Vec<&Value> = items.iter().take(QUEUE_ROWS).collect();
    let mut groups: Vec<(Group, Vec<&Value>)> = Vec::new();
    for p in shown {
        let g = Group::of(p);
        match groups.iter_mut().find(|(k, _)| *k == g) {
            Some((_, v)) => v.push(p),
            None => groups.push((g, vec![p])),
        }
    }
    for (g, members) in &groups {
        let _ = write!(
            body,
            "<tr class=\"group\"><th colspan=\"5\">{} · {} proposal(s){} \
             <a class=\"together\" href=\"{}\">review them together</a></th></tr>",
            g.title(),
            members.len(),
            g.task(kb)
                .map(|t| format!(" · task: “{}”", esc(&t)))
                .unwrap_or_default(),
            g.href()
        );
        for p in members {
            queue_row(&mut body, p);
        }
    }
    body.push_str("</tbody></table>");
    if items.len() > QUEUE_ROWS {
        let _ = write!(
            body,
            "<p class=\"muted\">The oldest {QUEUE_ROWS} of {} are shown; decide these and the \
             next ones appear (or use <code>vouch review</code>).</p>",
            items.len()
        );
    }
    body.push_str(KEYS_SCRIPT);
    Ok(layout("Review queue", frame, &body))
}

/// Proposals reviewed together: one agent session's, or one agent's made
/// outside any session.
#[derive(PartialEq, Eq, Clone, Debug)]
pub(crate) enum Group {
    Session(String),
    By(String),
}

impl Group {
    fn of(p: &Value) -> Group {
        match p.get("session_id").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => Group::Session(s.to_string()),
            _ => Group::By(str_of(p, "proposed_by").to_string()),
        }
    }
    fn title(&self) -> String {
        match self {
            Group::Session(s) => format!("session <b>{}</b>", esc(s)),
            Group::By(a) => format!("by <b>{}</b>, outside a session", esc(a)),
        }
    }
    fn href(&self) -> String {
        match self {
            Group::Session(s) => format!("/ui/group?session={}", url_id(s)),
            Group::By(a) => format!("/ui/group?by={}", url_id(a)),
        }
    }
    /// The session's task, as the agent gave it.
    fn task(&self, kb: &Kb) -> Option<String> {
        let Group::Session(s) = self else { return None };
        let session = kb.load::<vouch_core::model::Session>(s).ok()??;
        session.task.or(session.note)
    }
}

/// Keyboard paths, as a progressive enhancement (every action is a link or
/// a form without it): `j`/`k` move between proposals, `o` opens one, `x`
/// selects or deselects it, `a` approves (the selection, on a group), `r`
/// goes to the reason to reject.
pub(crate) const KEYS_JS: &str = "(function(){\
var items=Array.prototype.slice.call(document.querySelectorAll('.item,a.together,a.proposal'));var at=-1;\
function go(i){if(!items.length)return;at=Math.max(0,Math.min(items.length-1,i));items[at].focus();}\
document.addEventListener('keydown',function(e){\
if(e.ctrlKey||e.metaKey||e.altKey)return;var t=e.target.tagName;if(t==='INPUT'||t==='TEXTAREA'||t==='SELECT')return;\
var k=e.key;var cur=items[at];\
if(k==='j'){go(at+1);e.preventDefault();}\
else if(k==='k'){go(at-1);e.preventDefault();}\
else if(k==='o'&&cur){var l=cur.tagName==='A'?cur:cur.querySelector('a.open');if(l){l.click();}}\
else if(k==='x'&&cur){var c=cur.querySelector('input[type=checkbox]');if(c){c.checked=!c.checked;}}\
else if(k==='a'){var b=document.getElementById('approve-selected')||document.getElementById('approve');if(b){e.preventDefault();b.click();}}\
else if(k==='r'){var r=document.getElementById('reason');if(r){e.preventDefault();r.focus();}}\
});})();\n";

/// The page's reference to [`KEYS_JS`]: served from this origin
/// (`/ui/keys.js`), as the pages' content security policy allows no
/// inline script.
const KEYS_SCRIPT: &str = "<script src=\"/ui/keys.js\"></script>";

/// One row of the queue table.
fn queue_row(body: &mut String, p: &Value) {
    let id = str_of(p, "id");
    let cites = strings(&p["payload"]["evidence"]).len() + strings(&p["payload"]["sources"]).len();
    let _ = write!(
        body,
        "<tr><td class=\"small\">{}</td><td>{}</td><td><a class=\"proposal\" href=\"/ui/proposal/{}\">{}</a></td>\
         <td>{}</td><td>{}</td></tr>",
        esc(&str_of(p, "created_at")
            .chars()
            .take(16)
            .collect::<String>()
            .replace('T', " ")),
        esc(str_of(p, "kind")),
        url_id(id),
        esc(&summary(p)),
        esc(str_of(p, "proposed_by")),
        cites
    );
}

/// A group's pending proposals, each shown whole (everything approving it
/// makes durable, its evidence with the quotes), each with a box to select
/// it; one button approves the selected ones, all or nothing.
/// Proposals a group page shows whole at once.
const GROUP_PAGE: usize = 50;

pub(crate) fn group(kb: &Kb, caller: &Caller, frame: &Frame, g: &Group) -> Result<String, Error> {
    let members: Vec<Value> = vouch_core::review::gate::list_pending(kb)?
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .filter(|p| Group::of(p) == *g)
        .collect();
    let mut body = format!(
        "<h1>Review together <span class=\"muted\" id=\"count\">{}</span></h1><p>{}{}</p>",
        members.len(),
        g.title(),
        g.task(kb)
            .map(|t| format!(" · task: “{}”", esc(&t)))
            .unwrap_or_default()
    );
    if members.is_empty() {
        body.push_str("<p>Nothing of this group is waiting for review.</p>");
        return Ok(layout("Review together", frame, &body));
    }
    // Each is shown whole (its sources, similar claims): a page of them at
    // a time, the oldest first, so a session of thousands stays readable.
    let total = members.len();
    let members: Vec<Value> = members.into_iter().take(GROUP_PAGE).collect();
    if total > GROUP_PAGE {
        let _ = write!(
            body,
            "<p class=\"notice\" id=\"more\">The oldest {GROUP_PAGE} of {total} are shown; \
             decide these and the next appear.</p>"
        );
    }
    body.push_str(
        "<p class=\"muted\">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous, <kbd>x</kbd> \
         select, <kbd>o</kbd> open (to reject), <kbd>a</kbd> approve the selected.</p>",
    );
    let _ = write!(
        body,
        "<form id=\"decide-many\" method=\"post\" action=\"/ui/approve-selected\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(frame.csrf)
    );
    for (i, p) in members.iter().enumerate() {
        let id = str_of(p, "id");
        let _ = write!(
            body,
            "<section class=\"item\" tabindex=\"0\" id=\"item-{i}\"><h2>{} {} \
             <label><input type=\"checkbox\" name=\"id\" value=\"{}\" checked> approve</label> \
             <a class=\"open\" href=\"/ui/proposal/{}\">open</a></h2>",
            i + 1,
            esc(str_of(p, "kind")),
            esc(id),
            url_id(id)
        );
        body.push_str(&proposal_view(kb, caller, p, &format!("text-{i}"))?);
        body.push_str("</section>");
    }
    let _ = write!(
        body,
        "<p>Approve as <b>{}</b>: the selected become reviewed knowledge together, or none \
         does if one cannot be approved.</p>\
         <p><input name=\"reason\" placeholder=\"note (optional)\" style=\"width:100%\"></p>\
         <button class=\"approve\" id=\"approve-selected\">Approve the selected</button></form>",
        esc(frame.actor)
    );
    body.push_str(KEYS_SCRIPT);
    Ok(layout("Review together", frame, &body))
}

/// Characters of source text shown on each side of a quoted span.
const CONTEXT_CHARS: usize = 700;

/// The largest char boundary at or below `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One citation: an evidence span shown inside its source's text with the
/// quote highlighted, or a cited source's opening.
/// Who registered a source and where its bytes came from, for a reviewer.
fn provenance_html(kb: &Kb, source_id: &str) -> String {
    kb.load_source(source_id)
        .ok()
        .flatten()
        .and_then(|s| vouch_core::sources::provenance_note(kb, &s))
        .map(|p| format!("<div class=\"small provenance\">{}</div>", esc(&p)))
        .unwrap_or_default()
}

pub(crate) fn citation(kb: &Kb, caller: &Caller, id: &str) -> String {
    if vouch_core::ids::is_source_id(id) {
        let locator = source_locator(kb, caller, id);
        let text = match kb.source_content(id) {
            Ok(Some(b)) => {
                let t = String::from_utf8_lossy(&b).into_owned();
                let cut = floor_boundary(&t, CONTEXT_CHARS * 2);
                let more = if cut < t.len() { "…" } else { "" };
                format!("<div class=\"source\">{}{more}</div>", esc(&t[..cut]))
            }
            Ok(None) => "<p class=\"error\">the source's content is missing</p>".into(),
            Err(e) => format!("<p class=\"error\">{}</p>", esc(&e.message)),
        };
        return format!(
            "<div class=\"card citation\"><div class=\"small muted\">source {} · {}</div>{}{text}</div>",
            esc(&id[..12.min(id.len())]),
            esc(&locator),
            provenance_html(kb, id)
        );
    }
    let params = IdParams { id: id.to_string() };
    let ev = match call_typed::<methods::kb::ReadEvidence>(kb, caller, params) {
        Ok(Some(read)) => read.object,
        Ok(None) => {
            return format!(
                "<div class=\"card citation\"><p class=\"error\">evidence {} does not exist</p></div>",
                esc(id)
            );
        }
        Err(e) => {
            return format!(
                "<div class=\"card citation\"><p class=\"error\">{}</p></div>",
                esc(&e.message)
            );
        }
    };
    let source_id = ev.source_id.as_str();
    let quote = ev.quote.as_deref().unwrap_or("");
    let head = format!(
        "<div class=\"small muted\">{} · {} {}</div>{}",
        esc(id),
        esc(&source_locator(kb, caller, source_id)),
        esc(&ev.locator),
        provenance_html(kb, source_id)
    );
    // vouch's `span` (byte offsets of the quote) is kept among the
    // fields the model does not name.
    let span = ev.extra.get("span");
    let offset = |k: &str| span.and_then(|s| s.get(k)).and_then(Value::as_u64);
    let span = (
        offset("start").map(|x| x as usize),
        offset("end").map(|x| x as usize),
    );
    let shown = match (kb.source_content(source_id), span) {
        (Ok(Some(bytes)), (Some(start), Some(end)))
            if end <= bytes.len() && start <= end && &bytes[start..end] == quote.as_bytes() =>
        {
            let before = String::from_utf8_lossy(&bytes[..start]);
            let after = String::from_utf8_lossy(&bytes[end..]);
            let mut from = before.len().saturating_sub(CONTEXT_CHARS);
            while !before.is_char_boundary(from) {
                from += 1;
            }
            let to = floor_boundary(&after, CONTEXT_CHARS);
            format!(
                "<div class=\"source\">{}{}<mark>{}</mark>{}{}</div>",
                if from > 0 { "…" } else { "" },
                esc(&before[from..]),
                esc(quote),
                esc(&after[..to]),
                if to < after.len() { "…" } else { "" }
            )
        }
        (Ok(Some(_)), _) => format!(
            "<p class=\"error\">the source no longer says this at the recorded place</p>\
             <div class=\"source\"><mark>{}</mark></div>",
            esc(quote)
        ),
        (Ok(None), _) => format!(
            "<p class=\"error\">the source's content is missing; the quote as recorded:</p>\
             <div class=\"source\"><mark>{}</mark></div>",
            esc(quote)
        ),
        (Err(e), _) => format!("<p class=\"error\">{}</p>", esc(&e.message)),
    };
    format!("<div class=\"card citation\">{head}{shown}</div>")
}

/// Where a source came from (its locator), or nothing when it cannot be
/// read.
fn source_locator(kb: &Kb, caller: &Caller, id: &str) -> String {
    let params = IdParams { id: id.to_string() };
    call_typed::<methods::kb::ReadSource>(kb, caller, params)
        .ok()
        .flatten()
        .map(|s| s.object.locator)
        .unwrap_or_default()
}

pub(crate) fn field_row(out: &mut String, name: &str, value: &str) {
    if !value.is_empty() {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(value));
    }
}

/// One proposal: what it says, who proposed it and why, every citation in
/// its source, the claims it would supersede or duplicate side by side,
/// and the decision forms. `None` when no such proposal exists.
pub fn proposal(
    kb: &Kb,
    caller: &Caller,
    frame: &Frame,
    id: &str,
) -> Result<Option<String>, Error> {
    let params = IdParams { id: id.to_string() };
    let Some(read) = call_typed::<methods::kb::ReadProposal>(kb, caller, params)? else {
        return Ok(None);
    };
    // The view shows every field the proposal carries, as its file holds
    // it (the payload is free-form): it reads the serialized proposal.
    let p = serde_json::to_value(&read)
        .map_err(|e| Error::internal(format!("proposal encoding: {e}")))?;
    let status = str_of(&p, "status");
    let mut body = format!(
        "<h1>Proposed {} {}</h1>",
        esc(str_of(&p, "kind")),
        badge(status)
    );
    body.push_str(&proposal_view(kb, caller, &p, "text")?);
    // What it made or changes, where that is stored: its whole story.
    let object = str_of(&p, "object_id");
    if !object.is_empty() && vouch_core::insight::resolve(kb, object, None).is_ok() {
        let _ = write!(
            body,
            "<p><a id=\"why\" href=\"/ui/why/{}\">Provenance and impact of {}</a></p>",
            url_id(object),
            esc(object)
        );
    }
    decide_forms(&mut body, frame, &p, id, status);
    body.push_str(KEYS_SCRIPT);
    Ok(Some(layout(&format!("Proposal {id}"), frame, &body)))
}

/// Everything a proposal would make durable, and what it cites, replaces
/// and resembles: the whole of what is decided, on its page and in a
/// group alike. `text_id` is the element id of its text.
fn proposal_view(kb: &Kb, caller: &Caller, p: &Value, text_id: &str) -> Result<String, Error> {
    let id = str_of(p, "id");
    let payload = &p["payload"];
    let kind = str_of(p, "kind");
    let status = str_of(p, "status");
    let text = summary(p);
    let mut body = format!(
        "<div class=\"card\"><p class=\"text\" id=\"{}\">{}</p><dl>",
        esc(text_id),
        esc(&text)
    );
    field_row(&mut body, "type", str_of(payload, "type"));
    if let Some(c) = payload.get("confidence").and_then(Value::as_f64) {
        field_row(&mut body, "confidence", &format!("{c:.2}"));
    }
    field_row(&mut body, "proposed by", str_of(p, "proposed_by"));
    field_row(&mut body, "proposed at", str_of(p, "created_at"));
    field_row(&mut body, "session", str_of(p, "session_id"));
    field_row(&mut body, "rationale", str_of(p, "rationale"));
    field_row(&mut body, "would be", str_of(p, "object_id"));
    field_row(&mut body, "tags", &strings(&payload["tags"]).join(", "));
    // Everything else that becomes durable if approved (claim metadata, an
    // entity's description and aliases, …): nothing is approved unseen.
    if kind != "lifecycle" {
        for (name, value) in vouch_core::review::payload_fields(payload) {
            if !["type", "confidence", "tags", "supersedes"].contains(&name.as_str()) {
                field_row(&mut body, &name, &value);
            }
        }
    }
    field_row(&mut body, "proposal", id);
    body.push_str("</dl>");
    if kind == "page" {
        let _ = write!(
            body,
            "<pre id=\"body\">{}</pre>",
            esc(str_of(payload, "body"))
        );
    }
    if matches!(kind, "lifecycle" | "delete" | "redact") {
        // What it changes (or removes), as it reads now: what agents will
        // read, or stop reading.
        match p["_meta"]["change"]["objects"].as_array() {
            Some(objects) => {
                for o in objects {
                    let _ = write!(
                        body,
                        "<div class=\"card\"><div class=\"small muted\">{} {} {}</div>{}</div>",
                        esc(str_of(o, "kind")),
                        esc(str_of(o, "id")),
                        badge(str_of(o, "status")),
                        esc(str_of(o, "text"))
                    );
                }
            }
            None => {
                let _ = write!(
                    body,
                    "<pre>{}</pre>",
                    esc(&serde_json::to_string_pretty(payload).unwrap_or_default())
                );
            }
        }
    }
    body.push_str("</div>");

    let mut cited = strings(&payload["evidence"]);
    // A lifecycle `kb.cite`: what it attaches.
    if let Some(id) = payload["params"]["evidence"].as_str() {
        cited.push(id.to_string());
    }
    cited.extend(strings(&payload["sources"]));
    let _ = write!(body, "<h2>Evidence ({})</h2>", cited.len());
    if cited.is_empty() {
        body.push_str("<p class=\"muted\">Cites nothing.</p>");
    }
    for c in &cited {
        body.push_str(&citation(kb, caller, c));
    }

    // What approving it would replace.
    let replaces = strings(&payload["supersedes"]);
    if !replaces.is_empty() {
        let _ = write!(body, "<h2>Would supersede ({})</h2>", replaces.len());
        for old in &replaces {
            let c = read_claim(kb, caller, old)?;
            let (was_text, was_status) = c.as_ref().map_or(("", ""), |c| {
                (c.object.text.as_str(), c.object.status.as_str())
            });
            let (was, now) = word_diff(was_text, &text);
            let _ = write!(
                body,
                "<div class=\"side supersedes\"><div class=\"card\"><div class=\"small muted\">now: {} {}</div>{}</div>\
                 <div class=\"card\"><div class=\"small muted\">proposed instead</div>{}</div></div>",
                claim_link(old),
                badge(was_status),
                was,
                now
            );
        }
    }
    // Approved claims that already say something close.
    if kind == "claim" && status == "pending" {
        let params = SearchParams {
            query: text.clone(),
            limit: Some(8),
            kinds: Some(vec!["claim".into()]),
            backend: None,
        };
        let hits = call_typed::<methods::kb::Search>(kb, caller, params).unwrap_or_default();
        let similar: Vec<&SearchHit> = hits
            .iter()
            .filter(|h| h.kind.as_str() == "claim" && !replaces.contains(&h.id))
            .take(3)
            .collect();
        if !similar.is_empty() {
            let _ = write!(body, "<h2>Similar approved claims ({})</h2>", similar.len());
            for h in similar {
                let hid = h.id.as_str();
                let c = read_claim(kb, caller, hid)?;
                let (similar_text, similar_status) = c.as_ref().map_or(("", ""), |c| {
                    (c.object.text.as_str(), c.object.status.as_str())
                });
                let _ = write!(
                    body,
                    "<div class=\"side similar\"><div class=\"card\"><div class=\"small muted\">{} {}</div>{}</div>\
                     <div class=\"card\"><div class=\"small muted\">proposed</div>{}</div></div>",
                    claim_link(hid),
                    badge(similar_status),
                    esc(similar_text),
                    esc(&text)
                );
            }
        }
    }

    Ok(body)
}

/// Two texts side by side, escaped, with the words that changed marked:
/// removed ones in the old (`<del>`), added ones in the new (`<mark>`).
pub(crate) fn word_diff(old: &str, new: &str) -> (String, String) {
    let html = |runs: Vec<vouch_core::review::Words>, tag: &str| -> String {
        runs.iter()
            .map(|w| {
                if w.changed {
                    format!("<{tag}>{}</{tag}>", esc(&w.text))
                } else {
                    esc(&w.text)
                }
            })
            .collect()
    };
    let (was, now) = vouch_core::review::diff_words(old, new);
    (html(was, "del"), html(now, "mark"))
}

/// The approve and reject forms of a pending proposal, or its decision.
fn decide_forms(body: &mut String, frame: &Frame, p: &Value, id: &str, status: &str) {
    if status == "pending" {
        let u = url_id(id);
        let csrf = esc(frame.csrf);
        let _ = write!(
            body,
            "<h2>Decide</h2><div class=\"side\"><form class=\"card\" method=\"post\" action=\"/ui/proposal/{u}/approve\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <p>Approve as <b>{actor}</b>: it becomes reviewed knowledge.</p>\
             <p><input name=\"reason\" placeholder=\"note (optional)\" style=\"width:100%\"></p>\
             <button class=\"approve\" id=\"approve\">Approve</button></form>\
             <form class=\"card\" method=\"post\" action=\"/ui/proposal/{u}/reject\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <p><textarea name=\"reason\" id=\"reason\" required placeholder=\"why (required)\"></textarea></p>\
             <button class=\"reject\" id=\"reject\">Reject</button></form></div>",
            actor = esc(frame.actor),
        );
    } else {
        let _ = write!(
            body,
            "<p class=\"card\">Decided: {} by {} at {}{}</p>",
            badge(status),
            esc(str_of(p, "decided_by")),
            esc(str_of(p, "decided_at")),
            match p.get("reason").and_then(Value::as_str) {
                Some(r) => format!(" — “{}”", esc(r)),
                None => String::new(),
            }
        );
    }
}

/// One claim: status, text, citations, relations and its history from the
/// audit log. `None` when no such claim exists.
pub(crate) fn claim(
    kb: &Kb,
    caller: &Caller,
    frame: &Frame,
    id: &str,
) -> Result<Option<String>, Error> {
    let Some(read) = read_claim(kb, caller, id)? else {
        return Ok(None);
    };
    let c = &read.object;
    let mut body = format!(
        "<h1>Claim {}</h1><div class=\"card\"><p class=\"text\" id=\"text\">{}</p><dl>",
        badge(c.status.as_str()),
        esc(&c.text)
    );
    field_row(&mut body, "id", id);
    field_row(&mut body, "type", c.claim_type.as_str());
    field_row(&mut body, "confidence", &format!("{:.2}", c.confidence));
    let approved_by = c.approved_by.as_deref().unwrap_or("");
    if read.meta.unaudited {
        // The file says who approved it; the log says nobody did.
        let _ = write!(
            body,
            "<dt>approved by</dt><dd class=\"error\">UNAUDITED: no approval in the audit log \
             (the file names {}, but it never went through review)</dd>",
            esc(approved_by)
        );
    } else {
        field_row(&mut body, "approved by", approved_by);
    }
    field_row(&mut body, "created", &c.created_at.to_string());
    let confirmed = c.last_confirmed_at.as_ref().map(|t| t.to_string());
    field_row(
        &mut body,
        "last confirmed",
        confirmed.as_deref().unwrap_or(""),
    );
    field_row(&mut body, "tags", &c.tags.join(", "));
    let _ = write!(
        body,
        "</dl><p><a id=\"why\" href=\"/ui/why/{}?kind=claim\">Provenance, impact and \
         neighbors</a></p>",
        url_id(id)
    );
    let links = |label: &str, ids: Vec<String>| -> String {
        if ids.is_empty() {
            return String::new();
        }
        let l: Vec<String> = ids.iter().map(|i| claim_link(i)).collect();
        format!("<p>{} {}</p>", esc(label), l.join(", "))
    };
    body.push_str(&links("supersedes", c.supersedes.clone()));
    if let Some(by) = &c.superseded_by {
        body.push_str(&links("superseded by", vec![by.clone()]));
    }
    body.push_str(&links("contradicts", c.contradicts.clone()));
    body.push_str("</div>");
    let cited = &c.evidence;
    let _ = write!(body, "<h2>Evidence ({})</h2>", cited.len());
    for e in cited {
        body.push_str(&citation(kb, caller, e));
    }
    let mut end = serde_json::Map::new();
    end.insert("end".into(), json!(id));
    let relations = call_typed::<methods::kb::ListRelations>(
        kb,
        caller,
        ListParams {
            filter: Some(end),
            limit: Some(kb.settings().limits.max_results as i64),
            offset: None,
        },
    )?;
    let _ = write!(body, "<h2>Relations ({})</h2>", relations.len());
    if !relations.is_empty() {
        body.push_str("<table><tbody>");
        for r in &relations {
            let r = &r.object;
            let end = |x: &str| {
                if x == id {
                    format!("<b>{}</b>", esc(x))
                } else {
                    claim_link(x)
                }
            };
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                end(&r.source),
                esc(r.relation.as_str()),
                end(&r.target)
            );
        }
        body.push_str("</tbody></table>");
    }
    let history = audit_events(
        kb,
        caller,
        AuditParams {
            tail: None,
            filter: Some(AuditFilter {
                object: Some(id.to_string()),
                ..Default::default()
            }),
        },
    )?;
    let _ = write!(body, "<h2>History ({} events)</h2>", history.len());
    body.push_str(&events_table(&history));
    Ok(Some(layout(&format!("Claim {id}"), frame, &body)))
}

/// Search with the backend shown; `backend` empty means the configured one.
pub(crate) fn search(
    kb: &Kb,
    caller: &Caller,
    frame: &Frame,
    q: &str,
    backend: &str,
) -> Result<String, Error> {
    let mut body = String::from("<h1>Search</h1><form method=\"get\" action=\"/ui/search\">");
    let _ = write!(
        body,
        "<input name=\"q\" value=\"{}\" size=\"50\" autofocus> <select name=\"backend\">",
        esc(q)
    );
    for b in ["", "fts5", "substring", "embedding", "hybrid"] {
        let _ = write!(
            body,
            "<option value=\"{b}\"{}>{}</option>",
            if b == backend { " selected" } else { "" },
            if b.is_empty() {
                "configured backend"
            } else {
                b
            }
        );
    }
    body.push_str("</select> <button>Search</button></form>");
    if q.trim().is_empty() {
        return Ok(layout("Search", frame, &body));
    }
    let params = SearchParams {
        query: q.to_string(),
        limit: Some(30),
        kinds: None,
        backend: (!backend.is_empty()).then(|| backend.to_string()),
    };
    let hits = match call_typed::<methods::kb::Search>(kb, caller, params) {
        Ok(hits) => hits,
        Err(e) => {
            let _ = write!(body, "<p class=\"error\">{}</p>", esc(&e.message));
            return Ok(layout("Search", frame, &body));
        }
    };
    let used = hits.first().map(|h| h.backend.clone()).unwrap_or_else(|| {
        if backend.is_empty() {
            "configured".into()
        } else {
            backend.into()
        }
    });
    let _ = write!(
        body,
        "<p class=\"muted\">{} result(s) · backend <b id=\"backend\">{}</b></p>",
        hits.len(),
        esc(&used)
    );
    body.push_str("<table id=\"hits\"><tbody>");
    for h in &hits {
        let (kind, id) = (h.kind.as_str(), h.id.as_str());
        let shown = if kind == "claim" {
            claim_link(id)
        } else {
            esc(&id.chars().take(40).collect::<String>())
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{} {}</td><td>{}</td><td class=\"small\">\
             <a href=\"/ui/why/{}?kind={}\">provenance</a></td></tr>",
            esc(kind),
            shown,
            h.status.as_deref().map(badge).unwrap_or_default(),
            marked(&h.snippet, &h.highlights),
            url_id(id),
            url_id(kind)
        );
    }
    body.push_str("</tbody></table>");
    Ok(layout("Search", frame, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_url_ids_leave_no_markup_or_path() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        // A bidi override would show "24" for "42"; a tag character
        // would hide an instruction: both are shown as code points.
        assert_eq!(
            esc("after \u{202e}42\u{202c} hours"),
            "after \u{27e6}U+202E\u{27e7}42\u{27e6}U+202C\u{27e7} hours"
        );
        assert_eq!(
            esc("a\u{e0041}b\u{200b}"),
            "a\u{27e6}U+E0041\u{27e7}b\u{27e6}U+200B\u{27e7}"
        );
        assert_eq!(url_id("../x/y?z"), "..%2Fx%2Fy%3Fz");
        assert_eq!(url_id("claim-1_a.b"), "claim-1_a.b");
        assert_eq!(url_id("a b&c"), "a%20b%26c");
    }

    /// A supersession shows what changed: removed words struck in the old
    /// text, added words marked in the new, everything escaped.
    #[test]
    fn word_diff_marks_what_changed() {
        let (was, now) = word_diff(
            "Restores are tested quarterly by <ops>",
            "Restores are tested monthly by <ops> and QA",
        );
        assert_eq!(
            was,
            "Restores are tested <del>quarterly</del> by &lt;ops&gt;"
        );
        assert_eq!(
            now,
            "Restores are tested <mark>monthly</mark> by &lt;ops&gt; <mark>and</mark> <mark>QA</mark>"
        );
        assert_eq!(word_diff("same", "same"), ("same".into(), "same".into()));
    }

    /// Matched words are `<mark>`ed, everything escaped, never brackets;
    /// ranges that overlap or run past the text are ignored.
    #[test]
    fn highlights_are_marks_around_escaped_text() {
        assert_eq!(
            marked("Deploys <b>happen</b> daily", &[[0, 7], [22, 27]]),
            "<mark>Deploys</mark> &lt;b&gt;happen&lt;/b&gt; <mark>daily</mark>"
        );
        let bad = [[3, 2], [0, 99], [1, 2], [0, 1]];
        assert_eq!(marked("a<b", &bad), "a<mark>&lt;</mark>b");
        assert_eq!(marked("[x]", &[]), "[x]");
    }
}
