//! A team server's replicas and meaning: a decision on one is found by
//! meaning on another, and a new replica takes the vectors the others'
//! models made from the team database instead of running its own model.

use super::{AGENT, REVIEWER, ok, propose, psql, replica_of, team_cli, team_project};
use crate::common::postgres::Postgres;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[test]
fn a_decision_on_one_replica_is_found_by_meaning_on_another() {
    let pg = Postgres::start();
    let p = team_project();
    let model = p.ok("tester", &["model", "import", &crate::semantic::wheel()]);
    assert_eq!(model["installed"]["state"], "ok", "{model}");
    let a = replica_of(&p, &pg.url, &[]);
    let b = replica_of(&p, &pg.url, &[]);
    let id = propose(&a, "The billing worker retries a failed charge three times");
    let claim = ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": id}))["object_id"]
        .as_str()
        .expect("claim")
        .to_string();
    // No word in common with the claim: found by its meaning.
    let start = Instant::now();
    loop {
        let hits = ok(
            &a,
            AGENT,
            "kb.search",
            json!({"query": "how often is a declined payment attempted again", "backend": "embedding"}),
        );
        if hits
            .as_array()
            .is_some_and(|h| h.iter().any(|x| x["id"] == json!(claim)))
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{hits}");
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "found by meaning on a {} ms after b approved it",
        start.elapsed().as_millis()
    );
}

/// `kb.status`'s account of the vectors on `s` once nothing is pending
/// and at least `documents` have vectors (up to 60 s).
fn vectors_in_step(s: &vouch_clients::HttpServer, documents: u64) -> Value {
    let start = Instant::now();
    loop {
        let status = ok(s, AGENT, "kb.status", json!({}));
        let v = &status["retrieval"]["vectors"];
        if v["pending"] == json!(0) && v["documents"].as_u64().is_some_and(|d| d >= documents) {
            return v.clone();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{status}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A replica with an index of its own on a new host (here: a new folder)
/// fills its vectors from what the other replicas' models made, kept in
/// the team database by text: its own model runs on no document, and it
/// finds by meaning what they find. Taken and kept are counted in
/// `kb.status`.
#[test]
fn a_new_replica_takes_the_teams_vectors_and_runs_its_model_on_none() {
    let pg = Postgres::start();
    let p = team_project();
    let model = p.ok("tester", &["model", "import", &crate::semantic::wheel()]);
    assert_eq!(model["installed"]["state"], "ok", "{model}");
    let own: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().expect("dir")).collect();
    let at = |i: usize| own[i].path().join("index").display().to_string();
    let a = replica_of(&p, &pg.url, &[("VOUCH_INDEX_DIR", &at(0))]);
    let texts = [
        "The billing worker retries a failed charge three times",
        "Invoices are emailed on the first business day of the month",
        "The search cluster is reindexed every Sunday night",
        "Refunds above five hundred euros need a second approver",
    ];
    let mut claims = Vec::new();
    for text in texts {
        let id = propose(&a, text);
        let approved = ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": id}));
        claims.push(approved["object_id"].as_str().expect("claim").to_string());
    }
    // Claims and their sources.
    let documents = 2 * texts.len() as u64;
    let on_a = vectors_in_step(&a, documents);
    assert_eq!(on_a["shared"]["taken"], json!(0), "{on_a}");
    let kept = on_a["shared"]["kept"].as_u64().expect("kept");
    assert!(kept >= documents, "{on_a}");
    let in_db = psql(&pg.url, "SELECT count(*) FROM vouch_vectors");
    assert_eq!(in_db.trim(), kept.to_string());
    let c = replica_of(&p, &pg.url, &[("VOUCH_INDEX_DIR", &at(1))]);
    let on_c = vectors_in_step(&c, documents);
    assert_eq!(
        on_c["shared"]["kept"],
        json!(0),
        "its model made nothing: {on_c}"
    );
    assert!(
        on_c["shared"]["taken"].as_u64().expect("taken") >= documents,
        "{on_c}"
    );
    assert!(
        on_c["shared"]["database"]
            .as_str()
            .is_some_and(|d| d.starts_with("the team database postgresql://")),
        "{on_c}"
    );
    // No word in common with the claim: found by its meaning.
    let hits = ok(
        &c,
        AGENT,
        "kb.search",
        json!({"query": "how often is a declined payment attempted again", "backend": "embedding"}),
    );
    assert_eq!(hits[0]["id"], json!(claims[0]), "{hits}");
}

/// `vouch team prune-vectors` removes from the team database the vectors
/// of a text no document holds any more (a claim edited by hand, as a
/// teammate's merge would bring), once older than the grace; the texts
/// the files still hold keep theirs, and a replica finds by meaning as
/// before. A second prune finds nothing to remove.
#[test]
fn pruning_removes_the_vectors_of_a_text_edited_away() {
    let pg = Postgres::start();
    let p = team_project();
    let model = p.ok("tester", &["model", "import", &crate::semantic::wheel()]);
    assert_eq!(model["installed"]["state"], "ok", "{model}");
    let a = replica_of(&p, &pg.url, &[]);
    let texts = [
        "The billing worker retries a failed charge three times",
        "Invoices are emailed on the first business day of the month",
    ];
    let claims: Vec<String> = texts
        .iter()
        .map(|text| {
            let id = propose(&a, text);
            ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": id}))["object_id"]
                .as_str()
                .expect("claim")
                .to_string()
        })
        .collect();
    vectors_in_step(&a, 2 * texts.len() as u64);
    // No replica keeps vectors while the rows are counted.
    drop(a);
    let prune = |p| team_cli(p, &pg.url, &["prune-vectors"]);
    let rows = || {
        psql(&pg.url, "SELECT count(*) FROM vouch_vectors")
            .trim()
            .to_string()
    };
    let before = rows();
    // Nothing is gone: nothing removed.
    let first = prune(&p);
    assert_eq!(first["removed"], json!(0), "{first}");
    assert_eq!(first["left"].to_string(), before, "{first}");
    // A teammate's edit, and every row made long enough ago.
    let path = p
        .root()
        .join(".vouch/claims")
        .join(format!("{}.yaml", claims[1]));
    let yaml = std::fs::read_to_string(&path).expect("claim file");
    std::fs::write(
        &path,
        yaml.replace("first business day", "last business day"),
    )
    .expect("edited");
    psql(
        &pg.url,
        "UPDATE vouch_vectors SET made_at = now() - interval '2 hours'",
    );
    // In an index of its own, as on a replica's host (none is built in
    // the shared tree).
    let own = tempfile::tempdir().expect("index dir");
    let own_dir = own.path().display().to_string();
    let pruned = team_cli(&p, &pg.url, &["prune-vectors", "--index-dir", &own_dir]);
    assert!(
        own.path().join("state.db").is_file(),
        "its index is in {own_dir}"
    );
    assert_eq!(pruned["removed"], json!(1), "{pruned}");
    assert_eq!(pruned["other_models"]["left"], json!(0), "{pruned}");
    assert_eq!(pruned["left"].to_string(), rows(), "{pruned}");
    assert!(
        pruned["database"]
            .as_str()
            .is_some_and(|d| d.starts_with("the team database postgresql://")),
        "{pruned}"
    );
    assert_eq!(prune(&p)["removed"], json!(0));
    let b = replica_of(&p, &pg.url, &[]);
    vectors_in_step(&b, 2 * texts.len() as u64);
    let hits = ok(
        &b,
        AGENT,
        "kb.search",
        json!({"query": "how often is a declined payment attempted again", "backend": "embedding"}),
    );
    assert_eq!(hits[0]["id"], json!(claims[0]), "{hits}");
}
