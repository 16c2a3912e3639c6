//! A property test over random knowledge bases and questions (seeded, so
//! a failure reproduces): every answer `kb.synthesize` gives is traceable —
//! each sentence a template filled with its cited claims' texts — cites only
//! current approved claims, and stays within `max_chars`.

use serde_json::json;
use std::sync::Arc;
use vouch_core::answer::{Synthesis, rederive};
use vouch_core::clock::SeededClock;
use vouch_core::methods::dispatch;
use vouch_core::model::Claim;
use vouch_core::{Caller, Kb, Transport};

use vouch_core::clock::SeededRng as Rng;

const SUBJECTS: &[&str] = &[
    "The payments service",
    "Auth tokens",
    "The search index",
    "Database backups",
    "The API gateway",
    "Deploys to production",
    "User sessions",
    "Invoice PDFs",
];
const PREDICATES: &[&str] = &[
    "expire after 24 hours",
    "are retried three times",
    "run nightly at 02:00 UTC",
    "are stored in Redis",
    "are owned by the billing team",
    "need approval from a finance lead",
    "are rebuilt every Sunday",
    "are rate limited to 100 requests per second",
];
const QUESTION_WORDS: &[&str] = &[
    "payments",
    "auth",
    "tokens",
    "search",
    "index",
    "backups",
    "gateway",
    "deploys",
    "sessions",
    "invoice",
    "expire",
    "redis",
    "billing",
    "nightly",
    "rate",
    "quantum",
    "kubernetes",
    "what",
    "how",
    "our",
    "the",
    "when",
];

fn claim_text(rng: &mut Rng) -> String {
    format!("{} {}", *rng.pick(SUBJECTS), *rng.pick(PREDICATES))
}

#[test]
fn every_answer_is_traceable_current_and_within_budget() {
    let agent = Caller::new("agent", Transport::Jsonl);
    let person = Caller::new("alice", Transport::Cli);
    let mut answers = 0;
    let mut nonempty = 0;
    for seed in 0..12u64 {
        let mut rng = Rng::new(seed + 1);
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let kb = Kb::open(&dir.path().join(".vouch"), Arc::new(SeededClock::new(seed))).unwrap();
        let n = 5 + rng.below(20);
        let texts: Vec<String> = (0..n).map(|_| claim_text(&mut rng)).collect();
        let src = dispatch(
            &kb,
            &agent,
            "kb.register_source",
            json!({"content": texts.join(".\n"), "locator": "notes"}),
        )
        .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let mut approved: Vec<String> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let r = dispatch(
                &kb,
                &agent,
                "kb.propose_claim",
                json!({"text": format!("{text} (note {i})"), "evidence": [src]}),
            )
            .unwrap();
            // About a quarter stay pending.
            if rng.below(4) == 0 {
                continue;
            }
            dispatch(
                &kb,
                &person,
                "kb.approve",
                json!({"proposal_id": r["proposal_id"]}),
            )
            .unwrap();
            approved.push(r["claim_id"].as_str().unwrap().to_string());
        }
        // Retire some: superseded by a later one, archived, contradicted.
        for w in approved.windows(2).step_by(3) {
            match rng.below(3) {
                0 => {
                    dispatch(
                        &kb,
                        &person,
                        "kb.supersede",
                        json!({"old_id": w[0], "new_id": w[1]}),
                    )
                    .unwrap();
                }
                1 => {
                    dispatch(&kb, &person, "kb.archive", json!({"id": w[0]})).unwrap();
                }
                _ => {
                    dispatch(
                        &kb,
                        &person,
                        "kb.contradict",
                        json!({"a_id": w[0], "b_id": w[1]}),
                    )
                    .unwrap();
                }
            }
        }
        for _ in 0..12 {
            let words = 1 + rng.below(4);
            let question: Vec<&str> = (0..words).map(|_| *rng.pick(QUESTION_WORDS)).collect();
            let max_chars = [1, 40, 120, 300, 4000][rng.below(5)];
            let depth = 1 + rng.below(4);
            let v = dispatch(
                &kb,
                &agent,
                "kb.synthesize",
                json!({"query": question.join(" "), "max_chars": max_chars, "depth": depth}),
            )
            .unwrap();
            let s: Synthesis = serde_json::from_value(v.clone()).unwrap_or_else(|e| {
                panic!("seed {seed}: {e}: {v}");
            });
            rederive(&s).unwrap_or_else(|e| panic!("seed {seed} {question:?}: {e}"));
            assert!(s.answer.chars().count() <= max_chars, "seed {seed}: {v}");
            for c in &s.citations {
                let claim: Claim = kb.load(&c.id).unwrap().expect("cited claim is approved");
                assert!(
                    claim.status.is_current(),
                    "seed {seed}: cites {} ({})",
                    c.id,
                    claim.status
                );
            }
            answers += 1;
            if !s.answer.is_empty() {
                nonempty += 1;
            }
        }
    }
    // Not vacuous: many answers say something (budgets of 1 and 40
    // characters, and questions about what the KB lacks, say nothing).
    assert!(nonempty * 5 > answers, "{nonempty} of {answers} answered");
}
