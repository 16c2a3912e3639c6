//! Both ways with the real Python vouch 1.x (vouch-kb 1.5.0 from PyPI,
//! installed by scripts/test.sh into target/vouch1-venv): a knowledge base
//! its own `vouch init` made, and knowledge its reviewers approved, open,
//! search, verify and doctor here; what this vouch approves reads back
//! there and passes its `fsck`.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// vouch 1.x, from VOUCH_V1_BIN. Never skipped: without it the test fails
/// and says how to get it.
fn v1_bin() -> String {
    std::env::var("VOUCH_V1_BIN").unwrap_or_else(|_| {
        panic!(
            "VOUCH_V1_BIN is not set: run the tests with `scripts/test.sh`, which installs \
             vouch-kb (tests/vouch1/requirements.txt) into target/vouch1-venv and sets it"
        )
    })
}

/// Run vouch 1.x in `dir` as `agent`, hermetically (HOME is the project).
fn v1(dir: &Path, agent: &str, args: &[&str]) -> Run {
    let mut c = Command::new(v1_bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("VOUCH_AGENT", agent)
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .args(args);
    let r = Run::from(c.output().expect("run vouch 1.x"));
    assert_eq!(r.code, 0, "vouch 1.x {args:?}: {}{}", r.stdout, r.stderr);
    r
}

/// A project that vouch 1.x initialised, with a registered source.
fn kb_made_by_1x() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    v1(dir.path(), "alice", &["init"]);
    std::fs::write(
        dir.path().join("notes.txt"),
        "Backups run nightly at 02:00.\n",
    )
    .unwrap();
    let src = v1(dir.path(), "claude", &["source", "add", "notes.txt"])
        .stdout
        .trim()
        .to_string();
    assert_eq!(src.len(), 64, "source id: {src}");
    (dir, src)
}

/// Propose a claim in 1.x as "claude" and approve it there as "alice".
fn approve_in_1x(dir: &Path, src: &str, text: &str) {
    v1(
        dir,
        "claude",
        &["propose-claim", "--text", text, "--source", src],
    );
    let pending = std::fs::read_dir(dir.join(".vouch/proposed"))
        .unwrap()
        .next()
        .expect("a pending proposal")
        .unwrap()
        .file_name()
        .to_string_lossy()
        .trim_end_matches(".yaml")
        .to_string();
    v1(dir, "alice", &["approve", &pending]);
}

