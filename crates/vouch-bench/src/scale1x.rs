//! A knowledge base in Python vouch 1.x's on-disk form at any size: copies
//! of a seed that the real 1.x wrote (tests/vouch1/make_kb.py), every id
//! renamed per copy and every derived id derived again, so the files are
//! 1.x's own writing — its field order, its span evidence ids, its relation
//! file names past 100 bytes, its decided records and audit events — at
//! 100 times the size. Generating 100,000 claims through 1.x itself would
//! take about forty minutes; this takes seconds.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use vouch_core::audit::{GENESIS_HASH, event_hash};
use vouch_core::ids::sha256_hex;

/// What a copy renames: every id the seed holds, to the copy's id.
struct Renames {
    ids: HashMap<String, String>,
    /// Source id → the copy's source content.
    contents: HashMap<String, Vec<u8>>,
}

/// The files of `seed` (a project holding `.vouch/`), by path relative to
/// `.vouch/`, skipping the derived index.
fn read_seed(seed: &Path) -> Vec<(String, Vec<u8>)> {
    let root = seed.join(".vouch");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.starts_with("state.db") || rel.ends_with(".lock") {
                continue;
            }
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// The value of a top-level `key: value` line of a YAML file's `text`
/// (quotes trimmed).
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
        .map(|v| v.trim_matches('\''))
}

/// The renames of copy `k` (0 keeps every id).
fn renames(files: &[(String, Vec<u8>)], k: usize) -> Renames {
    let mut ids = HashMap::new();
    let mut contents = HashMap::new();
    let suffix = |id: &str| {
        if k == 0 {
            id.to_string()
        } else {
            format!("{id}-c{k}")
        }
    };
    // Sources: the content gains a line, so the id (its sha256) changes.
    for (path, bytes) in files {
        if let Some(sid) = path
            .strip_prefix("sources/")
            .and_then(|r| r.strip_suffix("/content"))
        {
            let mut content = bytes.clone();
            if k > 0 {
                content.extend_from_slice(format!("(copy {k})\n").as_bytes());
            }
            let new = sha256_hex(&content);
            ids.insert(sid.to_string(), new.clone());
            contents.insert(new, content);
        }
    }
    let mut relations = Vec::new();
    for (path, bytes) in files {
        let Some((dir, name)) = path.split_once('/') else {
            continue;
        };
        let id = name
            .trim_end_matches(".yaml")
            .trim_end_matches(".md")
            .to_string();
        match dir {
            "claims" | "entities" | "pages" | "decided" | "proposed" => {
                ids.insert(id.clone(), suffix(&id));
            }
            "relations" => relations.push(id),
            "evidence" => {
                // 1.x: ev- + sha256("{source}:{start}:{end}")[:16].
                let text = String::from_utf8_lossy(bytes);
                let (Some(src), Some(start), Some(end)) = (
                    field(&text, "source_id"),
                    field(&text, "byte_start"),
                    field(&text, "byte_end"),
                ) else {
                    panic!("{path}: not 1.x span evidence")
                };
                let src = &ids[src];
                let new = format!(
                    "ev-{}",
                    &sha256_hex(format!("{src}:{start}:{end}").as_bytes())[..16]
                );
                ids.insert(id, new);
            }
            _ => {}
        }
    }
    // Relations named `<a>--<type>--<b>` are renamed part by part; the
    // rest (1.x slugs a proposed relation's id to 60 characters) like any id.
    for id in relations {
        let parts: Vec<&str> = id.split("--").collect();
        let new = if parts.len() == 3 {
            format!(
                "{}--{}--{}",
                ids.get(parts[0]).map_or(parts[0], String::as_str),
                parts[1],
                ids.get(parts[2]).map_or(parts[2], String::as_str)
            )
        } else {
            suffix(&id)
        };
        ids.insert(id, new);
    }
    Renames { ids, contents }
}

/// `text` with every id-shaped token the copy renames replaced.
fn rename_text(text: &str, r: &Renames) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        match r.ids.get(token.as_str()) {
            Some(new) => out.push_str(new),
            None => out.push_str(token),
        }
        token.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

