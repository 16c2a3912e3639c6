use super::*;
use crate::kb::Transport;
use crate::testing::test_kb;

const SESSION: &str = "3f1c9a2e-7b4d-4c1e-9a55-0d2b1e6f7a10";

/// A GitHub token as the secret scanner knows them, built at run time so
/// no scanner flags this file.
fn token() -> String {
    format!(
        "ghp_{}",
        "a1B2c3D4e5F6g7H8i9J0".repeat(2).get(..36).unwrap()
    )
}

fn payload(event: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({
        "session_id": SESSION,
        "transcript_path": "/home/u/.claude/projects/p/x.jsonl",
        "cwd": "/home/u/p",
        "hook_event_name": event,
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::to_vec(&v).unwrap()
}

fn hook(kb: &Kb, event: &str, extra: Value) -> Outcome {
    let (session, event) = claude_code::parse(&payload(event, extra)).unwrap();
    handle(kb, "claude-code", "claude-code", &session, event, None).unwrap()
}

#[test]
fn a_session_is_noted_masked_and_filed_as_one_pending_page_citing_its_summary() {
    let (_dir, kb) = test_kb();
    let secret = token();
    let prompt = json!({"prompt": "Why do deploys freeze on Fridays?"});
    assert_eq!(hook(&kb, "UserPromptSubmit", prompt), Outcome::Noted);
    let read = json!({"tool_name": "Read", "tool_use_id": "toolu_1",
        "tool_input": {"file_path": "/home/u/p/docs/deploy.md"}, "tool_response": {}});
    assert_eq!(hook(&kb, "PostToolUse", read.clone()), Outcome::Noted);
    // The same call delivered twice (two hook wirings) is noted once.
    assert!(matches!(
        hook(&kb, "PostToolUse", read),
        Outcome::Skipped { .. }
    ));
    let bash = json!({"tool_name": "Bash", "tool_use_id": "toolu_2",
        "tool_input": {"command": format!("GITHUB_TOKEN={secret} ./deploy --dry-run")},
        "tool_response": {"exit_code": 1}});
    assert_eq!(hook(&kb, "PostToolUse", bash), Outcome::Noted);
    let todo = json!({"tool_name": "TodoWrite", "tool_input": {}});
    assert!(matches!(
        hook(&kb, "PostToolUse", todo),
        Outcome::Skipped { .. }
    ));

    // The secret never reached the disk, not even the scratch buffer.
    let path = buffer(&kb, SESSION).unwrap();
    let held = std::fs::read_to_string(&path).unwrap();
    assert!(!held.contains(&secret), "{held}");
    assert!(held.contains("[REDACTED:github_token]"), "{held}");
    assert_eq!(held.lines().count(), 3);

    let Outcome::Filed { sessions } = hook(&kb, "SessionEnd", json!({"reason": "exit"})) else {
        panic!("a session end files");
    };
    let filed = &sessions[0];
    assert_eq!(filed.observations, 3);
    let proposal_id = filed.proposal_id.clone().expect("a proposal");
    assert!(!path.exists(), "the buffer is gone once filed");

    // A pending page proposal by the agent, citing the summary's source.
    let person = Caller::new("alice", Transport::Cli);
    let call = |m: &str, p: Value| crate::methods::dispatch(&kb, &person, m, p).unwrap();
    let proposal = call("kb.read_proposal", json!({"id": proposal_id}));
    assert_eq!(proposal["status"], json!("pending"), "{proposal}");
    assert_eq!(proposal["proposed_by"], json!("claude-code"));
    assert_eq!(proposal["payload"]["type"], json!("session"), "{proposal}");
    let source = filed.source_id.clone().unwrap();
    assert_eq!(
        proposal["payload"]["sources"],
        json!([source]),
        "{proposal}"
    );
    let title = proposal["payload"]["title"].as_str().unwrap();
    assert!(title.contains("Why do deploys freeze"), "{title}");
    let body = proposal["payload"]["body"].as_str().unwrap();
    assert!(
        body.contains("Command failed: GITHUB_TOKEN=[REDACTED:github_token]"),
        "{body}"
    );
    assert!(body.contains("`/home/u/p/docs/deploy.md`"), "{body}");
    let text = String::from_utf8(kb.source_content(&source).unwrap().unwrap()).unwrap();
    assert!(!text.contains(&secret));
    // Not knowledge: no page until a person approves.
    assert_eq!(call("kb.list_pages", json!({})), json!([]));
}

#[test]
fn a_short_session_files_nothing_and_a_session_id_cannot_name_a_path() {
    let (_dir, kb) = test_kb();
    hook(&kb, "UserPromptSubmit", json!({"prompt": "hi"}));
    let Outcome::Filed { sessions } = hook(&kb, "SessionEnd", json!({})) else {
        panic!("a session end files");
    };
    assert_eq!(
        (sessions[0].observations, sessions[0].proposal_id.clone()),
        (1, None)
    );
    assert!(!buffer(&kb, SESSION).unwrap().exists());
    for bad in ["../../etc/x", "a/b", "", ".hidden", &"x".repeat(129)] {
        let payload =
            json!({"session_id": bad, "hook_event_name": "UserPromptSubmit", "prompt": "p"});
        let (session, event) = claude_code::parse(&serde_json::to_vec(&payload).unwrap()).unwrap();
        let e = handle(&kb, "claude-code", "claude-code", &session, event, None).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::InvalidParams, "{bad}");
    }
    assert!(!kb.layout().captures().join("../../etc").exists());
    for bad in [&b"not json"[..], br#"{"hook_event_name": "Stop"}"#] {
        assert!(claude_code::parse(bad).is_err());
    }
}

#[test]
fn an_older_knowledge_base_keeps_its_captures_out_of_git() {
    let (_dir, kb) = test_kb();
    let ignore = kb.layout().gitignore();
    let old = crate::store::layout::GITIGNORE.replace("captures/\n", "");
    std::fs::write(&ignore, &old).unwrap();
    hook(&kb, "UserPromptSubmit", json!({"prompt": "hello there"}));
    let now = std::fs::read_to_string(&ignore).unwrap();
    assert_eq!(now, format!("{old}captures/\n"));
    assert!(crate::store::layout::never_committed(&format!(
        "captures/{SESSION}.jsonl"
    )));
    // Once is enough.
    hook(&kb, "UserPromptSubmit", json!({"prompt": "and again"}));
    assert_eq!(std::fs::read_to_string(&ignore).unwrap(), now);
}

#[test]
fn a_session_start_files_what_an_ended_session_left_behind() {
    let (_dir, kb) = test_kb();
    let old = "0ld-5e55i0n";
    for i in 0..3 {
        let o = Event::Observed(Observation {
            kind: "Read".into(),
            summary: format!("Read file{i}.md"),
            files: vec![format!("file{i}.md")],
            command: None,
            call_id: None,
        });
        handle(&kb, "claude-code", "claude-code", old, o, None).unwrap();
    }
    // Fresh: another session's start leaves it alone.
    let Outcome::Filed { sessions } = hook(&kb, "SessionStart", json!({"source": "startup"}))
    else {
        panic!("a start files");
    };
    assert!(sessions.is_empty());
    // An hour idle: filed.
    let path = buffer(&kb, old).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3700);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let Outcome::Filed { sessions } = hook(&kb, "SessionStart", json!({"source": "startup"}))
    else {
        panic!("a start files");
    };
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].session, old);
    assert!(sessions[0].proposal_id.is_some());
}
