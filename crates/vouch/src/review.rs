//! `vouch review`: the review queue in the terminal, one proposal at a
//! time (a `git add -p` for knowledge). Each proposal is shown with its
//! quoted evidence in the line of the source that holds it; then
//! `a`pprove, `r`eject (asks for a reason), `s`kip, `o`pen the sources in
//! full, `q`uit. `--batch` approves the proposal ids given on stdin, all
//! or nothing. Decisions go through the registry like every other
//! transport's, as the person at the command line.

use serde_json::Value;
use std::io::{BufRead, IsTerminal, Write};
use vouch_core::methods::{self, kb};
use vouch_core::model::{Proposal, ProposalKind};
use vouch_core::params::{ApproveParams, IdParams, OneOrMany, Read, RejectParams};
use vouch_core::{Caller, Error, Kb};

/// Highlighting for the quoted span: reverse video on a terminal, `»«`
/// marks otherwise.
struct Style {
    on: &'static str,
    off: &'static str,
}

impl Style {
    fn for_stdout() -> Style {
        if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            Style {
                on: "\x1b[7m",
                off: "\x1b[0m",
            }
        } else {
            Style {
                on: "»", off: "«"
            }
        }
    }
}

/// Stored text never reaches the terminal raw: an agent's text (or a
/// bundle's, or a cloned repository's) must not move the cursor, rewrite
/// what was shown, clear the screen or turn text around. Every value
/// `review` prints passes the one terminal filter, `render::terminal_safe`
/// (controls and invisible format characters as visible `\uXXXX`); the
/// only escape codes on screen are the highlight's own.
fn clean(s: &str) -> String {
    crate::render::terminal_safe(s).into_owned()
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The line(s) of `bytes` around `start..end`, split into before / quote /
/// after, each side at most `MAX_SIDE` characters.
fn in_its_line(bytes: &[u8], start: usize, end: usize) -> Option<(String, String, String)> {
    const MAX_SIDE: usize = 240;
    if start > end || end > bytes.len() {
        return None;
    }
    let line_start = bytes[..start]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let line_end = bytes[end..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |i| end + i);
    let before = String::from_utf8_lossy(&bytes[line_start..start]).into_owned();
    let after = String::from_utf8_lossy(&bytes[end..line_end]).into_owned();
    let before: String = {
        let n = before.chars().count();
        before.chars().skip(n.saturating_sub(MAX_SIDE)).collect()
    };
    let after: String = after.chars().take(MAX_SIDE).collect();
    Some((
        before,
        String::from_utf8_lossy(&bytes[start..end]).into_owned(),
        after,
    ))
}

/// One proposal as text for the terminal.
fn show(
    kb: &Kb,
    caller: &Caller,
    read: &Read<Proposal>,
    at: usize,
    of: usize,
    style: &Style,
) -> String {
    let p = &read.object;
    let payload = &p.payload;
    let mut out = format!(
        "\n[{at}/{of}] {} {} · proposed by {} at {}\n",
        clean(p.kind.as_str()),
        clean(&p.id),
        clean(&p.proposed_by),
        p.created_at
    );
    let what = ["text", "title", "name"]
        .iter()
        .find_map(|k| payload.get(*k).and_then(Value::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| {
            format!(
                "{} {} {}",
                str_of(payload, "source"),
                str_of(payload, "relation"),
                str_of(payload, "target")
            )
        });
    // A lifecycle change in words, and what it changes as it reads now.
    let what = match &read.meta.change {
        Some(c) => c.summary.clone(),
        None => what,
    };
    out.push_str(&format!("\n  {}\n\n", clean(&what)));
    for o in read.meta.change.iter().flat_map(|c| &c.objects) {
        out.push_str(&format!(
            "  {} {} ({}): {}\n",
            clean(&o.kind),
            clean(&o.id),
            clean(&o.status),
            clean(&o.text)
        ));
    }
    let mut facts = Vec::new();
    if let Some(t) = payload.get("type").and_then(Value::as_str) {
        facts.push(format!("type {}", clean(t)));
    }
    if let Some(c) = payload.get("confidence").and_then(Value::as_f64) {
        facts.push(format!("confidence {c:.2}"));
    }
    if let Some(s) = &p.session_id {
        facts.push(format!("session {}", clean(s)));
    }
    if !facts.is_empty() {
        out.push_str(&format!("  {}\n", facts.join(" · ")));
    }
    // Everything else that becomes durable, so nothing is approved unseen
    // (a lifecycle change is said in words above).
    let fields = if read.meta.change.is_some() {
        Vec::new()
    } else {
        vouch_core::review::payload_fields(payload)
    };
    for (name, value) in fields {
        if !["type", "confidence", "supersedes"].contains(&name.as_str()) {
            out.push_str(&format!("  {}: {}\n", clean(&name), clean(&value)));
        }
    }
    if let Some(r) = &p.rationale {
        out.push_str(&format!("  why: {}\n", clean(r)));
    }
    if let Some(old) = payload.get("supersedes").and_then(Value::as_array) {
        for id in old.iter().filter_map(Value::as_str) {
            let text = methods::call::<kb::ReadClaim>(kb, caller, IdParams { id: id.into() })
                .ok()
                .flatten()
                .map(|c| c.object.text)
                .unwrap_or_default();
            // The words that changed, marked on both sides.
            let (was, now) = vouch_core::review::diff_words(&text, &what);
            let marked = |runs: Vec<vouch_core::review::Words>| -> String {
                runs.iter()
                    .map(|w| {
                        if w.changed {
                            format!("{}{}{}", style.on, clean(&w.text), style.off)
                        } else {
                            clean(&w.text)
                        }
                    })
                    .collect()
            };
            out.push_str(&format!(
                "  supersedes {}:\n    was: {}\n    now: {}\n",
                clean(id),
                marked(was),
                marked(now)
            ));
        }
    }
    if p.kind == ProposalKind::Page {
        out.push_str(&bounded_body(&clean(str_of(payload, "body"))));
    }
    let cites = read.meta.citations.as_deref().unwrap_or_default();
    out.push_str(&format!("\n  evidence ({}):\n", cites.len()));
    for c in cites {
        let source_id = c.source_id.as_deref().unwrap_or("");
        out.push_str(&format!(
            "  - {} {} {}\n",
            clean(&c.id),
            clean(c.source_locator.as_deref().unwrap_or("")),
            clean(c.locator.as_deref().unwrap_or(""))
        ));
        if let Some(p) = c.provenance() {
            out.push_str(&format!("    ({})\n", clean(&p)));
        }
        let Some(quote) = c.quote.as_deref() else {
            continue;
        };
        let ev = methods::call::<kb::ReadEvidence>(kb, caller, IdParams { id: c.id.clone() })
            .ok()
            .flatten();
        let span_at = |end: &str| {
            let span = ev.as_ref()?.object.extra.get("span")?;
            span.get(end)?.as_u64().map(|x| x as usize)
        };
        let span = (span_at("start"), span_at("end"));
        let line = match (kb.source_content(source_id), span) {
            (Ok(Some(bytes)), (Some(s), Some(e))) if bytes.get(s..e) == Some(quote.as_bytes()) => {
                in_its_line(&bytes, s, e)
            }
            _ => None,
        };
        match line {
            Some((before, q, after)) => out.push_str(&format!(
                "    {}{}{}{}{}\n",
                clean(&before),
                style.on,
                clean(&q),
                style.off,
                clean(&after)
            )),
            None => out.push_str(&format!(
                "    {}{}{}  (not found in the source as recorded)\n",
                style.on,
                clean(quote),
                style.off
            )),
        }
    }
    out
}

/// A page body as the reviewer sees it: every line inside a visible frame,
/// numbered, so blank lines cannot push what follows off screen unnoticed
/// and the body cannot pass for vouch's own text.
fn bounded_body(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let mut out = format!("\n  ┌─ page body ({} lines)\n", lines.len());
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!("  │{:>4} {line}\n", i + 1));
    }
    out.push_str("  └─ end of page body\n");
    out
}

