//! What is on disk: sources kept inside the project and checked for drift,
//! corrupt claim files skipped, reads and lists, the audit log's first bad
//! line, and `init` and discovery.

use super::*;

#[test]
fn sources_from_path_stay_inside_the_project() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), p.root().join("link.txt"))
        .unwrap();
    std::fs::create_dir(p.root().join("sub")).unwrap();
    let before = p.snapshot();
    for (path, expect) in [
        (
            outside.path().join("secret.txt").display().to_string(),
            "outside the project",
        ),
        ("link.txt".to_string(), "symbolic link"),
        ("../".to_string(), "outside the project"),
        ("sub".to_string(), "not a regular file"),
        ("/dev/null".to_string(), "outside the project"),
        (".vouch/config.yaml".to_string(), "inside .vouch"),
        ("missing.txt".to_string(), "No such file"),
    ] {
        let r = p.run("agent", &["source", "add", &path]);
        assert_eq!(r.code, 2, "{path}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(expect), "{path}: {}", r.stderr);
    }
    // Size limit with a clear message.
    let cfg = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("max_bytes: 16777216", "max_bytes: 10");
    std::fs::write(&cfg, &text).unwrap();
    std::fs::write(p.root().join("big.txt"), "01234567890").unwrap();
    let r = p.run("agent", &["source", "add", "big.txt"]);
    assert_eq!(r.code, 2);
    assert_contains(&r.stderr, "over the 10-byte limit");
    let mut after = p.snapshot();
    after.retain(|(f, _)| f != "config.yaml");
    let mut before = before;
    before.retain(|(f, _)| f != "config.yaml");
    assert_eq!(before, after);
}

#[test]
fn source_verify_reports_drift_and_missing_content() {
    let p = Project::new();
    let s = p.source("original");
    assert_eq!(p.ok("x", &["source", "verify"])["ok"], true);
    let content = p.vouch_dir().join(format!("sources/{s}/content"));
    std::fs::write(&content, "tampered").unwrap();
    let r = p.run("x", &["--json", "source", "verify"]);
    assert_eq!(r.code, 6);
    assert_eq!(r.json()["issues"][0]["kind"], "drifted");
    std::fs::remove_file(&content).unwrap();
    assert_eq!(
        p.run("x", &["--json", "source", "verify", &s]).json()["issues"][0]["kind"],
        "missing"
    );
}

#[test]
fn corrupt_claim_files_are_skipped_with_a_warning() {
    let p = Project::new();
    let s = p.source("x");
    p.claim("A good claim", &s);
    std::fs::write(
        p.vouch_dir().join("claims/broken.yaml"),
        "id: broken\ntext: [unclosed\n",
    )
    .unwrap();
    std::fs::write(p.vouch_dir().join("claims/truncated.yaml"), "id: trunc").unwrap();
    let r = p.run("x", &["--json", "call", "kb.list_claims"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_contains(&r.stderr, "claims/broken.yaml");
    assert_contains(&r.stderr, "claims/truncated.yaml");
    let r = p.run("x", &["search", "good"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("a-good-claim"));
    let r = p.run("x", &["show", "broken"]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("broken.yaml"));
}

#[test]
fn reads_return_null_and_lists_page_and_filter() {
    let p = Project::new();
    let s = p.source("x");
    for i in 0..5 {
        p.claim(&format!("Claim number {i}"), &s);
    }
    assert!(
        p.call("x", "kb.read_claim", json!({"id": "nope"}))
            .json()
            .is_null()
    );
    let page = p
        .call("x", "kb.list_claims", json!({"limit": 2, "offset": 1}))
        .json();
    let ids: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["claim-number-1", "claim-number-2"]);
    let f = p
        .call(
            "x",
            "kb.list_claims",
            json!({"filter": {"id": "claim-number-3"}}),
        )
        .json();
    assert_eq!(f.as_array().unwrap().len(), 1);
    assert_eq!(p.call("x", "kb.list_claims", json!({"limit": 0})).code, 2);
    assert_eq!(p.call("x", "kb.list_claims", json!({"offset": -1})).code, 2);
    let caps = p.call("x", "kb.capabilities", json!({})).json();
    assert_eq!(caps["review_gated"], true);
    assert_eq!(caps["spec"], "vouch-0.1");
    assert!(
        caps["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "kb.propose_claim")
    );
    let st = p.ok("x", &["status"]);
    assert_eq!(st["counts"]["claims"], 5);
    assert_eq!(st["pending"], 0);
    assert_eq!(p.call("x", "kb.nope", json!({})).code, 2);
}

#[test]
fn audit_verify_names_the_first_bad_line() {
    let p = Project::new();
    let s = p.source("x");
    for i in 0..3 {
        p.claim(&format!("Audited {i}"), &s);
    }
    let log = p.vouch_dir().join("audit.log.jsonl");
    let good = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    assert_eq!(lines.len(), 7);
    let check = |text: String, line: usize, what: &str| {
        std::fs::write(&log, text).unwrap();
        let r = p.run("x", &["--json", "audit", "verify"]);
        assert_eq!(r.code, 6, "{what}: {}", r.stdout);
        let v = r.json();
        assert_eq!(v["first_bad_line"], line, "{what}: {v}");
        let human = p.run("x", &["audit", "verify"]);
        assert_contains(&human.stdout, &format!("line {line}"));
    };
    check(
        good.replacen("Audited", "Edited", 0).replacen(
            "\"actor\":\"alice\"",
            "\"actor\":\"mallory\"",
            1,
        ),
        3,
        "edited",
    );
    let mut re = lines.clone();
    re.swap(3, 4);
    check(re.join("\n") + "\n", 4, "reordered");
    let mut del = lines.clone();
    del.remove(2);
    check(del.join("\n") + "\n", 3, "deleted");
    check(good[..good.len() - 20].to_string(), 7, "truncated");
    std::fs::write(&log, &good).unwrap();
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
}

#[test]
fn init_never_overwrites_and_discovery_walks_up() {
    let p = Project::new();
    let cfg = p.vouch_dir().join("config.yaml");
    std::fs::write(&cfg, "version: \"0.1\"\nkb_name: mine\n").unwrap();
    let r = p.run("x", &["init"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("Already initialized"), "{}", r.stdout);
    // A first init ends by saying what to do next: connect an agent,
    // review, and (in a git work tree) share.
    let repo = p.root().join("repo");
    std::fs::create_dir(&repo).unwrap();
    crate::teams::git(&repo, &["init", "-q"]);
    let r = p.run("x", &["init", repo.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let next = r.stdout.split("Next:").nth(1).unwrap_or_default();
    for step in ["vouch install-mcp", "vouch review", "git add .vouch"] {
        assert!(next.contains(step), "{}", r.stdout);
    }
    assert_eq!(
        std::fs::read_to_string(&cfg).unwrap(),
        "version: \"0.1\"\nkb_name: mine\n"
    );
    let deep = p.root().join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    let out = p
        .command("x")
        .current_dir(&deep)
        .args(["--json", "status"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kb_name"], "mine");
    // --kb and VOUCH_KB_PATH name it from elsewhere; nothing found is exit 7.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = p
        .command("x")
        .current_dir(elsewhere.path())
        .env("HOME", elsewhere.path())
        .args(["status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vouch init"));
    let out = p
        .command("x")
        .current_dir(elsewhere.path())
        .env("VOUCH_KB_PATH", p.root())
        .args(["status"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = p
        .command("x")
        .current_dir(elsewhere.path())
        .args(["--kb", p.vouch_dir().to_str().unwrap(), "status"])
        .output()
        .unwrap();
    assert!(out.status.success());
}
