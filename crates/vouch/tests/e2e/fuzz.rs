//! Fuzzed inputs (issue 14), a stable randomized harness: every parser
//! that takes outside input gets mutated copies of a seed corpus
//! (`fuzz/corpus/<target>/`), through the same entry points a stranger's
//! bytes reach — the JSONL frame decoder and dispatch, every method's
//! params, the YAML of every object kind and page frontmatter as files
//! under `.vouch/`, `config.yaml`, the audit log, bundles, knowledge
//! files, search queries, ids.
//!
//! Each input must give an answer or a clear error: no panic (a JSONL
//! `internal_error` counts as one, since the transport turns panics into
//! it), no hang (over 10 s), no empty error message, and no file created
//! outside `.vouch/`. Failing inputs are saved under
//! `target/fuzz-failures/`.
//!
//! Budget: `VOUCH_FUZZ_ITERS` inputs per target (default 150, what CI
//! runs) from seed `VOUCH_FUZZ_SEED` (default fixed, so a CI failure
//! reproduces); `scripts/fuzz.sh` runs it long with a fresh seed.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::{Caller, Kb, Transport, methods};

use vouch_core::clock::SeededRng as Rng;

const TOKENS: &[&str] = &[
    "\0",
    "\u{feff}",
    "---\n",
    "\n---\n",
    "{",
    "}",
    "[",
    "]",
    "[[",
    "{{",
    "&a ",
    "*a",
    "!!binary ",
    "!!python/object:os.system ",
    "~",
    "null",
    "- ",
    ": ",
    "\"",
    "'",
    "\\",
    "\\u0000",
    "\\ud800",
    "1e999",
    "-1",
    "99999999999999999999999",
    "../",
    "../../etc/passwd",
    "/",
    "%2F",
    "\u{202e}",
    "\r\n",
    "\t",
    "#",
    "<script>",
    "true",
    "{}",
    "[]",
    "\"\"",
    "NaN",
    "0x10",
    ".inf",
    "<<: *a",
    "? ",
    "|\n",
    ">-\n",
    "\u{1F600}",
    "ev-",
    "sess-",
    "claim",
    "status: superseded\n",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(10) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            2 => {
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                out.splice(at..at, bytes);
            }
            3 | 4 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes().to_vec();
                out.splice(at..at, t);
            }
            5 if !out.is_empty() => {
                let end = (at + 1 + rng.below(64)).min(out.len());
                let chunk = out[at.min(end)..end].to_vec();
                out.splice(at..at, chunk);
            }
            6 => out.truncate(at),
            7 if !corpus.is_empty() => {
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len() + 1);
                let end = (from + rng.below(128)).min(other.len());
                out.splice(at..at, other[from..end].to_vec());
            }
            8 => {
                // Deep nesting or a long run: limits, not just syntax.
                let (c, n) = if rng.below(2) == 0 {
                    (b'[', 1 + rng.below(5000))
                } else {
                    (b'a', 1 + rng.below(100_000))
                };
                out.splice(at..at, std::iter::repeat_n(c, n));
            }
            _ => {}
        }
    }
    out
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        // Line-oriented corpora: each line is an input.
        if matches!(target, "jsonl" | "query" | "id") {
            out.extend(
                bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        } else {
            out.push(bytes);
        }
    }
    assert!(!out.is_empty(), "empty corpus for {target}");
    out
}

