//! The hostile-bundle corpus, table-driven in process: every bundle here is
//! refused by `export_check`, `import_check` and `import_apply` with a
//! problem naming the file and a reason, and the knowledge base is left byte
//! for byte as it was. The app's `tests/e2e/bundles/hostile.rs` drives a
//! few of these through the real binary; the rest need no process per case.

#[path = "../support/tar.rs"]
mod tarball;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tarball::*;
use vouch_core::clock::FixedClock;
use vouch_core::methods::dispatch;
use vouch_core::{Caller, Kb, Transport};

struct Fixture {
    _dir: tempfile::TempDir,
    kb: Kb,
    source: String,
    claim: String,
    /// The members of a real export of the fixture, without its manifest.
    good: Vec<M>,
    /// The exported archive's bytes.
    whole: Vec<u8>,
}

fn call(kb: &Kb, actor: &str, method: &str, params: Value) -> Value {
    let caller = Caller::new(actor, Transport::Cli);
    dispatch(kb, &caller, method, params).unwrap_or_else(|e| panic!("{method}: {e}"))
}

/// Propose as `agent`, approve as `alice`; returns the proposal's result.
fn reviewed(kb: &Kb, method: &str, params: Value) -> Value {
    let proposed = call(kb, "agent", method, params);
    let id = proposed["proposal_id"].as_str().expect("proposal id");
    call(kb, "alice", "kb.approve", json!({"proposal_id": id}));
    proposed
}

/// A KB with a source, an entity, a claim citing the source and a page
/// citing the claim, exported once.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "corpus", None).unwrap();
    let clock = Arc::new(FixedClock::new(
        chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
            .unwrap()
            .into(),
        1,
    ));
    let kb = Kb::open(&dir.path().join(".vouch"), clock).unwrap();
    let source = call(
        &kb,
        "agent",
        "kb.register_source",
        json!({"content": "Access tokens expire after 24 hours.\n", "locator": "test"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    reviewed(
        &kb,
        "kb.propose_entity",
        json!({"name": "Auth service", "type": "system"}),
    );
    let claim = reviewed(
        &kb,
        "kb.propose_claim",
        json!({"text": "Access tokens expire after 24 hours", "evidence": [source],
               "entities": ["auth-service"]}),
    )["claim_id"]
        .as_str()
        .unwrap()
        .to_string();
    reviewed(
        &kb,
        "kb.propose_page",
        json!({"title": "Auth", "body": "# Auth\n", "claims": [claim]}),
    );
    let out = dir.path().join("good.tar.gz");
    call(&kb, "alice", "kb.export", json!({"out": out}));
    Fixture {
        good: without_manifest(unpack(&out)),
        whole: std::fs::read(&out).unwrap(),
        _dir: dir,
        kb,
        source,
        claim,
    }
}

/// Every file under `.vouch/` but the derived index and the locks.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.retain(|(p, _)| {
        let name = p.file_name().unwrap().to_string_lossy();
        !name.starts_with("state.db") && !name.ends_with(".lock") && name != ".lock"
    });
    out.sort();
    out
}

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    /// Some problem's path contains this...
    path_has: String,
    /// ...and its reason this.
    reason_has: &'static str,
}