fn rename_path(path: &str, r: &Renames) -> String {
    path.split('/')
        .map(|part| {
            let (stem, ext) = match part.rsplit_once('.') {
                Some((s, e)) if e == "yaml" || e == "md" => (s, Some(e)),
                _ => (part, None),
            };
            let stem = r.ids.get(stem).map_or(stem, String::as_str);
            match ext {
                Some(e) => format!("{stem}.{e}"),
                None => stem.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Write `copies` renamed copies of the 1.x-made `seed` into the project
/// `out` (which must not hold a `.vouch/` yet), keeping pending proposals
/// only in the first `pending_copies` copies. One audit log, re-chained.
/// Returns the number of files written.
pub fn scale_1x(seed: &Path, out: &Path, copies: usize, pending_copies: usize) -> usize {
    let files = read_seed(seed);
    let root = out.join(".vouch");
    assert!(!root.exists(), "{} already exists", root.display());
    let log_text = files
        .iter()
        .find(|(p, _)| p == "audit.log.jsonl")
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .expect("the seed has an audit log");
    let mut log = String::new();
    let mut prev = GENESIS_HASH.to_string();
    let mut written = 0;
    for k in 0..copies {
        let r = renames(&files, k);
        for (path, bytes) in &files {
            if path == "audit.log.jsonl" || (path.starts_with("proposed/") && k >= pending_copies) {
                continue;
            }
            // Files of `.vouch/` itself (config, schema version, ignore
            // rules) once: every copy would write the same path.
            if k > 0 && !path.contains('/') {
                continue;
            }
            let target = root.join(rename_path(path, &r));
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            let data = match path.strip_suffix("/content") {
                Some(_) => {
                    let sid = path.split('/').nth(1).unwrap();
                    r.contents[&r.ids[sid]].clone()
                }
                None => rename_text(&String::from_utf8_lossy(bytes), &r).into_bytes(),
            };
            std::fs::write(&target, data).unwrap();
            written += 1;
        }
        for line in log_text.lines().filter(|l| !l.trim().is_empty()) {
            let mut ev: Value = serde_json::from_str(&rename_text(line, &r)).unwrap();
            let o = ev.as_object_mut().unwrap();
            o.remove("hash");
            if k > 0
                && let Some(Value::String(id)) = o.get_mut("id")
            {
                *id = format!("{id}c{k}");
            }
            o.insert("prev_hash".into(), Value::String(prev.clone()));
            let hash = event_hash(&ev);
            ev["hash"] = Value::String(hash.clone());
            prev = hash;
            log.push_str(&ev.to_string());
            log.push('\n');
        }
    }
    std::fs::write(root.join("audit.log.jsonl"), log).unwrap();
    written + 1
}

/// Up to `want` different questions a person might type about the KB's
/// claims: a claim's proper name (a capitalised word after its first) and
/// its last long word, from claims spread over the folder in name order.
fn claim_questions(project: &Path, want: usize) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(project.join(".vouch/claims"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    let step = (files.len() / want.max(1)).max(1);
    let mut out: Vec<String> = Vec::new();
    for f in files.iter().step_by(step) {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let Some(line) = field(&text, "text") else {
            continue;
        };
        let words: Vec<&str> = line.trim_matches('"').split_whitespace().collect();
        let name = words
            .iter()
            .skip(1)
            .find(|w| w.starts_with(|c: char| c.is_uppercase()));
        let last = words.iter().rev().find(|w| w.len() > 3);
        let q = match (name, last) {
            (Some(n), Some(l)) if n != l => format!("{n} {l}"),
            (_, Some(l)) => l.to_string(),
            _ => continue,
        };
        if !out.contains(&q) {
            out.push(q);
        }
        if out.len() == want {
            break;
        }
    }
    assert!(!out.is_empty(), "no claim to draw questions from");
    out
}

/// The four short tasks people type that issue 27 measured context on.
pub(crate) const SHORT_TASKS: &[&str] = &[
    "SQS retries",
    "who owns the tracing service",
    "import",
    "schema migration locked the table",
];

/// `vouch-bench on-kb DIR`: the figures of issue 27 on a knowledge base we
/// did not generate (e.g. [`scale_1x`]'s): index rebuild by the CLI and
/// through the JSONL server, `kb.search`/`kb.context` p50/p99 on short
/// typed queries and tasks, and one-shot `vouch search` beside `git status
/// --porcelain` on the same committed tree, paired run by run.
pub fn on_kb(project: &Path, runs: usize, rebuilds: usize, settle: std::time::Duration) {
    println!("| measure | p50 / p99 |");
    println!("|---|---:|");
    for (measure, value) in measure_kb(project, runs, rebuilds, settle) {
        println!("| {measure} | {value} |");
    }
}

/// `vouch-bench growth`: [`scale_1x`]'s knowledge base at each number of
/// copies of the seed (made in WORK, or the one an earlier run left
/// there), each measured as [`on_kb`] does, with its size on disk: one
/// table, a column per size.
pub fn growth(seed: &Path, work: &Path, copies: &[usize], runs: usize) {
    let mut columns = Vec::new();
    for &n in copies {
        let project = work.join(format!("kb-{n}"));
        if !project.join(".vouch").exists() {
            let t = std::time::Instant::now();
            // The seed's share of pending proposals at every size.
            let files = scale_1x(seed, &project, n, (n * 3).div_ceil(100));
            eprintln!(
                "made {} ({files} files) in {:.0} s",
                project.display(),
                t.elapsed().as_secs_f64()
            );
        }
        // The first background rounds read the postings: about 15 s a
        // hundred thousand claims on this machine's kind.
        let settle = std::time::Duration::from_secs((n as u64 * 15 / 100).max(3));
        let mut rows = vec![
            ("claims".to_string(), claims_in(&project).to_string()),
            (
                "`.vouch/` on disk".to_string(),
                mib(du_bytes(&project.join(".vouch"))),
            ),
        ];
        rows.extend(measure_kb(&project, runs, 1, settle));
        rows.push((
            "`state.db`".to_string(),
            mib(std::fs::metadata(project.join(".vouch/state.db")).map_or(0, |m| m.len())),
        ));
        columns.push((n, rows));
    }
    let Some((_, first)) = columns.first() else {
        return;
    };
    let head: Vec<String> = columns.iter().map(|(n, _)| format!("{n} copies")).collect();
    println!("| measure | {} |", head.join(" | "));
    println!("|---|{}|", vec!["---:"; head.len()].join("|"));
    for (i, (measure, _)) in first.iter().enumerate() {
        let cells: Vec<&str> = columns
            .iter()
            .map(|(_, rows)| rows.get(i).map_or("", |(_, v)| v.as_str()))
            .collect();
        println!("| {measure} | {} |", cells.join(" | "));
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Bytes under `dir` (files' lengths; links not followed).
fn du_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Claim files in the project's knowledge base.
fn claims_in(project: &Path) -> usize {
    std::fs::read_dir(project.join(".vouch/claims")).map_or(0, |d| d.count())
}

/// [`on_kb`]'s figures, as (measure, value) rows in order.
fn measure_kb(
    project: &Path,
    runs: usize,
    rebuilds: usize,
    settle: std::time::Duration,
) -> Vec<(String, String)> {
    use crate::drive::{jsonl_server, summarize, time_calls, vouch_bin};
    use crate::suites::TYPED_QUERIES;
    use std::process::Command;
    use std::time::Instant;
    let bin = vouch_bin();
    eprintln!("vouch: {}", bin.display());
    let time = |cmd: &mut Command| {
        let t = Instant::now();
        let out = cmd.output().expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        t.elapsed()
    };
    // Each rebuild under GNU time for its peak RSS, where it is installed.
    let mut rebuild_rss = Vec::new();
    let cli_rebuild = summarize(
        (0..rebuilds)
            .map(|_| {
                let t = Instant::now();
                let rss = crate::drive::cli_peak_rss_mib(project, &["index", "rebuild"]);
                rebuild_rss.extend(rss);
                t.elapsed()
            })
            .collect(),
    );
    let mut server = jsonl_server(project, &[]);
    server.call(0, "kb.status", serde_json::json!({}));
    let server_rebuild = summarize(
        (0..rebuilds)
            .map(|i| {
                let t = Instant::now();
                server.call(i, "kb.index_rebuild", serde_json::json!({}));
                t.elapsed()
            })
            .collect(),
    );
    drop(server);
    // A fresh server on the built index: its first answer, then the
    // figures once its first background rounds (postings read) passed.
    let t = Instant::now();
    let mut server = jsonl_server(project, &[]);
    server.call(0, "kb.search", serde_json::json!({"query": SHORT_TASKS[0]}));
    let first_answer = t.elapsed();
    std::thread::sleep(settle);
    let typed: Vec<String> = TYPED_QUERIES.iter().map(|q| q.to_string()).collect();
    let short: Vec<String> = SHORT_TASKS.iter().map(|q| q.to_string()).collect();
    // Searches by words alone (a 1.x knowledge base configures hybrid,
    // measured on its own below); context packs as configured.
    let mut timed = |method: &str, key: &str, inputs: &[String], calls: usize| {
        time_calls(calls, |i| {
            let mut params = serde_json::json!({ key: inputs[i % inputs.len()] });
            if method == "kb.search" {
                params["backend"] = "fts5".into();
            }
            server.call(i, method, params);
        })
    };
    // Questions never asked before, one per call: what the mixes above
    // repeat is answered from the server's kept query vectors.
    let distinct = claim_questions(project, 300);
    let search_distinct = timed("kb.search", "query", &distinct, distinct.len());
    let search_typed = timed("kb.search", "query", &typed, 300);
    let search_short = timed("kb.search", "query", &short, 300);
    let context_typed = timed("kb.context", "task", &typed, 200);
    let context_short = timed("kb.context", "task", &short, 200);
    // By meaning too, where the knowledge base has a model and its
    // vectors: else the reason it was not measured.
    let status = server.call(0, "kb.status", serde_json::json!({}));
    let model = status["result"]["retrieval"]["model"].clone();
    let search_hybrid = if model.is_null() {
        Err("no model installed".to_string())
    } else {
        Ok(time_calls(300, |i| {
            server.call(
                i,
                "kb.search",
                serde_json::json!({"query": typed[i % typed.len()], "backend": "hybrid"}),
            );
        }))
    };
    let server_rss = crate::drive::rss_mib(server.pid());
    drop(server);
    // One-shot search against git status on the same committed tree.
    if !project.join(".git").exists() {
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@example.com",
                "commit",
                "-qm",
                "kb",
            ],
        ] {
            time(Command::new("git").args(args).current_dir(project));
        }
    }
    let (mut cli, mut git) = (Vec::new(), Vec::new());
    for i in 0..runs.max(10) + 2 {
        let c = time(
            Command::new(&bin)
                .args(["--json", "search", &short[i % short.len()]])
                .current_dir(project),
        );
        let g = time(
            Command::new("git")
                .args(["status", "--porcelain"])
                .current_dir(project),
        );
        if i >= 2 {
            cli.push(c);
            git.push(g);
        }
    }
    let (cli, git) = (summarize(cli), summarize(git));
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |m: &str, v: String| rows.push((m.to_string(), v));
    if rebuilds > 0 {
        row("`vouch index rebuild` (CLI)", cli_rebuild.pair());
        let peak = rebuild_rss.iter().copied().fold(0.0, f64::max);
        row(
            "`vouch index rebuild` (CLI), peak RSS",
            format!("{peak:.0} MiB"),
        );
        row("`kb.index_rebuild` (JSONL server)", server_rebuild.pair());
    }
    row(
        "a fresh server's first answer (`kb.search`)",
        crate::drive::fmt_ms(first_answer.as_secs_f64() * 1000.0),
    );
    row(
        "`kb.search` fts5, typed queries (JSONL)",
        search_typed.pair(),
    );
    row(
        "`kb.search` fts5, four short tasks (JSONL)",
        search_short.pair(),
    );
    row(
        &format!(
            "`kb.search` fts5, {} distinct questions from claims (JSONL)",
            distinct.len()
        ),
        search_distinct.pair(),
    );
    row(
        "`kb.context` 4,000 chars, typed queries (JSONL)",
        context_typed.pair(),
    );
    row(
        "`kb.context` 4,000 chars, four short tasks (JSONL)",
        context_short.pair(),
    );
    row(
        "`kb.search` hybrid, typed queries (JSONL)",
        search_hybrid.map_or_else(|why| why, |s| s.pair()),
    );
    row(
        "server RSS after the queries (peak)",
        server_rss.map_or("?".into(), |(now, peak)| {
            format!("{now:.0} MiB ({peak:.0} MiB)")
        }),
    );
    row("one-shot `vouch search`, no watcher", cli.pair());
    row("`git status --porcelain`, same tree", git.pair());
    row(
        "one-shot search ÷ git status (p50)",
        format!("{:.2}×", cli.p50 / git.p50),
    );
    rows
}
