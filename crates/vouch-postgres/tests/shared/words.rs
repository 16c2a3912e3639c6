//! The documents and their words in the team database ([`TeamIndex`]),
//! against a real PostgreSQL: what a search by words finds there, beside
//! what the embedded index finds in the same knowledge base.

use super::{Cluster, approved_claim, registered_source};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use vouch_core::index::docs::{Doc, read_doc};
use vouch_core::index::engine::{DocRead, DocWrite, Sig, Tables};
use vouch_core::index::{Currency, Query, SEARCH_KINDS, SearchHit, Snippets};
use vouch_core::methods::dispatch;
use vouch_core::model::DocKind;
use vouch_core::retrieval::query_terms;
use vouch_core::{Caller, Kb, Transport};
use vouch_postgres::{Database, TeamIndex};

/// A knowledge base in a temp dir, on the system clock.
fn kb() -> (tempfile::TempDir, Kb) {
    let dir = tempfile::tempdir().expect("tempdir");
    Kb::init(dir.path(), "t", None).expect("init");
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(vouch_core::clock::SystemClock::default()),
    )
    .expect("open");
    (dir, kb)
}

/// A search by words of `text` in `words`: every kind, any status.
fn search(words: &TeamIndex, kb: &Kb, text: &str, limit: usize) -> Vec<SearchHit> {
    search_as(words, kb, text, limit, SEARCH_KINDS, Currency::Any)
}

fn search_as(
    words: &TeamIndex,
    kb: &Kb,
    text: &str,
    limit: usize,
    kinds: &[DocKind],
    currency: Currency,
) -> Vec<SearchHit> {
    let _ = kb;
    let terms = query_terms(text);
    words
        .words(&Query {
            text,
            terms: &terms,
            limit,
            kinds,
            currency,
            snippets: Snippets::Yes,
            backend: None,
            explicit: false,
        })
        .expect("search")
}

fn ids(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn every_replica_finds_by_words_what_the_embedded_index_finds() {
    let pg = Cluster::start();
    let (_dir, kb) = kb();
    let src = registered_source(&kb, "the team's runbook");
    let verbs = ["deploys", "rotates", "backs up", "reviews", "caches"];
    let things = [
        "the database",
        "signing keys",
        "release tokens",
        "the café menu",
    ];
    let days = ["on Tuesdays", "every night", "after each release"];
    let mut claims = Vec::new();
    for (i, verb) in verbs.iter().enumerate() {
        for (j, thing) in things.iter().enumerate() {
            let day = days[(i + j) % days.len()];
            let text = format!("The platform team {verb} {thing} {day}.");
            claims.push(approved_claim(&kb, &src, &text));
        }
    }

    // One replica puts what the files say; another, opening the same
    // database, answers from it without reading a file.
    let writer =
        TeamIndex::open(Arc::new(Database::new(&pg.url).expect("url")), true).expect("open");
    assert!(writer.emptied(), "a new database holds no documents");
    let mut docs: Vec<(Doc, Sig)> = claims
        .iter()
        .map(|id| read_doc(&kb, "claim", id).expect("read").expect("held"))
        .collect();
    docs.push(read_doc(&kb, "source", &src).expect("read").expect("held"));
    writer.put_docs(&docs).expect("put");
    let reader =
        TeamIndex::open(Arc::new(Database::new(&pg.url).expect("url")), true).expect("open");
    assert!(
        !reader.emptied(),
        "the documents are kept for the next replica"
    );
    assert_eq!(reader.held().expect("held"), claims.len() + 1);

    for q in [
        "deploy",
        "deploys database",
        "rotated signing key",
        "cafe",
        "tuesday release",
        "runbook",
        "nothing matches this",
        "keys OR database",
    ] {
        let embedded = dispatch(
            &kb,
            &Caller::new("agent", Transport::Jsonl),
            "kb.search",
            json!({"query": q, "limit": 100, "backend": "fts5"}),
        )
        .expect("kb.search");
        let embedded: BTreeSet<String> = embedded
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| h["id"].as_str().expect("id").to_string())
            .collect();
        let team: BTreeSet<String> = search(&reader, &kb, q, 100)
            .into_iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(team, embedded, "the same documents for {q:?}");
    }
    let hits = search(&reader, &kb, "deploys database", 100);
    assert_eq!(
        hits[0].id,
        read_doc(&kb, "claim", &hits[0].id)
            .expect("read")
            .expect("held")
            .0
            .id
    );
    assert!(
        hits[0].snippet.contains("deploys the database"),
        "{:?}",
        hits[0].snippet
    );
    assert_eq!(
        hits[0].backend, "fts5",
        "the words retriever, as the protocol names it"
    );
}

/// A document of `kind` and `id` saying `body`.
fn doc(kind: &'static str, id: &str, title: &str, body: &str, status: Option<&str>) -> Doc {
    Doc {
        kind,
        id: id.to_string(),
        title: title.to_string(),
        body: body.to_string(),
        status: status.map(str::to_string),
        confidence: (kind == "claim").then_some(0.8),
    }
}

