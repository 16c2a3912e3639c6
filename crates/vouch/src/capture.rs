//! `vouch capture`: a host's hook hands over one event of a session on
//! stdin (`vouch_core::capture` notes it and files the session for review
//! when it ends). A hook runs inside the person's turn, so this prints
//! nothing on stdout (Claude Code adds a prompt hook's stdout to the
//! agent's context) and always exits 0: a failure is one line on stderr,
//! never a broken turn.

use crate::cli::{CaptureArgs, CaptureHost, Cli};
use std::io::Read;
use vouch_core::Error;
use vouch_core::capture::{self, Outcome};

/// The largest payload read: a hook's payload carries the tool's whole
/// response (a file read, a command's output), which capture does not keep.
const MAX_PAYLOAD: u64 = 16 * 1024 * 1024;

/// Run one hook call; the exit code is always 0.
pub(crate) fn run(cli: &Cli, args: &CaptureArgs) -> i32 {
    match capture(cli, args) {
        Ok(Some(note)) => eprintln!("vouch capture: {note}"),
        Ok(None) => {}
        Err(e) => eprintln!(
            "vouch capture: {} (nothing was captured; the session goes on)",
            crate::render::terminal_safe(&e.message)
        ),
    }
    0
}

fn capture(cli: &Cli, args: &CaptureArgs) -> Result<Option<String>, Error> {
    // The host's name, and the agent it runs unless --agent names one
    // (the same default as `install-mcp`).
    let (host, default_agent) = match args.host {
        CaptureHost::ClaudeCode => ("claude-code", "claude"),
    };
    // Only a name given on this command line: VOUCH_AGENT in the person's
    // shell names the person, and a person's name on the agent's session
    // would let them approve their own agent's work as its reviewer.
    let given = std::env::args().any(|a| a == "--agent" || a.starts_with("--agent="));
    let agent = cli
        .agent
        .as_deref()
        .filter(|_| given)
        .unwrap_or(default_agent);
    vouch_core::ids::check_id("--agent", agent)?;
    let mut payload = Vec::new();
    std::io::stdin()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut payload)
        .map_err(|e| Error::internal(format!("reading the hook payload: {e}")))?;
    if payload.len() as u64 > MAX_PAYLOAD {
        return Err(Error::invalid(format!(
            "the hook payload is over {} MiB; skipped",
            MAX_PAYLOAD >> 20
        )));
    }
    let (session, event) = capture::claude_code::parse(&payload)?;
    let kb = crate::context::open(cli.kb.as_deref())?;
    let outcome = capture::handle(&kb, agent, host, &session, event, None)?;
    Ok(match outcome {
        Outcome::Filed { sessions } => {
            let lines: Vec<String> = sessions
                .iter()
                .map(|f| match &f.proposal_id {
                    Some(p) => format!(
                        "session {} ({} observations) filed for review as proposal {p}{}",
                        f.session,
                        f.observations,
                        f.review_url
                            .as_deref()
                            .map(|u| format!(": {u}"))
                            .unwrap_or_default()
                    ),
                    None => format!(
                        "session {} had {} observations, too few to file",
                        f.session, f.observations
                    ),
                })
                .collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        }
        Outcome::Noted | Outcome::Skipped { .. } => None,
    })
}
