//! Git for a team (issue 25), with the real `git`: a fresh clone writes,
//! a write that fails leaves no audit event behind, and branches that
//! each recorded decisions merge, rebase and cherry-pick without hand
//! resolution — with the chain still catching every tampering.

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

mod branches;
mod clone;
mod pull_request;

/// A fixed identity and no user or system config, for `cmd` and any
/// `git` it runs.
pub(crate) fn git_identity(cmd: &mut Command) -> &mut Command {
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
}

/// `git` with a fixed identity and no user or system config; it may fail
/// (a merge that conflicts).
fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    git_identity(Command::new("git").current_dir(dir))
        .args(args)
        .output()
        .expect("git runs (scripts/test.sh installs it)")
}

/// `git` that must succeed; its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn commit(p: &Project, message: &str) {
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "--allow-empty", "-m", message]);
}

fn id(v: &Value, key: &str) -> String {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .to_string()
}

fn verify(p: &Project) -> Value {
    p.ok("x", &["audit", "verify"])
}

fn log_lines(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_log(p: &Project, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(p.vouch_dir().join("audit.log.jsonl"), text).unwrap();
}

/// A project under git with its KB committed on `main`.
fn repo() -> Project {
    let p = Project::new();
    git(p.root(), &["init", "-q", "-b", "main"]);
    commit(&p, "vouch init");
    p
}

/// A source and an approved claim citing it, by `reviewer`; the claim id.
fn decide(p: &Project, text: &str, reviewer: &str) -> String {
    let src = p.source(&format!("{text}\n"));
    let (proposal, claim) = p.propose(text, &src);
    p.ok(reviewer, &["approve", &proposal]);
    claim
}
