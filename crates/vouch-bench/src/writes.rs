//! The suites that time writes in process: the review gate (propose,
//! approve, bulk approve) and bundles (export, check, import); and the
//! decompression bomb the bundle checks are measured against.

use serde_json::json;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::clock::SystemClock;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};

use crate::drive::fmt_ms;
use crate::drive::{per_size, summarize};

/// `vouch-bench gate`: propose and approve latency (p50, p99) over `ops`
/// of each on the realistic KB of each size, then 100 single approvals
/// against one bulk approval of 100.
pub fn gate(sizes: &[usize], ops: usize) {
    per_size(
        "| claims in KB | propose p50 | propose p99 | approve p50 | approve p99 | 100 single approves | 1 bulk approve of 100 |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        sizes,
        |n, setup| {
            // Proposals cite one of the generated KB's sources.
            let kb = setup.kb;
            let src = kb.source_ids().expect("sources")[0].clone();
            let agent = Caller::new("bench-agent", Transport::Jsonl);
            let reviewer = Caller::new("bench-reviewer", Transport::Cli);
            let propose = |text: String| -> String {
                dispatch(
                    &kb,
                    &agent,
                    "kb.propose_claim",
                    json!({"text": text, "evidence": [src]}),
                )
                .expect("propose")["proposal_id"]
                    .as_str()
                    .expect("proposal id")
                    .to_string()
            };
            let approve = |ids: serde_json::Value| {
                dispatch(&kb, &reviewer, "kb.approve", json!({"proposal_id": ids}))
                    .expect("approve");
            };
            let mut propose_times = Vec::with_capacity(ops);
            let mut ids = Vec::with_capacity(ops);
            for i in 0..ops {
                let t = Instant::now();
                ids.push(propose(format!("Benchmark proposal {i} for a KB of {n}")));
                propose_times.push(t.elapsed());
            }
            let approve_times: Vec<Duration> = ids
                .iter()
                .map(|id| {
                    let t = Instant::now();
                    approve(json!(id));
                    t.elapsed()
                })
                .collect();
            let singles: Vec<String> = (0..100)
                .map(|i| propose(format!("single proposal {i}")))
                .collect();
            let t = Instant::now();
            for id in &singles {
                approve(json!(id));
            }
            let single_total = t.elapsed();
            let bulk: Vec<String> = (0..100)
                .map(|i| propose(format!("bulk proposal {i}")))
                .collect();
            let t = Instant::now();
            approve(json!(bulk));
            let bulk_total = t.elapsed();
            let (p, a) = (summarize(propose_times), summarize(approve_times));
            println!(
                "| {n} | {} | {} | {} | {} | {} | {} |",
                fmt_ms(p.p50),
                fmt_ms(p.p99),
                fmt_ms(a.p50),
                fmt_ms(a.p99),
                fmt_ms(single_total.as_secs_f64() * 1000.0),
                fmt_ms(bulk_total.as_secs_f64() * 1000.0),
            );
        },
    );
}

/// `vouch-bench bundle`: export, export_check and import_apply (into an
/// empty KB, its index brought up to date) of the realistic KB of each
/// size, whose span evidence the checks verify quote by quote.
pub fn bundle(sizes: &[usize]) {
    per_size(
        "| claims | export | bundle size | export_check | import_apply (empty KB) |",
        "|---:|---:|---:|---:|---:|",
        sizes,
        |n, setup| {
            let kb = &setup.kb;
            let person = Caller::new("bench-person", Transport::Cli);
            let out = setup.g.project().join("bench.tar.gz");
            let path = out.to_str().expect("a UTF-8 temp path");
            let t = Instant::now();
            let r = dispatch(kb, &person, "kb.export", json!({"out": path})).expect("export");
            let export = t.elapsed();
            let t = Instant::now();
            let c = dispatch(kb, &person, "kb.export_check", json!({"path": path})).expect("check");
            let check = t.elapsed();
            assert_eq!(c["ok"], true, "{c}");
            let target = tempfile::tempdir().expect("tempdir");
            Kb::init(target.path(), "target", None).expect("init");
            let empty = Kb::open(
                &target.path().join(".vouch"),
                Arc::new(SystemClock::default()),
            )
            .expect("open");
            let t = Instant::now();
            let a = dispatch(&empty, &person, "kb.import_apply", json!({"path": path}))
                .expect("import_apply");
            let apply = t.elapsed();
            assert!(a["imported"].as_u64().unwrap_or(0) as usize >= n, "{a}");
            println!(
                "| {n} | {} | {:.1} MB | {} | {} |",
                fmt_ms(export.as_secs_f64() * 1000.0),
                r["bytes"].as_f64().unwrap_or(0.0) / 1e6,
                fmt_ms(check.as_secs_f64() * 1000.0),
                fmt_ms(apply.as_secs_f64() * 1000.0)
            );
        },
    );
}

/// `vouch-bench bomb`: a bundle of zeros, `total` bytes over `members`
/// source-content members, written to `out`. With `lie`, the manifest
/// claims each member is 1 byte, so only the tar headers (and the
/// streaming counts) can stop it.
pub fn write_bomb(out: &Path, total: u64, members: u64, lie: bool) {
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
    .expect("manifest");
    let f = std::io::BufWriter::new(std::fs::File::create(out).expect("create bomb"));
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let member = |size: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(0o644);
        h
    };
    tar.append_data(
        &mut member(manifest.len() as u64),
        "manifest.json",
        &manifest[..],
    )
    .expect("write the manifest");
    for n in &names {
        tar.append_data(&mut member(each), n, std::io::repeat(0).take(each))
            .expect("write a member");
    }
    let mut gz = tar.into_inner().expect("finish the tar");
    gz.flush().expect("flush");
    let f = gz.finish().expect("finish the gzip");
    let len = f
        .into_inner()
        .ok()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len());
    println!(
        "wrote {} ({} bytes compressed, {} bytes of zeros in {members} member(s))",
        out.display(),
        len,
        each * members
    );
}
