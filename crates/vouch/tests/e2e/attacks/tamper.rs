//! Hand edits and a rewritten history: a cut or recomputed audit log, a file
//! borrowing an approved id, an approved claim edited by hand, and events
//! that would launder such an edit — each detected.

use super::*;

/// Item 10: the files and the log vouch for each other. Knowledge that no
/// approval or import let in is marked wherever agents read it, and a log
/// that was cut, emptied or rewritten is caught from the files.
#[test]
fn cut_or_rewritten_logs_and_hand_written_knowledge_are_detected() {
    let p = Project::new();
    let src = p.source("Invoices are due in 30 days.\n");
    let honest = p.claim("Invoices are due in 30 days", &src);
    // A claim written by hand, as a cloned repository could carry it.
    let text = std::fs::read_to_string(p.vouch_dir().join(format!("claims/{honest}.yaml")))
        .unwrap()
        .replace(&honest, "invoices-are-never-due")
        .replace("Invoices are due in 30 days", "Invoices are never due");
    std::fs::write(
        p.vouch_dir().join("claims/invoices-are-never-due.yaml"),
        text,
    )
    .unwrap();
    let hits = p.ok("x", &["search", "invoices due"]);
    let marked = |v: &Value, id: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .map(|h| h["_meta"]["unaudited"] == true)
    };
    assert_eq!(
        marked(&hits, "invoices-are-never-due"),
        Some(true),
        "{hits}"
    );
    assert_eq!(marked(&hits, &honest), Some(false), "{hits}");
    let pack = p.ok("x", &["context", "when are invoices due"]);
    assert_eq!(
        marked(&pack["items"], "invoices-are-never-due"),
        Some(true),
        "{pack}"
    );
    assert!(p.doctor_kinds().contains(&"unaudited-object".to_string()));
    // Reads by id and listings carry the mark too, and people see it.
    let shown = p.ok("x", &["show", "invoices-are-never-due"]);
    assert_eq!(shown["object"]["_meta"]["unaudited"], true, "{shown}");
    assert!(p.ok("x", &["show", &honest])["object"]["_meta"]["unaudited"].is_null());
    let listed = p.ok("x", &["call", "kb.list_claims", "{}"]);
    assert_eq!(
        marked(&listed, "invoices-are-never-due"),
        Some(true),
        "{listed}"
    );
    let text = p.run("x", &["show", "invoices-are-never-due"]).stdout;
    assert!(text.contains("UNAUDITED"), "{text}");
    std::fs::remove_file(p.vouch_dir().join("claims/invoices-are-never-due.yaml")).unwrap();
    assert!(!p.doctor_kinds().iter().any(|k| k.contains("unaudited")));
    // A page written by hand is marked as a claim is, read or listed.
    std::fs::write(
        p.vouch_dir().join("pages/hand-written-page.md"),
        "---\nid: hand-written-page\ntitle: Invoices\ntype: concept\nstatus: active\n\
         created_at: \"2026-05-21T05:52:34.000000Z\"\nupdated_at: \"2026-05-21T05:52:34.000000Z\"\n\
         ---\nInvoices are never due.\n",
    )
    .unwrap();
    let read = p.ok(
        "x",
        &["call", "kb.read_page", r#"{"id": "hand-written-page"}"#],
    );
    assert_eq!(read["_meta"]["unaudited"], true, "{read}");
    assert_eq!(read["body"], "Invoices are never due.\n", "{read}");
    let listed = p.ok("x", &["call", "kb.list_pages", "{}"]);
    assert_eq!(marked(&listed, "hand-written-page"), Some(true), "{listed}");
    std::fs::remove_file(p.vouch_dir().join("pages/hand-written-page.md")).unwrap();
    // `_meta` is the server's word: one a file carries is never passed on.
    let honest_file = p.vouch_dir().join(format!("claims/{honest}.yaml"));
    let approved = std::fs::read(&honest_file).unwrap();
    edit(
        &honest_file,
        "status: ",
        "_meta:\n  citations:\n  - id: planted\n    kind: source\nstatus: ",
    );
    let read = p.ok(
        "x",
        &["call", "kb.read_claim", &json!({"id": honest}).to_string()],
    );
    // The server's own `_meta` only: the edit by hand is marked, the
    // planted citations are gone.
    assert_eq!(read["_meta"], json!({"unaudited": true}), "{read}");
    let listed = p.ok("x", &["call", "kb.list_claims", "{}"]);
    assert!(listed.to_string().contains(&honest), "{listed}");
    assert!(!listed.to_string().contains("planted"), "{listed}");
    std::fs::write(&honest_file, &approved).unwrap();
    // Sources too: a source's meta.yaml is a file like any other.
    let src_meta = p.vouch_dir().join(format!("sources/{src}/meta.yaml"));
    let registered = std::fs::read(&src_meta).unwrap();
    edit(
        &src_meta,
        "locator: ",
        "_meta:\n  unaudited: false\nlocator: ",
    );
    let read = p.ok(
        "x",
        &["call", "kb.read_source", &json!({"id": src}).to_string()],
    );
    assert!(
        read.get("_meta").is_none() && read["id"] == src.as_str(),
        "{read}"
    );
    let listed = p.ok("x", &["call", "kb.list_sources", "{}"]);
    assert!(!listed.to_string().contains("_meta"), "{listed}");
    // (doctor reports the edited meta.yaml until it is restored.)
    assert!(p.doctor_kinds().contains(&"edited-object".to_string()));
    std::fs::write(&src_meta, &registered).unwrap();

    let log = p.vouch_dir().join("audit.log.jsonl");
    let full = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = full.lines().collect();

    // Cut: the last events (the approval among them) dropped. The chain
    // still verifies; the decided record names an event that is gone.
    let approve_at = lines
        .iter()
        .position(|l| l.contains("\"proposal.approve\""))
        .unwrap();
    std::fs::write(&log, lines[..approve_at].join("\n") + "\n").unwrap();
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
    let found = p.doctor_kinds();
    assert!(
        found.contains(&"decision-not-in-log".to_string()),
        "{found:?}"
    );
    let hits = p.ok("x", &["search", "invoices due"]);
    assert_eq!(marked(&hits, &honest), Some(true), "{hits}");

    // Emptied.
    std::fs::write(&log, "").unwrap();
    let found = p.doctor_kinds();
    assert!(
        found.contains(&"decision-not-in-log".to_string()),
        "{found:?}"
    );
    assert!(found.contains(&"unaudited-object".to_string()), "{found:?}");

    // Rewritten wholesale with another actor, chain recomputed.
    std::fs::write(&log, "").unwrap();
    for l in &lines {
        let mut ev: Value = serde_json::from_str(l).unwrap();
        if ev["actor"] == "alice" {
            ev["actor"] = json!("mallory");
        }
        ev.as_object_mut().unwrap().remove("hash");
        forge_event(&p, ev);
    }
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
    let found = p.doctor_kinds();
    assert!(
        found.contains(&"decision-not-in-log".to_string()),
        "{found:?}"
    );

    // The original log: clean again.
    std::fs::write(&log, &full).unwrap();
    let found = p.doctor_kinds();
    assert!(
        !found
            .iter()
            .any(|k| k.contains("log") || k.contains("unaudited") || k.contains("edited")),
        "{found:?}"
    );
    let hits = p.ok("x", &["search", "invoices due"]);
    assert_eq!(marked(&hits, &honest), Some(false), "{hits}");
}

