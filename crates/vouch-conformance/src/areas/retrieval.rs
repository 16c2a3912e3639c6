//! Search and context, synthesis (seed 002), knowledge files (seed 003),
//! semantic search (seed 004).

use serde_json::{Value, json};

use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, brief, ensure, ensure_flag, skip};
use crate::kb::{Kb, approved_claim, methods, propose_claim, register};
use crate::server::Server;

/// Hits of a search: (kind, id).
fn hits(r: &Value) -> Vec<(String, String)> {
    r.as_array()
        .map(|a| {
            a.iter()
                .map(|h| {
                    let g = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (g("kind"), g("id"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The corpus shared by search and synthesis: approved, pending, archived.
struct Corpus {
    approved: Vec<String>,
    pending: String,
    archived: String,
    source: String,
}

fn corpus(kb: &Kb, s: &mut Server) -> Result<Corpus, Miss> {
    let source = register(
        s,
        "Auth notes: tokens, zephyrquokka rotation, sessions.\n",
        "auth.md",
    )?;
    let approved = vec![
        approved_claim(
            kb,
            s,
            "Auth tokens expire after zephyrquokka rotation.",
            &[&source],
        )?,
        approved_claim(
            kb,
            s,
            "Auth sessions are signed by the gateway.",
            &[&source],
        )?,
        approved_claim(kb, s, "Auth login requires a second factor.", &[&source])?,
    ];
    let archived = approved_claim(
        kb,
        s,
        "Auth used basic passwords archivedwombat.",
        &[&source],
    )?;
    s.call("kb.archive", json!({"id": archived, "reason": "retired"}))?;
    let (_, pending) = propose_claim(s, "Auth pendingmarmot keys live in the vault.", &[&source])?;
    Ok(Corpus {
        approved,
        pending,
        archived,
        source,
    })
}

pub fn search(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let c = match corpus(&kb, &mut s) {
        Ok(c) => c,
        Err(Miss::Skip(w)) => return ctx.record("setup", skip(w)),
        Err(m) => return ctx.record("setup", Err(m)),
    };
    ctx.check("approved-claim-found", || {
        let r = s.call("kb.search", json!({"query": "zephyrquokka"}))?;
        ensure(
            hits(&r).contains(&("claim".into(), c.approved[0].clone())),
            format!("no claim hit: {}", brief(&r)),
        )?;
        Ok("a unique word finds its approved claim".into())
    });
    ctx.check("hit-shape", || {
        let r = s.call("kb.search", json!({"query": "auth"}))?;
        let a = r.as_array().ok_or("not an array")?;
        ensure(!a.is_empty(), "no hits for a word every claim holds")?;
        for h in a {
            for k in ["kind", "id", "snippet", "backend"] {
                ensure(
                    h.get(k).is_some_and(Value::is_string),
                    format!("hit lacks string `{k}`: {}", brief(h)),
                )?;
            }
            ensure(
                h.get("score").is_some_and(Value::is_number),
                "hit lacks a numeric score",
            )?;
        }
        Ok(format!(
            "{} hits, each {{kind, id, snippet, score, backend}}",
            a.len()
        ))
    });
    ctx.check_d(
        "pending-never-searched",
        "pending proposals are never visible to search",
        || {
            let r = s.call("kb.search", json!({"query": "pendingmarmot"}))?;
            ensure(
                !hits(&r).iter().any(|(_, id)| id == &c.pending)
                    && !r.to_string().contains("pendingmarmot"),
                format!("pending served: {}", brief(&r)),
            )?;
            Ok("a pending claim's unique word finds nothing".into())
        },
    );
    ctx.check("limit-honoured", || {
        let r = s.call("kb.search", json!({"query": "auth", "limit": 1}))?;
        let n = r.as_array().map_or(usize::MAX, Vec::len);
        ensure(n <= 1, format!("limit 1 gave {n}"))?;
        Ok("limit 1 → at most one hit".into())
    });
    ctx.check("kinds-filter", || {
        let r = s.call(
            "kb.search",
            json!({"query": "zephyrquokka", "kinds": ["source"]}),
        )?;
        let h = hits(&r);
        ensure(
            h.iter().all(|(k, _)| k == "source"),
            format!("kinds [source] returned {h:?}"),
        )?;
        ensure(
            h.iter().any(|(_, id)| id == &c.source),
            "the source holding the word is not found",
        )?;
        Ok("kinds [source] → only the source".into())
    });
    ctx.check_d(
        "query-syntax-is-words",
        "FTS operators typed by a user are words",
        || {
            for q in ["\"auth AND (tokens* OR NEAR:", "-auth:", "NOT OR AND"] {
                let r = s.call("kb.search", json!({"query": q}))?;
                ensure(r.is_array(), format!("{q:?} → {r}"))?;
            }
            Ok("quotes, parentheses, *, :, -, NEAR/AND/OR/NOT never error".into())
        },
    );
    ctx.record(
        "search-requires-query",
        super::basics::expect_code(s.call("kb.search", json!({})), "missing_param"),
    );
    ctx.check("context-serves-approved", || {
        let r = s.call("kb.context", json!({"task": "zephyrquokka rotation"}))?;
        ensure(
            r.to_string().contains(&c.approved[0]),
            format!("the approved claim is not in the pack: {}", brief(&r)),
        )?;
        Ok("the matching approved claim is in the context pack".into())
    });
    ctx.check_d(
        "context-never-serves-pending-or-retired",
        "context uses only current knowledge: archived and pending left out",
        || {
            let r = s.call(
                "kb.context",
                json!({"task": "auth pendingmarmot archivedwombat keys passwords"}),
            )?;
            let t = r.to_string();
            ensure(
                !t.contains("live in the vault") && !t.contains(&c.pending),
                "the pending claim is in the pack",
            )?;
            ensure(
                !t.contains("used basic passwords") && !t.contains(&c.archived),
                "the archived claim is in the pack",
            )?;
            Ok("neither the pending nor the archived claim is served".into())
        },
    );
    ctx.record(
        "context-requires-task",
        super::basics::expect_code(s.call("kb.context", json!({})), "missing_param"),
    );
}

/// The answer text of a synthesis (seed 002 calls it the body).
fn answer(r: &Value) -> String {
    ["answer", "body", "text"]
        .iter()
        .find_map(|k| r.get(*k).and_then(Value::as_str))
        .unwrap_or("")
        .to_string()
}

pub fn synthesis(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let caps = s.call("kb.capabilities", json!({})).unwrap_or(Value::Null);
    if !methods(&caps).iter().any(|m| m == "kb.synthesize") {
        return ctx.record(
            "advertised",
            skip("kb.capabilities does not list kb.synthesize (seed 002 is optional)"),
        );
    }
    let c = match corpus(&kb, &mut s) {
        Ok(c) => c,
        Err(Miss::Skip(w)) => return ctx.record("setup", skip(w)),
        Err(m) => return ctx.record("setup", Err(m)),
    };
    let q = "what's our auth model?";
    let r = s.call("kb.synthesize", json!({"query": q}));
    ctx.check_d(
        "cites-the-approved-claims",
        "the question is the `query` param",
        || {
            let r = r.as_ref().map_err(|e| Miss::Fail(e.to_string()))?;
            let a = answer(r);
            let missing: Vec<&String> = c
                .approved
                .iter()
                .filter(|id| !a.contains(&format!("[{id}]")))
                .collect();
            ensure(
                missing.is_empty(),
                format!("not cited as [id]: {missing:?} in {a:?}"),
            )?;
            Ok("all 3 approved auth claims cited inline as [id]".into())
        },
    );
    ctx.check("every-sentence-cited", || {
        let a = answer(r.as_ref().map_err(|e| Miss::Fail(e.to_string()))?);
        ensure(!a.trim().is_empty(), "empty answer")?;
        let mut n = 0;
        for sent in a
            .split_inclusive(['.', '!', '?', '\n'])
            .map(str::trim)
            .filter(|x| x.len() > 1 && !x.starts_with('['))
        {
            n += 1;
            ensure(
                sent.contains('[') && sent.contains(']'),
                format!("uncited sentence: {sent:?}"),
            )?;
        }
        Ok(format!("{n} sentences, each with a [claim-id]"))
    });
    ctx.check_d(
        "cites-only-current-approved",
        "synthesis cites only current approved claims",
        || {
            let a = answer(r.as_ref().map_err(|e| Miss::Fail(e.to_string()))?);
            let bad: Vec<&str> = a
                .split('[')
                .skip(1)
                .filter_map(|x| x.split(']').next())
                .filter(|id| !c.approved.iter().any(|a| a == id))
                .collect();
            ensure(
                bad.is_empty(),
                format!("cites what is not current and approved: {bad:?}"),
            )?;
            let r2 = s.call(
                "kb.synthesize",
                json!({"query": "pendingmarmot archivedwombat vault passwords"}),
            )?;
            let t = answer(&r2);
            ensure(
                !t.contains("live in the vault") && !t.contains("used basic passwords"),
                format!("pending or archived text served: {t:?}"),
            )?;
            Ok("no pending, archived or unknown id cited".into())
        },
    );
    ctx.check("uncovered-query-gaps", || {
        let r = s.call(
            "kb.synthesize",
            json!({"query": "What is our kubernetes autoscaling policy?"}),
        )?;
        ensure(
            answer(&r).trim().is_empty(),
            format!("answer for an uncovered question: {:?}", answer(&r)),
        )?;
        let g = r
            .get("gaps")
            .and_then(Value::as_array)
            .ok_or("no gaps array")?;
        ensure(!g.is_empty(), "gaps is empty")?;
        Ok(format!(
            "empty body, gaps {}",
            brief(&Value::Array(g.clone()))
        ))
    });
    ctx.check("synthesis-confidence", || {
        let r = r.as_ref().map_err(|e| Miss::Fail(e.to_string()))?;
        let v = r
            .pointer("/_meta/synthesis_confidence")
            .and_then(Value::as_str)
            .unwrap_or("");
        ensure(
            ["high", "medium", "low"].contains(&v),
            format!("_meta.synthesis_confidence {v:?}"),
        )?;
        Ok(format!("_meta.synthesis_confidence: {v}"))
    });
}

const INDEX: &str = r#"{"version":1,"last_updated":"2026-04-13T00:00:00Z","total_facts":1,"facts":[{"id":"global:tool-quirk:001","fact":"The linter ignores vendored files.","category":"tool-quirk","domain":"global","confidence":0.95,"tags":["lint"]}]}"#;
const QUIRKS: &str = "---\ndomain: global\ncategory: tool-quirk\nversion: 1\nlast_updated: \"2026-04-13\"\n---\n\n# Quirks\n\n## Lint\n\n- id: global:tool-quirk:001\n  fact: \"The linter ignores vendored files.\"\n  confidence: 0.95\n  tags: [lint]\n";
const BAD_INDEX: &str = r#"{"version":1,"last_updated":"2026-04-13T00:00:00Z","total_facts":1,"facts":[{"id":"not an id","fact":"Bad.","category":"rumour","domain":"global","confidence":1.7}]}"#;

pub fn knowledge_files(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let caps = s.call("kb.capabilities", json!({})).unwrap_or(Value::Null);
    let ms = methods(&caps);
    if ![
        "kb.knowledge_validate",
        "kb.knowledge_import",
        "kb.knowledge_export",
    ]
    .iter()
    .all(|m| ms.iter().any(|x| x == m))
    {
        return ctx.record("advertised", skip("kb.knowledge_validate/_import/_export not listed (vouch's method names for seed 003)"));
    }
    let d = "kb.knowledge_{validate,import,export} {path|out} are vouch's names for seed 003";
    let put = |rel: &str, body: &str| {
        let p = kb.dir().join(rel);
        std::fs::create_dir_all(p.parent().unwrap_or(kb.dir()))
            .and_then(|_| std::fs::write(p, body))
    };
    if let Err(e) = put("knowledge/index.json", INDEX)
        .and(put("knowledge/global/tool-quirks.yaml", QUIRKS))
        .and(put("bad/index.json", BAD_INDEX))
    {
        return ctx.record("setup", Err(e.to_string().into()));
    }
    ctx.check_d("validate-accepts-valid", d, || {
        let r = s.call("kb.knowledge_validate", json!({"path": "knowledge"}))?;
        ensure(r.get("ok") == Some(&json!(true)), brief(&r))?;
        Ok("a seed-003 folder validates".into())
    });
    ctx.check_d("validate-refuses-invalid", d, || {
        let r = s.call("kb.knowledge_validate", json!({"path": "bad"}));
        match r {
            Ok(v) => ensure_flag(&v, "ok", false, "bad id, category and confidence accepted")?,
            Err(e) => return Ok(format!("refused: {e}")),
        }
        Ok("bad id format, category and confidence → ok: false".into())
    });
    let before = kb
        .snapshot()
        .into_iter()
        .filter(|(p, _)| p.starts_with("claims/"))
        .count();
    let imp = s.call("kb.knowledge_import", json!({"path": "knowledge"}));
    ctx.check_d("import-goes-through-the-gate", d, || {
        imp.as_ref().map_err(|e| Miss::Fail(e.to_string()))?;
        let after = kb
            .snapshot()
            .into_iter()
            .filter(|(p, _)| p.starts_with("claims/"))
            .count();
        ensure(
            after == before,
            "import wrote durable claims without review",
        )?;
        let p = s.call("kb.list_pending", json!({}))?;
        ensure(
            p.as_array().is_some_and(|a| !a.is_empty()),
            "no pending proposal after import",
        )?;
        Ok("facts arrive as pending proposals".into())
    });
    ctx.check_d("export-writes-approved-facts", d, || {
        let pending = s.call("kb.list_pending", json!({}))?;
        let pid = pending
            .as_array()
            .and_then(|a| a.first())
            .and_then(|p| p.get("id"))
            .and_then(Value::as_str)
            .ok_or("nothing pending")?
            .to_string();
        kb.approve(&pid)?
            .map_err(|e| Miss::Fail(format!("--approve: {e}")))?;
        s.call("kb.knowledge_export", json!({"out": "exported"}))?;
        let idx: Value = serde_json::from_str(
            &std::fs::read_to_string(kb.dir().join("exported/index.json"))
                .map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        ensure(
            idx.get("version") == Some(&json!(1)),
            "index.json version is not 1",
        )?;
        let facts = idx
            .get("facts")
            .and_then(Value::as_array)
            .ok_or("no facts array")?;
        ensure(
            idx.get("total_facts") == Some(&json!(facts.len())),
            "total_facts differs from facts",
        )?;
        ensure(
            facts.len() == 1,
            format!("{} facts exported, one approved", facts.len()),
        )?;
        for f in facts {
            for k in ["id", "fact", "category", "domain", "confidence"] {
                ensure(
                    f.get(k).is_some_and(|v| !v.is_null()),
                    format!("fact lacks {k}"),
                )?;
            }
            let id = f["id"].as_str().unwrap_or("");
            ensure(
                id.split(':').count() == 3,
                format!("id {id:?} is not {{domain}}:{{category}}:{{sequence}}"),
            )?;
        }
        Ok("index.json v1, total_facts = facts, required fields, id format".into())
    });
}

pub fn semantic(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let caps = s.call("kb.capabilities", json!({})).unwrap_or(Value::Null);
    let retrieval: Vec<String> = caps
        .get("retrieval")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ctx.check("hit-backend-is-advertised", || {
        let src = register(&mut s, "Login flow notes.\n", "login.md")?;
        s.call("kb.search", json!({"query": "login"}))?;
        let r = s.call("kb.search", json!({"query": "login", "kinds": ["source"]}))?;
        let bad: Vec<String> = r
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| h.get("backend").and_then(Value::as_str))
            .filter(|b| !retrieval.iter().any(|x| x == b))
            .map(str::to_string)
            .collect();
        ensure(
            bad.is_empty(),
            format!("hits from backends not in capabilities.retrieval {retrieval:?}: {bad:?}"),
        )?;
        let _ = src;
        Ok(format!("every hit's backend is in {retrieval:?}"))
    });
    let backend = ["hybrid", "embedding"]
        .into_iter()
        .find(|b| retrieval.iter().any(|x| x == b));
    let Some(backend) = backend else {
        return ctx.record(
            "lexically-disjoint-found",
            skip(format!(
                "capabilities.retrieval {retrieval:?} lists neither embedding nor hybrid (seed 004)"
            )),
        );
    };
    ctx.check("lexically-disjoint-found", || {
        let src = register(
            &mut s,
            "The login flow uses session cookies signed by the API.\n",
            "flow.md",
        )?;
        let id = approved_claim(
            &kb,
            &mut s,
            "The login flow uses session cookies signed by the API.",
            &[&src],
        )?;
        let r = s.call(
            "kb.search",
            json!({"query": "how do we authenticate users", "backend": backend}),
        )?;
        ensure(
            hits(&r).iter().any(|(_, h)| h == &id),
            format!("backend {backend}: {}", brief(&r)),
        )?;
        Ok(format!(
            "backend {backend} finds the claim with no shared word"
        ))
    });
}
