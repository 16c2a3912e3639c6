//! Benchmarks that print figures (never assert on timing); `vouch-bench
//! --help` says which and how.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Benchmarks that print figures (they never assert on timing).
#[derive(Parser)]
#[command(
    name = "vouch-bench",
    after_help = "Build with `cargo build --release --bins`: every suite that runs `vouch` \
                  (retrieval, transports, ui, …) runs the release binary beside this one \
                  (VOUCH_BENCH_BIN names another). Set TMPDIR to put the generated \
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
    /// The review pages as the real `vouch ui` serves them to a signed-in
    /// browser: the queue with N pending proposals, one proposal, a claim
    /// with H history events; and `vouch ui` start-up (to the printed
    /// sign-in link).
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
    /// Where a server's memory goes on KB (a project or its `.vouch/`):
    /// the resident set after the index, the words' postings, the vectors
    /// and the model are brought in, in turn.
    Memory { kb: std::path::PathBuf },
    /// A random vector for every document of KB that has none, under the
    /// model it already has vectors of: to time search by meaning at a
    /// million documents without hours of embedding. Benchmarks only.
    FillVectors { kb: std::path::PathBuf },
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
        /// Rebuilds by the CLI and by the server (default: `runs`; 0 keeps
        /// the index as it is).
        #[arg(long)]
        rebuilds: Option<usize>,
        /// Seconds a fresh server is left to read its postings before the
        /// timed queries (a million claims wants about a minute).
        #[arg(long, default_value_t = 3)]
        settle: u64,
    },
    /// Growth: the 1.x-form knowledge base of `scale1x` at each number of
    /// copies of the seed (1,000 claims each: 10,100,1000 is 10k, 100k and
    /// 1M claims), made in WORK or reused from an earlier run there, each
    /// measured as `on-kb` does plus its size on disk, in one table.
    Growth {
        /// The seed project (holding `.vouch/`).
        #[arg(long)]
        seed: PathBuf,
        /// Where the knowledge bases are made (`kb-N`) and kept.
        #[arg(long)]
        work: PathBuf,
        #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
        copies: Vec<usize>,
        /// Runs of the one-shot search against git status.
        #[arg(long, default_value_t = 3)]
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
        Bench::Gate { claims, ops } => vouch_bench::gate(&claims, ops),
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
        Bench::OnKb {
            project,
            runs,
            rebuilds,
            settle,
        } => vouch_bench::on_kb(
            &project,
            runs,
            rebuilds.unwrap_or(runs),
            std::time::Duration::from_secs(settle),
        ),
        Bench::Growth {
            seed,
            work,
            copies,
            runs,
        } => vouch_bench::growth(&seed, &work, &copies, runs),
        Bench::Transports { claims } => vouch_bench::transports(&claims),
        Bench::Bundle { claims } => vouch_bench::bundle(&claims),
        Bench::Synthesize { claims } => vouch_bench::synthesize(&claims),
        Bench::Knowledge { facts } => vouch_bench::knowledge(&facts),
        Bench::Ui { proposals, history } => vouch_bench::ui(proposals, history),
        Bench::Typed { claims } => vouch_bench::typed(&claims),
        Bench::Scan { rows } => vouch_bench::scan(&rows),
        Bench::ScanRecall { kb, questions } => vouch_bench::scan_recall(&kb, &questions),
        Bench::Memory { kb } => vouch_bench::memory(&kb),
        Bench::FillVectors { kb } => vouch_bench::fill_vectors(&kb),
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
        } => vouch_bench::write_bomb(&out, gib << 30, members, lie),
    }
}