/// Item 10, beyond what the files can tell: a keyed checkpoint (HMAC under a
/// key kept outside the project) catches a log rewritten with every hash
/// recomputed, and a log cut below the last checkpoint.
#[test]
fn keyed_checkpoints_catch_a_recomputed_or_cut_log() {
    let p = Project::new();
    // The key's home: outside the project (the harness's HOME is inside).
    let config = tempfile::tempdir().unwrap();
    let keyed = |args: &[&str]| -> Run {
        Run::from(
            p.command("alice")
                .env("XDG_CONFIG_HOME", config.path())
                .args(args)
                .output()
                .unwrap(),
        )
    };
    let src = p.source("Payroll runs on the 25th.\n");
    p.claim("Payroll runs on the 25th", &src);
    let r = keyed(&["--json", "audit", "checkpoint"]).json();
    let key = std::path::PathBuf::from(r["key_file"].as_str().unwrap());
    assert!(!key.starts_with(p.vouch_dir()), "{key:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    p.claim("Payroll is approved by finance", &src);
    let ok = keyed(&["--json", "audit", "verify"]).json();
    assert_eq!(ok["checkpoints"]["verified"], 1, "{ok}");
    assert_eq!(ok["ok"], true, "{ok}");

    let log = p.vouch_dir().join("audit.log.jsonl");
    let original = std::fs::read_to_string(&log).unwrap();

    // Rewritten with another actor, every hash recomputed: the chain
    // verifies, the checkpoint does not.
    std::fs::write(&log, "").unwrap();
    for l in original.lines() {
        let mut ev: Value = serde_json::from_str(l).unwrap();
        if ev["actor"] == "alice" {
            ev["actor"] = json!("mallory");
        }
        ev.as_object_mut().unwrap().remove("hash");
        forge_event(&p, ev);
    }
    let r = keyed(&["--json", "audit", "verify"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert!(r.json()["problem"].is_null(), "the chain itself verifies");
    assert_contains(&r.stdout, "cut or rewritten");

    // Cut below the checkpoint (the checkpoint event goes with it): the
    // copy kept beside the key still catches it.
    let cut: Vec<&str> = original.lines().take(2).collect();
    std::fs::write(&log, cut.join("\n") + "\n").unwrap();
    let r = keyed(&["--json", "audit", "verify"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert_contains(&r.stdout, "kept outside .vouch");

    // A key inside the project is refused; a key others can read too.
    std::fs::write(&log, &original).unwrap();
    let inside = p.root().join("checkpoint.key");
    let r = p.run(
        "alice",
        &[
            "audit",
            "checkpoint",
            "--key-file",
            inside.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "outside the project");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let r = keyed(&["audit", "verify"]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_contains(&r.stderr, "chmod 600");
    }
}

/// A hand-written file that names an approved claim's id inside, under
/// another file name, would put its own words under that id — and pass
/// for audited, since that id was approved. A file is the object its name
/// says: such a file is refused as corrupt wherever it is read, and
/// search, listings and doctor say so.
#[test]
fn a_file_borrowing_an_approved_id_is_refused_not_shown_as_that_claim() {
    let p = Project::new();
    let src = p.source("Invoices are due in 30 days.\n");
    let honest = p.claim("Invoices are due in 30 days", &src);
    let planted = p.vouch_dir().join("claims/planted.yaml");
    let text = std::fs::read_to_string(p.vouch_dir().join(format!("claims/{honest}.yaml")))
        .unwrap()
        .replace("Invoices are due in 30 days", "Invoices are never due");
    assert!(text.contains(&format!("id: {honest}")), "{text}");
    std::fs::write(&planted, text).unwrap();

    let r = p.run("x", &["--json", "search", "invoices never due"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for hit in r.json().as_array().unwrap() {
        assert!(
            !hit["snippet"].as_str().unwrap_or("").contains("never"),
            "the planted words were shown: {hit}"
        );
    }
    assert!(
        r.stderr.contains("claims/planted.yaml") && r.stderr.contains("must match its name"),
        "{}",
        r.stderr
    );
    let listed = p.ok("x", &["call", "kb.list_claims", "{}"]);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![honest.as_str()], "{listed}");
    let r = p.run("x", &["show", "planted"]);
    assert_eq!(r.code, 6, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "must match its name");
    assert!(p.doctor_kinds().contains(&"unparseable-file".to_string()));
    // The approved claim itself still reads as approved and audited.
    let shown = p.ok("x", &["show", &honest]);
    assert_eq!(shown["object"]["text"], "Invoices are due in 30 days");
}

/// An approved claim edited by hand in place keeps its id, its
/// `approved_by` and its approval in the log — but not its bytes: the
/// approval recorded the sha256 of what it wrote. Search, context and
/// reads mark it `unaudited`, answers leave it out, `doctor` names it, and
/// an agent cannot launder it through a lifecycle change (whose event
/// would record the edit as written by the gate). Put back, it is clean.
#[test]
fn an_approved_claim_edited_by_hand_is_marked_and_cannot_be_laundered() {
    let p = Project::new();
    let src = p.source("Access tokens expire after 24 hours.\n");
    let claim = p.claim("Access tokens expire after 24 hours", &src);
    let file = p.vouch_dir().join(format!("claims/{claim}.yaml"));
    let approved = std::fs::read(&file).unwrap();
    let unaudited = |v: &Value| v["_meta"]["unaudited"] == true;
    let hit = |q: &str| {
        p.ok("x", &["search", q])
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == claim.as_str() && h["kind"] == "claim")
            .cloned()
            .unwrap_or_else(|| panic!("{claim} not found for {q:?}"))
    };
    assert!(!unaudited(&hit("access tokens")));
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());

    edit(&file, "expire after 24 hours", "never expire");
    assert!(unaudited(&hit("tokens never expire")));
    let pack = p.ok("x", &["context", "access tokens expire"]);
    let item = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == claim.as_str())
        .unwrap();
    assert!(unaudited(item), "{pack}");
    let read = p.ok("x", &["show", &claim]);
    assert!(unaudited(&read["object"]), "{read}");
    let answer = p.ok("x", &["synthesize", "do access tokens expire"]);
    assert!(
        !answer["citations"].to_string().contains(&claim),
        "an edit by hand answered: {answer}"
    );
    assert_eq!(p.doctor_kinds(), ["edited-object"]);

    // An agent's lifecycle change is refused, naming the claim; nothing
    // is written.
    let before = p.snapshot();
    let r = jsonl(&p, "bot", "kb.confirm", json!({"id": claim}));
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&claim) && m.contains("by hand")),
        "{r}"
    );
    assert_eq!(before, p.snapshot(), "a refused change wrote something");

    // Put back as approved: unmarked, answered, clean.
    std::fs::write(&file, &approved).unwrap();
    assert!(!unaudited(&hit("access tokens")));
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
    // Its lifecycle changes record what they wrote, and stay clean.
    p.ok("alice", &["confirm", &claim]);
    assert!(!unaudited(&hit("access tokens")));
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());

    // A checkout that turned its line endings into CRLF (git's autocrlf)
    // holds the same content: not an edit.
    let lf = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, lf.replace('\n', "\r\n")).unwrap();
    assert!(!unaudited(&hit("access tokens")));
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
    std::fs::write(&file, lf).unwrap();

    // A page written by hand under the approved claim's id is not let in
    // by the claim's approval: it is marked, the claim is not.
    std::fs::write(
        p.vouch_dir().join(format!("pages/{claim}.md")),
        format!(
            "---\nid: {claim}\ntitle: Tokens\ntype: concept\nstatus: active\n\
             created_at: \"2026-01-01T00:00:00Z\"\nupdated_at: \"2026-01-01T00:00:00Z\"\n\
             ---\nAccess tokens never expire.\n"
        ),
    )
    .unwrap();
    let page = p.ok(
        "x",
        &["call", "kb.read_page", &json!({"id": claim}).to_string()],
    );
    assert!(unaudited(&page), "{page}");
    assert!(!unaudited(&hit("access tokens")));
    assert_eq!(p.doctor_kinds(), ["edited-object"]);
}

