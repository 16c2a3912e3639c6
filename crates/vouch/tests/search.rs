//! The derived index: hand edits are seen without a rebuild, a rebuild gives
//! the same answers, pending proposals are never found, any text is a query.

mod common;
use common::*;
use serde_json::json;

fn hits(p: &Project, q: &str) -> Vec<String> {
    p.call("x", "kb.search", json!({"query": q}))
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{}:{}",
                h["kind"].as_str().unwrap(),
                h["id"].as_str().unwrap()
            )
        })
        .collect()
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
    assert!(
        full[0]["snippet"].as_str().unwrap().contains("[Deploys]"),
        "{full}"
    );

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
    assert!(r.stderr.contains("rebuilding"), "{}", r.stderr);
}
