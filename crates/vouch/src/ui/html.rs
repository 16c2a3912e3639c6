//! HTML for every review page: escaping (every piece of stored text passes
//! through [`esc`], since it came from an agent or a cloned repository),
//! the layout and its style, and the small pieces pages share.

use serde_json::Value;
use std::fmt::Write;
use vouch_core::{Caller, Error, Kb, methods};

/// HTML-escape text for element content and quoted attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // What a reviewer cannot see must not reach agents unseen: an
            // invisible or reordering character (zero-width, bidi
            // override, tag character) or a control is written as its
            // code point, in text and attributes alike.
            c if vouch_core::ids::steers_terminal(c) => {
                out.push_str(&format!("\u{27e6}U+{:04X}\u{27e7}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// A snippet, escaped, with its highlights (`[start, end)` character
/// ranges, as `kb.search` returns them) in `<mark>`. Ranges that are not
/// well formed are ignored; the text is shown whole either way.
pub(crate) fn marked(snippet: &str, highlights: &[[usize; 2]]) -> String {
    let spans = highlights.iter().map(|[start, end]| (*start, *end));
    let chars: Vec<char> = snippet.chars().collect();
    let mut out = String::with_capacity(snippet.len() + 16 * highlights.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at || start >= end || end > chars.len() {
            continue;
        }
        out.push_str(&esc(&chars[at..start].iter().collect::<String>()));
        out.push_str("<mark>");
        out.push_str(&esc(&chars[start..end].iter().collect::<String>()));
        out.push_str("</mark>");
        at = end;
    }
    out.push_str(&esc(&chars[at..].iter().collect::<String>()));
    out
}

/// An id as one URL path segment (`vouch_core::ids::url_segment`).
pub(crate) fn url_id(id: &str) -> String {
    vouch_core::ids::url_segment(id)
}

/// Who is signed in, and the CSRF token every form of the page carries.
pub struct Frame<'a> {
    /// The signed-in person's name, shown in the page's header.
    pub actor: &'a str,
    /// The session's CSRF token, a hidden field of every form.
    pub csrf: &'a str,
}

const CSS: &str = "
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa;overflow-wrap:anywhere}
header{display:flex;gap:1.5em;align-items:center;padding:.6em 1.2em;background:#23272f;color:#eee}
header a{color:#eee;text-decoration:none}header .brand{font-weight:700}
header nav{display:flex;gap:1em;flex:1}header form{margin:0}
main{max-width:72em;margin:1.2em auto;padding:0 1.2em}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e3e3e3;vertical-align:top}
th{background:#f0f0f0;font-weight:600}
.muted{color:#666}.small{font-size:.85em}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.8em 1em;margin:.8em 0}
.text{font-size:1.15em}
mark{background:#ffe066;padding:0 .1em}
pre,.source{white-space:pre-wrap;word-break:break-word;font:13px/1.4 ui-monospace,monospace;background:#f6f6f6;padding:.6em;border-radius:4px;max-height:22em;overflow:auto}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.notice{background:#e7f5e9;border:1px solid #9fd3a7;padding:.5em .8em;border-radius:4px}
.error{background:#fdecea;border:1px solid #f5a39b;padding:.5em .8em;border-radius:4px}
.badge{display:inline-block;padding:0 .45em;border-radius:3px;background:#e8e8e8;font-size:.85em}
.st-working,.st-stable,.st-active{background:#d9f2dd}.st-superseded,.st-archived,.st-redacted{background:#eee;color:#777}
.st-contested{background:#fde2c8}.st-pending{background:#dde8fb}
button{font:inherit;padding:.35em 1em;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer}
button.approve{background:#1f7a35;border-color:#1f7a35;color:#fff}button.reject{background:#b3261e;border-color:#b3261e;color:#fff}
textarea{width:100%;min-height:4em;font:inherit}
.beside{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,1fr);gap:1.2em}
.stale{background:#fdecea}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.4em 0}dt{color:#666}dd{margin:0}
";

pub(crate) fn layout(title: &str, frame: &Frame, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · vouch</title><style>{CSS}</style></head><body>\
         <header><a class=\"brand\" href=\"/\">vouch</a><nav><a href=\"/\">Review queue</a>\
         <a href=\"/ui/browse\">Browse</a><a href=\"/ui/search\">Search</a>\
         <a href=\"/ui/health\">Health</a><a href=\"/ui/stats\">Gate health</a>\
         <a href=\"/ui/audit\">Audit log</a></nav>\
         <span>signed in as <b id=\"actor\">{actor}</b></span>\
         <form method=\"post\" action=\"/ui/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button>Sign out</button></form></header><main>{body}</main></body></html>\n",
        title = esc(title),
        actor = esc(frame.actor),
        csrf = esc(frame.csrf),
    )
}

/// A page for someone not signed in, or an error; no forms but sign-in.
pub(crate) fn bare(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{t} · vouch</title><style>{CSS}</style></head><body>\
         <header><span class=\"brand\">vouch</span></header><main><h1>{t}</h1>{body}</main></body></html>\n",
        t = esc(title)
    )
}

/// An error inside the signed-in frame, with a way back.
pub(crate) fn error(frame: &Frame, message: &str, back: Option<&str>) -> String {
    let back = back
        .map(|b| format!("<p><a href=\"{}\">Back</a></p>", esc(b)))
        .unwrap_or_default();
    layout(
        "Refused",
        frame,
        &format!(
            "<h1>Refused</h1><p class=\"error\" id=\"error\">{}</p><p class=\"muted\">Nothing was \
             written.</p>{back}",
            esc(message)
        ),
    )
}

/// A method called with typed params for its typed result, as `vouch
/// review` calls it (an agent session's params meet the wire's limits).
pub(crate) fn call_typed<M: methods::Call>(
    kb: &Kb,
    caller: &Caller,
    params: M::Params,
) -> Result<M::Output, Error>
where
    M::Params: serde::Serialize,
{
    methods::call_over_transport::<M>(kb, caller, params)
}

/// A claim by id, typed (`None` when there is none).
pub(crate) fn read_claim(
    kb: &Kb,
    caller: &Caller,
    id: &str,
) -> Result<Option<vouch_core::params::Read<vouch_core::model::Claim>>, Error> {
    call_typed::<methods::kb::ReadClaim>(
        kb,
        caller,
        vouch_core::params::IdParams { id: id.to_string() },
    )
}

/// The audit log's events, as `kb.audit` returns them.
pub(crate) fn audit_events(
    kb: &Kb,
    caller: &Caller,
    params: vouch_core::params::AuditParams,
) -> Result<Vec<Value>, Error> {
    Ok(call_typed::<methods::kb::Audit>(kb, caller, params)?
        .into_iter()
        .map(|r| r.0)
        .collect())
}

pub(crate) fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn badge(status: &str) -> String {
    format!(
        "<span class=\"badge st-{0}\">{0}</span>",
        esc(status).replace(' ', "-")
    )
}

pub(crate) fn claim_link(id: &str) -> String {
    format!("<a href=\"/ui/claim/{}\">{}</a>", url_id(id), esc(id))
}

/// A link to an object's provenance page (`/ui/why/ID`), its kind given
/// when known (an id two kinds share); a source's sha256 shown short.
pub(crate) fn why_link(id: &str, kind: Option<&str>) -> String {
    let shown: String = if vouch_core::ids::is_source_id(id) {
        id.chars().take(12).collect()
    } else {
        id.to_string()
    };
    let query = kind
        .map(|k| format!("?kind={}", url_id(k)))
        .unwrap_or_default();
    format!(
        "<a href=\"/ui/why/{}{query}\">{}</a>",
        url_id(id),
        esc(&shown)
    )
}

pub(crate) fn strings(v: &Value) -> Vec<String> {
    vouch_core::params::string_list(Some(v))
}

/// Audit events as a table (newest last).
pub(crate) fn events_table(events: &[Value]) -> String {
    let mut out = String::from(
        "<table class=\"events\"><thead><tr><th>When</th><th>Event</th><th>Actor</th><th>Objects</th><th>Data</th></tr></thead><tbody>",
    );
    for ev in events {
        let objects: Vec<String> = strings(&ev["object_ids"])
            .iter()
            .map(|o| esc(&o.chars().take(40).collect::<String>()))
            .collect();
        let mut data = ev.get("data").cloned().unwrap_or(Value::Null);
        // Recorded states are long; the claim page shows the result.
        if let Some(m) = data.as_object_mut() {
            m.remove("before");
            m.remove("after");
        }
        let data = serde_json::to_string(&data).unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td class=\"small\">{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td><td class=\"small\">{}</td></tr>",
            esc(str_of(ev, "created_at")),
            esc(str_of(ev, "event")),
            esc(str_of(ev, "actor")),
            objects.join("<br>"),
            esc(&data.chars().take(300).collect::<String>())
        );
    }
    out.push_str("</tbody></table>");
    out
}