fn iterations() -> usize {
    std::env::var("VOUCH_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

fn seed() -> u64 {
    std::env::var("VOUCH_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_F00D_CAFE_1234)
        .max(1)
}

/// A project with a little of everything, and the KB open in process.
struct Bed {
    _dir: tempfile::TempDir,
    root: PathBuf,
    kb: Kb,
    agent: Caller,
    person: Caller,
    source: String,
}

fn bed() -> Bed {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    Kb::init(&root, "fuzz", None).unwrap();
    let kb = Kb::open(
        &root.join(".vouch"),
        Arc::new(vouch_core::clock::SystemClock::default()),
    )
    .unwrap();
    let agent = Caller::new("agent", Transport::Jsonl);
    let person = Caller::new("alice", Transport::Cli);
    let src = methods::dispatch(
        &kb,
        &agent,
        "kb.register_source",
        json!({"content": "The API rate limit is 100 requests per minute. Deploys freeze on Fridays.",
               "locator": "notes.md"}),
    )
    .unwrap();
    let source = src["id"].as_str().unwrap().to_string();
    let p = methods::dispatch(
        &kb,
        &agent,
        "kb.propose_claim",
        json!({"text": "The API allows 100 requests per minute",
               "evidence": [{"source_id": source, "quote": "The API rate limit is 100 requests per minute"}]}),
    )
    .unwrap();
    methods::dispatch(
        &kb,
        &person,
        "kb.approve",
        json!({"proposal_id": p["proposal_id"]}),
    )
    .unwrap();
    Bed {
        _dir: dir,
        root,
        kb,
        agent,
        person,
        source,
    }
}

/// Names directly in the project folder, but `.vouch/` and our inputs.
fn outside(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".vouch" && !n.starts_with("fuzz-input"))
        .collect()
}

struct Run {
    target: &'static str,
    failures: Vec<String>,
    inputs: usize,
}

impl Run {
    /// Feed one input to `f`, which returns the error messages it saw
    /// (empty ones are failures) or a failure description.
    fn one(&mut self, input: &[u8], f: impl FnOnce() -> Result<Vec<String>, String>) {
        self.inputs += 1;
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(f));
        let took = start.elapsed();
        let problem = match outcome {
            Err(_) => Some("panicked".to_string()),
            Ok(Err(why)) => Some(why),
            Ok(Ok(messages)) if messages.iter().any(|m| m.trim().is_empty()) => {
                Some("an error with an empty message".into())
            }
            Ok(Ok(_)) if took > Duration::from_secs(10) => Some(format!("took {took:?}")),
            Ok(Ok(_)) => None,
        };
        if let Some(p) = problem {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{}-{}", self.target, self.inputs));
            let _ = std::fs::write(&file, input);
            self.failures.push(format!(
                "{}: {p} (input saved to {})",
                self.target,
                file.display()
            ));
        }
    }
}

/// Call a method; an error is fine if it says something, a panic or an
/// internal error is not.
fn call(kb: &Kb, caller: &Caller, method: &str, params: Value) -> Result<Vec<String>, String> {
    match methods::dispatch(kb, caller, method, params) {
        Ok(_) => Ok(Vec::new()),
        Err(e) if e.kind == vouch_core::ErrorKind::Internal => {
            Err(format!("{method}: internal error: {}", e.message))
        }
        Err(e) => Ok(vec![e.message]),
    }
}

fn fuzz(
    target: &'static str,
    mut each: impl FnMut(&Bed, &[u8]) -> Result<Vec<String>, String>,
) -> Run {
    let b = bed();
    let before = outside(&b.root);
    let seeds = corpus(target);
    let mut rng = Rng::new(
        seed()
            ^ target
                .bytes()
                .fold(0u64, |h, c| h.wrapping_mul(31) ^ c as u64),
    );
    let mut run = Run {
        target,
        failures: Vec::new(),
        inputs: 0,
    };
    // The seeds as they are, then mutations.
    for s in &seeds {
        run.one(s, || each(&b, s));
    }
    for _ in 0..iterations() {
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base, &seeds);
        run.one(&input, || each(&b, &input));
    }
    let after = outside(&b.root);
    if after != before {
        run.failures.push(format!(
            "{target}: files appeared outside .vouch/: {:?}",
            after.difference(&before).collect::<Vec<_>>()
        ));
    }
    run
}

