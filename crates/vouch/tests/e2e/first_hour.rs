//! What a new user meets in the first hour (issue 40): the words of
//! errors and output at the command line, who signs a decision when no
//! name is set, a doctor that stays quiet about what fixes itself.

use crate::common::{Project, Run, assert_contains, assert_lacks, jsonl};
use serde_json::json;
use std::process::Command;

/// `vouch` as `agent`, with neither VOUCH_AGENT nor USER set (as in many
/// containers): no one is named.
fn unnamed(p: &Project) -> Command {
    let mut c = p.command("unused");
    c.env_remove("VOUCH_AGENT").env_remove("USER");
    c
}

fn run(mut c: Command, args: &[&str]) -> Run {
    Run::from(c.args(args).output().expect("run vouch"))
}

fn pending_ids(p: &Project) -> Vec<String> {
    p.ok("x", &["pending"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// `--kb` naming a folder that holds no knowledge base (neither a
/// `.vouch/` nor a project with one, nor a `config.yaml` and `claims/` of
/// its own) is refused with what to do, and nothing is written there; a
/// copy of a `.vouch/` under another name still opens.
#[test]
fn kb_naming_a_folder_without_a_knowledge_base_is_refused_and_writes_nothing() {
    let p = Project::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("notes.txt"), "mine").unwrap();
    let dir = elsewhere.path().to_str().unwrap();
    let r = p.run("x", &["--kb", dir, "status"]);
    assert_eq!(r.code, 7, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "no knowledge base at");
    assert_contains(&r.stderr, "vouch init");
    let left: Vec<_> = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"], "written into a folder that is no KB");
    // The same knowledge base under another folder name opens.
    let copy = elsewhere.path().join("kb-copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(p.vouch_dir().join("config.yaml"), copy.join("config.yaml")).unwrap();
    std::fs::create_dir(copy.join("claims")).unwrap();
    let r = p.run("x", &["--kb", copy.to_str().unwrap(), "status"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

/// An uncited claim at the command line names the commands that fix it,
/// not the method agents call; an agent still reads the method's name.
#[test]
fn an_uncited_claim_names_source_add_and_evidence_at_the_command_line() {
    let p = Project::new();
    let r = p.run("agent", &["propose-claim", "Tokens expire after a day."]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stdout, "vouch source add");
    assert_contains(&r.stdout, "-e/--evidence");
    assert_lacks(&r.stdout, "kb.register_source");

    let agent = jsonl(
        &p,
        "agent",
        "kb.propose_claim",
        json!({"text": "Tokens expire after a day.", "evidence": []}),
    );
    let said = agent.to_string();
    assert!(said.contains("kb.register_source"), "{said}");
    assert!(!said.contains("vouch source add"), "{said}");
}

/// `--source` (the word a new user reaches for) cites like `--evidence`,
/// instead of clap's "a similar argument exists: '--scope'".
#[test]
fn source_is_another_name_for_evidence_on_propose_claim() {
    let p = Project::new();
    let src = p.source("Tokens expire after a day.");
    let v = p.ok(
        "agent",
        &[
            "propose-claim",
            "Tokens expire after a day.",
            "--source",
            &src,
        ],
    );
    assert_eq!(v["valid"], true, "{v}");
    let shown = p.ok("x", &["show", v["proposal_id"].as_str().unwrap()]);
    assert!(shown.to_string().contains(&src), "{shown}");
}

/// With no --agent, VOUCH_AGENT or $USER, a decision would be signed by
/// `cli`, a name nobody set: every command that decides is refused,
/// naming the three ways to say who you are. Proposing still works.
#[test]
fn a_decision_with_no_name_set_is_refused() {
    let p = Project::new();
    let src = p.source("Tokens expire after a day.");
    let old = p.claim("Tokens expire after a week.", &src);
    let (prop, _) = p.propose("Tokens expire after a day.", &src);
    let before = p.snapshot();
    for args in [
        vec!["approve", prop.as_str()],
        vec!["reject", prop.as_str(), "--reason", "no"],
        vec!["archive", old.as_str()],
        vec!["confirm", old.as_str()],
        vec![
            "call",
            "kb.approve",
            &format!("{{\"proposal_id\": \"{prop}\"}}"),
        ],
    ] {
        let r = run(unnamed(&p), &args);
        assert_eq!(r.code, 5, "{args:?}: {}{}", r.stdout, r.stderr);
        for name in ["--agent", "VOUCH_AGENT", "USER"] {
            assert!(r.stderr.contains(name), "{args:?}: {}", r.stderr);
        }
    }
    let r = run(unnamed(&p), &["review", "--batch"]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert_eq!(before, p.snapshot(), "a refused decision wrote something");
    assert_eq!(pending_ids(&p), std::slice::from_ref(&prop));

    // `vouch ui` says whom it approves as; with no one named it does not
    // start (a server that started would still be running here).
    let mut ui = unnamed(&p);
    ui.args(["ui", "--bind", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = ui.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(5), "{err}");
    assert!(!err.contains("approving as cli"), "{err}");
    assert!(err.contains("VOUCH_AGENT"), "{err}");

    // A proposal is no decision: it is filed, as `cli`.
    let r = run(
        unnamed(&p),
        &["--json", "propose-claim", "Tokens rotate.", "-e", &src],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // $USER names the person.
    let mut c = unnamed(&p);
    c.env("USER", "alice");
    let r = run(c, &["approve", &prop]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        p.audit_events("alice")
            .contains(&"proposal.approve".to_string())
    );
    assert!(
        !p.audit_events("cli")
            .contains(&"proposal.approve".to_string())
    );
}

/// Right after an ordinary `source add` the index is one write behind —
/// a state the next read catches up with. The doctor catches up too and
/// finds nothing.
#[test]
fn doctor_after_an_ordinary_write_finds_nothing() {
    let p = Project::new();
    p.ok("x", &["search", "anything"]); // builds state.db
    std::fs::write(p.root().join("notes.md"), "Tokens expire after a day.\n").unwrap();
    p.ok("agent", &["source", "add", "notes.md"]);
    p.source("Backups run nightly.");
    let r = p.run("x", &["doctor"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout, "No problems found.\n", "{}", r.stderr);
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
}

/// `reject` says what it did, as `approve` does; a proposer may reject
/// (withdraw) its own proposal.
#[test]
fn reject_says_what_it_did_and_a_proposer_may_withdraw() {
    let p = Project::new();
    let src = p.source("Tokens expire after a day.");
    let (prop, _) = p.propose("Tokens expire after a day.", &src);
    let r = p.run("agent", &["reject", &prop, "--reason", "wrong source"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with(&format!("Rejected {prop}: wrong source\n")),
        "{}",
        r.stdout
    );
    assert_lacks(&r.stdout, "ok: true");
    assert!(pending_ids(&p).is_empty());
    assert!(
        p.audit_events("agent")
            .contains(&"proposal.reject".to_string())
    );
    // --json stays the method's result.
    let (other, _) = p.propose("Tokens rotate weekly.", &src);
    let v = p.ok("alice", &["reject", &other, "--reason", "no"]);
    assert_eq!(v, json!({"ok": true}));
    let help = p.run("x", &["reject", "--help"]).stdout;
    assert!(help.contains("withdraws"), "{help}");
}

/// Search output says what its scores are; synthesize says what a gap
/// is; no line ends in a space.
#[test]
fn search_and_synthesize_output_explain_scores_and_gaps() {
    let p = Project::new();
    std::fs::write(
        p.root().join("notes.md"),
        "Access tokens expire after 24 hours.\n",
    )
    .unwrap();
    let src = p.ok("agent", &["source", "add", "notes.md"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    p.claim("Access tokens expire after 24 hours", &src);
    let r = p.run("x", &["search", "access tokens expire after 24 hours"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let first = r.stdout.lines().next().unwrap();
    assert!(
        first.contains("best first") && first.contains("BM25"),
        "{}",
        r.stdout
    );
    assert_contains(&r.stdout, "source ");
    for line in r.stdout.lines() {
        assert_eq!(line, line.trim_end(), "a trailing space:\n{}", r.stdout);
    }
    let help = p.run("x", &["search", "--help"]).stdout;
    assert!(help.contains("near zero"), "{help}");

    let r = p.run("x", &["synthesize", "when do access tokens expire last"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_lacks(&r.stdout, "gap: ");
    assert_contains(
        &r.stdout,
        "not covered (words of the question no cited claim holds): last\n",
    );
    for line in r.stdout.lines() {
        assert_eq!(line, line.trim_end(), "a trailing space:\n{}", r.stdout);
    }
}

/// `init` again says so in one line; the git step is suggested only
/// inside a git work tree.
#[test]
fn init_again_says_already_initialized_and_git_only_in_git() {
    let p = Project::new();
    let r = p.run("x", &["init"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stdout.starts_with("Already initialized"), "{}", r.stdout);

    let fresh = p.root().join("fresh");
    let r = p.run("x", &["init", fresh.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("Initialized"), "{}", r.stdout);
    assert_lacks(&r.stdout, "git add");

    let repo = p.root().join("repo");
    std::fs::create_dir(&repo).unwrap();
    crate::teams::git(&repo, &["init", "-q"]);
    let r = p.run("x", &["init", repo.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_contains(&r.stdout, "git add .vouch");
}

/// `audit verify --base` says what it needs instead of git's raw error:
/// a git work tree, and the base revision fetched.
#[test]
fn audit_verify_base_says_what_it_needs() {
    let p = Project::new();
    let r = p.run("x", &["audit", "verify", "--base", "origin/main"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "not in a git work tree");
    assert_lacks(&r.stderr, "fatal:");

    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.root())
        .status()
        .unwrap();
    assert!(git.success());
    let r = p.run("x", &["audit", "verify", "--base", "origin/main"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "needs it fetched");
    assert_lacks(&r.stderr, "fatal:");
}

/// A usage line shows what was typed: VOUCH_AGENT in the environment is
/// not `--agent <AGENT>`.
#[test]
fn usage_lines_do_not_show_the_agent_from_the_environment() {
    let p = Project::new();
    let r = p.run("someone", &["reject", "abc"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "Usage: vouch reject");
    assert_lacks(&r.stderr, "--agent");
    // And VOUCH_AGENT still names the actor.
    let src = p.source("Tokens expire after a day.");
    let v = p.ok("bob", &["propose-claim", "Tokens expire.", "-e", &src]);
    let shown = p.ok("x", &["show", v["proposal_id"].as_str().unwrap()]);
    assert_eq!(shown["object"]["proposed_by"], "bob", "{shown}");
}
