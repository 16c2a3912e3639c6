//! The derived index: hand edits are seen without a rebuild, a rebuild gives
//! the same answers, pending proposals are never found, any text is a query.

use crate::common::*;
use serde_json::json;

fn hits(p: &Project, q: &str) -> Vec<String> {
    hit_names(&p.call("x", "kb.search", json!({"query": q})).json())
}

#[test]
fn search_follows_hand_edits_and_rebuilds_identically() {
    let p = Project::new();
    let s = p.source("unrelated source text");
    let c = p.claim("Deploys happen on Tuesdays", &s);
    p.propose("Pending claims mention Tuesdays too", &s);
    assert_eq!(
        hits(&p, "tuesday"),
        [format!("claim:{c}")],
        "stemming, and pending never found"
    );
    let full = p
        .call("x", "kb.search", json!({"query": "deploys tuesdays"}))
        .json();
    // Plain text and where the matched words are: no brackets.
    let snippet = full[0]["snippet"].as_str().unwrap();
    assert!(snippet.starts_with("Deploys happen"), "{full}");
    assert!(!snippet.contains('['), "{full}");
    let marked: Vec<String> = full[0]["highlights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let (a, b) = (
                r[0].as_u64().unwrap() as usize,
                r[1].as_u64().unwrap() as usize,
            );
            snippet.chars().skip(a).take(b - a).collect()
        })
        .collect();
    assert_eq!(marked, ["Deploys", "Tuesdays"], "{full}");
    // The terminal paints them when asked, and shows them plain otherwise.
    let painted = p.run("x", &["--color", "always", "search", "deploys tuesdays"]);
    assert_contains(&painted.stdout, "\x1b[1;33mDeploys\x1b[0m");
    let plain = p.run("x", &["--color", "never", "search", "deploys tuesdays"]);
    assert_contains(&plain.stdout, "Deploys happen on Tuesdays");
    assert!(!plain.stdout.contains('\x1b') && !plain.stdout.contains('['));

    let file = p.vouch_dir().join(format!("claims/{c}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("on Tuesdays", "on Fridays now");
    std::fs::write(&file, text).unwrap();
    assert!(
        hits(&p, "tuesday").is_empty(),
        "stale text still found after a hand edit"
    );
    assert_eq!(hits(&p, "fridays"), [format!("claim:{c}")]);

    // A second edit in the same timestamp tick, same size: mtime and size
    // match what the index recorded, yet the new text must be seen.
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Fridays", "Mondays");
    std::fs::write(&file, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(
        hits(&p, "mondays"),
        [format!("claim:{c}")],
        "same-tick edit missed"
    );
    assert!(hits(&p, "fridays").is_empty());
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Mondays", "Fridays");
    std::fs::write(&file, text).unwrap();

    let before = p
        .call("x", "kb.search", json!({"query": "fridays source text"}))
        .stdout;
    std::fs::remove_file(p.vouch_dir().join("state.db")).unwrap();
    p.ok("x", &["index", "rebuild"]);
    let after = p
        .call("x", "kb.search", json!({"query": "fridays source text"}))
        .stdout;
    assert_eq!(before, after, "rebuild changed the results");

    std::fs::remove_file(&file).unwrap();
    assert!(hits(&p, "fridays").is_empty(), "deleted claim still found");
}

#[test]
fn any_text_is_a_query_and_bad_params_are_clear() {
    let p = Project::new();
    let s = p.source("x");
    p.claim("NEAR the AND gate: OR not", &s);
    let long = "word ".repeat(2000);
    for q in [
        "\"unbalanced",
        "(paren",
        "a*",
        "col:on",
        "-minus",
        "AND",
        "OR NOT NEAR",
        "🦀 emoji",
        long.as_str(),
        "NEAR(a b)",
    ] {
        let r = p.call("x", "kb.search", json!({"query": q}));
        assert_eq!(r.code, 0, "{q:?}: {}", r.stderr);
    }
    assert_eq!(hits(&p, "NEAR AND"), ["claim:near-the-and-gate-or-not"]);
    for (params, expect) in [
        (json!({"query": "  "}), "must not be empty"),
        (json!({"query": "x", "limit": 0}), "limit"),
        (json!({"query": "x", "limit": -5}), "limit"),
        (
            json!({"query": "x", "kinds": ["spaceship"]}),
            "unknown kind",
        ),
        (json!({}), "missing required param `query`"),
    ] {
        let r = p.call("x", "kb.search", params.clone());
        assert_eq!(r.code, 2, "{params}");
        assert!(r.stderr.contains(expect), "{params}: {}", r.stderr);
    }
    assert_eq!(
        p.call(
            "x",
            "kb.search",
            json!({"query": "gate", "limit": 1_000_000})
        )
        .code,
        0
    );
}

#[test]
fn a_corrupt_state_db_is_rebuilt() {
    let p = Project::new();
    let s = p.source("x");
    let c = p.claim("Resilient index entry", &s);
    hits(&p, "resilient");
    std::fs::write(p.vouch_dir().join("state.db"), b"this is not a database").unwrap();
    let _ = std::fs::remove_file(p.vouch_dir().join("state.db-wal"));
    let _ = std::fs::remove_file(p.vouch_dir().join("state.db-shm"));
    let r = p.run("x", &["--json", "search", "resilient"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(&c));
    assert_contains(&r.stderr, "rebuilding");
}

fn context(p: &Project, params: serde_json::Value) -> serde_json::Value {
    let r = p.call("x", "kb.context", params.clone());
    assert_eq!(r.code, 0, "{params}: {}", r.stderr);
    r.json()
}

fn pack_ids(pack: &serde_json::Value) -> Vec<String> {
    pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

/// Set a claim's status by editing its file, as a person might.
fn set_status(p: &Project, id: &str, status: &str) {
    let file = p.vouch_dir().join(format!("claims/{id}.yaml"));
    let text = std::fs::read_to_string(&file).unwrap();
    let edited: String = text
        .lines()
        .map(|l| {
            if l.starts_with("status:") {
                format!("status: {status}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&file, edited + "\n").unwrap();
}

#[test]
fn context_packs_only_current_knowledge_ranked_by_trust() {
    let p = Project::new();
    let s =
        p.source("Cache entries expire after ten minutes.\nThe old cache kept entries forever.");
    let quoted = p.propose_quoted(
        "Cache entries expire after ten minutes",
        &s,
        "Cache entries expire after ten minutes.",
    );
    let span_claim = quoted["claim_id"].as_str().unwrap().to_string();
    p.ok(
        "alice",
        &["approve", quoted["proposal_id"].as_str().unwrap()],
    );
    let working = p.claim("Cache entries expire after ten minutes in staging", &s);
    let stable = p.claim("Cache entries expire after ten minutes in production", &s);
    set_status(&p, &stable, "stable");
    let old = p.claim("Cache entries never expire in the old cache", &s);
    let archived = p.claim("Cache entries expire hourly in the archive", &s);
    let contested = p.claim("Cache entries expire after an hour", &s);
    p.ok("alice", &["supersede", &old, &span_claim]);
    p.ok("alice", &["archive", &archived, "--reason", "gone"]);
    p.ok("alice", &["contradict", &contested, &working]);
    p.propose("Cache entries pending review expire", &s);

    let pack = context(&p, json!({"task": "when do cache entries expire?"}));
    let ids = pack_ids(&pack);
    assert!(!ids.contains(&old), "superseded claim in pack: {ids:?}");
    assert!(!ids.contains(&archived), "archived claim in pack: {ids:?}");
    assert!(
        !ids.iter().any(|i| i.contains("pending")),
        "pending proposal in pack: {ids:?}"
    );
    assert_eq!(ids.len(), 4, "{pack}");
    let scores: Vec<&serde_json::Value> = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["score"])
        .collect();
    assert_eq!(
        ids[0], stable,
        "stable ranks first among equals: {ids:?} {scores:?}"
    );
    let by_id = |id: &str| {
        pack["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .unwrap()
            .clone()
    };
    let c = by_id(&contested);
    assert_eq!(c["contested"], true);
    assert_eq!(c["contradicts"], json!([working.clone()]));
    let w = by_id(&working);
    assert_eq!(w["status"], "contested", "contradict marks both sides");
    let span = by_id(&span_claim);
    assert_eq!(
        span["citations"][0]["quote"],
        "Cache entries expire after ten minutes."
    );
    assert_eq!(span["citations"][0]["source_id"], s.as_str());
    assert_eq!(span["citations"][0]["locator"], "L1-L1");
    assert_eq!(by_id(&stable)["citations"][0]["source_id"], s.as_str());
    let text = pack["text"].as_str().unwrap();
    assert_eq!(pack["used_chars"], text.chars().count());
    assert!(text.contains("Cache entries expire after ten minutes in production"));
    assert!(text.contains(&format!("contradicts {working}")), "{text}");
    assert_eq!(pack["min_items_met"], true);
    assert_eq!(pack["backend"], "fts5");

    let readable = p.run("x", &["context", "cache entries expire"]);
    assert_eq!(readable.code, 0, "{}", readable.stderr);
    assert_contains(&readable.stdout, "[1] claim");
    assert_contains(&readable.stdout, "4 item(s)");
}

#[test]
fn context_never_exceeds_max_chars_and_says_what_it_left_out() {
    let p = Project::new();
    let s = p.source("Budget test source");
    for i in 0..12 {
        p.claim(
            &format!("Budget rule {i}: retries back off {} seconds", i + 1),
            &s,
        );
    }
    let full = context(&p, json!({"task": "budget retries", "max_chars": 100000}));
    assert_eq!(pack_ids(&full).len(), 12);
    let full_chars = full["used_chars"].as_u64().unwrap();
    for max in [1, 31, 32, 120, 200, 333, 700, full_chars - 1, full_chars] {
        let pack = context(&p, json!({"task": "budget retries", "max_chars": max}));
        let text = pack["text"].as_str().unwrap();
        let used = text.chars().count() as u64;
        assert!(used <= max, "max_chars {max} exceeded: {used}");
        assert_eq!(pack["used_chars"], used);
        let n = pack_ids(&pack).len();
        let left_out = pack["omitted_counts"]["budget"].as_u64().unwrap() as usize;
        assert_eq!(
            n + left_out,
            12,
            "max {max}: every match is packed or counted"
        );
        if left_out > 0 {
            assert!(
                pack["gaps"][0].as_str().unwrap().contains("did not fit"),
                "{pack}"
            );
        }
        if max == full_chars {
            assert_eq!(n, 12);
        }
    }
    let tiny = context(
        &p,
        json!({"task": "budget retries", "max_chars": 10, "min_items": 2}),
    );
    assert_eq!(pack_ids(&tiny).len(), 0);
    assert_eq!(tiny["min_items_met"], false);
    assert!(
        tiny["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g.as_str().unwrap().contains("2 requested")),
        "{tiny}"
    );
}

/// An item says what it needed when its text fit and only its
/// citations did not; one whose text alone could not fit is left out
/// before its citations are read, so without `chars`.
#[test]
fn context_says_what_an_item_needed_only_when_its_text_fit() {
    let p = Project::new();
    let s = p.source("Quarantine source");
    p.claim("Quarantined hosts drain their queues first", &s);
    let everything = json!({"task": "quarantined hosts drain", "max_chars": 100000});
    let full = context(&p, everything)["used_chars"].as_u64().unwrap();
    let omitted = |max: u64| {
        let pack = context(
            &p,
            json!({"task": "quarantined hosts drain", "max_chars": max}),
        );
        assert_eq!(pack_ids(&pack).len(), 0, "{pack}");
        assert_eq!(pack["omitted_counts"]["budget"], 1, "{pack}");
        pack["omitted"][0].clone()
    };
    // One character short: the text fits, the citation does not.
    assert_eq!(
        omitted(full - 1)["chars"],
        full,
        "the whole item was rendered"
    );
    // Room for less than its heading: left out unread, nothing measured.
    let unread = omitted(40);
    assert_eq!(unread["reason"], "budget");
    assert!(unread.get("chars").is_none(), "{unread}");
}

#[test]
fn context_require_citations_and_bad_params() {
    let p = Project::new();
    let s = p.source("Runbook source");
    let c = p.claim("The runbook covers failover drills", &s);
    let page = p.ok(
        "agent",
        &[
            "propose-page",
            "Failover runbook",
            "--body",
            "Drills for failover.",
        ],
    );
    p.ok("alice", &["approve", page["proposal_id"].as_str().unwrap()]);
    let page_id = page["page_id"].as_str().unwrap().to_string();

    let all = context(&p, json!({"task": "failover runbook"}));
    let ids = pack_ids(&all);
    assert!(ids.contains(&page_id) && ids.contains(&c), "{all}");
    let cited = context(
        &p,
        json!({"task": "failover runbook", "require_citations": true}),
    );
    assert_eq!(pack_ids(&cited), [c]);
    assert_eq!(cited["omitted_counts"]["uncited"], 1);
    assert_eq!(cited["omitted"][0]["id"], page_id.as_str());
    assert_eq!(cited["omitted"][0]["reason"], "uncited");

    let none = context(&p, json!({"task": "zebra"}));
    assert_eq!(pack_ids(&none).len(), 0);
    assert!(none["gaps"][0].as_str().unwrap().contains("no current"));
    assert_eq!(
        context(&p, json!({"task": "?!"}))["gaps"][0],
        "the task has no searchable words"
    );

    for (params, expect) in [
        (json!({"task": " "}), "task: must not be empty"),
        (json!({}), "missing required param `task`"),
        (json!({"task": "x", "max_chars": 0}), "max_chars"),
        (json!({"task": "x", "max_chars": -1}), "max_chars"),
        (json!({"task": "x", "min_items": -1}), "min_items"),
        (json!({"task": "x", "max_chars": "big"}), "invalid"),
        (json!({"task": "x", "budget": 5}), "unknown field"),
    ] {
        let r = p.call("x", "kb.context", params.clone());
        assert_eq!(r.code, 2, "{params}: {}", r.stdout);
        assert!(r.stderr.contains(expect), "{params}: {}", r.stderr);
    }
    let huge = context(&p, json!({"task": "failover", "max_chars": 1u64 << 40}));
    assert_eq!(huge["max_chars"], 1_000_000);
}

#[test]
fn a_locked_state_db_falls_back_to_the_files() {
    let p = Project::new();
    let s = p.source("x");
    let c = p.claim("Locked index answers anyway", &s);
    assert_eq!(hits(&p, "locked"), [format!("claim:{c}")]);
    // Another process takes an exclusive lock on state.db and keeps it.
    let holder = rusqlite::Connection::open(p.vouch_dir().join("state.db")).unwrap();
    holder
        .execute_batch("PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    let c2 = p.claim("Locked index still sees new claims", &s);
    let r = p.run("x", &["--json", "search", "locked index"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_contains(&r.stderr, "locked by another process");
    let v = r.json();
    let found: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert!(
        found.contains(&c.as_str()) && found.contains(&c2.as_str()),
        "{v}"
    );
    assert_eq!(v[0]["backend"], "substring");
    drop(holder);
    let after = p
        .call("x", "kb.search", json!({"query": "locked index"}))
        .json();
    assert_eq!(after[0]["backend"], "fts5", "{after}");
    assert_eq!(after.as_array().unwrap().len(), 2);
}

#[test]
fn a_state_db_from_an_older_schema_is_rebuilt() {
    let p = Project::new();
    let s = p.source("x");
    let c = p.claim("Schema migrations rebuild the index", &s);
    p.drop_index();
    // Out of the 2 s window in which files are always re-read.
    let ten_s_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    std::fs::File::options()
        .write(true)
        .open(p.vouch_dir().join(format!("claims/{c}.yaml")))
        .unwrap()
        .set_modified(ten_s_ago)
        .unwrap();
    // What an older vouch left: another schema version, another table shape,
    // and a row that no longer exists in the files.
    let old = rusqlite::Connection::open(p.vouch_dir().join("state.db")).unwrap();
    old.execute_batch(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES('schema', '1;porter');
         CREATE TABLE docs(id TEXT, text TEXT);
         INSERT INTO docs VALUES('ghost-claim', 'schema migrations ghost');",
    )
    .unwrap();
    drop(old);
    assert_eq!(hits(&p, "schema migrations"), [format!("claim:{c}")]);
    let db = rusqlite::Connection::open(p.vouch_dir().join("state.db")).unwrap();
    let schema: String = db
        .query_row("SELECT value FROM meta WHERE key='schema'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        schema.starts_with(vouch_core::index::sqlite::SCHEMA_VERSION),
        "{schema}"
    );

    // Same files, same scan records, only the schema tag is older: the
    // records of the old index must not vouch for the new, empty one.
    db.execute("UPDATE meta SET value='3;porter' WHERE key='schema'", [])
        .unwrap();
    drop(db);
    assert_eq!(hits(&p, "schema migrations"), [format!("claim:{c}")]);
}

/// `retrieval.freshness: dirs` sees files added, deleted or replaced by
/// rename (vouch, git, rename-saving editors) and, by design, not a file
/// rewritten in place — until `vouch index rebuild`. Anything modified within
/// the last 2 s is always re-checked (timestamps tick coarsely), so the test
/// backdates the files and the directory to step out of that window.
#[test]
fn dirs_freshness_sees_replaced_files_not_in_place_rewrites() {
    let p = Project::new();
    retrieval_setting(&p, "freshness: dirs");
    let s = p.source("x");
    let c = p.claim("Blue deploys run nightly", &s);
    assert_eq!(hits(&p, "blue"), [format!("claim:{c}")]);

    let dir = p.vouch_dir().join("claims");
    let file = dir.join(format!("{c}.yaml"));
    let backdate = |path: &std::path::Path, secs: u64| {
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        std::fs::File::open(path).unwrap().set_modified(t).unwrap();
    };
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Blue", "Green");
    let tmp = dir.join(format!(".{c}.yaml.tmp-edit"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    backdate(&file, 20);
    backdate(&dir, 20);
    assert_eq!(
        hits(&p, "green"),
        [format!("claim:{c}")],
        "rename-save missed"
    );
    assert!(hits(&p, "blue").is_empty());

    // An in-place rewrite leaves the directory's mtime alone: not seen
    // (the new words are not found). The old words are not served either:
    // the file no longer says them, and a hit is checked against its file.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Green", "Amber");
    std::fs::write(&file, text).unwrap();
    backdate(&file, 10);
    assert!(hits(&p, "green").is_empty());
    assert!(hits(&p, "amber").is_empty());
    p.ok("x", &["index", "rebuild"]);
    assert_eq!(hits(&p, "amber"), [format!("claim:{c}")]);

    let c2 = p.claim("Amber alerts page the on-call", &s);
    assert_eq!(hits(&p, "amber").len(), 2, "a new claim was missed");
    std::fs::remove_file(dir.join(format!("{c2}.yaml"))).unwrap();
    assert_eq!(
        hits(&p, "amber"),
        [format!("claim:{c}")],
        "a deletion was missed"
    );
}

/// The project's labelled query set (eval/) runs end to end, as
/// scripts/eval.sh runs it: a KB built from eval/corpus.md through the gate,
/// then `vouch eval eval/queries.yaml`.
#[test]
fn eval_scores_the_labelled_query_set() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let corpus = std::fs::read_to_string(repo.join("eval/corpus.md")).unwrap();
    let p = Project::new();
    std::fs::write(p.root().join("corpus.md"), &corpus).unwrap();
    let src = p.ok("agent", &["source", "add", "corpus.md"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut proposals = Vec::new();
    for line in corpus.lines().filter(|l| !l.is_empty()) {
        let text = line.trim_end_matches('.');
        let v = p.ok(
            "agent",
            &["propose-claim", text, "--quote", &format!("{src}={line}")],
        );
        proposals.push(v["proposal_id"].as_str().unwrap().to_string());
    }
    let mut approve = vec!["approve"];
    approve.extend(proposals.iter().map(String::as_str));
    p.ok("alice", &approve);

    let queries = repo.join("eval/queries.yaml");
    let report = p.ok("x", &["eval", queries.to_str().unwrap()]);
    let labelled = std::fs::read_to_string(&queries)
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with("- query:"))
        .count();
    assert!(labelled > 100, "the labelled set shrank to {labelled}");
    assert_eq!(report["queries"], labelled);
    assert_eq!(report["k"], 10);
    for key in ["recall_at_k", "mrr", "ndcg_at_k"] {
        let v = report[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "{key} = {v}");
    }
    // A floor, not the figure: no model is installed here, so this is the
    // full-text backend, which can only find queries that share words with
    // their answer. A ranking change that loses this much recall on the
    // keyword class of the project's own set is a regression (docs/search.md
    // has the figures for every class and backend).
    let keyword = report["by_note"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["note"] == "keyword")
        .unwrap_or_else(|| panic!("no keyword class in {report}"));
    assert!(keyword["recall_at_k"].as_f64().unwrap() >= 0.8, "{keyword}");
    for q in report["per_query"].as_array().unwrap() {
        assert_eq!(
            q["ranks"].as_array().unwrap().len(),
            q["expected"].as_array().unwrap().len()
        );
    }
    let k3 = p.ok("x", &["eval", queries.to_str().unwrap(), "--k", "3"]);
    assert_eq!(k3["k"], 3);
    assert!(k3["recall_at_k"].as_f64() <= report["recall_at_k"].as_f64());

    let bad = p.root().join("bad.yaml");
    std::fs::write(&bad, "queries:\n  - query: x\n    expected: []\n").unwrap();
    let r = p.run("x", &["eval", bad.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert_contains(&r.stderr, "expected must name at least one");
    std::fs::write(&bad, "k: 10\n").unwrap();
    let r = p.run("x", &["eval", bad.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert_contains(&r.stderr, "no `queries:` list");
}
