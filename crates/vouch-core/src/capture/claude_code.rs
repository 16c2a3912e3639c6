//! Claude Code's hook payloads (one JSON object on a hook command's
//! stdin): `session_id`, `hook_event_name` and the event's own fields —
//! `prompt` for `UserPromptSubmit`; `tool_name`, `tool_input`,
//! `tool_response` and `tool_use_id` for `PostToolUse`; `reason` for
//! `SessionEnd`. A host whose hooks hand over the same fields parses the
//! same way; others are not read yet.

use super::{Event, Observation};
use crate::error::{Error, Result};
use serde_json::Value;

/// The tools whose use is worth noting; the rest (todo lists, questions
/// to the person) say nothing about the project.
const NOTED_TOOLS: &[&str] = &[
    "Read",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "Bash",
    "Grep",
    "Glob",
    "WebFetch",
    "WebSearch",
    "Task",
];

/// A payload as the session it belongs to and what happened.
pub fn parse(payload: &[u8]) -> Result<(String, Event)> {
    let v: Value = serde_json::from_slice(payload).map_err(|e| {
        Error::invalid(format!(
            "the hook payload on stdin is not JSON ({e}); a hook hands one object"
        ))
    })?;
    let field = |k: &str| v.get(k).and_then(Value::as_str);
    let session = field("session_id")
        .ok_or_else(|| Error::missing("session_id"))?
        .to_string();
    let event = match field("hook_event_name").unwrap_or_default() {
        "SessionStart" => Event::SessionStart,
        "SessionEnd" => Event::SessionEnd {
            reason: field("reason").map(String::from),
        },
        "UserPromptSubmit" => match field("prompt").map(str::trim) {
            Some(p) if !p.is_empty() => Event::Observed(Observation {
                kind: "prompt".into(),
                summary: p.to_string(),
                files: Vec::new(),
                command: None,
                call_id: None,
            }),
            _ => Event::Ignored,
        },
        "PostToolUse" => tool_use(&v).map_or(Event::Ignored, Event::Observed),
        _ => Event::Ignored,
    };
    Ok((session, event))
}

/// A `PostToolUse` payload as one observation, or `None` for a tool not
/// worth noting.
fn tool_use(v: &Value) -> Option<Observation> {
    let tool = v.get("tool_name").and_then(Value::as_str)?;
    if !NOTED_TOOLS.contains(&tool) {
        return None;
    }
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let text = |k: &str| {
        input
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let file = text("file_path").or_else(|| text("notebook_path"));
    let name = file.map(|f| f.rsplit('/').next().unwrap_or(f));
    let mut command = None;
    let summary = match tool {
        "Read" => format!("Read {}", name.unwrap_or("a file")),
        "Write" => format!("Wrote {}", name.unwrap_or("a file")),
        "Edit" | "MultiEdit" | "NotebookEdit" => format!("Edited {}", name.unwrap_or("a file")),
        "Bash" => {
            let cmd = text("command").unwrap_or("a command");
            command = Some(cmd.to_string());
            let first = cmd.lines().next().unwrap_or(cmd);
            if failed(v.get("tool_response")) {
                format!("Command failed: {first}")
            } else {
                format!("Ran: {first}")
            }
        }
        "Grep" | "Glob" => format!("{tool} {}", text("pattern").unwrap_or_default()),
        "WebFetch" => format!("Fetched {}", text("url").unwrap_or_default()),
        "WebSearch" => format!("Searched the web for {}", text("query").unwrap_or_default()),
        _ => format!(
            "{tool}: {}",
            text("description").unwrap_or("a task finished")
        ),
    };
    Some(Observation {
        kind: tool.to_string(),
        summary,
        files: file.map(|f| vec![f.to_string()]).unwrap_or_default(),
        command,
        call_id: v
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(String::from),
    })
}

/// Whether a command's response says it failed: a non-zero exit code or
/// an interruption, as Claude Code reports them.
fn failed(response: Option<&Value>) -> bool {
    let Some(r) = response else {
        return false;
    };
    let code = r
        .get("exit_code")
        .or_else(|| r.get("exitCode"))
        .and_then(Value::as_i64);
    code.is_some_and(|c| c != 0) || r.get("interrupted") == Some(&Value::Bool(true))
}
