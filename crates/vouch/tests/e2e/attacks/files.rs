//! Attacks through the file system: links under `.vouch/` and in a source's
//! path, and a bundle too large for memory.

use super::*;

/// Item 6: a cloned repository's symlinks under `.vouch/` are never
/// followed, for reading or for writing, and doctor names each one.
#[test]
fn symlinks_under_vouch_are_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("id_ed25519");
    std::fs::write(&secret, "SECRETKEYMATERIAL hunter2\n").unwrap();

    // Source content aimed at a secret: not in search, context, export.
    let p = Project::new();
    let src = p.source("Public deploy notes.\n");
    p.claim("Deploys are public", &src);
    let content = p.vouch_dir().join(format!("sources/{src}/content"));
    std::fs::remove_file(&content).unwrap();
    std::os::unix::fs::symlink(&secret, &content).unwrap();
    let r = p.run("x", &["--json", "index", "rebuild"]);
    assert_lacks(&r.stdout, "SECRETKEYMATERIAL");
    for args in [
        &["--json", "search", "SECRETKEYMATERIAL"][..],
        &["--json", "search", "hunter2"],
        &["--json", "context", "deploy secret key"],
        &["show", &src],
    ] {
        let r = p.run("x", args);
        assert!(
            !r.stdout.contains("SECRETKEYMATERIAL") && !r.stderr.contains("SECRETKEYMATERIAL"),
            "{args:?} leaked the link's target: {}{}",
            r.stdout,
            r.stderr
        );
    }
    let r = p.run("alice", &["export", "out.tar.gz"]);
    let bundle = std::fs::read(p.root().join("out.tar.gz")).unwrap_or_default();
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bundle[..]), &mut tar).ok();
    assert!(
        !String::from_utf8_lossy(&tar).contains("SECRETKEYMATERIAL"),
        "export carried the link's target ({})",
        r.stderr
    );
    let found = p.doctor_kinds();
    assert!(found.contains(&"symlink".to_string()), "{found:?}");

    // claims/ aimed elsewhere: approve refuses and writes nothing there.
    let p = Project::new();
    let src = p.source("The build uses cargo.\n");
    let (pid, _) = p.propose("The build uses cargo", &src);
    let elsewhere = outside.path().join("claims");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::remove_dir(p.vouch_dir().join("claims")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, p.vouch_dir().join("claims")).unwrap();
    let r = p.run("alice", &["approve", &pid]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_contains(&r.stderr, "symbolic link");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(proposal_path(&p, &pid).exists(), "the proposal was lost");

    // The audit log aimed at a dotfile: no command cuts or appends to it.
    let p = Project::new();
    let dotfile = outside.path().join(".bashrc");
    let log = p.vouch_dir().join("audit.log.jsonl");
    let mut before = std::fs::read(&log).unwrap();
    before.extend_from_slice(b"alias ls='ls --color'"); // no final newline
    std::fs::write(&dotfile, &before).unwrap();
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&dotfile, &log).unwrap();
    let r = p.run("agent", &["source", "add", "--text", "x", "--locator", "t"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        std::fs::read(&dotfile).unwrap(),
        before,
        "the dotfile changed"
    );

    // state.db aimed at another program's database: left as it was.
    let p = Project::new();
    let src = p.source("Alerts page the on-call engineer.\n");
    let claim = p.claim("Alerts page the on-call engineer", &src);
    let other = outside.path().join("other.sqlite");
    {
        let db = rusqlite::Connection::open(&other).unwrap();
        db.execute_batch("CREATE TABLE notes(body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
    }
    let other_bytes = std::fs::read(&other).unwrap();
    let db = p.vouch_dir().join("state.db");
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    std::os::unix::fs::symlink(&other, &db).unwrap();
    let hits = p.ok("x", &["search", "on-call"]);
    assert!(hits.to_string().contains(&claim), "{hits}");
    assert_eq!(std::fs::read(&other).unwrap(), other_bytes);
    assert!(!db.is_symlink(), "state.db is still a link");
}

/// Item 7: a path is opened once, component by component, without following
/// a link; a folder that is (or becomes) a link to somewhere else is refused
/// rather than resolved.
#[test]
fn a_source_path_through_a_linked_folder_is_refused() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "private notes").unwrap();
    std::fs::create_dir(p.root().join("docs")).unwrap();
    std::fs::write(p.root().join("docs/notes.txt"), "project notes").unwrap();
    let ok = p.ok("agent", &["source", "add", "docs/notes.txt"]);
    assert_eq!(ok["deduplicated"], false);
    // The swap an attacker races for, done outright.
    std::fs::remove_dir_all(p.root().join("docs")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.root().join("docs")).unwrap();
    let before = p.snapshot();
    let r = p.run("agent", &["source", "add", "docs/notes.txt"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "symbolic link");
    assert_eq!(before, p.snapshot());
}

/// Item 12: what a bundle check holds in memory is bounded: knowledge files
/// beyond `bundles.max_objects_bytes` stop the scan before they are parsed.
#[test]
fn a_bundle_whose_knowledge_files_exceed_the_memory_budget_is_refused() {
    let a = Project::new();
    let src = a.source("Budget test evidence.\n");
    for i in 0..20 {
        a.claim(
            &format!("Budget claim number {i} with some padding text"),
            &src,
        );
    }
    a.ok("alice", &["export", "b.tar.gz"]);
    let b = Project::new();
    std::fs::copy(a.root().join("b.tar.gz"), b.root().join("b.tar.gz")).unwrap();
    let cfg = b.vouch_dir().join("config.yaml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("bundles:\n  max_objects_bytes: 4000\n");
    std::fs::write(&cfg, text).unwrap();
    let r = b.run("alice", &["--json", "import-check", "b.tar.gz"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_contains(&r.stdout, "max_objects_bytes");
    // Within the budget it checks as before.
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("max_objects_bytes: 4000", "max_objects_bytes: 4000000");
    std::fs::write(&cfg, text).unwrap();
    assert_eq!(b.ok("alice", &["import-check", "b.tar.gz"])["ok"], true);
}
