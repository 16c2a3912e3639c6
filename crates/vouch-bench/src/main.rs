//! Benchmarks that print figures (never assert on timing); `vouch-bench
//! --help` says which and how.

use clap::{Parser, Subcommand};
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::clock::SystemClock;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};

/// Benchmarks that print figures (they never assert on timing).
#[derive(Parser)]
#[command(
    name = "vouch-bench",
    after_help = "Build with `cargo build --release --bins`: retrieval and transports run \
                  the release `vouch` binary beside this one. Set TMPDIR to put the generated \
                  KBs on the disk you want to measure."
)]
struct Args {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand)]
enum Bench {
    /// Propose and approve latency (p50, p99) on generated KBs, and bulk
    /// approval against single approvals.
    Gate {
        /// Claims in each generated KB (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1000,100000")]
        claims: Vec<usize>,
        /// Proposals and approvals timed per KB.
        #[arg(long, default_value_t = 200)]
        ops: usize,
    },
    /// On realistic generated KBs: full index rebuild, kb.search and
    /// kb.context in process and through the JSONL server, one-shot
    /// `vouch search` wall time (both freshness modes), peak RSS.
    Retrieval {
        #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
        claims: Vec<usize>,
    },
    /// JSONL round trip, HTTP requests/second at 16 connections, MCP
    /// initialize and tools/list.
    Transports {
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        claims: Vec<usize>,
    },
    /// Export, export_check and import_apply (into an empty KB, index
    /// refreshed) on realistic generated KBs.
    Bundle {
        #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
        claims: Vec<usize>,
    },
    /// Write a decompression bomb (zeros): one member of N GiB, or N GiB
    /// spread over several members.
    Bomb {
        out: PathBuf,
        #[arg(long, default_value_t = 4)]
        gib: u64,
        #[arg(long, default_value_t = 1)]
        members: u64,
        /// Make the manifest understate the sizes.
        #[arg(long)]
        lie: bool,
    },
    /// The local embedding model: query embedding latency, full and
    /// incremental embedding, approve with a model, hybrid / embedding /
    /// fts5 search through the JSONL server, its peak RSS.
    Embeddings {
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        claims: Vec<usize>,
        /// The model's wheel(s), zip or folder (`vouch model list` says
        /// how to get each model); the model is the one the files are.
        #[arg(
            long,
            env = "VOUCH_MODEL_WHEEL",
            value_delimiter = ',',
            required = true
        )]
        wheel: Vec<PathBuf>,
        /// Threads the model runs on.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// kb.synthesize through the JSONL server (fts5) on generated KBs.
    Synthesize {
        #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
        claims: Vec<usize>,
    },
    /// Knowledge files: validate and import of a generated N-fact folder,
    /// export of an N-claim KB (one-shot CLI).
    Knowledge {
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        facts: Vec<usize>,
    },
    /// kb.search and kb.context with short common-vocabulary queries (what
    /// people type) beside the codename mix, in process and over JSONL.
    Typed {
        #[arg(long, value_delimiter = ',', default_value = "100000")]
        claims: Vec<usize>,
    },
    /// The review pages, rendered server-side: the queue with N pending
    /// proposals, one proposal, a claim with H history events; and `vouch
    /// ui` start-up (to the printed sign-in link).
    Ui {
        #[arg(long, default_value_t = 1000)]
        proposals: usize,
        #[arg(long, default_value_t = 100)]
        history: usize,
    },
    /// The in-memory semantic scan alone (int8 vectors, best 50 of N).
    Scan {
        #[arg(long, value_delimiter = ',', default_value = "10000,116120")]
        rows: Vec<usize>,
    },
    /// The two-step vector scan against the exact one on a real knowledge
    /// base: how much of the exact top 10 and top 50 the shortlist keeps,
    /// and each one's time, for questions one per line in QUESTIONS (its
    /// installed model embeds them).
    ScanRecall {
        kb: std::path::PathBuf,
        #[arg(long)]
        questions: std::path::PathBuf,
    },
    /// `vouch audit verify` on a log with N events and M merges joined, as
    /// teams' branches leave it.
    Audit {
        #[arg(long, value_delimiter = ',', default_value = "100000")]
        events: Vec<usize>,
        #[arg(long, default_value_t = 50)]
        merges: usize,
    },
    /// Write a KB in vouch 1.x's on-disk form at scale: `copies` renamed
    /// copies of a seed the real 1.x wrote (`python tests/vouch1/make_kb.py
    /// SEED 1030` with vouch-kb installed), one re-chained audit log.
    Scale1x {
        /// The seed project (holding `.vouch/`).
        #[arg(long)]
        seed: PathBuf,
        /// The project to write (its `.vouch/` must not exist).
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 100)]
        copies: usize,
        /// Copies that keep their pending proposals (33 each in the seed).
        #[arg(long, default_value_t = 30)]
        pending_copies: usize,
    },
    /// Rebuild, search, context and one-shot CLI figures on an existing KB
    /// (the project folder); `VOUCH_BENCH_BIN` measures another build.
    OnKb {
        project: PathBuf,
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Generate a realistic KB and keep it; prints its folder.
    Generate {
        #[arg(long, default_value_t = 10000)]
        claims: usize,
    },
}

