//! What the machine itself can plant: token files others can read, and a
//! `.vouch/` above the working directory owned by another user.

use super::*;

/// Run `cmd` to completion (killing it after `limit`): exit code and stderr.
fn run_briefly(mut cmd: Command, limit: Duration) -> (Option<i32>, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vouch");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, reader.join().expect("stderr reader"))
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write token file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A token file others can read leaks every token in it: refused, with a
/// message that says how to fix it and never repeats a token.
#[test]
fn token_file_is_read_and_must_be_private() {
    let kb = init_kb();
    let secret = "tok-5e4f7a2b-very-secret";
    let other = "tok-0c9d1e88-also-secret";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.txt");
    let text = format!("# who may call this server\n\ncarol = {secret}\n  dave={other}\n");
    let serve = |file: &Path| {
        let mut c = vouch(kb.path());
        c.args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"])
            .arg("--token-file")
            .arg(file);
        c
    };
    let no_secret = |stderr: &str| {
        for s in [secret, other, "5e4f7a2b", "0c9d1e88"] {
            assert!(!stderr.contains(s), "a token leaked: {stderr}");
        }
    };

    // Readable (or writable) by group or others: refused before serving.
    for mode in [0o644, 0o640, 0o604, 0o620, 0o602] {
        write_mode(&file, &text, mode);
        let (code, stderr) = run_briefly(serve(&file), TIMEOUT);
        assert_eq!(code, Some(2), "mode {mode:o} must be refused: {stderr}");
        assert!(stderr.contains("chmod 600"), "mode {mode:o}: {stderr}");
        assert!(
            !stderr.contains("listening on"),
            "mode {mode:o} served: {stderr}"
        );
        no_secret(&stderr);
    }

    // Empty, or only comments: refused (a server with no tokens would
    // otherwise fall back to anonymous access).
    for empty in ["", "\n\n", "# no tokens yet\n   \n"] {
        write_mode(&file, empty, 0o600);
        let (code, stderr) = run_briefly(serve(&file), TIMEOUT);
        assert_eq!(code, Some(2), "{empty:?} must be refused: {stderr}");
        assert!(stderr.contains("no tokens"), "{stderr}");
        assert!(!stderr.contains("listening on"), "{stderr}");
    }

    // A bad line is named by its line number, never by its token.
    write_mode(&file, &format!("carol={secret}\ndave={secret}\n"), 0o600);
    let (code, stderr) = run_briefly(serve(&file), TIMEOUT);
    assert_eq!(code, Some(2), "a token given twice: {stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    no_secret(&stderr);

    // Private: it serves, and each token authenticates as its subject.
    write_mode(&file, &text, 0o600);
    let server = http_server(
        kb.path(),
        &[],
        &["--token-file", file.to_str().expect("utf-8 path")],
    );
    let rpc = |token: Option<&str>, body: Value| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        http(
            server.port,
            "POST",
            "/rpc",
            &headers,
            body.to_string().as_bytes(),
        )
    };
    let r = rpc(
        Some(secret),
        json!({"id": 1, "method": "kb.register_source",
               "params": {"content": "from carol\n", "locator": "c"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    let r = rpc(
        Some(other),
        json!({"id": 2, "method": "kb.register_source",
               "params": {"content": "from dave\n", "locator": "d"}}),
    );
    assert_eq!(r.json()["ok"], json!(true), "{}", r.text());
    let r = rpc(Some(secret), json!({"id": 3, "method": "kb.audit"}));
    let actors: Vec<String> = r.json()["result"]
        .as_array()
        .expect("audit events")
        .iter()
        .map(|e| e["actor"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(actors, ["carol", "dave"], "{}", r.text());
    // The comment line is not a token, nor is anything else.
    for wrong in [
        None,
        Some("# who may call this server"),
        Some("carol"),
        Some("tok-5e4f7a2b"),
        Some("tok-5e4f7a2b-very-secreT"),
    ] {
        let r = rpc(wrong, json!({"id": 4, "method": "kb.status"}));
        assert_eq!(r.status, 401, "token {wrong:?}: {}", r.text());
    }
    let stderr = server.terminate();
    assert!(
        stderr.contains("bearer tokens required for 2 subject(s)"),
        "{stderr}"
    );
    no_secret(&stderr);
}

/// The effective uid, from /proc (no libc in the tests).
fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// `chown -R uid:gid path`, not following links.
fn chown_r(path: &Path, id: u32) {
    std::os::unix::fs::lchown(path, Some(id), Some(id)).expect("chown");
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).expect("read_dir") {
            chown_r(&e.expect("entry").path(), id);
        }
    }
}

/// Anyone who can create a directory above the working directory (a shared
/// /tmp, a colleague's checkout) could plant a `.vouch/` there and choose
/// what an agent reads and where its writes go. Like git's safe.directory,
/// a walked-up `.vouch/` must be one's own unless trusted explicitly.
#[test]
fn a_walked_up_kb_owned_by_someone_else_is_refused() {
    if euid() != Some(0) {
        eprintln!(
            "skipped: needs root to give a .vouch/ to another user (euid {:?})",
            euid()
        );
        return;
    }
    let p = crate::common::Project::new();
    let sub = p.root().join("docs").join("deep");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let nobody = 65534;
    chown_r(&p.vouch_dir(), nobody);
    let project = p.root().display().to_string();
    let vouch_dir = p.vouch_dir().display().to_string();

    let run = |safe: Option<&str>, args: &[&str]| {
        let mut c = p.command("tester");
        c.current_dir(&sub).env_remove("VOUCH_SAFE_DIRECTORIES");
        if let Some(s) = safe {
            c.env("VOUCH_SAFE_DIRECTORIES", s);
        }
        let out = c.args(args).output().expect("run vouch");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // Found by walking up, owned by uid 65534: refused, reads and writes.
    let before = p.snapshot();
    for safe in [None, Some(""), Some("/nonexistent:/tmp"), Some("docs")] {
        let (code, _, stderr) = run(safe, &["status"]);
        assert_eq!(code, Some(7), "safe {safe:?}: {stderr}");
        assert!(stderr.contains("VOUCH_SAFE_DIRECTORIES"), "{stderr}");
        assert!(stderr.contains("uid 65534"), "{stderr}");
        let (code, _, stderr) = run(
            safe,
            &["source", "add", "--text", "planted?", "--locator", "x"],
        );
        assert_eq!(code, Some(7), "a write went to someone else's KB: {stderr}");
    }
    assert!(p.snapshot() == before, "the refused KB was changed");

    // Trusted by listing the project, the .vouch/ itself, or `*`.
    for safe in [
        project.clone(),
        vouch_dir.clone(),
        format!("/nonexistent:{project}"),
        "*".to_string(),
    ] {
        let (code, stdout, stderr) = run(Some(&safe), &["status"]);
        assert_eq!(code, Some(0), "VOUCH_SAFE_DIRECTORIES={safe}: {stderr}");
        assert!(!stdout.is_empty());
    }

    // Or by naming it: --kb, VOUCH_KB_PATH.
    let (code, _, stderr) = run(None, &["--kb", &project, "status"]);
    assert_eq!(code, Some(0), "--kb: {stderr}");
    let out = p
        .command("tester")
        .current_dir(&sub)
        .env_remove("VOUCH_SAFE_DIRECTORIES")
        .env("VOUCH_KB_PATH", &project)
        .arg("status")
        .output()
        .expect("run vouch");
    assert!(
        out.status.success(),
        "VOUCH_KB_PATH: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // One's own .vouch/ needs nothing.
    chown_r(&p.vouch_dir(), 0);
    let (code, _, stderr) = run(None, &["status"]);
    assert_eq!(code, Some(0), "{stderr}");

    // A `.vouch` link someone else made, pointing at a KB that is yours:
    // the link's owner chose it, so it counts as theirs.
    let mine = tempfile::tempdir().expect("tempdir");
    std::fs::rename(p.vouch_dir(), mine.path().join(".vouch")).expect("move the KB");
    std::os::unix::fs::symlink(mine.path().join(".vouch"), p.vouch_dir()).expect("link");
    std::os::unix::fs::lchown(p.vouch_dir(), Some(nobody), Some(nobody)).expect("lchown");
    let (code, _, stderr) = run(None, &["status"]);
    assert_eq!(code, Some(7), "a planted link to my KB was used: {stderr}");
    assert!(stderr.contains("uid 65534"), "{stderr}");
}
