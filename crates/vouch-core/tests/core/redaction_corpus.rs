//! No secret of the scan's corpus survives a redaction (issue 42): every
//! positive (and every secret the scan misses by design) stored as a source
//! and as a claim's text by a person who let it in as is, then redacted —
//! the source, and the claim — leaves no byte of it in `.vouch/` (the
//! working tree, a fresh `state.db`) nor in an export. One exception, by
//! design and written down in docs/redaction.md: a secret the scan does not
//! find stays in the id of the claim whose text held it (an id is a slug of
//! the text, and the audit log names it in every event); the id of a text
//! whose secret the scan finds is a slug of the masked text.

use crate::secrets_corpus::{misses_by_design, positives};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use vouch_core::clock::FixedClock;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};

/// Whether `hay`, with every `ignored` string taken out, holds `needle`.
fn holds(hay: &[u8], needle: &str, ignored: Option<&str>) -> bool {
    let text = String::from_utf8_lossy(hay);
    let text = match ignored {
        Some(id) => text.replace(id, ""),
        None => text.into_owned(),
    };
    text.contains(needle)
}

/// Every file under `dir` holding `needle` (beside `ignored`).
fn holding(dir: &Path, needle: &str, ignored: Option<&str>, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            holding(&path, needle, ignored, out);
        } else if holds(&std::fs::read(&path).unwrap(), needle, ignored) {
            out.push(path.display().to_string());
        }
    }
}

#[test]
fn no_secret_of_the_corpus_survives_its_redaction() {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "redact", None).unwrap();
    let at = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z").unwrap();
    let root = dir.path().join(".vouch");
    let kb = Kb::open(&root, Arc::new(FixedClock::new(at.into(), 1))).unwrap();
    let alice = Caller::new("alice", Transport::Cli);
    let bob = Caller::new("bob", Transport::Cli);
    let call = |who: &Caller, method: &str, params: Value| -> Value {
        dispatch(&kb, who, method, params.clone())
            .unwrap_or_else(|e| panic!("{method} {params}: {}", e.message))
    };
    let missed = misses_by_design();
    let corpus: Vec<_> = positives().into_iter().chain(missed).collect();
    let found_from = corpus.len() - misses_by_design().len();
    let mut secrets = Vec::new();
    for (i, p) in corpus.iter().enumerate() {
        let text = format!("{}\nitem {i} of the corpus.\n", p.text);
        let src = call(
            &alice,
            "kb.register_source",
            json!({"content": text, "locator": format!("corpus/{i}"), "secrets": "allow"}),
        )["id"]
            .as_str()
            .unwrap()
            .to_string();
        // A claim holding the secret's first line as the corpus has it
        // (with its context: `Bearer …`, `password: …`), citing the source.
        let first = p.secrets[0].1.lines().next().unwrap_or_default();
        let line = p
            .text
            .lines()
            .find(|l| l.contains(first))
            .unwrap_or(first)
            .to_string();
        let proposed = call(
            &alice,
            "kb.propose_claim",
            json!({"text": format!("Item {i} uses {line}"), "evidence": [src],
                   "secrets": "allow"}),
        );
        assert_eq!(proposed["valid"], true, "{}: {proposed}", p.name);
        let claim = proposed["claim_id"].as_str().unwrap().to_string();
        call(
            &bob,
            "kb.approve",
            json!({"proposal_id": proposed["proposal_id"]}),
        );
        let stored = kb.source_content(&src).unwrap().unwrap();
        assert!(holds(&stored, first, None), "{}: stored as is", p.name);
        for (kind, id) in [("source", &src), ("claim", &claim)] {
            call(
                &alice,
                "kb.redact",
                json!({"kind": kind, "id": id, "reason": p.name}),
            );
        }
        if i < found_from {
            assert!(
                !claim.contains(&first.to_lowercase()),
                "{}: id {claim}",
                p.name
            );
        }
        let ignored = (i >= found_from).then(|| claim.clone());
        secrets.extend(
            p.secrets
                .iter()
                .map(|(_, s)| (p.name, s.clone(), ignored.clone())),
        );
    }
    // A fresh index: what SQLite freed is not kept (docs/redaction.md).
    for f in std::fs::read_dir(&root).unwrap() {
        let f = f.unwrap().path();
        if f.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("state.db")
        {
            std::fs::remove_file(f).unwrap();
        }
    }
    drop(kb);
    let kb = Kb::open(&root, Arc::new(FixedClock::new(at.into(), 2))).unwrap();
    dispatch(&kb, &alice, "kb.index_rebuild", json!({})).unwrap();
    let out = dir.path().join("export.tar.gz");
    dispatch(&kb, &alice, "kb.export", json!({"out": out})).unwrap();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&std::fs::read(&out).unwrap()[..]),
        &mut plain,
    )
    .unwrap();
    let doctor = dispatch(&kb, &alice, "kb.doctor", json!({})).unwrap();
    assert_eq!(doctor["ok"], true, "{doctor:#}");
    let mut survived = Vec::new();
    for (name, secret, ignored) in &secrets {
        // Each line of a multi-line secret (a PEM body) on its own.
        for part in secret
            .lines()
            .filter(|l| l.len() >= 16 || secret.len() < 16)
        {
            let mut files = Vec::new();
            holding(&root, part, ignored.as_deref(), &mut files);
            if holds(&plain, part, ignored.as_deref()) {
                files.push("the export".into());
            }
            if !files.is_empty() {
                survived.push(format!("{name}: {files:?}"));
            }
        }
    }
    assert!(
        survived.is_empty(),
        "{} of {} secrets survived: {survived:#?}",
        survived.len(),
        secrets.len()
    );
}
