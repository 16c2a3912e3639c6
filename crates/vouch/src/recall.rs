//! `vouch recall`: what an agent should know at the start of a session, in
//! a size-guarded digest a session-start hook can paste into its context:
//! what waits for review, what was approved and superseded lately, and the
//! context pack for the task when one is given. Never longer than
//! `--max-chars`: sections are filled in that order and a line that does
//! not fit is left out whole (the digest says how many were).

use serde_json::{Value, json};
use vouch_core::{Caller, Error, Kb, methods};

#[derive(clap::Args, Debug)]
pub struct RecallArgs {
    /// Upper bound on the digest's length in characters.
    #[arg(long, default_value_t = 4000)]
    pub max_chars: usize,
    /// A task: its context pack fills what the budget leaves.
    #[arg(long)]
    pub task: Option<String>,
    /// How many items each list shows at most.
    #[arg(long, default_value_t = 5)]
    pub per_section: usize,
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// One line, on one line: stored text is an agent's, so no line breaks or
/// control characters of its own, and at most 200 characters.
fn one_line(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = flat.chars().take(200).collect();
    if flat.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// A digest filled up to a character budget, line by line.
struct Digest {
    text: String,
    max: usize,
    left_out: usize,
}

impl Digest {
    fn push(&mut self, line: &str) -> bool {
        let n = line.chars().count() + 1;
        if self.text.chars().count() + n > self.max {
            self.left_out += 1;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        true
    }
    fn used(&self) -> usize {
        self.text.chars().count()
    }
}

pub fn recall(kb: &Kb, caller: &Caller, args: &RecallArgs) -> Result<Value, Error> {
    if args.max_chars < 80 {
        return Err(Error::invalid(format!(
            "--max-chars {}: too small for a digest (at least 80)",
            args.max_chars
        )));
    }
    let call = |m: &str, p: Value| methods::dispatch(kb, caller, m, p);
    let n = args.per_section;
    // Room kept for the closing note on what was left out.
    const NOTE: usize = 48;
    let mut d = Digest {
        text: String::new(),
        max: args.max_chars - NOTE,
        left_out: 0,
    };
    d.push("# vouch: what this knowledge base knows");

    let pending = call("kb.list_pending", json!({"limit": 100000}))?;
    let pending = pending.as_array().cloned().unwrap_or_default();
    // Counts and ids only: pending text is unreviewed, an agent's words,
    // and must not reach the next agent's context as if it were knowledge.
    d.push(&format!(
        "\n## Waiting for review ({}; not knowledge until approved)",
        pending.len()
    ));
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &pending {
        *kinds.entry(str_of(p, "kind")).or_default() += 1;
    }
    if !kinds.is_empty() {
        let by_kind: Vec<String> = kinds.iter().map(|(k, c)| format!("{c} {k}")).collect();
        d.push(&format!("- {}", by_kind.join(", ")));
    }
    let ids: Vec<&str> = pending.iter().take(n).map(|p| str_of(p, "id")).collect();
    if !ids.is_empty() {
        let more = if pending.len() > n { ", …" } else { "" };
        d.push(&format!(
            "- oldest: {}{more} (`vouch review`)",
            ids.join(", ")
        ));
    }

    // Newest decisions first, from the audit log.
    let approvals = call(
        "kb.audit",
        json!({"tail": 200, "filter": {"event": "proposal.approve"}}),
    )?;
    let mut approved = Vec::new();
    let mut superseded = Vec::new();
    for ev in approvals.as_array().into_iter().flatten().rev() {
        let ids = ev["object_ids"].as_array().cloned().unwrap_or_default();
        let Some(object) = ids.get(1).and_then(Value::as_str) else {
            continue;
        };
        if approved.len() < n {
            let c = call("kb.read_claim", json!({"id": object}))?;
            // Current knowledge only (never archived or redacted text).
            if ["working", "stable", "contested"].contains(&str_of(&c, "status")) {
                approved.push(format!("- {object}: {}", one_line(str_of(&c, "text"))));
            }
        }
        for old in ev["data"]["supersedes"].as_array().into_iter().flatten() {
            superseded.push((old.as_str().unwrap_or("").to_string(), object.to_string()));
        }
    }
    let lifecycle = call(
        "kb.audit",
        json!({"tail": 50, "filter": {"event": "claim.supersede"}}),
    )?;
    for ev in lifecycle.as_array().into_iter().flatten().rev() {
        let ids = ev["object_ids"].as_array().cloned().unwrap_or_default();
        if let (Some(old), Some(new)) = (
            ids.first().and_then(Value::as_str),
            ids.get(1).and_then(Value::as_str),
        ) {
            superseded.push((old.to_string(), new.to_string()));
        }
    }
    d.push(&format!("\n## Recently approved ({})", approved.len()));
    for line in &approved {
        d.push(line);
    }
    superseded.truncate(n);
    d.push(&format!("\n## Recently superseded ({})", superseded.len()));
    for (old, new) in &superseded {
        let o = call("kb.read_claim", json!({"id": old}))?;
        // A claim redacted since says nothing here.
        if str_of(&o, "status") == "superseded" {
            d.push(&format!(
                "- {old} → {new}: no longer \"{}\"",
                one_line(str_of(&o, "text"))
            ));
        } else {
            d.push(&format!("- {old} → {new}"));
        }
    }

    let mut pack = Value::Null;
    if let Some(task) = &args.task {
        let header = format!("\n## Context for: {}", one_line(task));
        // What is left after the header and its newline.
        let room = d.max.saturating_sub(d.used() + header.chars().count() + 2);
        if room >= 40 {
            d.push(&header);
            pack = call("kb.context", json!({"task": task, "max_chars": room}))?;
            let text = str_of(&pack, "text").trim_end().to_string();
            if text.is_empty() {
                d.push("(no current approved knowledge matches this task)");
            } else {
                d.push(&text);
            }
        } else {
            d.left_out += 1;
        }
    }
    d.max = args.max_chars;
    if d.left_out > 0 {
        let note = format!("({} line(s) left out for --max-chars)", d.left_out);
        d.push(&note);
    }
    Ok(json!({
        "text": d.text,
        "chars": d.used(),
        "max_chars": args.max_chars,
        "pending": pending.len(),
        "left_out": d.left_out,
        "context": pack,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_never_passes_its_budget() {
        let mut d = Digest {
            text: String::new(),
            max: 30,
            left_out: 0,
        };
        assert!(d.push("0123456789"));
        assert!(d.push("0123456789"));
        assert!(!d.push("0123456789"), "a third line does not fit");
        assert!(d.used() <= 30);
        assert_eq!(d.left_out, 1);
        assert_eq!(one_line("a\nb\x1b[2J"), "a b [2J");
    }
}
