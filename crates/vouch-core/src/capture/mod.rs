//! Session capture from a host's hooks: what an agent did in a session,
//! noted as it happens and filed for review when the session ends.
//!
//! Each hook event the host hands over becomes one short observation (a
//! file read or edited, a command run, the person's prompt), masked for
//! secrets *before* it is written, appended to a scratch buffer under
//! `.vouch/captures/` that git never carries. At the session's end the
//! buffer is rolled into a summary, registered as a source (masked again)
//! and proposed as a `session` page citing it — a pending proposal like
//! any other: nothing becomes knowledge until a person approves it.
//! Nothing here approves, and nothing here prints.

pub mod claude_code;

use crate::error::{Error, Result};
use crate::kb::{Caller, Kb};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

/// A session with fewer observations files nothing: a few reads are not a
/// session worth a reviewer's time.
pub const MIN_OBSERVATIONS: usize = 3;

/// Observations one buffer keeps at most; later ones are counted only.
pub const MAX_OBSERVATIONS: usize = 2000;

/// The longest text of one observation kept, in characters.
const MAX_TEXT: usize = 300;

/// What a host's hook reported.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A session began: buffers other sessions left behind are filed.
    SessionStart,
    /// Something worth noting happened.
    Observed(Observation),
    /// The session ended: its buffer is filed for review.
    SessionEnd {
        /// The host's reason, if it gave one (`logout`, `clear`, …).
        reason: Option<String>,
    },
    /// An event capture has nothing to do with.
    Ignored,
}

/// One thing that happened in a session, as kept in the buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// What kind: `prompt`, or the tool's name (`Read`, `Edit`, `Bash`, …).
    pub kind: String,
    /// One line saying what happened.
    pub summary: String,
    /// Files it touched, as the host named them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// A command it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The host's id of the tool call, so an event delivered twice (two
    /// hook wirings) is kept once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl Observation {
    /// Every text masked for secrets and cut to length: what is written.
    fn cleaned(mut self) -> Observation {
        let clean = |s: &str| short(&masked(s), MAX_TEXT);
        self.summary = clean(&self.summary);
        self.files = self.files.iter().map(|f| clean(f)).collect();
        self.command = self.command.as_deref().map(clean);
        self.call_id = self.call_id.as_deref().map(|c| short(c, 128));
        self
    }
}

/// `text` with every secret `secrets::scan` finds replaced by its mask.
pub fn masked(text: &str) -> String {
    let found = crate::secrets::scan(text.as_bytes());
    if found.is_empty() {
        return text.to_string();
    }
    String::from_utf8_lossy(&crate::secrets::mask(text.as_bytes(), &found)).into_owned()
}

