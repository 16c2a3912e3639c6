//! The app's end-to-end tests in one binary (one link, not 26): the real
//! `vouch` binary driven through a temp project (`common`), one module per
//! concern. `scripts/test.sh -p vouch --test e2e gate::` runs one module.

mod attacks;
mod attacks4;
mod attacks4_reads;
mod attacks5;
mod attacks5_identity;
mod bundles;
mod capture;
mod catalog;
mod common;
mod conformance;
mod crash;
mod first_hour;
mod freshness;
mod fuzz;
mod gate;
mod health;
mod insight;
mod install_mcp;
mod interop_1x;
mod interop_real_1x;
mod knowledge;
mod lifecycle_proposals;
mod limits;
mod mcp_resources;
mod mcp_sdk;
mod mcp_ts_sdk;
mod planted_index;
mod reads_write_nothing;
mod recall;
mod reliability;
mod removal;
mod review_terminal;
mod search;
mod secrets;
mod semantic;
mod servers;
mod soak;
mod synthesize;
mod team_server;
mod teams;
mod transports;
mod trust;
mod ui_browser;
mod watch;
mod workflows;

/// Every file and folder here is a module of this binary: one left out of
/// the list above would silently never compile nor run.
#[test]
fn every_test_file_is_a_module() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e");
    let main = include_str!("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&here).unwrap() {
        let path = entry.unwrap().path();
        let name = match path.extension() {
            Some(ext) if ext == "rs" => path.file_stem(),
            None if path.join("mod.rs").is_file() => path.file_name(),
            _ => None,
        };
        let Some(name) = name.and_then(|n| n.to_str()) else {
            continue;
        };
        if name != "main" && !main.contains(&format!("\nmod {name};\n")) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in tests/e2e/main.rs: {missing:?}"
    );
}

/// A project's time and ids are pinned: the same commands write the same
/// bytes — ids, timestamps, the audit chain's hashes — on every run, and
/// every command is later than the one before it.
#[test]
fn a_pinned_project_writes_the_same_bytes_every_run() {
    let work = |p: &common::Project| {
        let src = p.source("The service stores sessions in Redis.");
        let old = p.claim("Sessions are stored in Redis.", &src);
        let newer = p.claim("Sessions are stored in Postgres since May.", &src);
        p.ok("alice", &["supersede", &old, &newer, "--reason", "moved"]);
        p.propose("Sessions expire after a day.", &src);
        p.start_session("agent", "map the session store");
        // The one line that differs is the folder's own name.
        let mut files = p.snapshot();
        for (name, bytes) in &mut files {
            if name == "config.yaml" {
                let text = String::from_utf8(bytes.clone()).unwrap();
                let kept: Vec<&str> = text
                    .lines()
                    .filter(|l| !l.starts_with("kb_name:"))
                    .collect();
                *bytes = kept.join("\n").into_bytes();
            }
        }
        files
    };
    let (a, b) = (common::Project::new(), common::Project::new());
    let (first, second) = (work(&a), work(&b));
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&first),
        names(&second),
        "two runs wrote different files"
    );
    for ((name, one), (_, two)) in first.iter().zip(&second) {
        assert!(
            one == two,
            "two runs wrote {name} differently:\n{}\n---\n{}",
            String::from_utf8_lossy(one),
            String::from_utf8_lossy(two)
        );
    }
    // The clock moves forward from command to command: the audit log's
    // times are in the order its events were written.
    let times: Vec<String> = a
        .ok("x", &["audit"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["created_at"].as_str().unwrap().to_string())
        .collect();
    assert!(times.len() >= 6, "{times:?}");
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // `init` (command 0) writes no event; the source (command 1) is the first.
    assert!(times[0].starts_with("2026-01-01T01:00:"), "{times:?}");
}