fn main() {
    // SAFETY: the first statement of `main`, as in vouch's own: no other
    // thread exists yet that could read the environment.
    #[allow(unsafe_code)]
    unsafe {
        vouch_model::embedder::settle_matmul_threads()
    };
    match Args::parse().bench {
        Bench::Gate { claims, ops } => {
            println!(
                "| claims in KB | propose p50 | propose p99 | approve p50 | approve p99 | 100 single approves | 1 bulk approve of 100 |"
            );
            println!("|---:|---:|---:|---:|---:|---:|---:|");
            for n in claims {
                gate_bench(n, ops);
            }
        }
        Bench::Retrieval { claims } => vouch_bench::retrieval(&claims),
        Bench::Audit { events, merges } => vouch_bench::audit(&events, merges),
        Bench::Generate { claims } => {
            let g = vouch_bench::generate(claims, 42);
            eprintln!("generated {}", g.counts);
            println!("{}", g.dir.keep().display());
        }
        Bench::Scale1x {
            seed,
            out,
            copies,
            pending_copies,
        } => {
            let files = vouch_bench::scale_1x(&seed, &out, copies, pending_copies);
            println!("wrote {files} files to {}", out.display());
        }
        Bench::OnKb { project, runs } => vouch_bench::on_kb(&project, runs),
        Bench::Transports { claims } => vouch_bench::transports(&claims),
        Bench::Bundle { claims } => {
            println!("| claims | export | bundle size | export_check | import_apply (empty KB) |");
            println!("|---:|---:|---:|---:|---:|");
            for n in claims {
                bundle_bench(n);
            }
        }
        Bench::Synthesize { claims } => vouch_bench::synthesize(&claims),
        Bench::Knowledge { facts } => vouch_bench::knowledge(&facts),
        Bench::Ui { proposals, history } => ui_bench(proposals, history),
        Bench::Typed { claims } => vouch_bench::typed(&claims),
        Bench::Scan { rows } => {
            println!("| vectors (384 dims) | scan p50 / p99 (best 50) |");
            println!("|---:|---:|");
            for n in rows {
                let mut t = vouch_core::index::sqlite::embed::memory::time_scan(n, 384, 50, 200);
                let (p50, p99) = (percentile(&mut t, 0.5), percentile(&mut t, 0.99));
                println!("| {n} | {} / {} |", ms(p50), ms(p99));
            }
        }
        Bench::ScanRecall { kb, questions } => vouch_bench::scan_recall(&kb, &questions),
        Bench::Embeddings {
            claims,
            wheel,
            threads,
        } => vouch_bench::embeddings(&claims, &wheel, threads),
        Bench::Bomb {
            out,
            gib,
            members,
            lie,
        } => write_bomb(&out, gib << 30, members, lie),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Time `f` `runs` times; (p50, p99).
fn timed(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    (percentile(&mut t, 0.5), percentile(&mut t, 0.99))
}

fn ui_bench(n: usize, history: usize) {
    use vouch::ui::pages;
    let dir = tempfile::tempdir().expect("tempdir");
    Kb::init(dir.path(), "bench", None).expect("init");
    let kb = Kb::open(&dir.path().join(".vouch"), Arc::new(SystemClock::default())).expect("open");
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    let cli = Caller::new("alice", Transport::Cli);
    let web = Caller::new("alice", Transport::Web);
    let line = |i: usize| {
        format!(
            "Fact number {i} about subsystem {} is recorded here.",
            i % 37
        )
    };
    let text: String = (0..n.max(1)).map(|i| line(i) + "\n").collect();
    let src = dispatch(
        &kb,
        &agent,
        "kb.register_source",
        json!({"content": text, "locator": "bench.md"}),
    )
    .expect("source");
    let src = src["id"].as_str().expect("id").to_string();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n.max(1) {
        let r = dispatch(
            &kb,
            &agent,
            "kb.propose_claim",
            json!({"text": format!("Fact {i} about subsystem {}", i % 37),
                   "evidence": [{"source_id": src, "quote": line(i)}]}),
        )
        .expect("propose");
        ids.push((
            r["proposal_id"].as_str().expect("id").to_string(),
            r["claim_id"].as_str().expect("id").to_string(),
        ));
    }
    let frame = pages::Frame {
        actor: "alice",
        csrf: "0",
    };
    let (q50, q99) = timed(20, || {
        pages::queue(&kb, &web, &frame, None).expect("queue");
    });
    let mid = &ids[ids.len() / 2].0;
    let (p50, p99) = timed(50, || {
        pages::proposal(&kb, &web, &frame, mid).expect("proposal");
    });
    // A claim with `history` audit events: its proposal, its approval,
    // then confirmations.
    let (pid, claim) = ids[0].clone();
    dispatch(&kb, &cli, "kb.approve", json!({"proposal_id": pid})).expect("approve");
    for _ in 2..history {
        dispatch(&kb, &cli, "kb.confirm", json!({"id": claim})).expect("confirm");
    }
    let events = dispatch(&kb, &web, "kb.audit", json!({"filter": {"object": claim}}))
        .expect("audit")
        .as_array()
        .map_or(0, Vec::len);
    let (c50, c99) = timed(50, || {
        pages::claim(&kb, &web, &frame, &claim).expect("claim");
    });
    // `vouch ui` from exec to the printed sign-in link.
    let mut starts = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let mut child = std::process::Command::new(vouch_bench::vouch_bin())
            .args(["--kb", &dir.path().display().to_string(), "ui"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("vouch ui");
        let mut first = [0u8; 1];
        child
            .stdout
            .as_mut()
            .expect("stdout")
            .read_exact(&mut first)
            .expect("the sign-in link");
        starts.push(start.elapsed());
        let _ = child.kill();
        let _ = child.wait();
    }
    let s50 = percentile(&mut starts, 0.5);
    println!("| page | p50 / p99 |");
    println!("|---|---:|");
    println!("| review queue, {n} pending | {} / {} |", ms(q50), ms(q99));
    println!(
        "| one proposal (its evidence in the source, similar claims) | {} / {} |",
        ms(p50),
        ms(p99)
    );
    println!(
        "| claim page, {events} history events | {} / {} |",
        ms(c50),
        ms(c99)
    );
    println!(
        "| `vouch ui` start-up to the sign-in link (p50 of 5) | {} |",
        ms(s50)
    );
}

fn gate_bench(n: usize, ops: usize) {
    // The same realistic KB as the other suites; proposals cite one of its
    // sources.
    let generated = vouch_bench::generate(n, 42);
    let kb = vouch_bench::open(&generated);
    let src = kb.source_ids().expect("sources")[0].clone();
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    let reviewer = Caller::new("bench-reviewer", Transport::Cli);
    let mut propose_times = Vec::with_capacity(ops);
    let mut ids = Vec::with_capacity(ops);
    for i in 0..ops {
        let t = Instant::now();
        let r = dispatch(
            &kb,
            &agent,
            "kb.propose_claim",
            json!({"text": format!("Benchmark proposal {i} for a KB of {n}"), "evidence": [src]}),
        )
        .unwrap();
        propose_times.push(t.elapsed());
        ids.push(r["proposal_id"].as_str().unwrap().to_string());
    }
    let mut approve_times = Vec::with_capacity(ops);
    for id in &ids {
        let t = Instant::now();
        dispatch(&kb, &reviewer, "kb.approve", json!({"proposal_id": id})).unwrap();
        approve_times.push(t.elapsed());
    }
    // 100 single approvals against one bulk approval of 100.
    let mk = |tag: &str| -> Vec<String> {
        (0..100)
            .map(|i| {
                dispatch(
                    &kb,
                    &agent,
                    "kb.propose_claim",
                    json!({"text": format!("{tag} proposal {i}"), "evidence": [src]}),
                )
                .unwrap()["proposal_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let singles = mk("single");
    let t = Instant::now();
    for id in &singles {
        dispatch(&kb, &reviewer, "kb.approve", json!({"proposal_id": id})).unwrap();
    }
    let single_total = t.elapsed();
    let bulk = mk("bulk");
    let t = Instant::now();
    dispatch(&kb, &reviewer, "kb.approve", json!({"proposal_id": bulk})).unwrap();
    let bulk_total = t.elapsed();
    println!(
        "| {n} | {} | {} | {} | {} | {} | {} |",
        ms(percentile(&mut propose_times, 0.5)),
        ms(percentile(&mut propose_times, 0.99)),
        ms(percentile(&mut approve_times, 0.5)),
        ms(percentile(&mut approve_times, 0.99)),
        ms(single_total),
        ms(bulk_total),
    );
}

fn bundle_bench(n: usize) {
    // The realistic KB: span evidence whose quotes the checks verify.
    let dir = vouch_bench::generate(n, 42).dir;
    let person = Caller::new("bench-person", Transport::Cli);
    let kb = Kb::open(&dir.path().join(".vouch"), Arc::new(SystemClock::default())).unwrap();
    let out = dir.path().join("bench.tar.gz");
    let path = out.to_str().unwrap();
    let t = Instant::now();
    let r = dispatch(&kb, &person, "kb.export", json!({"out": path})).unwrap();
    let export = t.elapsed();
    let t = Instant::now();
    let c = dispatch(&kb, &person, "kb.export_check", json!({"path": path})).unwrap();
    let check = t.elapsed();
    assert_eq!(c["ok"], true, "{c}");
    let target = tempfile::tempdir().expect("tempdir");
    Kb::init(target.path(), "target", None).unwrap();
    let kb2 = Kb::open(
        &target.path().join(".vouch"),
        Arc::new(SystemClock::default()),
    )
    .unwrap();
    let t = Instant::now();
    let a = dispatch(&kb2, &person, "kb.import_apply", json!({"path": path})).unwrap();
    let apply = t.elapsed();
    assert!(a["imported"].as_u64().unwrap() as usize >= n, "{a}");
    println!(
        "| {n} | {} | {:.1} MB | {} | {} |",
        ms(export),
        r["bytes"].as_f64().unwrap() / 1e6,
        ms(check),
        ms(apply)
    );
}

/// A bundle of zeros: `total` bytes over `members` source-content members.
/// With `lie`, the manifest claims each member is 1 byte, so only the tar
/// headers (and the streaming counts) can stop it.
fn write_bomb(out: &std::path::Path, total: u64, members: u64, lie: bool) {
    use std::io::Write;
    let each = total / members;
    let names: Vec<String> = (0..members)
        .map(|i| format!("sources/{:064x}/content", i + 1))
        .collect();
    let files: Vec<_> = names
        .iter()
        .map(|n| json!({"path": n, "sha256": "0".repeat(64), "bytes": if lie { 1 } else { each }}))
        .collect();
    let manifest = serde_json::to_vec(
        &json!({"version": 1, "generated_at": "2026-01-01T00:00:00Z", "files": files}),
    )
    .unwrap();
    let f = std::io::BufWriter::new(std::fs::File::create(out).expect("create bomb"));
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_size(manifest.len() as u64);
    h.set_mode(0o644);
    tar.append_data(&mut h, "manifest.json", &manifest[..])
        .unwrap();
    for n in &names {
        let mut h = tar::Header::new_gnu();
        h.set_size(each);
        h.set_mode(0o644);
        tar.append_data(&mut h, n, std::io::repeat(0).take(each))
            .unwrap();
    }
    let mut gz = tar.into_inner().unwrap();
    gz.flush().unwrap();
    let f = gz.finish().unwrap();
    let len = f.into_inner().ok().unwrap().metadata().unwrap().len();
    println!(
        "wrote {} ({} bytes compressed, {} bytes of zeros in {members} member(s))",
        out.display(),
        len,
        each * members
    );
}
