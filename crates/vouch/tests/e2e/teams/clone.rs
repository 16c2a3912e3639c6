//! A fresh clone: every writing command works in it, a write that fails
//! leaves no audit event, and doctor names an event whose object is missing.

use super::*;

/// A KB committed right after `vouch init` (every kind folder empty, so
/// none is in git), cloned: the clone is a project of its own.
fn fresh_clone() -> (Project, Project) {
    let origin = Project::new();
    git(origin.root(), &["init", "-q", "-b", "main"]);
    git(origin.root(), &["add", "-A"]);
    git(origin.root(), &["commit", "-q", "-m", "vouch init"]);
    let clone = Project::beside(&origin);
    std::fs::remove_dir_all(clone.vouch_dir()).unwrap();
    git(
        clone.root(),
        &["clone", "-q", origin.root().to_str().unwrap(), "."],
    );
    let vouch = clone.vouch_dir();
    let mut entries: Vec<String> = std::fs::read_dir(&vouch)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [
            ".gitattributes",
            ".gitignore",
            "audit.log.jsonl",
            "config.yaml"
        ],
        "git kept no empty folder"
    );
    (origin, clone)
}

/// Every command that writes works in a fresh clone, making the folders
/// it needs; `doctor` finds nothing wrong with a KB whose folders are
/// missing, before or after.
#[test]
fn every_writing_command_works_in_a_fresh_clone() {
    let (origin, p) = fresh_clone();
    assert!(
        !p.doctor_kinds().iter().any(|k| k != "index-stale"),
        "{:?}",
        p.doctor_kinds()
    );
    let src = id(
        &p.ok(
            "agent",
            &[
                "source",
                "add",
                "--text",
                "Deploys are frozen on Fridays.\nRollbacks need two approvals.\n",
                "--locator",
                "notes.md",
            ],
        ),
        "id",
    );
    let ev = id(
        &p.ok("agent", &["quote", &src, "Deploys are frozen on Fridays."]),
        "evidence_id",
    );
    let session = id(
        &p.ok("agent", &["session", "start", "--task", "deploys"]),
        "session_id",
    );
    let approve = |v: Value| {
        id(
            &p.ok("alice", &["approve", &id(&v, "proposal_id")]),
            "object_id",
        )
    };
    let claim = approve(p.ok(
        "agent",
        &[
            "propose-claim",
            "Deploys are frozen on Fridays.",
            "-e",
            &ev,
            "--session",
            &session,
        ],
    ));
    let second = approve(p.ok(
        "agent",
        &["propose-claim", "Rollbacks need two approvals.", "-e", &src],
    ));
    entity_relation_and_page(&p, &claim, &src);
    let rejected = p.ok("agent", &["propose-claim", "Fridays are fine.", "-e", &src]);
    p.ok(
        "alice",
        &["reject", &id(&rejected, "proposal_id"), "--reason", "wrong"],
    );
    // Lifecycle, each and its revert.
    p.ok("alice", &["confirm", &claim]);
    p.ok("alice", &["cite", &second, &ev]);
    p.ok("alice", &["contradict", &claim, &second]);
    let changes = p.ok("alice", &["changes", "--all"]);
    let last = changes
        .as_array()
        .and_then(|a| a.first())
        .map(|c| id(c, "event_id"))
        .unwrap_or_else(|| panic!("no changes: {changes}"));
    p.ok("alice", &["revert", &last]);
    let third = approve(p.ok(
        "agent",
        &[
            "propose-claim",
            "Rollbacks need two approvals and a ticket.",
            "-e",
            &src,
        ],
    ));
    p.ok("alice", &["supersede", &second, &third]);
    p.ok("alice", &["archive", &third]);
    p.ok("agent", &["crystallize", &session]);
    p.ok("agent", &["session", "end", &session]);
    // Knowledge files and a bundle from the origin, imported here.
    let facts = p.root().join("knowledge");
    std::fs::create_dir_all(facts.join("facts")).unwrap();
    std::fs::write(
        facts.join("index.json"),
        r#"{"version": 1, "last_updated": "2026-01-01", "total_facts": 1, "facts": [
            {"id": "ops:fact:1", "fact": "Staging resets nightly.", "category": "fact",
             "domain": "ops", "confidence": 0.9}]}"#,
    )
    .unwrap();
    let imported = p.run("agent", &["--json", "knowledge", "import", "knowledge"]);
    assert_eq!(imported.code, 0, "{}{}", imported.stdout, imported.stderr);
    let osrc = origin.source("Origin knows the pager rotation.\n");
    origin.claim("Origin knows the pager rotation.", &osrc);
    origin.ok("alice", &["export", "o.tar.gz"]);
    std::fs::copy(origin.root().join("o.tar.gz"), p.root().join("o.tar.gz")).unwrap();
    p.ok("alice", &["import-apply", "o.tar.gz"]);

    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], json!(true));
    let kinds = p.doctor_kinds();
    assert!(
        !kinds.iter().any(|k| k != "index-stale"),
        "doctor after every write: {kinds:?}\n{}",
        p.run("x", &["--json", "doctor"]).stdout
    );
}

/// A write that fails appends no event, and a retry logs exactly one:
/// a folder replaced by a file, and a full disk (a fail point).
#[test]
fn a_failed_write_leaves_no_audit_event() {
    let (_, p) = fresh_clone();
    let events = || p.ok("x", &["audit"]).as_array().unwrap().len();
    assert_eq!(events(), 0);

    // `sessions` is a file where the folder belongs.
    std::fs::write(p.vouch_dir().join("sessions"), "not a folder").unwrap();
    for _ in 0..2 {
        let r = p.run("agent", &["session", "start"]);
        assert_ne!(r.code, 0, "{}", r.stdout);
        assert_contains(&r.stderr, "is not a folder");
    }
    assert_eq!(events(), 0, "a failed session start left an event");
    std::fs::remove_file(p.vouch_dir().join("sessions")).unwrap();

    // The disk is full when the source's files are written.
    let add = |failing: bool| {
        let mut c = p.command("agent");
        if failing {
            c.env("VOUCH_FAILPOINT", "store.write=enospc");
        }
        Run::from(
            c.args([
                "--json",
                "source",
                "add",
                "--text",
                "Full disks lose nothing.",
                "--locator",
                "t",
            ])
            .output()
            .unwrap(),
        )
    };
    for _ in 0..3 {
        let r = add(true);
        assert_ne!(r.code, 0, "{}", r.stdout);
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(said.contains("No space left"), "{said}");
    }
    assert_eq!(events(), 0, "failed source adds left events");
    let r = add(false);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(p.audit_events("agent"), ["source.register"]);
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], json!(true));
}

/// An event whose object is missing (a crash between the two, or files
/// removed by hand) is reported by `doctor`.
#[test]
fn doctor_reports_an_event_naming_a_missing_object() {
    let p = Project::new();
    let src = p.source("Evidence that will vanish.\n");
    std::fs::remove_dir_all(p.vouch_dir().join("sources").join(&src)).unwrap();
    let kinds = p.doctor_kinds();
    assert!(
        kinds.contains(&"event-without-object".to_string()),
        "{kinds:?}"
    );
}