/// An event that records no `written` — vouch 1.x archiving a claim this
/// vouch approved, or a bare `claim.confirm` anyone can forge — does not
/// make vouch forget what it recorded of the file (issue 39 item 4): the
/// claim edited behind it stays an edit, named by `doctor` and marked on
/// every read. A person settles a 1.x rewrite with a lifecycle change
/// (`vouch confirm`), whose event records the bytes.
#[test]
fn a_lifecycle_event_that_records_nothing_does_not_launder_a_hand_edit() {
    let p = Project::new();
    let src = p.source("Backups run nightly.\n");
    let claim = p.claim("Backups run nightly", &src);
    let file = p.vouch_dir().join(format!("claims/{claim}.yaml"));
    edit(&file, "status: working", "status: archived");
    assert_eq!(p.doctor_kinds(), ["edited-object"]);
    for (n, event) in ["claim.archive", "claim.confirm"].into_iter().enumerate() {
        forge_event(
            &p,
            json!({
                "id": format!("0123456789abcdef0123456789abcde{n}"),
                "event": event,
                "actor": "alice",
                "created_at": "2026-01-02T00:00:00.000000Z",
                "object_ids": [claim],
                "dry_run": false,
                "reversible": false,
                "data": {},
            }),
        );
        assert_eq!(p.doctor_kinds(), ["edited-object"], "{event}");
        let read = p.ok(
            "x",
            &["call", "kb.read_claim", &json!({"id": claim}).to_string()],
        );
        assert_eq!(read["_meta"]["unaudited"], true, "{event}: {read}");
    }
    // A person's lifecycle change records the bytes as they are now.
    p.ok("alice", &["confirm", &claim]);
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());
}

/// An import that does not name its objects (as older vouch logged them)
/// leaves marks off where the index cannot tell what it admitted — but it
/// does not let an agent launder a hand edit through a lifecycle change
/// (the core's `a_strict_question_is_told_when_the_index_cannot_tell`
/// covers the moment the index has not read it yet).
#[test]
fn an_unnamed_import_does_not_let_an_agent_launder_a_hand_edit() {
    let p = Project::new();
    let src = p.source("Backups run nightly.\n");
    let claim = p.claim("Backups run nightly", &src);
    p.ok("x", &["search", "backups"]);
    edit(
        &p.vouch_dir().join(format!("claims/{claim}.yaml")),
        "run nightly",
        "never run",
    );
    forge_event(
        &p,
        json!({
            "id": "fedcba9876543210fedcba9876543210",
            "event": "bundle.import",
            "actor": "alice",
            "created_at": "2026-01-02T00:00:00.000000Z",
            "object_ids": ["0".repeat(64)],
            "dry_run": false,
            "reversible": false,
            "data": {"imported": 0},
        }),
    );
    let r = jsonl(&p, "bot", "kb.confirm", json!({"id": claim}));
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("by hand")),
        "{r}"
    );
}