/// At most `max` characters of `text`, on one line.
fn short(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The buffer of host session `session`; the id must be a plain name (a
/// host's session ids are UUIDs), so it cannot name a path.
fn buffer(kb: &Kb, session: &str) -> Result<PathBuf> {
    let plain = !session.is_empty()
        && session.len() <= 128
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    if !plain {
        return Err(Error::invalid(format!(
            "session id {:?} is not a plain id (letters, digits, - and _; at most 128)",
            crate::ids::truncate_for_message(session)
        )));
    }
    Ok(kb.layout().captures().join(format!("{session}.jsonl")))
}

/// What one hook call did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "did", rename_all = "snake_case")]
pub enum Outcome {
    /// An observation was appended.
    Noted,
    /// Nothing to note (an event capture ignores, a repeat, a full buffer).
    Skipped {
        /// Why.
        why: String,
    },
    /// Sessions were filed for review.
    Filed {
        /// One entry per session filed.
        sessions: Vec<Filed>,
    },
}

/// A session rolled into a proposal, or let go without one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Filed {
    /// The host's session id.
    pub session: String,
    /// How many observations it held.
    pub observations: usize,
    /// The page proposal filed, when there was enough to file.
    pub proposal_id: Option<String>,
    /// The source the page cites: the masked summary.
    pub source_id: Option<String>,
    /// Where a person decides it, when known.
    pub review_url: Option<String>,
    /// Why it could not be filed this time (its buffer stays).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Handle one hook event of host session `session` as `agent`, the agent
/// the host runs: always an agent's call, never a person's, whoever runs
/// the hook. `intent` is the person's first prompt when the host can tell
/// it (the summary's title).
pub fn handle(
    kb: &Kb,
    agent: &str,
    host: &str,
    session: &str,
    event: Event,
    intent: Option<&str>,
) -> Result<Outcome> {
    let path = buffer(kb, session)?;
    let caller = &Caller::new(agent, crate::kb::Transport::Hook);
    match event {
        Event::Ignored => Ok(Outcome::Skipped {
            why: "an event capture does not note".into(),
        }),
        Event::Observed(o) => observe(kb, &path, o.cleaned()),
        Event::SessionEnd { .. } => Ok(Outcome::Filed {
            sessions: vec![file(kb, caller, host, session, intent)?],
        }),
        Event::SessionStart => {
            // One buffer that cannot be filed does not hold up the rest:
            // it is reported and stays for the next start.
            let mut sessions = Vec::new();
            for other in left_behind(kb, session)? {
                sessions.push(
                    file(kb, caller, host, &other, None).unwrap_or_else(|e| Filed {
                        session: other.clone(),
                        error: Some(e.message),
                        ..Filed::default()
                    }),
                );
            }
            Ok(Outcome::Filed { sessions })
        }
    }
}

/// Append `o` to the buffer at `path`, unless that call was noted already
/// or the buffer is full.
fn observe(kb: &Kb, path: &PathBuf, o: Observation) -> Result<Outcome> {
    let held = read(path)?;
    if let Some(id) = &o.call_id
        && held.iter().any(|h| h.call_id.as_ref() == Some(id))
    {
        return Ok(Outcome::Skipped {
            why: format!("call {id} is noted already"),
        });
    }
    if held.len() >= MAX_OBSERVATIONS {
        return Ok(Outcome::Skipped {
            why: format!("the buffer holds {MAX_OBSERVATIONS} observations"),
        });
    }
    let dir = kb.layout().captures();
    if !dir.is_dir() {
        keep_out_of_git(kb)?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    let mut line = serde_json::to_vec(&o).map_err(|e| Error::internal(e.to_string()))?;
    line.push(b'\n');
    // One write of one line in append mode: hooks of parallel tool calls
    // append to the same buffer without tearing each other's lines.
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    f.write_all(&line).map_err(|e| Error::io(path, e))?;
    Ok(Outcome::Noted)
}

/// A knowledge base made before capture existed has no `captures/` line
/// in `.vouch/.gitignore`: add it before the first buffer is written, so a
/// session's scratch never reaches a commit.
fn keep_out_of_git(kb: &Kb) -> Result<()> {
    let path = kb.layout().gitignore();
    let Some(held) = kb.read_text(&path)? else {
        return Ok(());
    };
    if held.lines().any(|l| l.trim() == "captures/") {
        return Ok(());
    }
    let mut text = held;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("captures/\n");
    crate::store::atomic::write(kb.layout().root(), &path, text.as_bytes())
}

/// The observations in a buffer; a line that does not parse (a torn
/// write of a crash) is skipped.
fn read(path: &PathBuf) -> Result<Vec<Observation>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Buffers of other sessions nobody has added to for an hour: sessions
/// whose end the host never reported (a crash, a closed terminal).
fn left_behind(kb: &Kb, current: &str) -> Result<Vec<String>> {
    const IDLE: std::time::Duration = std::time::Duration::from_secs(3600);
    let dir = kb.layout().captures();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(session) = name.strip_suffix(".jsonl") else {
            continue;
        };
        let idle = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= IDLE);
        if session != current && idle && buffer(kb, session).is_ok() {
            out.push(session.to_string());
        }
    }
    out.sort();
    Ok(out)
}

/// Roll session `session`'s buffer into a source and a pending `session`
/// page citing it, then remove the buffer.
fn file(
    kb: &Kb,
    caller: &Caller,
    host: &str,
    session: &str,
    intent: Option<&str>,
) -> Result<Filed> {
    let path = buffer(kb, session)?;
    // Claimed by renaming it: of two hooks filing the same buffer at once
    // (two windows starting), one gets it and the other finds nothing.
    let claimed = path.with_extension("jsonl.filing");
    match std::fs::rename(&path, &claimed) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Filed {
                session: session.to_string(),
                ..Filed::default()
            });
        }
        Err(e) => return Err(Error::io(&path, e)),
    }
    let filed = file_claimed(kb, caller, host, session, intent, &claimed);
    if filed.is_err() {
        // Back for the next try: nothing was lost.
        let _ = std::fs::rename(&claimed, &path);
        return filed;
    }
    match std::fs::remove_file(&claimed) {
        Ok(()) => filed,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => filed,
        Err(e) => Err(Error::io(&claimed, e)),
    }
}

