//! Where a server's memory goes on an existing knowledge base: the
//! resident set after each part a server holds is brought in, in the
//! order a server brings them (the index opened and caught up, the words'
//! postings, the vectors, the model), each with what it added; and what
//! the words' search costs on those postings.

use std::path::Path;
use std::sync::Arc;
use vouch_core::Kb;
use vouch_core::clock::SystemClock;

/// This process's resident set and its anonymous part, in MiB.
fn resident() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("RssAnon:"))
}

/// `vouch-bench memory KB`: prints a table of the resident set after each
/// part, the postings' own account of their bytes, and then the time of
/// 600 fts5 searches of the typed queries on them.
pub fn memory(kb_dir: &Path) {
    let vouch = if kb_dir.file_name().is_some_and(|n| n == ".vouch") {
        kb_dir.to_path_buf()
    } else {
        kb_dir.join(".vouch")
    };
    let mut rows: Vec<(String, (f64, f64))> = vec![("started".into(), resident())];
    let mut kb = Kb::open(&vouch, Arc::new(SystemClock::default())).expect("open the KB");
    vouch_model::kb::attach(&mut kb);
    kb.catch_up(None).expect("bring the index in step");
    rows.push(("index opened and caught up".into(), resident()));
    kb.index().refresh_postings(&kb).expect("read the postings");
    let postings = crate::suites::sqlite(&kb).postings_bytes();
    rows.push((
        format!(
            "+ the words' postings (their own account: {:.1} MiB)",
            postings as f64 / 1048576.0
        ),
        resident(),
    ));
    if let Some(embedder) = kb.embedder().cloned() {
        let documents = crate::suites::sqlite(&kb)
            .read_vectors_with(&kb, &embedder, |v| v.documents())
            .expect("read the vectors");
        rows.push((
            format!("+ the vectors ({} documents)", documents.unwrap_or(0)),
            resident(),
        ));
        embedder
            .embed_query("warm the model")
            .expect("run the model");
        rows.push(("+ the model, run once".into(), resident()));
    }
    // What the words' search costs on the postings (in process, no
    // transport), after every row above is read: its allocations are
    // not counted in any part.
    let caller = vouch_core::Caller::new("bench", vouch_core::Transport::Jsonl);
    let words = crate::suites::time_searches_by(
        &kb,
        &caller,
        crate::suites::TYPED_QUERIES,
        600,
        Some("fts5"),
    );
    println!("| after | RSS MiB | anonymous MiB | added MiB |");
    println!("|---|---:|---:|---:|");
    let mut last = rows[0].1.0;
    for (what, (rss, anon)) in rows {
        println!("| {what} | {rss:.0} | {anon:.0} | {:+.0} |", rss - last);
        last = rss;
    }
    println!(
        "\n`kb.search` fts5, typed queries, in process: {} p50 / p99 ({} calls)",
        words.pair(),
        words.n
    );
}
