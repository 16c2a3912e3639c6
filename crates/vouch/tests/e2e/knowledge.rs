//! Knowledge files (issue 12, docs/knowledge.md) through the real binary: a folder
//! written by hand in the seed's format validates clean; each kind of
//! error is named by file and id; import proposes claims citing the files;
//! the gate holds; re-import is idempotent; export round-trips.

use crate::common::{Project, assert_contains, copy_dir};
use serde_json::{Value, json};
use std::path::Path;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/knowledge")
}

fn with_knowledge() -> Project {
    let p = Project::new();
    copy_dir(&fixture(), &p.root().join("knowledge"));
    p
}

fn outcomes(v: &Value) -> Vec<(String, String)> {
    v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["knowledge_id"].as_str().unwrap().to_string(),
                f["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_hand_written_knowledge_folder_validates_clean() {
    let p = with_knowledge();
    let v = p.ok("x", &["knowledge", "validate", "knowledge"]);
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["facts"], 7);
    assert_eq!(v["files"], 5);
    assert_eq!(v["problems"], json!([]), "{v:#}");
}

#[test]
fn every_kind_of_error_is_named_by_file_line_and_id() {
    let p = with_knowledge();
    let k = p.root().join("knowledge");
    let edit = |rel: &str, from: &str, to: &str| {
        let path = k.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{rel}: {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    edit("index.json", "\"total_facts\": 7", "\"total_facts\": 9");
    edit(
        "global/patterns.yaml",
        "confidence: 0.95",
        "confidence: 1.5",
    );
    edit(
        "global/tool-quirks.yaml",
        "first_seen: \"2026-03-27\"",
        "first_seen: \"yesterday\"",
    );
    edit(
        "repos/payments.yaml",
        "category: question",
        "category: riddle",
    );
    edit(
        "global/pitfalls.yaml",
        "expires: \"2027-03-30\"",
        "expires: \"2026-01-01\"",
    );
    edit(
        "global/pitfalls.yaml",
        "related: [global:pattern:001]",
        "related: [global:pattern:404]",
    );
    edit(
        "agents/reviewer.yaml",
        "id: reviewer:fact:001",
        "id: reviewer:pitfall:001",
    );
    edit(
        "global/pitfalls.yaml",
        "fact: \"The staging database is reset every Monday at 06:00 UTC\"",
        "fact: \"The staging database is reset every Sunday\"",
    );
    let r = p.run("x", &["--json", "knowledge", "validate", "knowledge"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    let v = r.json();
    let problems = v["problems"].as_array().unwrap();
    let has = |file: &str, id: Option<&str>, says: &str| {
        assert!(
            problems.iter().any(|x| x["file"] == file
                && id.is_none_or(|id| x["id"] == id)
                && x["message"].as_str().unwrap().contains(says)),
            "no problem in {file} {id:?} saying {says:?}: {v:#}"
        );
    };
    has("index.json", None, "`total_facts` is 9");
    has(
        "global/patterns.yaml",
        Some("global:pattern:001"),
        "confidence 1.5",
    );
    has(
        "global/tool-quirks.yaml",
        Some("global:tool-quirk:001"),
        "first_seen",
    );
    has(
        "repos/payments.yaml",
        Some("payments:question:001"),
        "category \"riddle\"",
    );
    has(
        "global/pitfalls.yaml",
        Some("global:pitfall:002"),
        "is not after first_seen",
    );
    has(
        "global/pitfalls.yaml",
        Some("global:pitfall:002"),
        "related id \"global:pattern:404\"",
    );
    has(
        "agents/reviewer.yaml",
        Some("reviewer:pitfall:001"),
        "the id says category",
    );
    has(
        "global/pitfalls.yaml",
        Some("global:pitfall:002"),
        "text differs from index.json",
    );
    has("index.json", Some("reviewer:fact:001"), "in no YAML file");
    // Lines point at the entry.
    let line = problems
        .iter()
        .find(|x| x["id"] == "global:pattern:001")
        .unwrap()["line"]
        .as_u64()
        .unwrap();
    assert_eq!(line, 12, "{v:#}");
    // Nothing is imported while errors stand, unless asked.
    let r = p.run("agent", &["--json", "knowledge", "import", "knowledge"]);
    assert_eq!(r.code, 6);
    assert_eq!(r.json()["facts"], json!([]));
    assert_eq!(p.ok("x", &["status"])["pending"], 0);
    let v = p.ok(
        "agent",
        &["knowledge", "import", "knowledge", "--skip-invalid"],
    );
    let skipped = v["skipped"].as_array().unwrap();
    assert!(skipped.contains(&json!("global:pattern:001")), "{v:#}");
    assert!(
        outcomes(&v).contains(&("payments:fact:001".into(), "proposed".into())),
        "{v:#}"
    );
}

#[test]
fn import_proposes_cited_claims_the_gate_holds_and_reimport_is_idempotent() {
    let p = with_knowledge();
    let dry = p.ok("agent", &["knowledge", "import", "knowledge", "--dry-run"]);
    assert!(
        outcomes(&dry).iter().all(|(_, o)| o == "would propose"),
        "{dry:#}"
    );
    assert_eq!(
        p.ok("x", &["status"])["pending"],
        0,
        "dry run wrote nothing"
    );

    let v = p.ok("agent", &["knowledge", "import", "knowledge"]);
    assert_eq!(outcomes(&v).len(), 7);
    assert!(outcomes(&v).iter().all(|(_, o)| o == "proposed"), "{v:#}");
    // `related` is filed in the same import as its facts: one import is
    // enough. It joins reviewed knowledge only, so it is approved after
    // them (or together), and says so.
    assert_eq!(v["relations"][0]["from"], "global:pitfall:002", "{v:#}");
    assert_eq!(v["relations"][0]["to"], "global:pattern:001");
    assert_eq!(v["relations"][0]["outcome"], "proposed", "{v:#}");
    assert!(
        v["relations"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("approve it after the claim(s)"),
        "{v:#}"
    );
    let rel_proposal = v["relations"][0]["proposal_id"]
        .as_str()
        .unwrap()
        .to_string();
    let human = p.run("agent", &["knowledge", "import", "knowledge", "--dry-run"]);
    // The import says what became of the link.
    assert_contains(
        &human.stdout,
        "pending        global:pitfall:002 related global:pattern:001",
    );
    // Approved alone before its ends, it is refused, naming them.
    let r = p.run("alice", &["approve", &rel_proposal]);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "not approved yet");
    let ids: Vec<String> = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["proposal_id"].as_str().unwrap().to_string())
        .collect();
    // The gate: the importer cannot approve its own import.
    let r = p.run("agent", &["approve", &ids[0]]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    let mut args = vec!["approve"];
    args.extend(ids.iter().map(String::as_str));
    p.ok("alice", &args);

    // Each claim cites a span of the file that states it, and keeps where
    // it came from.
    let claim_of = |kid: &str| -> String {
        v["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["knowledge_id"] == kid)
            .unwrap()["claim_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let snapshot = claim_of("global:pattern:001");
    let claim = p.ok("x", &["show", &snapshot]);
    let obj = &claim["object"];
    assert_eq!(obj["type"], "workflow", "{claim:#}");
    assert_eq!(obj["scope"], "team");
    assert_eq!(obj["metadata"]["knowledge"]["id"], "global:pattern:001");
    assert_eq!(obj["metadata"]["knowledge"]["source_count"], 6);
    let ev = obj["evidence"][0].as_str().unwrap();
    let evidence = p.ok("x", &["show", ev]);
    assert_eq!(
        evidence["object"]["quote"],
        "Take a database snapshot before running a destructive migration"
    );
    let quirk = p.ok("x", &["show", &claim_of("global:tool-quirk:001")]);
    assert!(
        quirk["object"]["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("tool-quirk"))
    );
    let hits = p.ok("x", &["search", "destructive migration snapshot"]);
    assert_eq!(hits[0]["kind"], "claim", "{hits}");

    // Re-import: no new fact, and the relation is already proposed,
    // citing the file that lists it.
    let again = p.ok("agent", &["knowledge", "import", "knowledge"]);
    assert!(
        outcomes(&again).iter().all(|(_, o)| o == "unchanged"),
        "{again:#}"
    );
    assert_eq!(again["relations"][0]["outcome"], "pending", "{again:#}");
    let rel_proposal = rel_proposal.as_str();
    let shown = p.ok("x", &["show", rel_proposal]);
    let payload = &shown["object"]["payload"];
    assert_eq!(payload["relation"], "references", "{shown:#}");
    assert_eq!(payload["source"], claim_of("global:pitfall:002").as_str());
    assert_eq!(payload["target"], snapshot.as_str());
    assert_eq!(
        payload["evidence"][0], v["sources"]["global/pitfalls.yaml"],
        "{shown:#}"
    );
    p.ok("alice", &["approve", rel_proposal]);
    let third = p.ok("agent", &["knowledge", "import", "knowledge"]);
    assert!(outcomes(&third).iter().all(|(_, o)| o == "unchanged"));
    assert_eq!(third["relations"][0]["outcome"], "exists", "{third:#}");
    assert_eq!(p.ok("x", &["status"])["pending"], 0);

    // An edited fact is proposed again, naming the claim it replaces.
    let k = p.root().join("knowledge");
    for rel in ["global/patterns.yaml", "index.json"] {
        let path = k.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replace("destructive migration", "destructive schema migration"),
        )
        .unwrap();
    }
    let edited = p.ok("agent", &["knowledge", "import", "knowledge"]);
    let changed: Vec<&Value> = edited["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["outcome"] == "changed")
        .collect();
    assert_eq!(changed.len(), 1, "{edited:#}");
    assert_eq!(changed[0]["replaces"], snapshot.as_str());
    // The relation follows the corrected claim in the same import.
    assert_eq!(edited["relations"][0]["outcome"], "proposed", "{edited:#}");
    assert_eq!(p.ok("x", &["status"])["pending"], 2);
    // Approving it supersedes the claim it replaces, in the same step; the
    // relation to it is approved in the same list.
    let corrected = changed[0]["claim_id"].as_str().unwrap();
    p.ok(
        "alice",
        &[
            "approve",
            changed[0]["proposal_id"].as_str().unwrap(),
            edited["relations"][0]["proposal_id"].as_str().unwrap(),
        ],
    );
    let old = p.ok("x", &["show", &snapshot]);
    assert_eq!(old["object"]["status"], "superseded", "{old:#}");
    assert_eq!(old["object"]["superseded_by"], corrected);
    let new = p.ok("x", &["show", corrected]);
    assert_eq!(new["object"]["supersedes"], json!([snapshot]), "{new:#}");
    let hits = p.ok("x", &["search", "destructive schema migration"]);
    assert_eq!(hits[0]["id"], corrected, "{hits:#}");
    // The approval is one audit event naming both claims.
    let approvals = p.ok("x", &["audit", "--event", "proposal.approve"]);
    let last = approvals
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["data"]["kind"] == "claim")
        .unwrap();
    assert_eq!(last["data"]["supersedes"], json!([snapshot]), "{last:#}");
    assert!(
        last["object_ids"]
            .as_array()
            .unwrap()
            .contains(&json!(snapshot))
    );
    let after = p.ok("agent", &["knowledge", "import", "knowledge"]);
    assert!(outcomes(&after).iter().all(|(_, o)| o == "unchanged"));
    assert_eq!(after["relations"][0]["outcome"], "exists", "{after:#}");
    let doctor = p.run("x", &["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);

    // The audit log has the imports.
    let log = p.ok("x", &["audit", "--event", "knowledge.import"]);
    assert_eq!(log.as_array().unwrap().len(), 5, "{log:#}");
}

#[test]
fn export_validates_round_trips_and_is_byte_stable() {
    let p = with_knowledge();
    let v = p.ok("agent", &["knowledge", "import", "knowledge"]);
    let mut args = vec!["approve".to_string()];
    args.extend(
        v["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["proposal_id"].as_str().unwrap().to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    p.ok("alice", &args);
    // A claim that came from nowhere gets the next free id.
    let src = p.source("Backups are verified weekly.\n");
    let backups = p.claim("Backups are verified weekly", &src);
    // An approved `references` relation becomes `related`.
    let snapshot = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["knowledge_id"] == "global:pattern:001")
        .unwrap()["claim_id"]
        .as_str()
        .unwrap()
        .to_string();
    let rel = p.ok(
        "agent",
        &[
            "propose-relation",
            &backups,
            "references",
            &snapshot,
            "-e",
            &src,
        ],
    );
    p.ok("alice", &["approve", rel["proposal_id"].as_str().unwrap()]);
    // Pending and superseded knowledge is never exported.
    p.propose("Pending knowledge never leaves", &src);

    let out = p.ok("x", &["knowledge", "export", "exported"]);
    assert_eq!(out["facts"], 8, "{out:#}");
    let first = read_tree(&p.root().join("exported"));
    p.ok("x", &["knowledge", "export", "exported"]);
    assert_eq!(
        first,
        read_tree(&p.root().join("exported")),
        "same KB, same bytes"
    );
    let index: Value = serde_json::from_slice(&first["index.json"]).unwrap();
    let ids: Vec<&str> = index["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"global:pitfall:001"), "{ids:?}");
    assert!(ids.contains(&"global:fact:001"), "the new claim: {ids:?}");
    let related = |id: &str| {
        index["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()["related"]
            .clone()
    };
    assert_eq!(related("global:fact:001"), json!(["global:pattern:001"]));
    assert_eq!(related("global:pitfall:002"), json!(["global:pattern:001"]));
    assert!(first.contains_key("repos/payments.yaml"));
    assert!(first.contains_key("agents/reviewer.yaml"));
    let v = p.ok("x", &["knowledge", "validate", "exported"]);
    assert_eq!(v["ok"], true, "{v:#}");

    // Into a fresh KB: the same facts.
    let q = Project::new();
    copy_dir(&p.root().join("exported"), &q.root().join("k"));
    let v = q.ok("agent", &["knowledge", "import", "k"]);
    assert_eq!(outcomes(&v).len(), 8, "{v:#}");
    assert!(outcomes(&v).iter().all(|(_, o)| o == "proposed"), "{v:#}");
    let log = p.ok("x", &["audit", "--event", "knowledge.export"]);
    assert_eq!(log.as_array().unwrap().len(), 2);
}

fn read_tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for sub in ["", "global", "repos", "agents"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                let rel = if sub.is_empty() {
                    e.file_name().to_string_lossy().into_owned()
                } else {
                    format!("{sub}/{}", e.file_name().to_string_lossy())
                };
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

#[test]
fn hostile_and_broken_folders_are_refused_with_reasons() {
    let p = with_knowledge();
    let k = p.root().join("knowledge");
    // Not a knowledge folder; outside the project.
    std::fs::create_dir(p.root().join("empty")).unwrap();
    let r = p.run("x", &["knowledge", "validate", "empty"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "not a knowledge folder");
    let r = p.run("x", &["knowledge", "validate", "../"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "outside the project");
    // index.json that is not JSON; frontmatter without its end; a fact
    // entry that is not a mapping; an id with path characters; a file too
    // large; a link out of the folder.
    std::fs::write(k.join("index.json"), "{ not json").unwrap();
    std::fs::write(
        k.join("global/broken.yaml"),
        "---\ndomain: global\ncategory: fact\n# no end\n",
    )
    .unwrap();
    std::fs::write(
        k.join("repos/odd.yaml"),
        "---\ndomain: odd\ncategory: fact\nversion: 1\nlast_updated: \"2026-04-13\"\n---\n\n- id: odd/../x:fact:001\n  fact: \"Odd\"\n  confidence: 0.5\n- id: [not, a, mapping\n",
    )
    .unwrap();
    // Over the 128 MiB limit without writing it: a sparse file.
    let big = std::fs::File::create(k.join("agents/big.yaml")).unwrap();
    big.set_len(129 * 1024 * 1024).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/passwd", k.join("agents/link.yaml")).unwrap();
    let r = p.run("x", &["--json", "knowledge", "validate", "knowledge"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    let v = r.json();
    let says = |file: &str, text: &str| {
        assert!(
            v["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["file"] == file && x["message"].as_str().unwrap().contains(text)),
            "{file}: {text}: {v:#}"
        );
    };
    says("index.json", "not JSON");
    says("global/broken.yaml", "no closing `---`");
    says("repos/odd.yaml", "path characters");
    says("repos/odd.yaml", "fact entry");
    says("agents/big.yaml", "over the");
    #[cfg(unix)]
    says("agents/link.yaml", "without following links");
    // A fact whose text is not in its file as written is refused, named.
    let q = with_knowledge();
    let path = q.root().join("knowledge/agents/reviewer.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "fact: \"The reviewer agent reads CONTRIBUTING.md before commenting on a pull request\"",
            "fact: \"The reviewer agent reads CONTRIBUTING.md before commenting on a pull \\\n    request\"",
        ),
    )
    .unwrap();
    let v = q.ok(
        "agent",
        &["knowledge", "import", "knowledge", "--skip-invalid"],
    );
    let refused: Vec<&Value> = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["outcome"] == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{v:#}");
    assert_eq!(refused[0]["knowledge_id"], "reviewer:fact:001");
    assert!(
        refused[0]["reason"]
            .as_str()
            .unwrap()
            .contains("does not occur")
    );
}

/// A fact's `expires` travels with the claim, and lint says when it passed.
#[test]
fn an_expired_imported_claim_is_flagged_by_lint() {
    let p = with_knowledge();
    let k = p.root().join("knowledge");
    for rel in ["global/pitfalls.yaml", "index.json"] {
        let path = k.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("2027-03-30", "2026-05-01")).unwrap();
    }
    let v = p.ok("agent", &["knowledge", "import", "knowledge"]);
    let fact = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["knowledge_id"] == "global:pitfall:002")
        .unwrap()
        .clone();
    p.ok("alice", &["approve", fact["proposal_id"].as_str().unwrap()]);
    let claim = fact["claim_id"].as_str().unwrap();
    // Imported in January (the project's pinned clock), linted in June.
    let lint = |at: &str| -> Value {
        let out = p
            .command("x")
            .env("VOUCH_TIMESTAMP", at)
            .args(["--json", "lint"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let expired =
        |lint: &Value| {
            lint["issues"].as_array().unwrap().iter().any(|f| {
                f["kind"] == "expired-claim" && f["id"] == format!("expired-claim:{claim}")
            })
        };
    assert!(
        !expired(&lint("2026-04-30T00:00:00Z")),
        "flagged before it expired"
    );
    let lint = lint("2026-06-01T00:00:00Z");
    assert!(expired(&lint), "{lint:#}");
}

/// Validating a folder of knowledge files is a check of files: it works
/// where there is no knowledge base (exit 0 clean, 6 with errors, 2 for a
/// folder that is not one), as it does inside one.
#[test]
fn knowledge_validate_works_outside_a_knowledge_base() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("knowledge");
    std::fs::create_dir_all(folder.join("repos")).unwrap();
    std::fs::write(
        folder.join("repos/api.yaml"),
        "---\ndomain: api\ncategory: fact\nversion: 1\nlast_updated: \"2026-01-01\"\n---\n\n\
         - id: api:fact:1\n  fact: The API rate limit is 100 requests per minute.\n  \
         category: fact\n  domain: api\n  confidence: 0.9\n",
    )
    .unwrap();
    std::fs::write(
        folder.join("index.json"),
        r#"{"version": 1, "last_updated": "2026-01-01", "total_facts": 1, "facts": [
            {"id": "api:fact:1", "fact": "The API rate limit is 100 requests per minute.",
             "category": "fact", "domain": "api", "confidence": 0.9}]}"#,
    )
    .unwrap();
    let run = |args: &[&str]| {
        crate::common::Run::from(
            crate::common::command()
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .args(args)
                .output()
                .unwrap(),
        )
    };
    let r = run(&["--json", "knowledge", "validate", "knowledge"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["facts"], json!(1), "{}", r.stdout);
    std::fs::write(folder.join("index.json"), "{\"version\": 2}").unwrap();
    let r = run(&["knowledge", "validate", "knowledge"]);
    assert_eq!(r.code, 6, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stdout, "`version` must be 1");
    let r = run(&["knowledge", "validate", "elsewhere"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "not a knowledge folder");
}

/// A repository's file naturally holds facts of several categories: with
/// frontmatter `category: mixed` (or none), each fact's category comes
/// from its id — a warning, not a refusal.
#[test]
fn a_file_of_several_categories_takes_each_category_from_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("knowledge");
    std::fs::create_dir_all(folder.join("repos")).unwrap();
    let facts = [
        (
            "api:fact:1",
            "fact",
            "The API rate limit is 100 requests per minute.",
        ),
        (
            "api:pitfall:1",
            "pitfall",
            "Retries without jitter overload the API.",
        ),
    ];
    for (name, frontmatter) in [("mixed", "category: mixed\n"), ("none", "")] {
        let mut text = format!(
            "---\ndomain: api\n{frontmatter}version: 1\nlast_updated: \"2026-01-01\"\n---\n\n"
        );
        for (id, _, fact) in facts {
            text.push_str(&format!("- id: {id}\n  fact: {fact}\n  confidence: 0.9\n"));
        }
        std::fs::write(folder.join("repos/api.yaml"), text).unwrap();
        let index: Vec<Value> = facts
            .iter()
            .map(|(id, cat, fact)| {
                json!({"id": id, "fact": fact, "category": cat, "domain": "api", "confidence": 0.9})
            })
            .collect();
        std::fs::write(
            folder.join("index.json"),
            json!({"version": 1, "last_updated": "2026-01-01", "total_facts": 2, "facts": index})
                .to_string(),
        )
        .unwrap();
        let out = crate::common::Run::from(
            crate::common::command()
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .args(["--json", "knowledge", "validate", "knowledge"])
                .output()
                .unwrap(),
        );
        let v = out.json();
        assert_eq!(out.code, 0, "{name}: {v:#}");
        assert_eq!(v["errors"], json!(0), "{name}: {v:#}");
        assert!(
            v["problems"].to_string().contains("taken from its id"),
            "{name}: {v:#}"
        );
    }
}

/// A person exports knowledge files where they say, outside the project
/// too; an agent only inside it, and the refusal names the operation; a
/// folder holding other things is never written into.
#[test]
fn a_person_exports_anywhere_an_agent_only_inside_the_project() {
    let p = Project::new();
    let src = p.source("Exports go where the person says.\n");
    p.claim("Exports go where the person says.", &src);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = elsewhere.path().join("facts");
    let r = p.run("alice", &["knowledge", "export", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(out.join("index.json").is_file());
    let agent = crate::common::jsonl(
        &p,
        "agent",
        "kb.knowledge_export",
        json!({"out": elsewhere.path().join("agents").to_str().unwrap()}),
    );
    let msg = agent["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("an agent exports knowledge files only inside the project"),
        "{agent}"
    );
    assert!(!elsewhere.path().join("agents").exists());
    let other = elsewhere.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let r = p.run("alice", &["knowledge", "export", other.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "not a knowledge export");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
}

/// An import proposes every fact in one pass: its `evidence.register` and
/// `proposal.create` events are one run in the log, the first naming the
/// journaled batch that wrote all their files; every proposal and evidence
/// record is on disk and the chain verifies.
#[test]
fn an_import_proposes_every_fact_in_one_journaled_batch() {
    let p = with_knowledge();
    let v = p.ok("agent", &["knowledge", "import", "knowledge"]);
    let proposed: Vec<&str> = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["proposal_id"].as_str())
        .collect();
    assert_eq!(proposed.len(), 7, "{v:#}");
    let log = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).unwrap();
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let batch: Vec<&Value> = events
        .iter()
        .skip_while(|e| e["event"] != "evidence.register" && e["event"] != "proposal.create")
        .take_while(|e| e["event"] == "evidence.register" || e["event"] == "proposal.create")
        .collect();
    // The facts' claims; the `related` link between two of them follows.
    let created = batch
        .iter()
        .filter(|e| e["event"] == "proposal.create" && e["data"]["kind"] == "claim")
        .count();
    assert_eq!(created, 7, "all seven in one run of events: {batch:#?}");
    assert!(
        batch[0]["data"]["batch_sha256"].is_string(),
        "the first names the batch: {:#}",
        batch[0]
    );
    assert_eq!(
        batch
            .iter()
            .filter(|e| e["data"].get("batch_sha256").is_some())
            .count(),
        1
    );
    for id in &proposed {
        assert!(p.vouch_dir().join(format!("proposed/{id}.yaml")).is_file());
    }
    for e in batch.iter().filter(|e| e["event"] == "evidence.register") {
        let ev = e["object_ids"][0].as_str().unwrap();
        assert!(p.vouch_dir().join(format!("evidence/{ev}.yaml")).is_file());
    }
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
    // The seven facts and the `related` link between two of them.
    assert_eq!(p.ok("x", &["status"])["pending"], 8);
}

/// Round five, A9: any folder holding an `index.json` (a web app's) is not
/// an earlier export. An agent's `kb.knowledge_export` into the project's
/// `web/` or its root is refused and writes nothing there; into an earlier
/// export it writes again, but never over a file someone put beside it.
#[test]
fn only_an_earlier_export_is_written_over_and_an_agent_replaces_only_its_files() {
    let p = Project::new();
    let src = p.source("Deploys are frozen on Fridays. Never run migrations by hand.\n");
    p.claim("Deploys are frozen on Fridays", &src);
    let web = p.root().join("web");
    std::fs::create_dir_all(web.join("global")).unwrap();
    let app_index = r#"{"name":"my-web-app","scripts":{}}"#;
    std::fs::write(web.join("index.json"), app_index).unwrap();
    std::fs::write(web.join("global/facts.yaml"), "important: yes\n").unwrap();
    std::fs::write(p.root().join("index.json"), r#"{"important":"index"}"#).unwrap();
    let export =
        |out: &str| crate::common::jsonl(&p, "agent", "kb.knowledge_export", json!({"out": out}));
    let r = export("web");
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("not a knowledge export"), "{r}");
    assert!(export(".")["error"].is_object());
    assert_eq!(
        std::fs::read_to_string(p.root().join("index.json")).unwrap(),
        r#"{"important":"index"}"#
    );
    assert_eq!(
        std::fs::read_to_string(web.join("index.json")).unwrap(),
        app_index
    );
    assert_eq!(
        std::fs::read_to_string(web.join("global/facts.yaml")).unwrap(),
        "important: yes\n"
    );
    assert!(!p.root().join("global").exists());
    // A person is refused there too.
    let r = p.run("alice", &["knowledge", "export", "web"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        std::fs::read_to_string(web.join("index.json")).unwrap(),
        app_index
    );

    // An earlier export is written again.
    assert!(export("k")["result"]["ok"] == true);
    let r = export("k");
    assert_eq!(r["result"]["facts"], 1, "{r}");
    // A warning approved since goes to global/pitfalls.yaml, where someone
    // has put a file of their own: the agent does not replace it, a person
    // does.
    let w = p.ok(
        "agent",
        &[
            "propose-claim",
            "Never run migrations by hand",
            "--evidence",
            &src,
            "--type",
            "warning",
        ],
    );
    p.ok("alice", &["approve", w["proposal_id"].as_str().unwrap()]);
    let theirs = p.root().join("k/global/pitfalls.yaml");
    std::fs::write(&theirs, "mine: true\n").unwrap();
    let r = export("k");
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("global/pitfalls.yaml"), "{r}");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "mine: true\n");
    p.ok("alice", &["knowledge", "export", "k"]);
    assert!(
        std::fs::read_to_string(&theirs)
            .unwrap()
            .contains("Never run migrations by hand")
    );
}