fn corpus(f: &Fixture) -> Vec<Case> {
    let good = &f.good;
    let claim_path = format!("claims/{}.yaml", f.claim);
    let content_path = format!("sources/{}/content", f.source);
    let with = |extra: M| {
        let mut v = good.clone();
        v.push(extra);
        v
    };
    let edit = |path: &str, change: &dyn Fn(&mut M)| {
        let mut v = good.clone();
        change(v.iter_mut().find(|m| m.name == path.as_bytes()).unwrap());
        v
    };
    let text_edit = |path: &str, change: &dyn Fn(String) -> String| {
        edit(path, &|m| {
            m.data = change(String::from_utf8(m.data.clone()).unwrap()).into_bytes()
        })
    };
    let case = |name, bytes, path_has: &str, reason_has| Case {
        name,
        bytes,
        path_has: path_has.to_string(),
        reason_has,
    };
    // With the manifest computed before `extra` joins: `extra` is unlisted.
    let listed_then = |members: &[M], extra: &[M]| {
        let mut all = vec![manifest_for(members)];
        all.extend(members.iter().cloned());
        all.extend(extra.iter().cloned());
        gz(&tar_bytes(&all))
    };

    let mut duplicate = good
        .iter()
        .find(|m| m.name == claim_path.as_bytes())
        .unwrap()
        .clone();
    duplicate.data = duplicate.data.iter().map(u8::to_ascii_uppercase).collect();
    let missing: Vec<M> = good
        .iter()
        .filter(|m| m.name != claim_path.as_bytes())
        .cloned()
        .collect();
    let mut sorted = good.clone();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));

    vec![
        // Paths that escape, absolute paths, and what a bundle never carries.
        case(
            "dotdot",
            bundle(with(file("../evil.yaml", b"x"))),
            "../evil.yaml",
            "..",
        ),
        case(
            "dotdot-deep",
            bundle(with(file("claims/../../evil", b"x"))),
            "claims/../../evil",
            "..",
        ),
        case(
            "absolute",
            bundle(with(file("/etc/cron.d/evil", b"x"))),
            "/etc/cron.d/evil",
            "absolute",
        ),
        case(
            "proposed",
            bundle(with(file("proposed/20260101-000000-aaaaaaaa.yaml", b"x"))),
            "proposed/",
            "excluded",
        ),
        case(
            "state-db",
            bundle(with(file("state.db", b"x"))),
            "state.db",
            "excluded",
        ),
        case(
            "audit-log",
            bundle(with(file("audit.log.jsonl", b"{}\n"))),
            "audit.log.jsonl",
            "excluded",
        ),
        // Links and special files.
        case(
            "symlink",
            bundle(with(special("claims/link.yaml", b'2', "/etc/passwd"))),
            "claims/link.yaml",
            "symbolic link",
        ),
        case(
            "hardlink",
            bundle(with(special("claims/hard.yaml", b'1', "/etc/passwd"))),
            "claims/hard.yaml",
            "hard link",
        ),
        case(
            "chardev",
            bundle(with(special("claims/dev.yaml", b'3', ""))),
            "claims/dev.yaml",
            "device",
        ),
        case(
            "blockdev",
            bundle(with(special("claims/blk.yaml", b'4', ""))),
            "claims/blk.yaml",
            "device",
        ),
        case(
            "fifo",
            bundle(with(special("claims/fifo.yaml", b'6', ""))),
            "claims/fifo.yaml",
            "FIFO",
        ),
        // Duplicates and manifest mismatches.
        case(
            "duplicate",
            listed_then(good, &[duplicate]),
            &claim_path,
            "more than once",
        ),
        case(
            "unlisted",
            listed_then(good, &[file("claims/smuggled.yaml", b"id: smuggled\n")]),
            "claims/smuggled.yaml",
            "not listed in manifest",
        ),
        case(
            "missing",
            {
                let mut all = vec![manifest_for(good)];
                all.extend(missing);
                gz(&tar_bytes(&all))
            },
            &claim_path,
            "missing from the archive",
        ),
        case(
            "sha-mismatch",
            {
                let mut all = vec![manifest_for(good)];
                all.extend(text_edit(&claim_path, &|t| {
                    t.replace("24 hours", "24 days")
                }));
                gz(&tar_bytes(&all))
            },
            &claim_path,
            "sha256",
        ),
        // Content that lies about its hash (manifest recomputed, so only the
        // content-address check can catch it).
        case(
            "source-hash",
            bundle(edit(&content_path, &|m| {
                m.data = b"Access tokens never expire.\n".to_vec()
            })),
            &content_path,
            "hashes to",
        ),
        // Knowledge problems: a claim without citations, dangling references.
        case(
            "uncited",
            bundle(text_edit(&claim_path, &|t| {
                let start = t.find("evidence:").unwrap();
                let end = start + t[start..].find("\nentities:").unwrap();
                format!("{}evidence: []{}", &t[..start], &t[end..])
            })),
            &claim_path,
            "cites no source",
        ),
        case(
            "dangling-citation",
            bundle(text_edit(&claim_path, &|t| {
                t.replace(&f.source, "ev-does-not-exist")
            })),
            &claim_path,
            "ev-does-not-exist",
        ),
        case(
            "dangling-page",
            bundle(text_edit("pages/auth.md", &|t| {
                t.replace(&f.claim, "no-such-claim")
            })),
            "pages/auth.md",
            "no-such-claim",
        ),
        // Damaged archives.
        case(
            "truncated",
            f.whole[..f.whole.len() / 2].to_vec(),
            "",
            "truncated",
        ),
        case(
            "not-gzip",
            b"this is not a bundle\n".to_vec(),
            "",
            "not a gzip file",
        ),
        case("empty", Vec::new(), "", "not a gzip file"),
        case("plain-tar", tar_bytes(good), "", "not a gzip file"),
        case(
            "no-manifest",
            gz(&tar_bytes(&sorted)),
            "",
            "does not start with manifest.json",
        ),
    ]
}

#[test]
fn every_hostile_bundle_is_refused_with_a_reason_per_file_and_nothing_written() {
    let f = fixture();
    let cases = corpus(&f);
    assert_eq!(cases.len(), 24);
    let root = f.kb.layout().root().to_path_buf();
    let before = snapshot(&root);
    let mut failures = Vec::new();
    for c in &cases {
        let path = root.parent().unwrap().join(format!("{}.tar.gz", c.name));
        std::fs::write(&path, &c.bytes).unwrap();
        let caller = Caller::new("alice", Transport::Cli);
        for method in ["kb.export_check", "kb.import_check"] {
            let v = dispatch(&f.kb, &caller, method, json!({"path": path})).unwrap();
            let ps = problems(&v);
            if v["ok"] != false
                || !ps
                    .iter()
                    .any(|(p, r)| p.contains(&c.path_has) && r.contains(c.reason_has))
            {
                failures.push(format!(
                    "{}: {method}: no problem on {:?} saying {:?}: {v}",
                    c.name, c.path_has, c.reason_has
                ));
            }
        }
        match dispatch(
            &f.kb,
            &caller,
            "kb.import_apply",
            json!({"path": path, "on_conflict": "overwrite"}),
        ) {
            Ok(v) => failures.push(format!("{}: import_apply succeeded: {v}", c.name)),
            Err(e) => {
                if !(e.message.contains(c.reason_has) && e.message.contains("nothing was written"))
                {
                    failures.push(format!("{}: import_apply: {}", c.name, e.message));
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
        if snapshot(&root) != before {
            failures.push(format!("{}: something was written", c.name));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_untouched_export_is_accepted_so_each_refusal_is_the_corruption() {
    let f = fixture();
    let caller = Caller::new("alice", Transport::Cli);
    let path = f.kb.layout().root().parent().unwrap().join("again.tar.gz");
    std::fs::write(&path, bundle(f.good.clone())).unwrap();
    for method in ["kb.export_check", "kb.import_check"] {
        let v = dispatch(&f.kb, &caller, method, json!({"path": path})).unwrap();
        assert_eq!(v["ok"], true, "{method}: {v}");
    }
}