/// Every source a proposal cites, in full (capped), for `o`.
fn sources_of(kb: &Kb, p: &Read<Proposal>) -> String {
    const MAX: usize = 20_000;
    let mut seen = Vec::new();
    let mut out = String::new();
    for c in p.meta.citations.iter().flatten() {
        // A quoted span names its source; a source cited by id is one.
        let (id, locator) = if c.kind == "source" {
            (c.id.as_str(), c.locator.as_deref())
        } else {
            (
                c.source_id.as_deref().unwrap_or(""),
                c.source_locator.as_deref(),
            )
        };
        if id.is_empty() || c.missing || seen.contains(&id) {
            continue;
        }
        seen.push(id);
        out.push_str(&format!(
            "\n--- source {} ({})\n",
            clean(id),
            clean(locator.unwrap_or(""))
        ));
        match kb.source_content(id) {
            Ok(Some(b)) => {
                let text = String::from_utf8_lossy(&b);
                let shown: String = text.chars().take(MAX).collect();
                out.push_str(&clean(&shown));
                if shown.len() < text.len() {
                    out.push_str("\n… (cut; the whole text is in .vouch/sources/)");
                }
                out.push('\n');
            }
            Ok(None) => out.push_str("(its content is missing)\n"),
            Err(e) => out.push_str(&format!("({})\n", e.message)),
        }
    }
    if out.is_empty() {
        out.push_str("(it cites no source)\n");
    }
    out
}

