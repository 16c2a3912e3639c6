//! `kb.recall`: what an agent should know at the start of a session, as a
//! digest within a character budget — what waits for review (counts and
//! ids only: that text is unreviewed), what was approved and superseded
//! lately, and the context pack for a task when one is given. A line that
//! does not fit is left out whole, and the digest says how many were.

use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::model::{Claim, ClaimStatus};
use crate::retrieval::pack::{ContextPack, ContextParams, UNAUDITED_MARK};
use crate::store::Dir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Params of `kb.recall`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallParams {
    /// Upper bound on the digest's length in characters (default 4000,
    /// at least 80).
    #[serde(default)]
    pub max_chars: Option<i64>,
    /// A task: its context pack fills what the budget leaves.
    #[serde(default)]
    pub task: Option<String>,
    /// How many items each list shows at most (default 5, 1..=50).
    #[serde(default)]
    pub per_section: Option<i64>,
}

/// What `kb.recall` returns.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RecallResult {
    /// The digest, ready to paste into a prompt; never over `max_chars`.
    pub text: String,
    /// Characters in `text`.
    pub chars: usize,
    /// The budget applied: `max_chars` as given (default 4000), capped at
    /// 1000000.
    pub max_chars: usize,
    /// Proposals waiting for review.
    pub pending: usize,
    /// Lines left out for the budget.
    pub left_out: usize,
    /// The task's context pack, when a task was given and there was room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextPack>,
}

/// One line, on one line: stored text has no line breaks or control
/// characters of its own here, and at most 200 characters.
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

