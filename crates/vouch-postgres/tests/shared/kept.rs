//! A knowledge base whose derived index is the team database's
//! ([`KeptIndex`] over [`TeamIndex`]), through the same `kb.*` methods
//! every transport calls: what is approved is found, what changed in the
//! files by hand is found after a catch-up, another replica answers its
//! first search from the database, and knowledge no approval let in is
//! marked.

use super::{Cluster, approved_claim, registered_source};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use vouch_core::index::kept::KeptIndex;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};
use vouch_postgres::{Database, TeamIndex};

/// The knowledge base in `dir`, its index the team database's at `url`.
fn replica(dir: &Path, url: &str) -> Kb {
    let mut kb = Kb::open(
        &dir.join(".vouch"),
        Arc::new(vouch_core::clock::SystemClock::default()),
    )
    .expect("open");
    let stem = kb.settings().retrieval.fts5_porter;
    let tables = TeamIndex::open(Arc::new(Database::new(url).expect("url")), stem).expect("index");
    kb.set_index(Box::new(KeptIndex::new(Arc::new(tables))));
    kb
}

/// A new knowledge base in a temp dir, served by a replica on the team
/// database at `url`, with a source registered: the folder, the replica
/// and the source's id.
fn first_replica(url: &str) -> (tempfile::TempDir, Kb, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    Kb::init(dir.path(), "t", None).expect("init");
    let a = replica(dir.path(), url);
    let src = registered_source(&a, "the runbook");
    (dir, a, src)
}

fn call(kb: &Kb, who: &str, method: &str, params: Value) -> Value {
    let transport = if who == "alice" {
        Transport::Cli
    } else {
        Transport::Jsonl
    };
    dispatch(kb, &Caller::new(who, transport), method, params)
        .unwrap_or_else(|e| panic!("{method}: {e}"))
}

fn found(kb: &Kb, q: &str) -> Vec<String> {
    call(kb, "agent", "kb.search", json!({"query": q}))
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn a_knowledge_base_served_from_the_team_index() {
    let pg = Cluster::start();
    let (dir, a, src) = first_replica(&pg.url);
    let mut claims = Vec::new();
    for text in [
        "We deploy on Tuesdays after the review.",
        "Signing keys rotate every ninety days.",
        "The database is backed up nightly.",
    ] {
        claims.push(approved_claim(&a, &src, text));
    }
    assert_eq!(found(&a, "deploys tuesday"), [claims[0].clone()]);
    assert_eq!(found(&a, "rotating keys"), [claims[1].clone()]);

    // Another replica (a server: its keeper's rounds catch up, never a
    // request) answers its first search from the database, before any
    // catch-up of its own has read a file.
    let mut b = replica(dir.path(), &pg.url);
    b.configure_index(|o| o.upkeep = vouch_core::IndexUpkeep::Background);
    assert!(vouch_core::index::Upkeep::open_built(b.index(), &b).expect("built"));
    let hits = call(&b, "agent", "kb.search", json!({"query": "nightly backup"}));
    assert_eq!(hits[0]["id"], json!(claims[2]));
    assert!(hits[0]["_meta"].get("unaudited").is_none(), "{hits}");
    assert!(
        vouch_core::index::Configured::caught_up_at(b.index()).is_none(),
        "answered without catching up"
    );
    b.catch_up(None).expect("catch up");

    // A claim file changed by hand (an editor, a pull) is found by its new
    // words after the next catch-up, and marked: no approval wrote these
    // bytes.
    let path = a
        .layout()
        .file(vouch_core::store::Dir::Claims, &claims[1])
        .expect("path");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let yaml = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, yaml.replace("ninety days", "quarter by hand")).expect("write");
    a.catch_up(None).expect("catch up");
    let hits = call(&b, "agent", "kb.search", json!({"query": "quarter hand"}));
    assert_eq!(hits[0]["id"], json!(claims[1]), "{hits}");
    assert_eq!(hits[0]["_meta"]["unaudited"], json!(true), "{hits}");
    assert!(found(&b, "ninety").is_empty());

    // A claim file removed by hand is gone after a catch-up; the rebuild
    // reads the files again, and the other replica sees the same.
    std::fs::remove_file(&path).expect("remove");
    b.catch_up(None).expect("catch up");
    assert!(found(&a, "quarter hand").is_empty());
    let rebuilt = call(&a, "alice", "kb.index_rebuild", json!({}));
    assert_eq!(
        rebuilt["indexed"],
        json!(3),
        "two claims and a source: {rebuilt}"
    );
    assert_eq!(found(&b, "deploys tuesday"), [claims[0].clone()]);
    let status = call(&b, "agent", "kb.status", json!({}));
    assert!(status.is_object(), "{status}");

    // The database away: a search is answered from the files themselves
    // (the substring backend, said in a warning), a context pack too;
    // back, the index answers again.
    pg.run("stop");
    let (hits, warnings) = vouch_core::stored::Store::collecting_warnings(|| {
        dispatch(
            &b,
            &Caller::new("agent", Transport::Jsonl),
            "kb.search",
            json!({"query": "deploy"}),
        )
    });
    let hits = hits.expect("answered from the files");
    assert_eq!(hits[0]["id"], json!(claims[0]));
    assert_eq!(hits[0]["backend"], json!("substring"), "{hits}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("cannot be reached") && w.contains("substring")),
        "{warnings:?}"
    );
    let pack = call(&b, "agent", "kb.context", json!({"task": "deploy"}));
    assert_eq!(pack["items"][0]["id"], json!(claims[0]), "{pack}");
    pg.run("start");
    assert_eq!(found(&b, "deploys tuesday"), [claims[0].clone()]);
}