const HELP: &str = "  a approve · r reject (asks for a reason) · s skip · o open its sources · g show \
                    the rest of its session and approve them together · q quit\n";

/// The group a proposal is reviewed in: its session, else its agent.
fn group_of(p: &Proposal) -> String {
    match &p.session_id {
        Some(s) if !s.is_empty() => format!("session {s}"),
        _ => format!("by {}, outside a session", p.proposed_by),
    }
}

/// The task of a proposal's session, as the agent gave it.
fn session_task(kb: &Kb, p: &Proposal) -> Option<String> {
    let s = kb
        .load::<vouch_core::model::Session>(p.session_id.as_deref()?)
        .ok()??;
    s.task.or(s.note)
}

/// Ask until one of the keys is typed; `None` at end of input.
fn ask(input: &mut impl BufRead, out: &mut impl Write, prompt: &str) -> Option<String> {
    let _ = write!(out, "{prompt}");
    let _ = out.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

/// The interactive loop. Returns the exit code.
pub(crate) fn interactive(
    kb: &Kb,
    caller: &Caller,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<i32, Error> {
    let style = Style::for_stdout();
    let queue = methods::call::<kb::ListPending>(
        kb,
        caller,
        vouch_core::params::ListParams {
            limit: Some(100_000),
            ..Default::default()
        },
    )?;
    if queue.is_empty() {
        let _ = writeln!(out, "Nothing is waiting for review.");
        return Ok(0);
    }
    let _ = writeln!(
        out,
        "{} proposal(s) waiting, oldest first; you review as {}.",
        queue.len(),
        caller.actor
    );
    // A session's proposals together (then each agent's outside one), in
    // the order their groups first appear.
    let mut queue = queue;
    let mut order: Vec<String> = Vec::new();
    for p in &queue {
        let g = group_of(&p.object);
        if !order.contains(&g) {
            order.push(g);
        }
    }
    queue.sort_by_key(|p| order.iter().position(|g| *g == group_of(&p.object)));
    let (mut approved, mut rejected, mut skipped) = (0, 0, 0);
    let mut i = 0;
    'queue: while i < queue.len() {
        let p = &queue[i];
        let id = p.object.id.clone();
        let group = group_of(&p.object);
        let rest: Vec<usize> = (i..queue.len())
            .take_while(|&j| group_of(&queue[j].object) == group)
            .collect();
        if i == 0 || group_of(&queue[i - 1].object) != group {
            let _ = writeln!(
                out,
                "\n══ {} · {} proposal(s){}; `g` shows them all and approves them together",
                clean(&group),
                rest.len(),
                session_task(kb, &p.object)
                    .map(|t| format!(" · task: {}", clean(&t)))
                    .unwrap_or_default()
            );
        }
        let _ = write!(out, "{}", show(kb, caller, p, i + 1, queue.len(), &style));
        i += 1;
        loop {
            let Some(answer) = ask(
                input,
                out,
                "\nApprove, reject, skip, open, group, quit [a,r,s,o,g,q,?]? ",
            ) else {
                break 'queue;
            };
            match answer.as_str() {
                "g" | "group" => {
                    // Every proposal approved here is shown in full first.
                    for &j in rest.iter().skip(1) {
                        let _ = write!(
                            out,
                            "{}",
                            show(kb, caller, &queue[j], j + 1, queue.len(), &style)
                        );
                    }
                    let prompt = format!(
                        "\nApprove these {} together, all or nothing [y,N]? ",
                        rest.len()
                    );
                    match ask(input, out, &prompt) {
                        None => break 'queue,
                        Some(a) if a == "y" || a == "yes" => {}
                        Some(_) => continue,
                    }
                    let ids: Vec<String> =
                        rest.iter().map(|&j| queue[j].object.id.clone()).collect();
                    let params = ApproveParams {
                        proposal_id: OneOrMany::Many(ids),
                        reason: None,
                        approver: None,
                    };
                    match methods::call::<kb::Approve>(kb, caller, params) {
                        Ok(_) => {
                            approved += rest.len();
                            let _ = writeln!(out, "approved {} together", rest.len());
                            i = rest.last().map_or(i, |&j| j + 1);
                            break;
                        }
                        Err(e) => {
                            let _ = writeln!(out, "nothing approved: {}", e.message);
                        }
                    }
                }
                "a" | "approve" => {
                    let params = ApproveParams {
                        proposal_id: OneOrMany::One(id.clone()),
                        reason: None,
                        approver: None,
                    };
                    match methods::call::<kb::Approve>(kb, caller, params) {
                        Ok(_) => {
                            approved += 1;
                            let _ = writeln!(out, "approved {id} → {}", p.object.object_id);
                            break;
                        }
                        Err(e) => {
                            let _ = writeln!(out, "not approved: {}", e.message);
                        }
                    }
                }
                "r" | "reject" => {
                    let reason = loop {
                        match ask(input, out, "Reason (required): ") {
                            None => break 'queue,
                            Some(r) if r.is_empty() => {
                                let _ = writeln!(out, "a rejection needs a reason");
                            }
                            Some(r) => break r,
                        }
                    };
                    let params = RejectParams {
                        proposal_id: id.clone(),
                        reason,
                    };
                    match methods::call::<kb::Reject>(kb, caller, params) {
                        Ok(_) => {
                            rejected += 1;
                            let _ = writeln!(out, "rejected {id}");
                            break;
                        }
                        Err(e) => {
                            let _ = writeln!(out, "not rejected: {}", e.message);
                        }
                    }
                }
                "s" | "skip" | "" => {
                    skipped += 1;
                    break;
                }
                "o" | "open" => {
                    let _ = write!(out, "{}", sources_of(kb, p));
                }
                "q" | "quit" => break 'queue,
                _ => {
                    let _ = write!(out, "{HELP}");
                }
            }
        }
    }
    let left = queue.len() - approved - rejected;
    let _ = writeln!(
        out,
        "\napproved {approved}, rejected {rejected}, skipped {skipped}; {left} still pending"
    );
    Ok(0)
}

/// `vouch review --batch`: the proposal ids on stdin, one per line (blank
/// lines and `#` comments ignored), to approve together, all or nothing.
pub(crate) fn batch_ids(input: &mut impl BufRead) -> Result<Vec<String>, Error> {
    let mut ids = Vec::new();
    for line in input.lines() {
        let line = line.map_err(|e| Error::invalid(format!("stdin: {e}")))?;
        let line = line.trim();
        if !line.is_empty() && !line.starts_with('#') {
            ids.push(line.to_string());
        }
    }
    if ids.is_empty() {
        return Err(Error::invalid(
            "--batch: no proposal ids on stdin (one per line)",
        ));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quote_is_shown_in_its_line() {
        let text = b"first line\nthe quoted part sits here\nlast";
        let start = 15;
        let end = start + "quoted part".len();
        let (b, q, a) = in_its_line(text, start, end).unwrap();
        assert_eq!(
            (b.as_str(), q.as_str(), a.as_str()),
            ("the ", "quoted part", " sits here")
        );
        assert!(in_its_line(text, 5, 100).is_none());
    }

    #[test]
    fn a_page_body_is_framed_line_by_line() {
        let shown = bounded_body("# Title\n\n\n\nLast line");
        assert!(shown.contains("page body (5 lines)"), "{shown}");
        assert!(shown.contains("│   5 Last line"), "{shown}");
        assert!(shown.trim_end().ends_with("end of page body"), "{shown}");
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(clean("ok\x1b[2Jgone\r"), "ok\\u001b[2Jgone\\u000d");
        assert_eq!(clean("a\u{202E}b\u{e0041}"), "a\\u202eb\\u{e0041}");
    }
}