/// Propose a claim here as "agent"; its proposal id.
fn propose_here(dir: &Path, src: &str, text: &str) -> String {
    let r = ours(
        dir,
        "agent",
        &["--json", "propose-claim", text, "--evidence", src],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    r.json()["proposal_id"].as_str().unwrap().to_string()
}

/// Our `status` of the KB in `d`, after checking that its counts (durable
/// objects and pending proposals) are the ones 1.x's own `status` prints.
fn same_status_as_1x(d: &Path) -> serde_json::Value {
    let theirs = v1(d, "x", &["status"]).stdout;
    let status = ours(d, "x", &["--json", "status"]).json();
    let c = &status["counts"];
    let expect = format!(
        "{} claims  •  {} pages  •  {} sources  •  {} entities  •  {} relations",
        c["claims"], c["pages"], c["sources"], c["entities"], c["relations"]
    );
    assert!(
        theirs.contains(&expect),
        "1.x says {theirs}, we count {expect}"
    );
    let pending = format!("pending: {} proposals", status["pending"]);
    assert!(
        theirs.contains(&pending),
        "1.x says {theirs}, we count {pending}"
    );
    status
}

/// Our binary in a project, hermetic.
fn ours(dir: &Path, agent: &str, args: &[&str]) -> Run {
    Run::from(
        command()
            .env("HOME", dir)
            .env("VOUCH_AGENT", agent)
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap(),
    )
}

#[test]
fn a_kb_made_and_reviewed_by_1x_opens_searches_verifies_and_doctors_here() {
    let (dir, src) = kb_made_by_1x();
    let d = dir.path();
    approve_in_1x(d, &src, "Backups run nightly");

    let r = ours(d, "x", &["--json", "status"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let status = r.json();
    assert!(
        status["counts"]["claims"].as_u64().unwrap() >= 2,
        "{status}"
    );
    assert_eq!(status["retrieval"]["configured"], "hybrid", "{status}");

    let r = ours(d, "x", &["--json", "search", "backups nightly"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hits = r.json();
    let hit = hits
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "backups-run-nightly")
        .unwrap_or_else(|| panic!("the 1.x-approved claim is not found: {hits}"));
    // 1.x's approval event admits it: not marked unaudited.
    assert!(hit.get("_meta").is_none(), "{hit}");

    // The same hash chain: 1.x's log verifies here.
    let r = ours(d, "x", &["--json", "audit", "verify"]);
    assert_eq!(r.json()["ok"], true, "{}", r.stdout);

    // Doctor: no errors (1.x's own state.db and its starter objects, which
    // its init writes without events, are warnings).
    let r = ours(d, "x", &["--json", "doctor"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let lint = ours(d, "x", &["--json", "lint"]);
    assert_eq!(lint.code, 0, "{}", lint.stdout);
}

#[test]
fn what_this_vouch_approves_reads_back_in_1x_and_passes_its_fsck() {
    let (dir, src) = kb_made_by_1x();
    let d = dir.path();
    let pid = propose_here(d, &src, "Restores are tested monthly");
    let r = ours(d, "alice", &["approve", &pid]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    let listed = v1(d, "x", &["list-claims"]).stdout;
    assert!(listed.contains("restores-are-tested-monthly"), "{listed}");
    let read = v1(d, "x", &["read-claim", "restores-are-tested-monthly"]).stdout;
    assert!(read.contains("Restores are tested monthly"), "{read}");
    // state.db is each implementation's own derived index: 1.x rebuilds
    // its own, then its deep check finds nothing wrong with our files
    // (among others: every approved decision names its artifact).
    v1(d, "x", &["reindex"]);
    let fsck = v1(d, "x", &["fsck"]).stdout;
    assert!(fsck.trim_end().ends_with("clean"), "{fsck}");
    let hits = v1(d, "x", &["search", "restores"]).stdout;
    assert!(hits.contains("restores-are-tested-monthly"), "{hits}");
}

#[test]
fn a_bundle_1x_exports_imports_here() {
    let (dir, src) = kb_made_by_1x();
    let d = dir.path();
    approve_in_1x(d, &src, "Backups run nightly");
    // 1.x's manifest is its archive's last member, with `spec` and `size`.
    v1(d, "alice", &["export", "--out", "v1.tar.gz"]);

    let here = Project::new();
    std::fs::copy(d.join("v1.tar.gz"), here.root().join("v1.tar.gz")).unwrap();
    let check = here.ok("alice", &["import-check", "v1.tar.gz"]);
    assert_eq!(check["ok"], true, "{check}");
    here.ok("alice", &["import-apply", "v1.tar.gz"]);
    let hits = here.ok("x", &["search", "backups nightly"]);
    assert!(hits.to_string().contains("backups-run-nightly"), "{hits}");
}

#[test]
fn a_bundle_this_vouch_exports_imports_into_1x() {
    let ours_kb = Project::new();
    let src = ours_kb.source("Alerts page the on-call engineer.\n");
    let claim = ours_kb.claim("Alerts page the on-call engineer", &src);
    // vouch 1.x refuses bundles that carry decided/ review records.
    ours_kb.ok("alice", &["export", "--without-decided", "out.tar.gz"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    v1(d, "alice", &["init"]);
    std::fs::copy(ours_kb.root().join("out.tar.gz"), d.join("out.tar.gz")).unwrap();
    let check = v1(d, "alice", &["import-check", "out.tar.gz"]).stdout;
    assert!(check.contains("\"ok\": true"), "{check}");
    v1(d, "alice", &["import-apply", "out.tar.gz"]);
    let listed = v1(d, "x", &["list-claims"]).stdout;
    assert!(listed.contains(&claim), "{listed}");
    v1(d, "x", &["reindex"]);
    let fsck = v1(d, "x", &["fsck"]).stdout;
    assert!(fsck.trim_end().ends_with("clean"), "{fsck}");
}

#[test]
fn a_proposal_made_here_is_listed_and_approved_by_1x() {
    let (dir, src) = kb_made_by_1x();
    let d = dir.path();
    let pid = propose_here(d, &src, "Alerts page the on-call");
    let pending = v1(d, "alice", &["pending"]).stdout;
    assert!(pending.contains(&pid), "{pending}");
    v1(d, "alice", &["approve", &pid]);
    // Back here: found, admitted by 1.x's approval, doctor clean.
    let r = ours(d, "x", &["--json", "search", "alerts on-call"]);
    let hits = r.json();
    let hit = hits
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "alerts-page-the-on-call")
        .unwrap_or_else(|| panic!("{hits}"));
    assert!(hit.get("_meta").is_none(), "{hit}");
    let r = ours(d, "x", &["--json", "doctor"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn a_kb_made_here_opens_lists_searches_and_checks_clean_in_1x() {
    // Our `vouch init`, our source, our proposal and approval; then 1.x,
    // which judges staleness by the wall clock: so is this project's.
    let p = Project::real_clock();
    std::fs::write(
        p.root().join("notes.txt"),
        "Backups run nightly at 02:00.\n",
    )
    .unwrap();
    let src = p.ok("claude", &["source", "add", "notes.txt"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = p.ok(
        "claude",
        &[
            "propose-claim",
            "Backups run nightly",
            "--quote",
            &format!("{src}=Backups run nightly at 02:00."),
        ],
    );
    p.ok("alice", &["approve", v["proposal_id"].as_str().unwrap()]);
    let d = p.root();
    let status = v1(d, "x", &["status"]).stdout;
    assert!(
        status.contains("1 claims") && status.contains("1 sources"),
        "{status}"
    );
    let listed = v1(d, "x", &["list-claims"]).stdout;
    assert!(listed.contains("backups-run-nightly"), "{listed}");
    let hits = v1(d, "x", &["search", "backups"]).stdout;
    assert!(hits.contains("backups-run-nightly"), "{hits}");
    assert_eq!(v1(d, "x", &["lint"]).stdout.trim(), "clean");
    let doctor = v1(d, "x", &["doctor"]);
    assert!(
        !doctor.stdout.to_lowercase().contains("error"),
        "{}",
        doctor.stdout
    );
    v1(d, "x", &["reindex"]);
    let fsck = v1(d, "x", &["fsck"]).stdout;
    assert!(fsck.trim_end().ends_with("clean"), "{fsck}");
}

/// Every kind of object 1.x makes — claims, an entity, a page, a relation,
/// a supersession and a contradiction, each through its own CLI and
/// reviewer — opens here with the same counts, lists and reads, searches,
/// verifies and doctors clean; our writes on top keep the one chain valid.
#[test]
fn every_kind_of_object_1x_makes_opens_here_with_the_same_counts() {
    let (dir, src) = kb_made_by_1x();
    let d = dir.path();
    for t in [
        "Restores are tested monthly",
        "Restores are tested quarterly",
        "Restores are never tested",
    ] {
        v1(
            d,
            "claude",
            &["propose-claim", "--text", t, "--source", &src],
        );
    }
    v1(
        d,
        "claude",
        &[
            "propose-entity",
            "--name",
            "Backup Service",
            "--type",
            "system",
        ],
    );
    let pending = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d.join(".vouch/proposed"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| {
                e.file_name()
                    .to_string_lossy()
                    .trim_end_matches(".yaml")
                    .to_string()
            })
            .filter(|n| !n.starts_with('.'))
            .collect()
    };
    let mut args = vec!["approve".to_string()];
    args.extend(pending(d));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    v1(d, "alice", &args);
    v1(
        d,
        "claude",
        &[
            "propose-page",
            "--title",
            "Restores",
            "--body",
            "How restores are tested.",
            "--claim",
            "restores-are-tested-monthly",
        ],
    );
    v1(
        d,
        "claude",
        &[
            "propose-relation",
            "--from",
            "backup-service",
            "--rel",
            "mentions",
            "--to",
            "restores-are-tested-monthly",
        ],
    );
    let mut args = vec!["approve".to_string()];
    args.extend(pending(d));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    v1(d, "alice", &args);
    v1(
        d,
        "alice",
        &[
            "supersede",
            "restores-are-tested-quarterly",
            "restores-are-tested-monthly",
        ],
    );
    v1(
        d,
        "alice",
        &[
            "contradict",
            "restores-are-tested-monthly",
            "restores-are-never-tested",
        ],
    );

    // The same counts as 1.x's own status.
    let status = same_status_as_1x(d);
    assert_eq!(status["pending"], 0, "{status}");

    // Every object lists and reads.
    for (list, read) in [
        ("kb.list_claims", "claim"),
        ("kb.list_pages", "page"),
        ("kb.list_entities", "entity"),
        ("kb.list_relations", "relation"),
    ] {
        let all = ours(d, "x", &["call", list, "{}"]).json();
        for o in all.as_array().unwrap() {
            let id = o["id"].as_str().unwrap();
            let shown = ours(d, "x", &["--json", "show", id]);
            assert_eq!(shown.code, 0, "{read} {id}: {}", shown.stderr);
        }
    }
    let old = ours(d, "x", &["--json", "show", "restores-are-tested-quarterly"]).json();
    assert_eq!(old["object"]["status"], "superseded", "{old}");
    assert_eq!(
        old["object"]["superseded_by"],
        "restores-are-tested-monthly"
    );
    let hits = ours(d, "x", &["--json", "search", "restores tested monthly"]).json();
    assert_eq!(hits[0]["id"], "restores-are-tested-monthly", "{hits}");
    assert_eq!(
        ours(d, "x", &["--json", "audit", "verify"]).json()["ok"],
        true
    );
    let doctor = ours(d, "x", &["--json", "doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);

    // Our writes on top: one chain, still valid, still read by 1.x.
    let pid = propose_here(d, &src, "Backups are kept for 30 days");
    assert_eq!(ours(d, "alice", &["approve", &pid]).code, 0);
    assert_eq!(
        ours(d, "x", &["--json", "audit", "verify"]).json()["ok"],
        true
    );
    let listed = v1(d, "x", &["list-claims"]).stdout;
    assert!(listed.contains("backups-are-kept-for-30-days"), "{listed}");
}

/// The findings a knowledge base 1.x wrote may carry here without anything
/// being wrong with the interop: its own config keys and derived index,
/// no model installed, no merge rule yet, and what its content says
/// (pages citing claims it superseded, contradictions left open).
const EXPECTED_1X_FINDINGS: &[&str] = &[
    "config-unknown-key",
    "backend-unavailable",
    "gitattributes-missing",
    "index-stale",
    "page-cites-retired-claim",
    "unresolved-contradiction",
];

/// Doctor's findings by kind; asserts it exits 0 (no errors).
fn doctor_kinds(run: Run) -> std::collections::BTreeMap<String, usize> {
    assert_eq!(run.code, 0, "doctor found errors: {}", run.stdout);
    let mut kinds = std::collections::BTreeMap::new();
    for f in run.json()["issues"].as_array().unwrap() {
        assert_ne!(f["severity"], "error", "{f}");
        *kinds
            .entry(f["kind"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    kinds
}

/// A knowledge base the real 1.x wrote at realistic size — 1,030 claims
/// proposed with byte-span receipts (1.x's span-derived evidence ids) and
/// approved by a second person, relations between claims whose file names
/// pass tar's 100 bytes, pages, supersession chains, contradictions,
/// archived claims, rejected and pending proposals (tests/vouch1/make_kb.py,
/// 1.x's own library calls) — opens here with doctor clean and the same
/// counts; 1.x's export of it passes `import-check` here and imports; and
/// our export of it imports into a fresh 1.x that finds it `fsck` clean.
#[test]
fn a_thousand_claim_kb_1x_wrote_opens_clean_and_crosses_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let python = Path::new(&v1_bin()).with_file_name("python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vouch1/make_kb.py");
    let made = Command::new(&python)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", d)
        .arg(&script)
        .arg(d)
        .arg("1030")
        .output()
        .expect("run make_kb.py with 1.x's python");
    let made = Run::from(made);
    assert_eq!(made.code, 0, "{}{}", made.stdout, made.stderr);
    let made = made.json();
    assert_eq!(made["claims"], 1000, "{made}");
    assert!(
        made["longest_relation_file"].as_u64().unwrap() > 100,
        "{made}"
    );

    // Opens here: 1.x's own status counts, doctor without errors (no
    // forged span evidence, no relation outside the gate), a verified chain.
    let status = same_status_as_1x(d);
    let c = &status["counts"];
    let kinds = doctor_kinds(ours(d, "x", &["--json", "doctor"]));
    for k in kinds.keys() {
        assert!(EXPECTED_1X_FINDINGS.contains(&k.as_str()), "{k}: {kinds:?}");
    }
    assert_eq!(kinds.get("unresolved-contradiction"), Some(&8), "{kinds:?}");
    assert_eq!(
        ours(d, "x", &["--json", "audit", "verify"]).json()["ok"],
        true
    );
    let hits = ours(d, "x", &["--json", "search", "SQS retries"]).json();
    let first = &hits.as_array().unwrap()[0];
    assert!(
        first.get("_meta").is_none(),
        "admitted by 1.x's log: {first}"
    );

    // 1.x's export imports here, every span quote checked.
    v1(d, "alice", &["export", "--out", "v1.tar.gz"]);
    let here = Project::new();
    std::fs::copy(d.join("v1.tar.gz"), here.root().join("v1.tar.gz")).unwrap();
    let check = here.ok("alice", &["import-check", "v1.tar.gz"]);
    assert_eq!(check["ok"], true, "{:#}", check["problems"]);
    assert_eq!(check["problems"].as_array().unwrap().len(), 0);
    here.ok("alice", &["import-apply", "v1.tar.gz"]);
    let kinds = doctor_kinds(here.run("x", &["--json", "doctor"]));
    for k in kinds.keys() {
        assert!(EXPECTED_1X_FINDINGS.contains(&k.as_str()), "{k}: {kinds:?}");
    }
    let imported = here.ok("x", &["status"]);
    for kind in [
        "claims",
        "pages",
        "sources",
        "entities",
        "relations",
        "evidence",
    ] {
        assert_eq!(imported["counts"][kind], c[kind], "{kind}: {imported}");
    }

    // Ours exports it back to a fresh 1.x (whose `init` seeds one claim):
    // import-check ok, fsck clean.
    let back = tempfile::tempdir().unwrap();
    let b = back.path();
    v1(b, "alice", &["init"]);
    let r = ours(
        d,
        "alice",
        &[
            "export",
            "--without-decided",
            &b.join("out.tar.gz").to_string_lossy(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let check = v1(b, "alice", &["import-check", "out.tar.gz"]).stdout;
    assert!(check.contains("\"ok\": true"), "{check}");
    v1(b, "alice", &["import-apply", "out.tar.gz"]);
    v1(b, "x", &["reindex"]);
    let fsck = v1(b, "x", &["fsck"]).stdout;
    assert!(fsck.trim_end().ends_with("clean"), "{fsck}");
    let there = v1(b, "x", &["status"]).stdout;
    assert!(
        there.contains(&format!("{} claims", c["claims"].as_u64().unwrap() + 1)),
        "{there}"
    );
}
