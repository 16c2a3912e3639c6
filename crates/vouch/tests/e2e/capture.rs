//! Session capture from Claude Code's hooks, through the real binary: the
//! hooks `install-mcp claude-code` writes into `.claude/settings.json`, run
//! the way Claude Code runs them (`sh -c COMMAND`, the payload on stdin,
//! in the project), for a whole session. What they must do: print nothing
//! on stdout (a prompt hook's stdout reaches the agent's context), exit 0
//! even on garbage, keep secrets off the disk, and at the session's end
//! file one pending page by the agent, for a person to review.

use crate::common::*;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

const SESSION: &str = "6a0f3d2c-1b9e-4f7a-8c5d-2e4b6a8c0d1f";

/// The hooks of `settings.json` for `event`: their commands.
fn hook_commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .map(|groups| {
            groups
                .iter()
                .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
                .filter_map(|h| h["command"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Run `command` as Claude Code runs a hook: through the shell, in the
/// project, with `payload` on stdin and `vouch` on PATH.
fn run_hook(p: &Project, command: &str, payload: &[u8]) -> Run {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_vouch"))
        .parent()
        .unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(p.root())
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .env("HOME", p.root())
        .env("XDG_CONFIG_HOME", p.person.path())
        // The person's name in the shell: never the agent's.
        .env("VOUCH_AGENT", "alice")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh");
    child.stdin.take().unwrap().write_all(payload).unwrap();
    Run::from(child.wait_with_output().unwrap())
}

fn payload(event: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({
        "session_id": SESSION,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/tmp",
        "hook_event_name": event,
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn claude_code_hooks_file_a_masked_session_for_review() {
    let p = Project::new();
    // Capture is each person's choice: their own settings.local.json.
    let settings_path = p.root().join(".claude/settings.local.json");
    std::fs::create_dir_all(settings_path.parent().unwrap()).unwrap();
    // The person's own hook stays.
    std::fs::write(
        &settings_path,
        r#"{"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "npm run lint"}]}]}}"#,
    )
    .unwrap();
    let install = |args: &[&str]| {
        let mut c = p.command("tester");
        c.env("PATH", "")
            .args(["--json", "install-mcp", "claude-code"])
            .args(args);
        let r = Run::from(c.output().unwrap());
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        r.json()
    };
    install(&[]);
    assert!(
        !std::fs::read_to_string(&settings_path)
            .unwrap()
            .contains("vouch capture"),
        "no capture without --capture"
    );
    let shared = std::fs::read_to_string(p.root().join(".claude/settings.json")).unwrap();
    assert!(!shared.contains("vouch capture"), "{shared}");
    install(&["--capture"]);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    let capture = "vouch capture --host claude-code --agent claude";
    for event in [
        "PostToolUse",
        "UserPromptSubmit",
        "SessionStart",
        "SessionEnd",
    ] {
        assert!(
            hook_commands(&settings, event).contains(&capture.to_string()),
            "{event}: {settings:#}"
        );
    }
    assert!(hook_commands(&settings, "PostToolUse").contains(&"npm run lint".to_string()));
    // Twice is once.
    let again = install(&["--capture"]);
    assert_eq!(again["capture"]["outcome"], "unchanged", "{again:#}");

    let secret = format!(
        "ghp_{}",
        "Zx9Yw8Vu7Ts6Rq5Po4Nm".repeat(2).get(..36).unwrap()
    );
    let events = [
        payload("SessionStart", json!({"source": "startup"})),
        payload(
            "UserPromptSubmit",
            json!({"prompt": "Make the deploy script retry once"}),
        ),
        payload(
            "PostToolUse",
            json!({"tool_name": "Read", "tool_use_id": "toolu_01",
            "tool_input": {"file_path": format!("{}/scripts/deploy.sh", p.root().display())},
            "tool_response": {"type": "text"}}),
        ),
        payload(
            "PostToolUse",
            json!({"tool_name": "Edit", "tool_use_id": "toolu_02",
            "tool_input": {"file_path": "scripts/deploy.sh", "old_string": "a", "new_string": "b"},
            "tool_response": {}}),
        ),
        payload(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "toolu_03",
            "tool_input": {"command": format!("GH_TOKEN={secret} ./scripts/deploy.sh --dry-run")},
            "tool_response": {"stdout": "ok", "stderr": "", "interrupted": false}}),
        ),
        b"{not json".to_vec(),
    ];
    for e in &events {
        let r = run_hook(&p, capture, e);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.stdout, "", "a hook prints nothing on stdout");
    }
    let buffer = p.vouch_dir().join(format!("captures/{SESSION}.jsonl"));
    let held = std::fs::read_to_string(&buffer).unwrap();
    assert!(!held.contains(&secret), "{held}");
    assert_eq!(held.lines().count(), 4, "{held}");

    let end = run_hook(
        &p,
        capture,
        &payload("SessionEnd", json!({"reason": "exit"})),
    );
    assert_eq!((end.code, end.stdout.as_str()), (0, ""), "{}", end.stderr);
    assert!(
        end.stderr.contains("filed for review as proposal"),
        "{}",
        end.stderr
    );
    assert!(!buffer.exists());

    let pending = p.ok("tester", &["pending"]);
    let pending = pending.as_array().unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let page = &pending[0];
    assert_eq!(page["proposed_by"], json!("claude"), "{page:#}");
    assert_eq!(page["kind"], json!("page"), "{page:#}");
    let body = page["payload"]["body"].as_str().unwrap();
    assert!(body.contains("Make the deploy script retry once"), "{body}");
    assert!(body.contains("Edited deploy.sh"), "{body}");
    assert!(body.contains("[REDACTED:github_token]"), "{body}");
    // Nothing anywhere under .vouch/ holds the secret, the index included.
    let mut files = p.snapshot();
    let index = std::fs::read(p.vouch_dir().join("state.db")).unwrap_or_default();
    files.push(("state.db".into(), index));
    for (path, bytes) in files {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&secret),
            "{path} holds the secret"
        );
    }
    // Knowledge only once a person approves it.
    assert_eq!(p.ok("tester", &["call", "kb.list_pages", "{}"]), json!([]));
    let id = page["id"].as_str().unwrap();
    p.ok("alice", &["approve", id]);
    assert_eq!(
        p.ok("tester", &["call", "kb.list_pages", "{}"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