#[test]
fn filters_snippets_changes_and_a_database_that_goes_away() {
    let pg = Cluster::start();
    let (_dir, kb) = kb();
    let words =
        TeamIndex::open(Arc::new(Database::new(&pg.url).expect("url")), true).expect("open");
    words
        .put_docs(&[
            (
                doc(
                    "claim",
                    "c1",
                    "ops",
                    "We deploy on Tuesdays",
                    Some("working"),
                ),
                (1, 10),
            ),
            (
                doc(
                    "claim",
                    "c2",
                    "",
                    "We deployed on Mondays once",
                    Some("superseded"),
                ),
                (2, 20),
            ),
            (
                doc(
                    "claim",
                    "c3",
                    "",
                    "Deploy with the key hunter2",
                    Some("redacted"),
                ),
                (3, 30),
            ),
            (
                doc("page", "p1", "Deploy guide", "The steps", Some("active")),
                (4, 40),
            ),
            (
                doc("entity", "e1", "Café Deploy", "\nA place", None),
                (5, 50),
            ),
            (doc("relation", "r1", "", "e1 serves c1", None), (6, 60)),
        ])
        .expect("put");

    // What a currency admits; a redacted claim is never found.
    let any = search(&words, &kb, "deploy", 10);
    let found: BTreeSet<&str> = ids(&any).into_iter().collect();
    assert_eq!(found, BTreeSet::from(["c1", "c2", "p1", "e1"]));
    let current = search_as(&words, &kb, "deploy", 10, SEARCH_KINDS, Currency::Current);
    let found: BTreeSet<&str> = ids(&current).into_iter().collect();
    assert_eq!(found, BTreeSet::from(["c1", "p1", "e1"]));
    let pages = search_as(&words, &kb, "deploy", 10, &[DocKind::Page], Currency::Any);
    assert_eq!(ids(&pages), ["p1"]);
    // A title counts twice a body.
    assert_eq!(
        ids(&any)[..2]
            .iter()
            .filter(|id| **id == "p1" || **id == "e1")
            .count(),
        2
    );

    // A claim's snippet is its text, its matched word marked.
    let c1 = any.iter().find(|h| h.id == "c1").expect("c1");
    assert_eq!(c1.snippet, "We deploy on Tuesdays");
    assert_eq!(c1.highlights, vec![[3, 9]]);
    assert_eq!(c1.status.as_deref(), Some("working"));
    assert_eq!(c1.confidence, Some(0.8));

    // Accents folded; all the words first, then any of them.
    assert_eq!(ids(&search(&words, &kb, "cafe", 10)), ["e1"]);
    let filled = search(&words, &kb, "tuesdays mondays", 10);
    let found: BTreeSet<&str> = ids(&filled).into_iter().collect();
    assert_eq!(found, BTreeSet::from(["c1", "c2"]));
    // Query syntax in a word is a word, never an error.
    assert!(search(&words, &kb, "deploy' & !(:*", 10).len() >= 3);
    assert!(search(&words, &kb, "'", 10).is_empty());

    // What the vectors and context packs read.
    assert_eq!(words.vector_documents().expect("count"), 5);
    let mut listed = Vec::new();
    words
        .each_listed(
            Some(&[
                ("claim".to_string(), "c2".to_string()),
                ("page".to_string(), "p1".to_string()),
                ("page".to_string(), "gone".to_string()),
            ]),
            &mut |l| listed.push((l.key.0, l.key.1.to_string(), l.sig)),
        )
        .expect("listed");
    assert_eq!(
        listed,
        [
            ("claim", "c2".to_string(), (2, 20)),
            ("page", "p1".to_string(), (4, 40))
        ]
    );
    assert_eq!(
        words.embedded_text("claim", "c1").expect("text").as_deref(),
        Some("We deploy on Tuesdays"),
        "a claim's tags are never embedded"
    );
    assert_eq!(
        words
            .texts_and_confidence(&[
                (DocKind::Page, "p1", true),
                (DocKind::Claim, "c1", false),
                (DocKind::Claim, "nope", true)
            ])
            .expect("texts"),
        [
            ("Deploy guide\nThe steps".to_string(), None),
            (String::new(), Some(0.8)),
            (String::new(), None)
        ]
    );

    // A document put again says only what it says now; a removed one is gone.
    words
        .put_docs(&[(
            doc("claim", "c1", "", "We release on Fridays", Some("working")),
            (7, 70),
        )])
        .expect("put again");
    assert!(!ids(&search(&words, &kb, "deploy", 10)).contains(&"c1"));
    assert_eq!(ids(&search(&words, &kb, "fridays", 10)), ["c1"]);
    assert_eq!(
        words
            .remove_docs(&[("page", "p1"), ("page", "gone")])
            .expect("remove"),
        1
    );
    assert_eq!(
        words.signatures("claim").expect("sigs"),
        [
            ("c1".to_string(), (7, 70)),
            ("c2".to_string(), (2, 20)),
            ("c3".to_string(), (3, 30))
        ]
    );

    // A NUL in a hand-written file (PostgreSQL's text holds none) does not
    // keep the document out.
    words
        .put_docs(&[(
            doc(
                "claim",
                "c9",
                "",
                "A hand-written \0 note on invoices",
                Some("working"),
            ),
            (9, 90),
        )])
        .expect("put a NUL");
    assert_eq!(ids(&search(&words, &kb, "invoices", 10)), ["c9"]);

    // The database away: a clear error; back, the same object answers
    // again.
    pg.run("stop");
    let err = words
        .words(&Query {
            text: "deploy",
            terms: &["deploy".to_string()],
            limit: 10,
            kinds: SEARCH_KINDS,
            currency: Currency::Any,
            snippets: Snippets::No,
            backend: None,
            explicit: false,
        })
        .expect_err("the database is away");
    assert!(err.to_string().contains("cannot be reached"), "{err}");
    pg.run("start");
    assert_eq!(ids(&search(&words, &kb, "fridays", 10)), ["c1"]);

    // Opened with the other stemming, the documents made the first way
    // are dropped (the keeper puts them again).
    let plain =
        TeamIndex::open(Arc::new(Database::new(&pg.url).expect("url")), false).expect("open");
    assert!(plain.emptied());
    assert_eq!(plain.held().expect("held"), 0);
}