/// [`file`] once the buffer is claimed (at `claimed`).
fn file_claimed(
    kb: &Kb,
    caller: &Caller,
    host: &str,
    session: &str,
    intent: Option<&str>,
    claimed: &PathBuf,
) -> Result<Filed> {
    let observations = read(claimed)?;
    let mut filed = Filed {
        session: session.to_string(),
        observations: observations.len(),
        ..Filed::default()
    };
    if observations.len() >= MIN_OBSERVATIONS {
        let (title, summary) = summarize(host, session, &observations, intent);
        // Masked again as a whole: what the buffer held was masked line by
        // line, and a secret split across an observation's cut is not.
        let summary = masked(&summary);
        let call =
            |method: &str, params: Value| crate::methods::dispatch(kb, caller, method, params);
        let source = call(
            "kb.register_source",
            json!({
                "content": summary,
                "locator": format!("capture:{host}/{session}"),
                "title": title,
                "type": "transcript",
                "media_type": "text/markdown",
            }),
        )?;
        let source_id = source["id"].as_str().unwrap_or_default().to_string();
        let proposed = call(
            "kb.propose_page",
            json!({
                "title": title,
                "body": summary,
                "type": "session",
                "sources": [source_id],
                "rationale": format!(
                    "captured from {host}'s hooks: {} observations of session {session}",
                    observations.len()
                ),
            }),
        )?;
        filed.proposal_id = proposed["proposal_id"].as_str().map(String::from);
        filed.review_url = proposed["review_url"].as_str().map(String::from);
        filed.source_id = Some(source_id);
    }
    Ok(filed)
}

/// A session's title and markdown summary: what the person asked, the
/// files touched, the commands run, every observation in order.
fn summarize(
    host: &str,
    session: &str,
    observations: &[Observation],
    intent: Option<&str>,
) -> (String, String) {
    let prompt = intent
        .map(str::to_string)
        .or_else(|| {
            observations
                .iter()
                .find(|o| o.kind == "prompt")
                .map(|o| o.summary.clone())
        })
        .map(|p| short(&masked(&p), 200));
    let title = match &prompt {
        Some(p) => format!("Session: {}", short(p, 60)),
        None => format!("Session {}", short(session, 8)),
    };
    let mut files: Vec<&str> = observations
        .iter()
        .flat_map(|o| o.files.iter().map(String::as_str))
        .collect();
    files.sort_unstable();
    files.dedup();
    let commands: Vec<&str> = observations
        .iter()
        .filter_map(|o| o.command.as_deref())
        .collect();
    let mut md = format!(
        "# {title}\n\nCaptured from {host}'s hooks (session `{session}`): {} observations, \
         masked for secrets before they were written.\n\n",
        observations.len()
    );
    if let Some(p) = &prompt {
        md.push_str(&format!("## Asked\n\n> {p}\n\n"));
    }
    if !files.is_empty() {
        md.push_str("## Files\n\n");
        for f in files.iter().take(50) {
            md.push_str(&format!("- `{f}`\n"));
        }
        md.push('\n');
    }
    if !commands.is_empty() {
        md.push_str("## Commands\n\n");
        for c in commands.iter().take(30) {
            md.push_str(&format!("- `{c}`\n"));
        }
        md.push('\n');
    }
    md.push_str("## What happened\n\n");
    for o in observations.iter().take(200) {
        md.push_str(&format!("- {}\n", o.summary));
    }
    (title, md)
}

#[cfg(test)]
mod tests;
