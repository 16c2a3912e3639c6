//! `kb.synthesize` / `vouch synthesize` (issue 11, docs/synthesize.md) through the
//! real binary: answers only from current approved claims, every sentence
//! cited and re-derivable, gaps named, disagreements said, budgets kept,
//! and a language model's lies dropped.

use crate::common::{Project, assert_contains};
use serde_json::{Value, json};

fn synth(p: &Project, args: &[&str]) -> Value {
    let mut a = vec!["synthesize"];
    a.extend_from_slice(args);
    p.ok("x", &a)
}

fn cited(v: &Value) -> Vec<String> {
    v["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// Every sentence is a template filled with its cited claims' texts, and
/// the answer is its sentences: checked here independently of vouch.
fn assert_traceable(v: &Value) {
    let text_of = |id: &str| -> String {
        v["citations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id} cited but not listed: {v}"))["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let norm = |t: &str| {
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        flat.strip_suffix('.').unwrap_or(&flat).to_string()
    };
    let mut rebuilt = String::new();
    let mut paragraph = None;
    for s in v["sentences"].as_array().unwrap() {
        let ids: Vec<&str> = s["citations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(!ids.is_empty(), "uncited sentence: {s}");
        let part = |i: usize| format!("{} [{}]", norm(&text_of(ids[i])), ids[i]);
        let want = match s["template"].as_str().unwrap() {
            "statement" => format!("{}.", part(0)),
            "contested" => format!("Contested: {}.", part(0)),
            "disagreement" => format!("Sources disagree: {}; {}.", part(0), part(1)),
            "llm" => s["text"].as_str().unwrap().to_string(),
            t => panic!("unknown template {t}"),
        };
        assert_eq!(s["text"], want.as_str(), "{v}");
        let n = s["paragraph"].as_u64().unwrap();
        if !rebuilt.is_empty() {
            rebuilt.push_str(if paragraph == Some(n) { " " } else { "\n\n" });
        }
        paragraph = Some(n);
        rebuilt.push_str(&want);
    }
    assert_eq!(v["answer"], rebuilt.as_str(), "{v}");
}

fn auth_kb() -> (Project, String, Vec<String>) {
    let p = Project::new();
    let src = p.source(
        "Auth uses OAuth2 with PKCE for the web app.\nAuth tokens expire after 24 hours.\n\
         Auth sessions are stored in Redis.\n",
    );
    let ids = [
        "Auth uses OAuth2 with PKCE for the web app",
        "Auth tokens expire after 24 hours",
        "Auth sessions are stored in Redis",
    ]
    .iter()
    .map(|t| {
        let v = p.ok(
            "agent",
            &[
                "propose-claim",
                t,
                "--quote",
                &format!("{src}={t}."),
                "--type",
                "fact",
            ],
        );
        p.ok("alice", &["approve", v["proposal_id"].as_str().unwrap()]);
        v["claim_id"].as_str().unwrap().to_string()
    })
    .collect();
    (p, src, ids)
}

/// Seed 002's acceptance: three approved auth claims, one paragraph citing
/// all three by id, each with its evidence.
#[test]
fn three_auth_claims_make_one_paragraph_citing_all_three() {
    let (p, _, ids) = auth_kb();
    let v = synth(&p, &["what is our auth model?"]);
    let answer = v["answer"].as_str().unwrap();
    assert!(!answer.contains("\n\n"), "one paragraph: {answer}");
    for id in &ids {
        assert!(answer.contains(&format!("[{id}]")), "{id} cited: {answer}");
    }
    assert_eq!(cited(&v).len(), 3);
    assert_traceable(&v);
    let c = &v["citations"][0];
    assert_eq!(c["status"], "working");
    assert!(
        c["evidence"][0]["quote"]
            .as_str()
            .unwrap()
            .starts_with("Auth "),
        "{v}"
    );
    assert_eq!(
        v["_meta"]["synthesis_confidence"], "medium",
        "working claims"
    );
    assert_eq!(v["_meta"]["backend"], "fts5");
    // "model" is asked about and no claim covers it.
    assert_eq!(v["gaps"], json!(["model"]), "{v}");
    // The person's view.
    let r = p.run("x", &["synthesize", "what is our auth model?"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_contains(&r.stdout, &format!("[{}]", ids[0]));
    assert_contains(
        &r.stdout,
        "not covered (words of the question no cited claim holds): model\n",
    );
}

#[test]
fn an_uncovered_question_gets_no_answer_and_its_gaps() {
    let (p, _, _) = auth_kb();
    let v = synth(&p, &["how do we rotate database credentials?"]);
    assert_eq!(v["answer"], "", "{v}");
    assert_eq!(v["sentences"], json!([]));
    assert_eq!(
        v["gaps"],
        json!(["rotate", "database", "credentials"]),
        "{v}"
    );
    assert_eq!(v["_meta"]["synthesis_confidence"], "low");
    assert!(
        v["_meta"]["reason"]
            .as_str()
            .unwrap()
            .contains("no current approved claim")
    );
    let r = p.run(
        "x",
        &["synthesize", "how do we rotate database credentials?"],
    );
    assert!(r.stdout.starts_with("No answer:"), "{}", r.stdout);
}

/// Only current approved knowledge: pending and superseded claims are
/// never cited; a disagreement is said, with both sides, and is low.
#[test]
fn only_current_claims_are_cited_and_disagreement_is_said() {
    let (p, src, ids) = auth_kb();
    // Pending: never cited.
    p.propose("Auth tokens are signed with HS256", &src);
    // Superseded: never cited; its successor is.
    let old = p.claim("Auth cookies last 7 days", &src);
    let new = p.claim("Auth cookies last 1 day since the 2026 review", &src);
    p.ok("alice", &["supersede", &old, &new]);
    let v = synth(&p, &["auth cookies tokens sessions"]);
    let got = cited(&v);
    assert!(got.contains(&new), "{v}");
    assert!(!got.contains(&old), "superseded cited: {v}");
    assert!(
        !v["answer"].as_str().unwrap().contains("HS256"),
        "pending cited: {v}"
    );
    assert_traceable(&v);

    // Two current claims that contradict each other.
    let other = p.claim("Auth tokens expire after 8 hours", &src);
    p.ok("alice", &["contradict", &ids[1], &other]);
    let v = synth(&p, &["when do auth tokens expire?"]);
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("Sources disagree:"), "{v}");
    assert!(answer.contains(&format!("[{}]", ids[1])) && answer.contains(&format!("[{other}]")));
    assert_eq!(v["_meta"]["synthesis_confidence"], "low");
    assert_traceable(&v);
}

#[test]
fn the_budget_is_never_exceeded_and_never_splits_a_sentence() {
    let (p, src, _) = auth_kb();
    for t in [
        "Auth errors are logged to the security channel",
        "Auth failures over ten per minute page the on-call engineer",
        "Auth service runs in three regions",
    ] {
        p.claim(t, &src);
    }
    let full = synth(&p, &["auth", "--depth", "5"]);
    let full_len = full["answer"].as_str().unwrap().chars().count();
    assert!(full_len > 100, "{full}");
    for max in [1, 20, 45, 60, 90, 150, 200, full_len - 1, full_len, 4000] {
        let m = max.to_string();
        let v = synth(&p, &["auth", "--depth", "5", "--max-chars", &m]);
        let len = v["answer"].as_str().unwrap().chars().count();
        assert!(len <= max, "{len} > {max}: {v}");
        assert_traceable(&v);
        if len == 0 {
            assert!(
                v["_meta"]["reason"].as_str().unwrap().contains("max_chars"),
                "{v}"
            );
        }
        let dropped = v["_meta"]["dropped"].as_array().unwrap();
        if len < full_len {
            assert!(
                dropped
                    .iter()
                    .any(|d| d["reason"].as_str().unwrap().contains("max_chars")),
                "{v}"
            );
        }
    }
}

#[test]
fn bad_params_are_named() {
    let (p, _, _) = auth_kb();
    for (params, says) in [
        (json!({"query": "   "}), "query: must not be empty"),
        (
            json!({"query": "auth", "depth": 0}),
            "depth: 0 is not allowed",
        ),
        (json!({"query": "auth", "depth": -3}), "depth: -3"),
        (json!({"query": "auth", "depth": 100000}), "use 1..=20"),
        (json!({"query": "auth", "max_chars": 0}), "max_chars: 0"),
        (json!({"query": "auth", "mode": "creative"}), "unknown mode"),
        (
            json!({"query": "auth", "mode": "llm"}),
            "no language model command is configured",
        ),
        (
            json!({"query": "auth", "backend": "vector"}),
            "expected one of",
        ),
    ] {
        let r = p.call("agent", "kb.synthesize", params.clone());
        assert_eq!(r.code, 2, "{params}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{params}: {}", r.stderr);
    }
}

/// `propose_page` files the answer through the gate: a pending page that
/// cites the claims, which its proposer cannot approve.
#[test]
fn an_answer_can_be_proposed_as_a_page() {
    let (p, _, ids) = auth_kb();
    let r = p.call(
        "agent",
        "kb.synthesize",
        json!({"query": "what is our auth model?", "propose_page": true}),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    let pid = v["_meta"]["proposal_id"].as_str().unwrap().to_string();
    let shown = p.ok("x", &["show", &pid]);
    assert_eq!(shown["object"]["kind"], "page", "{shown}");
    let claims = shown["object"]["payload"]["claims"].as_array().unwrap();
    assert_eq!(claims.len(), ids.len(), "{shown}");
    let r = p.run("agent", &["approve", &pid]);
    assert_eq!(r.code, 5, "self-approval refused: {}", r.stderr);
}

/// A fake language model: every lie dropped, every failure falls back to
/// the deterministic answer and says so; an honest rewording is kept.
#[test]
fn a_language_model_is_kept_only_to_what_it_can_prove() {
    let (p, _, ids) = auth_kb();
    let replies = std::cell::Cell::new(0);
    let reply = |sentences: Value| {
        replies.set(replies.get() + 1);
        let file = p.root().join(format!("reply-{}.json", replies.get()));
        std::fs::write(&file, json!({"sentences": sentences}).to_string()).unwrap();
        format!("[\"cat\", \"{}\"]", file.display())
    };
    let run = |command: &str| -> Value {
        let out = p
            .command("x")
            .env("VOUCH_LLM_COMMAND", command)
            .env("VOUCH_LLM_TIMEOUT_SECS", "2")
            .args(["--json", "synthesize", "--llm", "what is our auth model?"])
            .output()
            .unwrap();
        let r = crate::common::Run::from(out);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.json()
    };
    // Honest: the claims' own words, cited.
    let honest = run(&reply(json!([
        {"text": "Auth tokens expire after 24 hours, and auth sessions are stored in Redis", "citations": [ids[1], ids[2]]},
    ])));
    assert_eq!(honest["_meta"]["mode"], "llm", "{honest}");
    assert_eq!(honest["sentences"].as_array().unwrap().len(), 1);
    assert!(
        honest["answer"]
            .as_str()
            .unwrap()
            .ends_with(&format!("[{}] [{}].", ids[1], ids[2]))
    );
    assert_traceable(&honest);

    // Lies: an added fact, an id it was not offered, no citation.
    let lying = run(&reply(json!([
        {"text": "Auth tokens expire after 24 hours", "citations": [ids[1]]},
        {"text": "Auth tokens are encrypted with AES", "citations": [ids[1]]},
        {"text": "Auth sessions are stored in Redis", "citations": ["made-up-claim"]},
        {"text": "Auth uses OAuth2", "citations": []},
    ])));
    assert_eq!(lying["_meta"]["mode"], "llm");
    assert_eq!(lying["sentences"].as_array().unwrap().len(), 1, "{lying}");
    let reasons: Vec<String> = lying["_meta"]["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["what"] == "llm")
        .map(|d| d["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].contains("encrypted"), "{reasons:?}");
    assert!(reasons[1].contains("not offered"), "{reasons:?}");
    assert!(reasons[2].contains("cites no claim"), "{reasons:?}");

    // Failures: non-zero exit, a hang, not JSON, megabytes, all lies.
    let deterministic = synth(&p, &["what is our auth model?"]);
    for (command, says) in [
        ("[\"sh\", \"-c\", \"echo boom >&2; exit 3\"]", "boom"),
        ("[\"sleep\", \"30\"]", "did not answer within 2 s"),
        ("[\"echo\", \"this is not json\"]", "not JSON"),
        (
            "[\"sh\", \"-c\", \"head -c 3000000 /dev/zero\"]",
            "more than",
        ),
        (
            &reply(json!([{"text": "Passwords are stored in plain text", "citations": [ids[0]]}])),
            "no sentence",
        ),
    ] {
        let v = run(command);
        assert_eq!(v["_meta"]["mode"], "deterministic", "{command}: {v}");
        assert_eq!(v["answer"], deterministic["answer"], "{command}");
        let said = v["_meta"]["dropped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["what"] == "llm" && d["reason"].as_str().unwrap().contains(says));
        assert!(said, "{command}: {v}");
    }
}

/// A repository's config may not choose the program that runs.
#[test]
fn a_repository_config_cannot_name_the_language_model_command() {
    let (p, _, _) = auth_kb();
    let config = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}synthesize:\n  llm_command: [\"touch\", \"{}/pwned\"]\n",
            p.root().display()
        ),
    )
    .unwrap();
    let r = p.run("x", &["synthesize", "--llm", "what is our auth model?"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "synthesize.llm_command is ignored here");
    assert!(!p.root().join("pwned").exists());
}

/// The same answer over JSONL and HTTP as from the CLI.
#[test]
fn every_transport_gives_the_same_answer() {
    let (p, _, _) = auth_kb();
    let cli = synth(&p, &["what is our auth model?"]);
    let jsonl = crate::common::jsonl(
        &p,
        "agent",
        "kb.synthesize",
        json!({"query": "what is our auth model?"}),
    );
    assert_eq!(jsonl["result"], cli, "{jsonl}");
    let caps = p.ok("x", &["call", "kb.capabilities"]);
    assert!(
        caps["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("kb.synthesize"))
    );
    let server = crate::common::server::http_server(p.root(), &[], &[]);
    let body =
        json!({"id": 1, "method": "kb.synthesize", "params": {"query": "what is our auth model?"}});
    let http = server.rpc(None, body.to_string().as_bytes()).json();
    assert_eq!(http["result"], cli, "{http}");
}

/// A language model that keeps every word but flips the meaning — drops a
/// "never", recombines two claims into what neither says — has those
/// sentences dropped with the reason; and it runs with a cleared
/// environment, so the server's tokens never reach it.
#[test]
fn a_language_model_cannot_flip_what_claims_say_nor_read_secrets() {
    let p = Project::new();
    let src = p.source(
        "Agents must never force-push to main.\nThe staging database can be dropped freely.\n\
         The production database must never be dropped.\n",
    );
    let ids: Vec<String> = [
        "Agents must never force-push to main",
        "The staging database can be dropped freely",
        "The production database must never be dropped",
    ]
    .iter()
    .map(|t| p.claim(t, &src))
    .collect();
    let env_out = p.root().join("env.txt");
    let run = |n: usize, query: &str, sentences: Value| -> Value {
        let file = p.root().join(format!("reply-{n}.json"));
        std::fs::write(&file, json!({ "sentences": sentences }).to_string()).unwrap();
        // The command also writes down the environment it was given.
        let command = json!([
            "sh",
            "-c",
            format!("env > {}; cat {}", env_out.display(), file.display())
        ])
        .to_string();
        let out = p
            .command("x")
            .env("VOUCH_LLM_COMMAND", &command)
            .env("VOUCH_HTTP_TOKENS", "alice=secret-token-value")
            .env("VOUCH_CHECKPOINT_KEY", "/secret/key")
            .args(["--json", "synthesize", "--llm", query])
            .output()
            .unwrap();
        let r = crate::common::Run::from(out);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.json()
    };
    let llm_reasons = |v: &Value| -> Vec<String> {
        v["_meta"]["dropped"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["what"] == "llm")
            .map(|d| d["reason"].as_str().unwrap().to_string())
            .collect()
    };
    // A "never" dropped: the opposite, refused; the honest one kept.
    let v = run(
        1,
        "may agents force-push to main?",
        json!([
            {"text": "Agents must force-push to main", "citations": [ids[0]]},
            {"text": "Agents must never force-push to main", "citations": [ids[0]]},
        ]),
    );
    assert_eq!(v["_meta"]["mode"], "llm", "{v}");
    assert_eq!(v["sentences"].as_array().unwrap().len(), 1, "{v}");
    assert!(
        v["answer"]
            .as_str()
            .unwrap()
            .starts_with("Agents must never force-push"),
        "{v}"
    );
    let reasons = llm_reasons(&v);
    assert_eq!(reasons.len(), 1, "{v}");
    assert!(reasons[0].contains("opposite"), "{reasons:?}");
    // Two claims recombined into what neither says.
    let v = run(
        2,
        "can the production database be dropped?",
        json!([
            {"text": "The production database can be dropped freely", "citations": [ids[1], ids[2]]},
        ]),
    );
    let reasons = llm_reasons(&v);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("opposite") || r.contains("not offered")),
        "{v}"
    );
    assert!(
        !v["answer"]
            .as_str()
            .unwrap()
            .contains("production database can be dropped"),
        "{v}"
    );
    let env = std::fs::read_to_string(&env_out).unwrap();
    assert!(!env.contains("secret-token-value"), "{env}");
    assert!(!env.contains("VOUCH_CHECKPOINT_KEY"), "{env}");
    assert!(env.contains("PATH="), "{env}");
}
