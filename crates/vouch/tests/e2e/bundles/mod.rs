//! Bundles end to end through the real binary: deterministic export, the
//! import diff and conflict modes, the gate on agent transports, and a corpus
//! of hostile bundles — built here from raw tar bytes, including what the
//! `tar` crate refuses to write — each refused by export-check, import-check
//! and import-apply with a reason naming the file, and nothing written.

use crate::common::*;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use std::io::Write;
use vouch_core::ids::sha256_hex;
// Building bundles by hand: shared with the core's corpus test.
#[path = "../../../../vouch-core/tests/support/tar.rs"]
mod tarball;
use tarball::*;

mod export;
mod hostile;
mod import;
mod unreviewed;

struct Fixture {
    p: Project,
    source: String,
    claim: String,
}

fn fixture() -> Fixture {
    let p = Project::new();
    let source = p.source("Access tokens expire after 24 hours.\n");
    let e = p.ok(
        "agent",
        &["propose-entity", "Auth service", "--type", "system"],
    );
    p.ok("alice", &["approve", e["proposal_id"].as_str().unwrap()]);
    let c = p.ok(
        "agent",
        &[
            "propose-claim",
            "Access tokens expire after 24 hours",
            "--evidence",
            &source,
            "--entity",
            "auth-service",
        ],
    );
    p.ok("alice", &["approve", c["proposal_id"].as_str().unwrap()]);
    let claim = c["claim_id"].as_str().unwrap().to_string();
    let pg = p.ok(
        "agent",
        &[
            "propose-page",
            "Auth",
            "--body",
            "# Auth\n",
            "--claim",
            &claim,
        ],
    );
    p.ok("alice", &["approve", pg["proposal_id"].as_str().unwrap()]);
    Fixture { p, source, claim }
}

fn export(p: &Project, name: &str) -> std::path::PathBuf {
    let out = p.root().join(name);
    let v = p.ok("alice", &["export", out.to_str().unwrap()]);
    assert_eq!(v["path"], out.canonicalize().unwrap().display().to_string());
    out
}

/// Every hostile bundle must be refused by all three commands, with a
/// problem naming `path_has` whose reason contains `reason_has`, and leave
/// `.vouch/` exactly as it was.
fn assert_refused(p: &Project, name: &str, bytes: &[u8], path_has: &str, reason_has: &str) {
    let path = p.root().join(format!("{name}.tar.gz"));
    std::fs::write(&path, bytes).unwrap();
    let path = path.to_str().unwrap();
    let before = p.snapshot();
    for cmd in ["export-check", "import-check"] {
        let r = p.run("alice", &["--json", cmd, path]);
        assert_eq!(
            r.code, 2,
            "{name}: {cmd} exit {}: {}{}",
            r.code, r.stdout, r.stderr
        );
        let v = r.json();
        assert_eq!(v["ok"], false, "{name}: {cmd}: {v}");
        let ps = problems(&v);
        assert!(
            ps.iter()
                .any(|(p, r)| p.contains(path_has) && r.contains(reason_has)),
            "{name}: {cmd}: no problem on {path_has:?} saying {reason_has:?}: {ps:#?}"
        );
    }
    let r = p.run(
        "alice",
        &["import-apply", path, "--on-conflict", "overwrite"],
    );
    assert_eq!(
        r.code, 2,
        "{name}: import-apply exit {}: {}",
        r.code, r.stderr
    );
    assert!(
        r.stderr.contains(reason_has) && r.stderr.contains("nothing was written"),
        "{name}: import-apply: {}",
        r.stderr
    );
    assert_eq!(before, p.snapshot(), "{name}: something was written");
}