/// The ids a search by words finds through `kb`'s index itself, in order.
fn lexical(kb: &Kb, q: &str, limit: usize) -> Vec<String> {
    let terms = vouch_core::retrieval::query_terms(q);
    vouch_core::index::LexicalIndex::lexical(
        kb.index(),
        kb,
        &vouch_core::index::Query {
            text: q,
            terms: &terms,
            limit,
            kinds: vouch_core::index::SEARCH_KINDS,
            currency: vouch_core::index::Currency::Any,
            snippets: vouch_core::index::Snippets::Yes,
            backend: None,
            explicit: false,
        },
    )
    .expect("lexical")
    .into_iter()
    .map(|h| h.id)
    .collect()
}

#[test]
fn a_servers_postings_in_memory_find_what_the_database_finds_and_follow_other_replicas() {
    let pg = Cluster::start();
    let (dir, a, src) = first_replica(&pg.url);
    let approve = |text: &str| approved_claim(&a, &src, text);
    let verbs = ["deploys", "rotates", "backs up", "reviews"];
    let things = ["the billing database", "signing keys", "release tokens"];
    for verb in verbs {
        for thing in things {
            approve(&format!("The platform team {verb} {thing} every week."));
        }
    }
    a.catch_up(None).expect("catch up");
    let queries = [
        "deploy",
        "billing database",
        "rotated signing key",
        "weekly release",
        "platform team",
        "tokens keys",
        "nothing matches",
    ];
    // What the database itself finds, before replica b holds postings.
    let mut b = replica(dir.path(), &pg.url);
    b.configure_index(|o| o.upkeep = vouch_core::IndexUpkeep::Background);
    b.catch_up(None).expect("catch up");
    let by_database: Vec<Vec<String>> = queries.iter().map(|q| lexical(&b, q, 100)).collect();
    vouch_core::index::Upkeep::refresh_postings(b.index(), &b).expect("postings");
    for (q, want) in queries.iter().zip(&by_database) {
        let mut got = lexical(&b, q, 100);
        let mut want = want.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "the same documents for {q:?}");
    }
    // bm25 over the postings: a claim saying the word in its text and
    // tags ranks by frequency; the limit keeps the best.
    assert_eq!(lexical(&b, "deploy", 2).len(), 2);

    // Another replica's approval, then its hand removal: b's next round
    // finds the one and drops the other.
    let newest = approve("The payments gateway retries webhooks for a day.");
    assert!(
        lexical(&b, "webhooks gateway", 10).is_empty(),
        "not read yet"
    );
    vouch_core::index::Upkeep::refresh_postings(b.index(), &b).expect("round");
    assert_eq!(
        lexical(&b, "webhooks gateway", 10),
        std::slice::from_ref(&newest)
    );
    let path = a
        .layout()
        .file(vouch_core::store::Dir::Claims, &newest)
        .expect("path");
    std::fs::remove_file(&path).expect("remove");
    a.catch_up(None).expect("catch up");
    vouch_core::index::Upkeep::refresh_postings(b.index(), &b).expect("round");
    assert!(lexical(&b, "webhooks gateway", 10).is_empty());
    // Its own writes are in its postings at once.
    let own = approved_claim(&b, &src, "Invoices are archived after seven years.");
    assert_eq!(lexical(&b, "invoices archived", 10), [own]);
}

#[test]
fn a_replica_that_missed_removals_let_go_reads_its_postings_again() {
    let pg = Cluster::start();
    let (dir, a, src) = first_replica(&pg.url);
    let approve = |text: &str| approved_claim(&a, &src, text);
    let loud = approve("Webhooks webhooks webhooks: the gateway retries webhooks.");
    let quiet = approve("The mailer sends one digest of webhooks a week.");
    let mut b = replica(dir.path(), &pg.url);
    b.configure_index(|o| o.upkeep = vouch_core::IndexUpkeep::Background);
    b.catch_up(None).expect("catch up");
    vouch_core::index::Upkeep::refresh_postings(b.index(), &b).expect("postings");
    assert_eq!(lexical(&b, "webhooks", 1), std::slice::from_ref(&loud));

    // The loud claim removed by hand; the removal's row let go (as a day
    // later) before b read it.
    let path = a
        .layout()
        .file(vouch_core::store::Dir::Claims, &loud)
        .expect("path");
    std::fs::remove_file(&path).expect("remove");
    a.catch_up(None).expect("catch up");
    let mut db = postgres::Client::connect(&pg.url, postgres::NoTls).expect("connect");
    db.batch_execute(
        "INSERT INTO vouch_index_meta (key, value)
             SELECT 'gone_pruned_through', max(seq)::text FROM vouch_index_gone;
         DELETE FROM vouch_index_gone;",
    )
    .expect("let go");
    vouch_core::index::Upkeep::refresh_postings(b.index(), &b).expect("round");
    assert_eq!(
        lexical(&b, "webhooks", 1),
        [quiet],
        "the best hit is a live one"
    );
}
