//! Issue 39, round five of the attack review: who a decision names and
//! where git keeps its files. A decision signed `cli` (the placeholder for
//! "no name") or by a name nobody can see; git folders that git accepts
//! but vouch did not count as one. Each test is the attack as it was made,
//! through the real binary (and the real `git`).

use crate::common::*;
use crate::teams::git;
use serde_json::json;

/// Round five, A7b/A7c: a git folder with `HEAD`, `refs/` and a
/// `commondir` file but no `objects/` (git accepts it: `git --git-dir`
/// reads it), one whose `objects` is a link, and `.g\u{200c}it/config`
/// (`.git/config` on a Mac, where HFS+ ignores the joiner, and to git's
/// own `is_hfs_dotgit`) were registered as an agent's sources. All three
/// are git's own files now; a folder that merely resembles one is not.
#[test]
fn git_folders_git_accepts_are_git_folders() {
    let p = Project::new();
    let root = p.root();
    git(root, &["init", "-q", "--bare", "vendor/repo.git"]);
    let half = root.join("vendor/half.git");
    std::fs::create_dir_all(half.join("refs")).unwrap();
    std::fs::write(half.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(half.join("commondir"), "../repo.git\n").unwrap();
    std::fs::write(half.join("config"), "[credential]\n\thelper = store\n").unwrap();
    let linked = root.join("vendor/linked.git");
    std::fs::create_dir_all(linked.join("refs")).unwrap();
    std::fs::write(linked.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::os::unix::fs::symlink("../repo.git/objects", linked.join("objects")).unwrap();
    std::fs::write(
        linked.join("config"),
        "[remote]\n\turl = https://u:s3cret@x/r\n",
    )
    .unwrap();
    // Git itself takes both for repositories.
    for dir in [&half, &linked] {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args(["rev-parse", "--git-dir"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git does not read {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let hfs = root.join(".g\u{200c}it");
    std::fs::create_dir_all(&hfs).unwrap();
    std::fs::write(hfs.join("config"), "[user]\n\tpassword = s3cret\n").unwrap();
    // Not a repository: a HEAD file and nothing git needs beside it.
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/HEAD"), "The head of the project.\n").unwrap();
    std::fs::write(root.join("notes/plan.md"), "The plan.\n").unwrap();

    for path in [
        "vendor/half.git/config",
        "vendor/linked.git/config",
        ".g\u{200c}it/config",
    ] {
        refused_as_gits_own(&p, path);
    }
    let ok = jsonl(
        &p,
        "agent",
        "kb.register_source_from_path",
        json!({"path": "notes/plan.md"}),
    );
    assert!(ok["result"]["id"].is_string(), "{ok}");
}

/// An agent registering the file at `path` is refused: it is one of git's
/// own files.
fn refused_as_gits_own(p: &Project, path: &str) {
    let r = jsonl(
        p,
        "agent",
        "kb.register_source_from_path",
        json!({"path": path}),
    );
    let message = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{path:?} was registered: {r}"));
    assert!(message.contains("git's own files"), "{path:?}: {message}");
}

fn named_as(p: &Project, vars: &[(&str, &str)]) -> std::process::Command {
    let mut c = p.command("unused");
    c.env_remove("VOUCH_AGENT").env_remove("USER");
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

fn pending(p: &Project) -> usize {
    p.ok("x", &["pending"]).as_array().unwrap().len()
}

/// `args` run with only the environment `vars` naming the caller.
fn run_named(p: &Project, vars: &[(&str, &str)], args: &[&str]) -> Run {
    Run::from(named_as(p, vars).args(args).output().unwrap())
}

/// A person at the command line names `approver` for `proposal`: refused,
/// saying `says`.
fn approver_refused(p: &Project, proposal: &str, approver: &str, says: &str) {
    let r = p.call(
        "alice",
        "kb.approve",
        json!({"proposal_id": proposal, "approver": approver}),
    );
    assert_ne!(r.code, 0, "approved as {approver:?}: {}", r.stdout);
    assert!(r.stderr.contains(says), "{approver:?}: {}", r.stderr);
}

/// An HTTP server with `token` (`subject=secret`) does not start, saying
/// `says`.
fn http_token_refused(p: &Project, token: &str, says: &str) {
    let mut c = p.command("agent");
    c.args([
        "serve",
        "--transport",
        "http",
        "--bind",
        "127.0.0.1:0",
        "--token",
        token,
    ]);
    let r = run_client(c, std::time::Duration::from_secs(20));
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert_contains(&r.stderr, says);
}

/// Round five, U1b: approvals were logged with actor `cli` (`USER=cli`:
/// the placeholder that stands for "no name") and with an invisible one
/// (`USER=$'\u{200b}'`). Neither decides now: `cli` names no one, and a
/// name holding a control or invisible character is refused
/// wherever a caller is named — --agent, VOUCH_AGENT, $USER, a token's
/// subject, a reviewer in the person's config.
#[test]
fn a_decision_is_not_signed_by_no_one_or_by_an_invisible_name() {
    let p = Project::new();
    let src = p.source("Tokens expire after a day.");
    let (prop, _) = p.propose("Tokens expire after a day.", &src);
    let before = p.snapshot();
    // What the attempt is called, its environment, its flags.
    type Attempt<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let attempts: Vec<Attempt> = vec![
        ("USER=cli", vec![("USER", "cli")], vec![]),
        (
            "--agent cli",
            vec![("USER", "alice")],
            vec!["--agent", "cli"],
        ),
        ("USER=\\u200b", vec![("USER", "\u{200b}")], vec![]),
        ("USER=ali\\u200bce", vec![("USER", "ali\u{200b}ce")], vec![]),
        (
            "VOUCH_AGENT=alice\\u202e",
            vec![("VOUCH_AGENT", "alice\u{202e}")],
            vec![],
        ),
        ("USER=\\x1b[8m", vec![("USER", "\u{1b}[8malice")], vec![]),
        ("--agent bob\\u2060", vec![], vec!["--agent", "bob\u{2060}"]),
    ];
    for (label, vars, flags) in &attempts {
        for decide in [
            vec!["approve", prop.as_str()],
            vec![
                "call",
                "kb.approve",
                &format!("{{\"proposal_id\": \"{prop}\"}}"),
            ],
        ] {
            let mut args = flags.clone();
            args.extend(decide.iter().copied());
            let r = run_named(&p, vars, &args);
            assert_ne!(r.code, 0, "{label} {decide:?} decided: {}", r.stdout);
            assert!(
                r.stderr.contains("no name") || r.stderr.contains("U+"),
                "{label}: {}",
                r.stderr
            );
        }
    }
    // A person at the command line may name who approves: not an
    // invisible one.
    approver_refused(&p, &prop, "bob\u{200b}", "U+200B");
    assert_eq!(before, p.snapshot(), "a refused decision wrote something");
    assert_eq!(pending(&p), 1);

    // An agent transport does not start under an invisible name.
    let r = run_with_stdin(
        named_as(&p, &[("VOUCH_AGENT", "claude\u{200b}")]),
        &["serve", "--transport", "jsonl"],
        "{\"id\": 1, \"method\": \"kb.status\"}\n",
    );
    assert_ne!(r.code, 0, "served as an invisible name: {}", r.stdout);
    assert_contains(&r.stderr, "U+200B");
    // Nor does an HTTP server whose token's subject is one.
    http_token_refused(&p, "bob\u{200b}=tok-bob-0123456789", "U+200B");
    // A reviewer named with an invisible character in the person's own
    // config is no reviewer: warned about and ignored.
    p.person_config("review:\n  reviewers: [\"claude\\u200b\", \"bert\"]\n");
    let r = p.run("x", &["status"]);
    assert!(
        r.stderr.contains("reviewers") && r.stderr.contains("ignored"),
        "{}",
        r.stderr
    );
    p.person_config("");

    // A name in plain letters decides, with the spaces around it dropped.
    let r = run_named(&p, &[("USER", " alice ")], &["approve", &prop]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(pending(&p), 0);
    assert!(!p.audit_events("alice").is_empty());
}

/// Round six, A4: a decision signed with a name that reads as `cli` — in
/// another case, fullwidth (`ｃｌｉ`), with a Cyrillic `с` — was approved,
/// and a reader of the log takes it for one nobody signed. Refused as
/// `cli` is, whether the name is the decider's own or the `approver` a
/// person names; a name that merely starts like it (`Clio`) decides.
#[test]
fn a_decision_is_not_signed_by_a_name_that_reads_as_no_one() {
    let p = Project::new();
    let src = p.source("Builds run on every push.");
    let (prop, _) = p.propose("Builds run on every push.", &src);
    let before = p.snapshot();
    for name in [
        "CLI",
        "Cli",
        "\u{ff43}\u{ff4c}\u{ff49}",
        "\u{0441}li",
        "cl\u{0456}",
    ] {
        for decide in [
            vec!["approve", prop.as_str()],
            vec!["reject", "--reason", "no", prop.as_str()],
        ] {
            let r = run_named(&p, &[("USER", name)], &decide);
            assert_ne!(r.code, 0, "{name:?} {decide:?} decided: {}", r.stdout);
            assert_contains(&r.stderr, "no name");
        }
        // A person at the command line may name who approves: not one
        // who reads as no one.
        approver_refused(&p, &prop, name, "no name");
    }
    assert_eq!(before, p.snapshot(), "a refused decision wrote something");
    assert_eq!(pending(&p), 1);
    // Nor does an HTTP server start whose token's subject reads as it: its
    // holder could reject (or archive) under the log's "no name".
    http_token_refused(&p, "\u{0421}li=tok-cli-0123456789", "no name");
    let r = run_named(&p, &[("USER", "Clio")], &["approve", &prop]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(pending(&p), 0);
}

/// Round six, A5b: a bare repository whose `HEAD` is a link that leads
/// nowhere (`refs/heads/main`, git's older form of a symbolic ref: git
/// reads the link's text, not its target) is a repository to git, but
/// vouch followed the link, found nothing and registered its `config` as
/// an agent's source.
#[test]
fn a_bare_repository_whose_head_is_a_dangling_link_is_git_s() {
    let p = Project::new();
    let root = p.root();
    git(root, &["init", "-q", "--bare", "vendor/headlink.git"]);
    let bare = root.join("vendor/headlink.git");
    std::fs::write(
        bare.join("config"),
        "[core]\n\tbare = true\n[remote \"o\"]\n\turl = https://u:s3cret@x/r\n",
    )
    .unwrap();
    std::fs::remove_file(bare.join("HEAD")).unwrap();
    std::os::unix::fs::symlink("refs/heads/main", bare.join("HEAD")).unwrap();
    assert!(!bare.join("HEAD").exists(), "the link must lead nowhere");
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&bare)
        .args(["rev-parse", "--is-bare-repository"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git does not read it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for path in [
        "vendor/headlink.git/config",
        "vendor/headlink.git/description",
    ] {
        refused_as_gits_own(&p, path);
    }
}

/// The approval link: a proposal's `review_url` comes only from the
/// person's own config (`review.url`). A cloned repository's
/// `.vouch/config.yaml` naming an address gives no link (it could send the
/// person to a look-alike page); a malformed one is warned about; the
/// person's own gives each proposal its page.
#[test]
fn a_proposal_links_to_its_review_page_only_where_the_person_said() {
    let p = Project::new();
    let src = p.source("Deploys freeze on Fridays.\n");
    let config = p.root().join(".vouch/config.yaml");
    let repo = std::fs::read_to_string(&config).unwrap();
    assert!(repo.contains("\nreview:\n"), "{repo}");
    let repo = repo.replace(
        "\nreview:\n",
        "\nreview:\n  url: https://vouch.evil.example\n",
    );
    std::fs::write(&config, repo).unwrap();
    let propose = |text: &str| {
        jsonl(
            &p,
            "agent",
            "kb.propose_claim",
            json!({"text": text, "evidence": [src]}),
        )
    };
    let r = propose("Deploys freeze on Fridays.");
    assert_eq!(r["ok"], json!(true), "{r}");
    assert!(r["result"].get("review_url").is_none(), "{r}");

    p.person_config("review:\n  url: ftp://vouch.example.org\n");
    let r = propose("Deploys freeze on Fridays, all day.");
    assert!(r["result"].get("review_url").is_none(), "{r}");
    let status = p.run("agent", &["status"]);
    assert!(status.stderr.contains("review.url"), "{}", status.stderr);

    p.person_config("review:\n  url: https://vouch.example.org/\n");
    let r = propose("Deploys freeze on Fridays from noon.");
    let id = r["result"]["proposal_id"].as_str().unwrap();
    assert_eq!(
        r["result"]["review_url"],
        json!(format!("https://vouch.example.org/ui/proposal/{id}")),
        "{r}"
    );
    // A dry run proposes nothing, so it links nowhere.
    let dry = jsonl(
        &p,
        "agent",
        "kb.propose_claim",
        json!({"text": "Deploys freeze on Mondays.", "evidence": [src], "dry_run": true}),
    );
    assert!(dry["result"].get("review_url").is_none(), "{dry}");
}