/// A line as it may go into a prompt or onto a terminal unchanged: CRLF
/// line ends become LF, and any other control character or bidi override
/// (from a file another program wrote) becomes U+FFFD, one character for
/// one, so what is counted against the budget is what is printed.
fn plain(line: &str) -> String {
    line.replace("\r\n", "\n")
        .chars()
        .map(|c| {
            if crate::ids::steers_terminal(c) {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

impl Digest {
    fn push(&mut self, line: &str) -> bool {
        let line = plain(line);
        let n = line.chars().count() + 1;
        if self.used() + n > self.max {
            self.left_out += 1;
            return false;
        }
        self.text.push_str(&line);
        self.text.push('\n');
        true
    }
    fn used(&self) -> usize {
        self.text.chars().count()
    }
}

/// The newest audit events named `event`, at most `n`, newest first.
fn newest(kb: &Kb, event: &str, n: usize) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    kb.audit_log().scan_back(|ev| {
        if ev.get("event").and_then(Value::as_str) == Some(event) {
            out.push(ev.clone());
        }
        out.len() >= n
    })?;
    Ok(out)
}

fn object_id(ev: &Value, i: usize) -> Option<String> {
    ev.get("object_ids")?
        .as_array()?
        .get(i)?
        .as_str()
        .map(str::to_string)
}

/// `kb.recall`: the session-start digest, within `max_chars`.
pub fn recall(kb: &Kb, p: RecallParams) -> Result<RecallResult> {
    let max = p.max_chars.unwrap_or(4000);
    if max < 80 {
        return Err(Error::invalid(format!(
            "max_chars {max}: too small for a digest (at least 80)"
        )));
    }
    let max = max.min(1_000_000) as usize;
    let n = p.per_section.unwrap_or(5).clamp(1, 50) as usize;
    // Room kept for the closing note on what was left out.
    const NOTE: usize = 48;
    let mut d = Digest {
        text: String::new(),
        max: max - NOTE,
        left_out: 0,
    };
    d.push("# vouch: what this knowledge base knows");

    // Counts and ids only: pending text is unreviewed, an agent's words,
    // and must not reach the next agent's context as if it were knowledge.
    let pending = crate::review::gate::list_pending(kb)?;
    let shown = d.push(&format!(
        "\n## Waiting for review ({}; not knowledge until approved)",
        pending.len()
    ));
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    for pr in &pending {
        *kinds.entry(pr.kind.as_str()).or_default() += 1;
    }
    if shown && !kinds.is_empty() {
        let by_kind: Vec<String> = kinds.iter().map(|(k, c)| format!("{c} {k}")).collect();
        d.push(&format!("- {}", by_kind.join(", ")));
    }
    let ids: Vec<&str> = pending.iter().take(n).map(|pr| pr.id.as_str()).collect();
    if shown && !ids.is_empty() {
        let more = if pending.len() > n { ", …" } else { "" };
        d.push(&format!(
            "- oldest: {}{more} (`vouch review`)",
            ids.join(", ")
        ));
    }

    // Newest decisions first, from the audit log.
    let mut approved: Vec<Claim> = Vec::new();
    let mut superseded: Vec<(String, String)> = Vec::new();
    for ev in newest(kb, "proposal.approve", 200)? {
        let Some(object) = object_id(&ev, 1) else {
            continue;
        };
        if approved.len() < n
            && let Ok(Some(c)) = kb.load::<Claim>(&object)
            && c.status.is_current()
        {
            approved.push(c);
        }
        for old in ev["data"]["supersedes"].as_array().into_iter().flatten() {
            superseded.push((old.as_str().unwrap_or("").to_string(), object.clone()));
        }
    }
    for ev in newest(kb, "claim.supersede", 50)? {
        if let (Some(old), Some(new)) = (object_id(&ev, 0), object_id(&ev, 1)) {
            superseded.push((old, new));
        }
    }
    superseded.truncate(n);
    // A claim file that is not what an approval wrote (edited or written by
    // hand) is marked as search and context mark it: the text shown is not
    // what was approved.
    let quoted: Vec<(Dir, &str)> = approved
        .iter()
        .map(|c| c.id.as_str())
        .chain(superseded.iter().map(|(old, _)| old.as_str()))
        .map(|id| (Dir::Claims, id))
        .collect();
    let unaudited = crate::retrieval::unaudited(kb, &quoted);
    let mark = |id: &str| {
        if unaudited.contains(&(Dir::Claims, id.to_string())) {
            format!(" · {UNAUDITED_MARK}")
        } else {
            String::new()
        }
    };
    if d.push(&format!("\n## Recently approved ({})", approved.len())) {
        for c in &approved {
            d.push(&format!("- {}{}: {}", c.id, mark(&c.id), one_line(&c.text)));
        }
    }
    let shown = d.push(&format!("\n## Recently superseded ({})", superseded.len()));
    for (old, new) in superseded.iter().filter(|_| shown) {
        // A claim redacted since says nothing here.
        match kb.load::<Claim>(old) {
            Ok(Some(c)) if c.status == ClaimStatus::Superseded => d.push(&format!(
                "- {old} → {new}{}: no longer \"{}\"",
                mark(old),
                one_line(&c.text)
            )),
            _ => d.push(&format!("- {old} → {new}")),
        };
    }

    let mut context = None;
    if let Some(task) = p.task.as_deref().filter(|t| !t.trim().is_empty()) {
        let header = format!("\n## Context for: {}", one_line(task));
        let room = d.max.saturating_sub(d.used() + header.chars().count() + 2);
        if room >= 40 {
            d.push(&header);
            let pack = crate::retrieval::pack::context(
                kb,
                ContextParams {
                    task: task.to_string(),
                    max_chars: Some(room as i64),
                    min_items: None,
                    require_citations: None,
                },
            )?;
            let text = pack.text.trim_end().to_string();
            if text.is_empty() {
                d.push("(no current approved knowledge matches this task)");
            } else {
                d.push(&text);
            }
            context = Some(pack);
        } else {
            d.left_out += 1;
        }
    }
    d.max = max;
    if d.left_out > 0 {
        let note = format!("({} line(s) left out for max_chars)", d.left_out);
        d.push(&note);
    }
    Ok(RecallResult {
        chars: d.used(),
        text: d.text,
        max_chars: max,
        pending: pending.len(),
        left_out: d.left_out,
        context,
    })
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