/// A file target: its name, its path under `.vouch/`, and the method
/// calls (name, params) that read it.
type FileTarget = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// A mutated file at `rel` under `.vouch/`, read by `reads`, then removed
/// (or put back as it was).
fn file_target(
    target: &'static str,
    rel: &'static str,
    reads: &'static [(&'static str, &'static str)],
) -> Run {
    fuzz(target, |b, input| {
        let rel = rel.replace("{source}", &b.source);
        let path = b.root.join(".vouch").join(&rel);
        let original = std::fs::read(&path).ok();
        std::fs::write(&path, input).map_err(|e| e.to_string())?;
        let mut messages = Vec::new();
        let mut result = Ok(());
        for (method, params) in reads {
            let params: Value = serde_json::from_str(params).unwrap();
            match call(&b.kb, &b.agent, method, params) {
                Ok(m) => messages.extend(m),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        match original {
            Some(o) => std::fs::write(&path, o).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
        result.map(|()| messages)
    })
}

#[test]
fn fuzzed_inputs_get_answers_or_clear_errors() {
    let mut runs = Vec::new();

    runs.push(fuzz("jsonl", |b, input| {
        let v = vouch::jsonl::handle_line(&b.kb, &b.agent, input);
        if v["ok"] == false {
            if v["error"]["code"] == "internal_error" {
                return Err(format!("internal_error: {}", v["error"]["message"]));
            }
            return Ok(vec![
                v["error"]["message"].as_str().unwrap_or("").to_string(),
            ]);
        }
        if v["ok"] != true {
            return Err(format!("not an envelope: {v}"));
        }
        Ok(Vec::new())
    }));

    let kinds: &[FileTarget] = &[
        (
            "claim",
            "claims/fuzz-target.yaml",
            &[
                ("kb.read_claim", r#"{"id": "fuzz-target"}"#),
                ("kb.list_claims", r#"{"limit": 5}"#),
                ("kb.search", r#"{"query": "rate limit"}"#),
                ("kb.context", r#"{"task": "rate limit"}"#),
                ("kb.lint", "{}"),
            ],
        ),
        (
            "entity",
            "entities/fuzz-target.yaml",
            &[
                ("kb.read_entity", r#"{"id": "fuzz-target"}"#),
                ("kb.list_entities", "{}"),
            ],
        ),
        (
            "relation",
            "relations/fuzz-target.yaml",
            &[
                ("kb.read_relation", r#"{"id": "fuzz-target"}"#),
                ("kb.list_relations", "{}"),
            ],
        ),
        (
            "evidence",
            "evidence/ev-fuzz-target.yaml",
            &[
                ("kb.read_evidence", r#"{"id": "ev-fuzz-target"}"#),
                ("kb.list_evidence", "{}"),
            ],
        ),
        (
            "page",
            "pages/fuzz-target.md",
            &[
                ("kb.read_page", r#"{"id": "fuzz-target"}"#),
                ("kb.list_pages", "{}"),
                ("kb.search", r#"{"query": "rate limits"}"#),
            ],
        ),
        (
            "proposal",
            "proposed/20261123-170014-fuzzfuzz.yaml",
            &[
                ("kb.read_proposal", r#"{"id": "20261123-170014-fuzzfuzz"}"#),
                ("kb.list_pending", "{}"),
            ],
        ),
        (
            "session",
            "sessions/sess-20261123-170014-fuzz00.yaml",
            &[
                (
                    "kb.read_session",
                    r#"{"id": "sess-20261123-170014-fuzz00"}"#,
                ),
                ("kb.list_sessions", "{}"),
            ],
        ),
        (
            "source_meta",
            "sources/{source}/meta.yaml",
            &[("kb.list_sources", "{}"), ("kb.source_verify", "{}")],
        ),
        (
            "audit",
            "audit.log.jsonl",
            &[("kb.audit_verify", "{}"), ("kb.audit", r#"{"tail": 3}"#)],
        ),
    ];
    for (target, rel, reads) in kinds {
        runs.push(file_target(target, rel, reads));
    }

    runs.push(fuzz("config", |b, input| {
        let path = b.root.join(".vouch/config.yaml");
        let original = std::fs::read(&path).unwrap();
        std::fs::write(&path, input).unwrap();
        let opened = Kb::open(
            &b.root.join(".vouch"),
            Arc::new(vouch_core::clock::SystemClock::default()),
        );
        std::fs::write(&path, original).unwrap();
        match opened {
            Ok(_) => Ok(Vec::new()),
            Err(e) if e.kind == vouch_core::ErrorKind::Internal => Err(e.message),
            Err(e) => Ok(vec![e.message]),
        }
    }));

    runs.push(fuzz("bundle", |b, input| {
        std::fs::write(b.root.join("fuzz-input.tar.gz"), input).unwrap();
        let mut m = call(
            &b.kb,
            &b.agent,
            "kb.export_check",
            json!({"path": "fuzz-input.tar.gz"}),
        )?;
        m.extend(call(
            &b.kb,
            &b.agent,
            "kb.import_check",
            json!({"path": "fuzz-input.tar.gz"}),
        )?);
        Ok(m)
    }));

    runs.push(fuzz("knowledge", |b, input| {
        let dir = b.root.join("fuzz-input-knowledge");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("global")).unwrap();
        // The same bytes as a YAML fact file and as the index.
        std::fs::write(dir.join("global/pitfalls.yaml"), input).unwrap();
        std::fs::write(dir.join("index.json"), input).unwrap();
        let mut m = call(
            &b.kb,
            &b.agent,
            "kb.knowledge_validate",
            json!({"path": "fuzz-input-knowledge"}),
        )?;
        m.extend(call(
            &b.kb,
            &b.agent,
            "kb.knowledge_import",
            json!({"path": "fuzz-input-knowledge", "dry_run": true}),
        )?);
        Ok(m)
    }));

    runs.push(fuzz("query", |b, input| {
        let q = String::from_utf8_lossy(input).into_owned();
        let mut m = Vec::new();
        for backend in ["fts5", "substring"] {
            m.extend(call(
                &b.kb,
                &b.agent,
                "kb.search",
                json!({"query": q, "backend": backend}),
            )?);
        }
        m.extend(call(
            &b.kb,
            &b.agent,
            "kb.context",
            json!({"task": q, "max_chars": 300}),
        )?);
        m.extend(call(&b.kb, &b.agent, "kb.synthesize", json!({"query": q}))?);
        Ok(m)
    }));

    runs.push(fuzz("id", |b, input| {
        let id = String::from_utf8_lossy(input).into_owned();
        let mut m = Vec::new();
        for method in [
            "kb.read_claim",
            "kb.read_page",
            "kb.read_proposal",
            "kb.read_source",
            "kb.read_evidence",
        ] {
            m.extend(call(&b.kb, &b.agent, method, json!({"id": id}))?);
        }
        m.extend(call(
            &b.kb,
            &b.person,
            "kb.approve",
            json!({"proposal_id": id}),
        )?);
        m.extend(call(
            &b.kb,
            &b.person,
            "kb.reject",
            json!({"proposal_id": id, "reason": "fuzz"}),
        )?);
        m.extend(call(&b.kb, &b.person, "kb.archive", json!({"id": id}))?);
        m.extend(call(
            &b.kb,
            &b.agent,
            "kb.propose_relation",
            json!({"source": id, "relation": "references", "target": id, "dry_run": true}),
        )?);
        Ok(m)
    }));

    let mut report = String::from("| target | inputs | failures |\n|---|---:|---:|\n");
    let mut failures = Vec::new();
    for r in &runs {
        report.push_str(&format!(
            "| {} | {} | {} |\n",
            r.target,
            r.inputs,
            r.failures.len()
        ));
        failures.extend(r.failures.iter().cloned());
    }
    println!("{report}");
    assert!(failures.is_empty(), "{}\n\n{report}", failures.join("\n"));
}

#[test]
fn the_harness_reports_panics_internal_errors_and_empty_messages() {
    let mut run = Run {
        target: "self-test",
        failures: Vec::new(),
        inputs: 0,
    };
    run.one(b"a", || panic!("boom"));
    run.one(b"b", || Err("internal error: x".into()));
    run.one(b"c", || Ok(vec![String::new()]));
    run.one(b"d", || Ok(vec!["a clear message".into()]));
    assert_eq!(run.failures.len(), 3, "{:?}", run.failures);
    // Mutation is deterministic for a seed and changes its input.
    let seeds = vec![b"{\"id\": 1}".to_vec()];
    let a = mutate(&mut Rng::new(7), &seeds[0], &seeds);
    let b = mutate(&mut Rng::new(7), &seeds[0], &seeds);
    assert_eq!(a, b);
    assert!((1..20).any(|s| mutate(&mut Rng::new(s), &seeds[0], &seeds) != seeds[0]));
}
