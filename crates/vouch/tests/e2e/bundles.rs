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

// ----- building bundles by hand: shared with the core's corpus test ---------------------

#[path = "../../../vouch-core/tests/support/tar.rs"]
mod tarball;
use tarball::*;

// ----- a KB with some of everything -----------------------------------------------------

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

// ----- export -------------------------------------------------------------------------------

#[test]
fn export_is_byte_identical_sorted_and_carries_exactly_the_bundle_files() {
    let f = fixture();
    let p = &f.p;
    // Things that must stay out: a pending proposal, the index, the audit log.
    p.propose("A draft that is still pending", &f.source);
    p.ok("x", &["search", "tokens"]);
    assert!(p.vouch_dir().join("state.db").exists());

    let a = export(p, "a.tar.gz");
    let b = export(p, "b.tar.gz");
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "two exports of the same KB differ"
    );

    let members = unpack(&a);
    let names: Vec<String> = members
        .iter()
        .map(|m| String::from_utf8(m.name.clone()).unwrap())
        .collect();
    assert_eq!(names[0], "manifest.json");
    let mut sorted = names[1..].to_vec();
    sorted.sort();
    assert_eq!(names[1..], sorted[..], "members are not sorted");
    for n in &names {
        assert!(
            !n.starts_with("proposed/") && !n.starts_with("state.db") && n != "audit.log.jsonl",
            "{n} must not be exported"
        );
    }
    for want in [
        "config.yaml".to_string(),
        format!("claims/{}.yaml", f.claim),
        "entities/auth-service.yaml".into(),
        "pages/auth.md".into(),
        format!("sources/{}/meta.yaml", f.source),
        format!("sources/{}/content", f.source),
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("decided/")));

    // The manifest lists every other member with its real size and hash,
    // and each member is byte-identical to the file in .vouch/.
    let manifest: Value = serde_json::from_slice(&members[0].data).unwrap();
    assert_eq!(manifest["version"], 1);
    let files = manifest["files"].as_array().unwrap();
    assert_eq!(files.len(), members.len() - 1);
    for (m, entry) in members[1..].iter().zip(files) {
        let name = String::from_utf8(m.name.clone()).unwrap();
        assert_eq!(entry["path"], name.as_str());
        assert_eq!(entry["sha256"], sha256_hex(&m.data).as_str());
        assert_eq!(entry["bytes"], m.data.len());
        assert_eq!(std::fs::read(p.vouch_dir().join(&name)).unwrap(), m.data);
    }

    // Fixed tar metadata: mode 0644, uid/gid 0, mtime = generated_at.
    let generated = manifest["generated_at"].as_str().unwrap();
    let when = chrono::DateTime::parse_from_rfc3339(generated)
        .unwrap()
        .timestamp() as u64;
    let bytes = std::fs::read(&a).unwrap();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    for e in ar.entries().unwrap() {
        let h = e.unwrap().header().clone();
        assert_eq!(h.mode().unwrap(), 0o644);
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
        assert_eq!(h.mtime().unwrap(), when);
    }
    // generated_at is the last change, not the export time: the newest
    // audit event other than exports (the pending proposal's creation).
    let events = p.ok("x", &["audit", "--tail", "3"]);
    assert_eq!(events[2]["event"], "bundle.export");
    assert_eq!(events[0]["event"], "proposal.create");
    assert_eq!(events[0]["created_at"].as_str().unwrap(), generated);
    assert_eq!(events[2]["object_ids"][0], sha256_hex(&bytes).as_str());

    let check = p.ok("x", &["export-check", a.to_str().unwrap()]);
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["files"], files.len());
}

#[test]
fn export_refuses_a_path_inside_vouch_and_writes_nothing() {
    let f = fixture();
    let before = f.p.snapshot();
    for target in [".vouch/b.tar.gz", ".vouch/claims/x.tar.gz", ".vouch"] {
        let r = f.p.run("alice", &["export", target]);
        assert_eq!(r.code, 2, "{target}: {}", r.stderr);
        assert!(
            r.stderr.contains(".vouch") || r.stderr.contains("directory"),
            "{}",
            r.stderr
        );
    }
    let r = f.p.run("alice", &["export", "no/such/folder/b.tar.gz"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(before, f.p.snapshot());
}

// ----- import -------------------------------------------------------------------------------

#[test]
fn import_into_another_kb_diffs_then_applies_everything_once() {
    let f = fixture();
    let a = export(&f.p, "a.tar.gz");
    let q = Project::new();
    let before = q.snapshot();
    let check = q.ok("bob", &["import-check", a.to_str().unwrap()]);
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["conflict"], json!([]));
    assert_eq!(check["ignored"], json!(["config.yaml"]), "{check}");
    let new: Vec<&str> = check["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(new.contains(&format!("claims/{}.yaml", f.claim).as_str()));
    assert_eq!(before, q.snapshot(), "import-check wrote something");

    let r = q.ok("bob", &["import-apply", a.to_str().unwrap()]);
    assert_eq!(r["imported"], new.len(), "{r}");
    assert_eq!(r["proposed"], 0);
    for n in &new {
        assert_eq!(
            std::fs::read(q.vouch_dir().join(n)).unwrap(),
            std::fs::read(f.p.vouch_dir().join(n)).unwrap(),
            "{n} differs after import"
        );
    }
    // Searchable at once, audited once, and the chain still verifies.
    let hits = q.ok("x", &["search", "tokens expire"]);
    assert_eq!(hits[0]["id"], f.claim.as_str());
    let ev = q.ok("x", &["audit", "--event", "bundle.import"]);
    assert_eq!(ev.as_array().unwrap().len(), 1);
    assert_eq!(ev[0]["actor"], "bob");
    assert_eq!(ev[0]["data"]["imported"], new.len());
    let by_bob = q.ok(
        "x",
        &[
            "audit",
            "--actor",
            "bob",
            "--event",
            "bundle.import",
            "--tail",
            "5",
        ],
    );
    assert_eq!(by_bob, ev, "audit filters by actor and event, with tail");
    assert_eq!(q.ok("x", &["audit", "--actor", "nobody"]), json!([]));
    assert_eq!(q.ok("x", &["audit", "verify"])["ok"], true);
    assert_eq!(q.ok("x", &["doctor"])["ok"], true);

    // Again: everything identical, nothing written but the audit event.
    let again = q.ok("bob", &["import-apply", a.to_str().unwrap()]);
    assert_eq!(again["imported"], 0);
    assert_eq!(again["identical"], new.len());
}

#[test]
fn conflicts_are_skipped_by_default_overwritten_on_request_and_fail_refuses() {
    let f = fixture();
    let a = export(&f.p, "a.tar.gz");
    let q = Project::new();
    q.ok("bob", &["import-apply", a.to_str().unwrap()]);
    // Change the claim here, so the bundle's copy conflicts.
    q.ok("bob", &["confirm", &f.claim]);
    let claim_file = q.vouch_dir().join(format!("claims/{}.yaml", f.claim));
    let ours = std::fs::read(&claim_file).unwrap();
    let rel = format!("claims/{}.yaml", f.claim);

    let check = q.ok("bob", &["import-check", a.to_str().unwrap()]);
    assert_eq!(check["conflict"], json!([rel]));

    let before = q.snapshot();
    let r = q.run(
        "bob",
        &["import-apply", a.to_str().unwrap(), "--on-conflict", "fail"],
    );
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&rel), "{}", r.stderr);
    assert_eq!(before, q.snapshot(), "on_conflict fail wrote something");

    let r = q.ok("bob", &["import-apply", a.to_str().unwrap()]);
    assert_eq!(
        (r["skipped"].clone(), r["overwritten"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(
        std::fs::read(&claim_file).unwrap(),
        ours,
        "skip changed the file"
    );

    let r = q.ok(
        "bob",
        &[
            "import-apply",
            a.to_str().unwrap(),
            "--on-conflict",
            "overwrite",
        ],
    );
    assert_eq!(r["overwritten"], 1, "{r}");
    assert_eq!(
        std::fs::read(&claim_file).unwrap(),
        std::fs::read(f.p.vouch_dir().join(&rel)).unwrap()
    );
}

/// A `vouch serve --transport jsonl` session: one request, one response.
#[test]
fn agents_importing_get_pending_proposals_not_knowledge() {
    let f = fixture();
    let a = export(&f.p, "a.tar.gz");
    let q = Project::new();
    let bundle_path = q.root().join("a.tar.gz");
    std::fs::copy(&a, &bundle_path).unwrap();
    let r = jsonl(&q, "claude", "kb.import_apply", json!({"path": "a.tar.gz"}));
    assert_eq!(r["ok"], true, "{r}");
    let res = &r["result"];
    // claim, entity and page are gated; sources and decided/ are not.
    assert_eq!(res["proposed"], 3, "{res}");
    assert!(
        !q.vouch_dir()
            .join(format!("claims/{}.yaml", f.claim))
            .exists()
    );
    assert!(
        q.vouch_dir()
            .join(format!("sources/{}/content", f.source))
            .exists()
    );
    let pending = q.ok("x", &["pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 3);
    assert!(
        pending
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["proposed_by"] == "claude")
    );
    // A person reviews them: entity first, then the claim that uses it.
    let id_of = |kind: &str| {
        pending
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == kind)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    q.ok("alice", &["approve", &id_of("entity")]);
    q.ok("alice", &["approve", &id_of("claim")]);
    assert_eq!(
        q.ok("x", &["show", &f.claim])["object"]["approved_by"],
        "alice"
    );
    let ev = q.ok("x", &["audit", "--event", "bundle.import"]);
    assert_eq!(ev[0]["data"]["proposed"], 3);

    // Agents cannot overwrite reviewed knowledge, nor reach outside the project.
    // The approved claim and entity now differ from the bundle's copies.
    let before = q.snapshot();
    let r = jsonl(
        &q,
        "claude",
        "kb.import_apply",
        json!({"path": "a.tar.gz", "on_conflict": "overwrite"}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["error"]["code"], "invalid_request");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("overwriting files of this KB"), "{msg}");
    assert!(msg.contains(&format!("claims/{}.yaml", f.claim)), "{msg}");
    assert_eq!(
        before,
        q.snapshot(),
        "a refused agent import wrote something"
    );
    let outside = f.p.root().join("a.tar.gz");
    let before = q.snapshot();
    let r = jsonl(
        &q,
        "claude",
        "kb.import_check",
        json!({"path": outside.to_str().unwrap()}),
    );
    assert_eq!(r["ok"], false);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("inside the project"),
        "{r}"
    );
    assert_eq!(before, q.snapshot());
}

#[test]
fn a_trusted_agent_imports_directly() {
    let f = fixture();
    let a = export(&f.p, "a.tar.gz");
    let q = Project::new();
    // Trusted in the person's own config; the repository's cannot.
    q.person_config("review:\n  approver_role: trusted-agent\n");
    std::fs::copy(&a, q.root().join("a.tar.gz")).unwrap();
    let r = jsonl(&q, "claude", "kb.import_apply", json!({"path": "a.tar.gz"}));
    assert_eq!(r["result"]["proposed"], 0, "{r}");
    assert!(
        q.vouch_dir()
            .join(format!("claims/{}.yaml", f.claim))
            .exists()
    );
}

// ----- the hostile corpus ----------------------------------------------------------------------

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

/// The whole corpus runs in process, table-driven, in the core
/// (`vouch-core/tests/core/bundle_corpus.rs`); here one case of each family goes
/// through the real binary: exit 2, the reason on stdout or stderr, and
/// nothing written.
#[test]
fn hostile_bundles_are_refused_with_a_reason_per_file_and_nothing_written() {
    let f = fixture();
    let p = &f.p;
    let good = without_manifest(unpack(&export(p, "good.tar.gz")));
    let claim_path = format!("claims/{}.yaml", f.claim);
    let with = |extra: M| {
        let mut v = good.clone();
        v.push(extra);
        v
    };
    assert_refused(
        p,
        "dotdot",
        &bundle(with(file("../evil.yaml", b"x"))),
        "../evil.yaml",
        "..",
    );
    assert_refused(
        p,
        "symlink",
        &bundle(with(special("claims/link.yaml", b'2', "/etc/passwd"))),
        "claims/link.yaml",
        "symbolic link",
    );
    let mut altered = vec![manifest_for(&good)];
    altered.extend(good.iter().cloned().map(|mut m| {
        if m.name == claim_path.as_bytes() {
            let t = String::from_utf8(m.data.clone()).unwrap();
            m.data = t.replace("24 hours", "24 days").into_bytes();
        }
        m
    }));
    assert_refused(
        p,
        "sha-mismatch",
        &gz(&tar_bytes(&altered)),
        &claim_path,
        "sha256",
    );
    let whole = std::fs::read(p.root().join("good.tar.gz")).unwrap();
    assert_refused(p, "truncated", &whole[..whole.len() / 2], "", "truncated");
}

/// A real decompression bomb: a member declaring (and containing) far more
/// zeros than the per-file limit, a few hundred KB compressed.
fn bomb(size: u64) -> Vec<u8> {
    let sha = "0".repeat(64);
    let name = format!("sources/{sha}/content");
    let manifest = json!({"version": 1, "generated_at": "2026-01-01T00:00:00Z",
                          "files": [{"path": name, "sha256": sha, "bytes": size}]});
    let m = file("manifest.json", manifest.to_string().as_bytes());
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    let mut head = tar_bytes(&[m]);
    head.truncate(head.len() - 1024);
    e.write_all(&head).unwrap();
    e.write_all(&header(name.as_bytes(), size, b'0', b""))
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        e.write_all(&zeros[..n]).unwrap();
        left -= n as u64;
    }
    e.write_all(&[0u8; 1024]).unwrap();
    e.finish().unwrap()
}

#[test]
fn decompression_bombs_stop_at_the_limits_with_a_clear_error() {
    let p = Project::new();
    // Default limits: 100 MiB of zeros in one member (over the 64 MiB per-file limit).
    let b = bomb(100 << 20);
    assert!(b.len() < 1 << 20, "the bomb should be small: {}", b.len());
    assert_refused(&p, "bomb", &b, "", "decompression bomb");
    assert_refused(&p, "bomb-per-file", &b, "", "bundles.max_file_bytes");

    // Lowered limits: the total and the member count are enforced too.
    let cfg = p.vouch_dir().join("config.yaml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("bundles:\n  max_total_bytes: 300000\n  max_members: 5\n");
    std::fs::write(&cfg, text).unwrap();
    let sources: Vec<M> = (0..3u8)
        .map(|i| {
            let data = vec![b'a' + i; 120_000];
            file(&format!("sources/{}/content", sha256_hex(&data)), &data)
        })
        .collect();
    assert_refused(
        &p,
        "bomb-total",
        &bundle(sources),
        "",
        "bundles.max_total_bytes",
    );
    // A manifest that understates sizes: the members' own headers are
    // counted as they stream.
    let small: Vec<M> = (0..3u8)
        .map(|i| file(&format!("sessions/s{i}.yaml"), b"x"))
        .collect();
    let mut lying = vec![manifest_for(&small)];
    lying.extend(small.into_iter().map(|mut m| {
        m.data = vec![b'x'; 120_000];
        m
    }));
    assert_refused(
        &p,
        "bomb-lying",
        &gz(&tar_bytes(&lying)),
        "",
        "bundles.max_total_bytes",
    );
    let many: Vec<M> = (0..8)
        .map(|i| file(&format!("sessions/s{i}.yaml"), b"x"))
        .collect();
    assert_refused(&p, "bomb-members", &bundle(many), "", "bundles.max_members");
}

/// What backs reviewed knowledge is as protected as the knowledge itself:
/// an agent's import overwrites no evidence or review record, brings no
/// decided/ records and no config; a forged quote is refused from anyone.
#[test]
fn agent_imports_cannot_rewrite_what_backs_reviewed_knowledge() {
    let f = fixture();
    // A span citation to rewrite: mint one and cite it from the claim.
    let ev =
        f.p.ok("agent", &["quote", &f.source, "Access tokens expire"]);
    let ev_id = ev["evidence_id"].as_str().unwrap().to_string();
    let ev_path = format!("evidence/{ev_id}.yaml");
    let a = export(&f.p, "a.tar.gz");
    let members = without_manifest(unpack(&a));
    let original = std::fs::read_to_string(f.p.vouch_dir().join(&ev_path)).unwrap();

    // 1. Evidence rewritten to quote something else of the same source.
    let forged = original.replace("quote: Access tokens expire", "quote: Access tokens");
    assert_ne!(forged, original);
    let evil: Vec<M> = members
        .iter()
        .map(|m| {
            if m.name == ev_path.as_bytes() {
                file(&ev_path, forged.as_bytes())
            } else {
                file(std::str::from_utf8(&m.name).unwrap(), &m.data)
            }
        })
        .collect();
    std::fs::write(f.p.root().join("evil.tar.gz"), bundle(evil)).unwrap();
    let before = f.p.snapshot();
    let r = jsonl(
        &f.p,
        "claude",
        "kb.import_apply",
        json!({"path": "evil.tar.gz", "on_conflict": "overwrite"}),
    );
    assert_eq!(r["ok"], false, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    // The id no longer derives from the quote: refused for everyone.
    assert!(
        msg.contains(&ev_path) && msg.contains("not derived from its source and quote"),
        "{msg}"
    );
    assert_eq!(before, f.p.snapshot(), "the forged evidence was written");

    // 2. A quote the source does not contain, with a fresh id: refused
    //    even when nothing in this KB conflicts.
    let q = Project::new();
    let made_up = original.replace(&ev_id, "ev-madeup").replace(
        "quote: Access tokens expire",
        "quote: Access tokens never expire",
    );
    let mut with_made_up: Vec<M> = members
        .iter()
        .map(|m| file(std::str::from_utf8(&m.name).unwrap(), &m.data))
        .collect();
    with_made_up.push(file("evidence/ev-madeup.yaml", made_up.as_bytes()));
    // In export order (evidence/ before sources/), so the quote is checked
    // against the source's content as it streams by.
    with_made_up.sort_by(|a, b| a.name.cmp(&b.name));
    std::fs::write(q.root().join("b.tar.gz"), bundle(with_made_up)).unwrap();
    let r = q.run("alice", &["--json", "import-check", "b.tar.gz"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stdout.contains("evidence/ev-madeup.yaml") && r.stdout.contains("does not occur"),
        "{}",
        r.stdout
    );

    // 3. An agent's import into an empty KB takes no decided/ records and
    //    no config.yaml, even where this KB has none.
    let e = Project::new();
    std::fs::remove_file(e.vouch_dir().join("config.yaml")).unwrap();
    let mut with_config: Vec<M> = members
        .iter()
        .map(|m| file(std::str::from_utf8(&m.name).unwrap(), &m.data))
        .collect();
    with_config.retain(|m| m.name != b"config.yaml");
    with_config.push(file(
        "config.yaml",
        b"review:\n  require_citations: false\n  approver_role: trusted-agent\n",
    ));
    std::fs::write(e.root().join("c.tar.gz"), bundle(with_config)).unwrap();
    let r = jsonl(&e, "claude", "kb.import_apply", json!({"path": "c.tar.gz"}));
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        !e.vouch_dir().join("config.yaml").exists(),
        "config installed"
    );
    let decided = std::fs::read_dir(e.vouch_dir().join("decided"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(decided, 0, "an agent brought review records");
    let check = jsonl(&e, "claude", "kb.import_check", json!({"path": "c.tar.gz"}));
    let ignored = check["result"]["ignored"].as_array().unwrap();
    assert!(ignored.iter().any(|n| n == "config.yaml"), "{check}");
    assert!(
        ignored
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("decided/")),
        "{check}"
    );

    // 4. Any overwrite from an agent is refused, not only of claims.
    let g = Project::new();
    let local = g.source("Access tokens expire after 24 hours.\n");
    assert_eq!(local, f.source);
    std::fs::write(
        g.vouch_dir().join(&ev_path),
        original.replace("created_at", "# edited here\ncreated_at"),
    )
    .unwrap();
    std::fs::copy(&a, g.root().join("a.tar.gz")).unwrap();
    let before = g.snapshot();
    let r = jsonl(
        &g,
        "claude",
        "kb.import_apply",
        json!({"path": "a.tar.gz", "on_conflict": "overwrite"}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains(&ev_path),
        "{r}"
    );
    assert_eq!(before, g.snapshot());
}

#[test]
fn export_replaces_an_earlier_bundle_but_no_other_file() {
    let f = fixture();
    std::fs::write(f.p.root().join("notes.txt"), "my notes").unwrap();
    let r = f.p.run("alice", &["export", "notes.txt"]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("is not a vouch bundle"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(f.p.root().join("notes.txt")).unwrap(),
        "my notes"
    );
    // A gzip file of the project's own (only the magic matched before).
    let data = f.p.root().join("data.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, b"{\"rows\": [1, 2, 3]}").unwrap();
    let gz = gz.finish().unwrap();
    std::fs::write(&data, &gz).unwrap();
    for who in ["alice", "agent"] {
        let r = f.p.run(who, &["export", "data.json.gz"]);
        assert_ne!(r.code, 0, "{who}: {}", r.stdout);
        assert!(r.stderr.contains("is not a vouch bundle"), "{}", r.stderr);
    }
    assert_eq!(std::fs::read(&data).unwrap(), gz);
    f.p.ok("alice", &["export", "b.tar.gz"]);
    f.p.ok("alice", &["export", "b.tar.gz"]);
}

#[test]
fn supersession_loops_are_refused() {
    let f = fixture();
    let a = export(&f.p, "a.tar.gz");
    let claim_path = format!("claims/{}.yaml", f.claim);
    let members = without_manifest(unpack(&a));
    let edit = |extra: &str| -> Vec<M> {
        members
            .iter()
            .map(|m| {
                let name = std::str::from_utf8(&m.name).unwrap();
                if name == claim_path {
                    let text = String::from_utf8(m.data.clone()).unwrap() + extra;
                    file(name, text.as_bytes())
                } else {
                    file(name, &m.data)
                }
            })
            .collect()
    };
    let q = Project::new();
    let own = format!("supersedes:\n- {}\n", f.claim);
    assert_refused(
        &q,
        "self",
        &bundle(edit(&own)),
        &claim_path,
        "supersession loops",
    );
}

/// The spec's manifest (`"version": "0.1"`) and vouch 1.x's (`spec:
/// "vouch-bundle-0.1"`, `size` per file, no version or generated_at) are
/// read; a version nobody wrote is still refused, saying what is read.
#[test]
fn spec_and_1x_manifests_are_read() {
    let f = fixture();
    let members = without_manifest(unpack(&export(&f.p, "a.tar.gz")));
    let files: Vec<Value> = members
        .iter()
        .map(|m| {
            json!({"path": String::from_utf8_lossy(&m.name), "sha256": sha256_hex(&m.data),
                   "size": m.data.len()})
        })
        .collect();
    for (name, manifest, ok) in [
        (
            "v1x.tar.gz",
            json!({"spec": "vouch-bundle-0.1", "bundle_id": "b".repeat(64), "files": files,
                   "counts": {}, "safety": {"has_proposed": false}}),
            true,
        ),
        (
            "spec.tar.gz",
            json!({"version": "0.1", "generated_at": "2026-01-01T00:00:00Z", "files": files}),
            true,
        ),
        (
            "future.tar.gz",
            json!({"version": 7, "generated_at": "2026-01-01T00:00:00Z", "files": files}),
            false,
        ),
        (
            "unsafe.tar.gz",
            json!({"spec": "vouch-bundle-0.1", "bundle_id": "b".repeat(64), "files": files,
                   "counts": {}, "safety": {"has_proposed": true, "has_audit_log": true}}),
            false,
        ),
    ] {
        let mut all = vec![file(
            "manifest.json",
            serde_json::to_string_pretty(&manifest).unwrap().as_bytes(),
        )];
        all.extend(
            members
                .iter()
                .map(|m| file(std::str::from_utf8(&m.name).unwrap(), &m.data)),
        );
        let q = Project::new();
        std::fs::write(q.root().join(name), gz(&tar_bytes(&all))).unwrap();
        let r = q.run("alice", &["--json", "import-check", name]);
        if ok {
            assert_eq!(r.code, 0, "{name}: {}{}", r.stdout, r.stderr);
            assert_eq!(r.json()["ok"], true, "{name}: {}", r.stdout);
            q.ok("alice", &["import-apply", name]);
            assert!(
                q.vouch_dir()
                    .join(format!("claims/{}.yaml", f.claim))
                    .exists()
            );
        } else if name == "unsafe.tar.gz" {
            assert_ne!(r.code, 0, "{name}");
            assert!(
                r.stdout.contains("safety flag has_proposed is true"),
                "{}",
                r.stdout
            );
            assert!(
                r.stdout.contains("safety flag has_audit_log is true"),
                "{}",
                r.stdout
            );
            let before = q.snapshot();
            assert_ne!(q.run("alice", &["import-apply", name]).code, 0);
            assert_eq!(before, q.snapshot(), "nothing imported");
        } else {
            assert_ne!(r.code, 0, "{name}");
            assert!(r.stdout.contains("vouch-bundle-0.1"), "{}", r.stdout);
        }
    }
}

/// vouch 1.x writes bundles with Python's `tarfile`, which puts names over
/// 100 bytes (a relation between two claims) in POSIX pax extended
/// headers. Such a bundle — ours, repacked by Python's `tarfile` in pax
/// format — checks clean and imports whole.
#[test]
fn a_bundle_with_pax_long_names_imports() {
    let p = Project::new();
    let src = p.source(
        "Long claim text one about the deployment pipeline and its many stages.\n\
         Long claim text two about the deployment pipeline and its many stages too.\n",
    );
    let a = p.claim(
        "Long claim text one about the deployment pipeline and its many stages.",
        &src,
    );
    let b = p.claim(
        "Long claim text two about the deployment pipeline and its many stages too.",
        &src,
    );
    let rel = p.ok(
        "agent",
        &["propose-relation", &a, "contradicts", &b, "-e", &src],
    );
    p.ok("alice", &["approve", rel["proposal_id"].as_str().unwrap()]);
    let exported = export(&p, "exported.tar.gz");
    // Named as 1.x names relations: `<claim>--<type>--<claim>`.
    let long_id = format!("{a}--contradicts--{b}");
    let mut members = without_manifest(unpack(&exported));
    for m in members.iter_mut() {
        if m.name.starts_with(b"relations/") {
            let old = String::from_utf8_lossy(&m.name)
                .trim_start_matches("relations/")
                .trim_end_matches(".yaml")
                .to_string();
            m.name = format!("relations/{long_id}.yaml").into_bytes();
            m.data = String::from_utf8_lossy(&m.data)
                .replace(&format!("id: {old}"), &format!("id: {long_id}"))
                .into_bytes();
        }
    }
    assert!(members.iter().any(|m| m.name.len() > 100), "no long name");
    let ours = p.root().join("ours.tar.gz");
    std::fs::write(&ours, bundle(members)).unwrap();
    let pax = p.root().join("pax.tar.gz");
    let out = std::process::Command::new(std::env::var("PYTHON").unwrap_or("python3".into()))
        .args([
            "-c",
            "import sys, tarfile\n\
             with tarfile.open(sys.argv[1], 'r:gz') as a, \
                  tarfile.open(sys.argv[2], 'w:gz', format=tarfile.PAX_FORMAT) as b:\n\
             \x20   for m in a.getmembers():\n\
             \x20       b.addfile(m, a.extractfile(m) if m.isfile() else None)\n",
        ])
        .arg(&ours)
        .arg(&pax)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = {
        use std::io::Read;
        let mut s = Vec::new();
        flate2::read::GzDecoder::new(&std::fs::read(&pax).unwrap()[..])
            .read_to_end(&mut s)
            .unwrap();
        s
    };
    assert!(
        raw.windows(5).any(|w| w == b"path="),
        "Python wrote no pax path record"
    );
    let q = Project::new();
    std::fs::copy(&pax, q.root().join("pax.tar.gz")).unwrap();
    let check = q.ok("alice", &["import-check", "pax.tar.gz"]);
    assert_eq!(
        problems(&check),
        Vec::<(String, String)>::new(),
        "{check:#}"
    );
    q.ok("alice", &["import-apply", "pax.tar.gz"]);
    let relations = q.ok("x", &["call", "kb.list_relations", "{}"]);
    assert_eq!(relations.as_array().unwrap().len(), 1, "{relations}");
}

/// `import-check` says what would come in, not only how many: each new and
/// conflicting object by kind and id, in the text as in `--json`.
#[test]
fn import_check_lists_what_would_come_in() {
    let f = fixture();
    let a = export(&f.p, "a.tar.gz");
    let q = Project::new();
    std::fs::copy(&a, q.root().join("a.tar.gz")).unwrap();
    let v = q.ok("alice", &["import-check", "a.tar.gz"]);
    let new = v["new_objects"].as_array().unwrap();
    assert!(
        new.contains(&json!({"kind": "claim", "id": f.claim,
                             "text": "Access tokens expire after 24 hours",
                             "approved_by": "alice", "approver": "unknown"})),
        "{v:#}"
    );
    assert!(
        new.contains(&json!({"kind": "source", "id": f.source})),
        "{v:#}"
    );
    assert!(
        new.contains(
            &json!({"kind": "entity", "id": "auth-service", "text": "Auth service",
                             "approved_by": "alice", "approver": "unknown"})
        ),
        "{v:#}"
    );
    // Every claim, page and entity is what its approval wrote: none is
    // marked.
    assert!(v.get("unreviewed").is_none(), "{v:#}");
    let text = q.run("alice", &["import-check", "a.tar.gz"]).stdout;
    assert!(text.contains(&format!("new: claim {}", f.claim)), "{text}");
    assert!(
        text.contains("| Access tokens expire after 24 hours"),
        "{text}"
    );
    assert!(!text.contains("UNREVIEWED"), "{text}");
}

/// vouch 1.x exports sources/ before evidence/, so a span's source content
/// has passed by when its evidence is read: the quote is still checked
/// against it (a second look at just those sources) — a true quote imports,
/// a quote the source does not hold at that span is refused by name.
#[test]
fn span_evidence_after_its_source_in_the_archive_is_still_checked() {
    let p = Project::new();
    let s = p.source("Runbook.\nThe cache directory is safe to delete between builds.\n");
    let c = p.ok(
        "agent",
        &[
            "propose-claim",
            "The cache can be deleted",
            "--quote",
            &format!("{s}=The cache directory is safe to delete"),
        ],
    );
    p.ok("alice", &["approve", c["proposal_id"].as_str().unwrap()]);
    let exported = export(&p, "exported.tar.gz");
    // 1.x's member order: sources before evidence.
    let reorder = |mut members: Vec<M>| -> Vec<M> {
        members.sort_by_key(|m| !m.name.starts_with(b"sources/"));
        members
    };
    let members = reorder(without_manifest(unpack(&exported)));
    let first_evidence = members
        .iter()
        .position(|m| m.name.starts_with(b"evidence/"));
    let last_source = members
        .iter()
        .rposition(|m| m.name.starts_with(b"sources/"));
    assert!(last_source < first_evidence, "sources come first");
    // A forged span, named as 1.x names spans (sha256 of source and
    // offsets, which does not cover the quote): the id is consistent, only
    // the source's bytes at that span can show the quote is not there.
    let ev = members
        .iter()
        .find(|m| m.name.starts_with(b"evidence/"))
        .unwrap();
    let text = String::from_utf8_lossy(&ev.data).into_owned();
    let field = |k: &str| -> String {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix(&format!("{k}: ")))
            .unwrap()
            .to_string()
    };
    let (old_id, start, end) = (field("id"), field("start"), field("end"));
    let span_id = format!(
        "ev-{}",
        &sha256_hex(format!("{s}:{start}:{end}").as_bytes())[..16]
    );
    let forged: Vec<M> = members
        .iter()
        .map(|m| {
            let name = String::from_utf8_lossy(&m.name).replace(&old_id, &span_id);
            let data = String::from_utf8_lossy(&m.data)
                .replace(&old_id, &span_id)
                .replace(
                    "The cache directory is safe",
                    "The cache directory is never",
                );
            file(&name, data.as_bytes())
        })
        .collect();

    let q = Project::new();
    std::fs::write(q.root().join("late.tar.gz"), bundle(members)).unwrap();
    let check = q.ok("alice", &["import-check", "late.tar.gz"]);
    assert_eq!(check["ok"], true, "{check:#}");
    q.ok("alice", &["import-apply", "late.tar.gz"]);
    assert!(q.run("x", &["show", c["claim_id"].as_str().unwrap()]).code == 0);

    let q = Project::new();
    std::fs::write(q.root().join("forged.tar.gz"), bundle(forged)).unwrap();
    let r = q.run("alice", &["--json", "import-check", "forged.tar.gz"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    let refused = problems(&r.json());
    assert!(
        refused
            .iter()
            .any(|(path, why)| path.starts_with("evidence/") && why.contains("quote")),
        "{refused:?}"
    );
    let before = q.snapshot();
    assert_ne!(q.run("alice", &["import-apply", "forged.tar.gz"]).code, 0);
    assert_eq!(before, q.snapshot(), "nothing imported");
}

/// A KB with one approved claim (the first id), one approved claim edited
/// by hand (the second) and a claim written by hand,
/// `invoices-are-never-due`, as a copy of the first.
fn kb_edited_by_hand() -> (Project, String, String) {
    let p = Project::new();
    let src = p.source("Invoices are due in 30 days. Refunds take a week.\n");
    let honest = p.claim("Invoices are due in 30 days", &src);
    let edited = p.claim("Refunds take a week", &src);
    let claims = p.vouch_dir().join("claims");
    edit(
        &claims.join(format!("{edited}.yaml")),
        "Refunds take a week",
        "Refunds are never given",
    );
    let honest_text = std::fs::read_to_string(claims.join(format!("{honest}.yaml"))).unwrap();
    std::fs::write(
        claims.join("invoices-are-never-due.yaml"),
        honest_text
            .replace(&honest, "invoices-are-never-due")
            .replace("Invoices are due in 30 days", "Invoices are never due"),
    )
    .unwrap();
    (p, honest, edited)
}

/// Round five, B1: the manifest's `unreviewed` list is no key to the
/// gate. Deleted from the manifest (which anyone can rewrite), the claim
/// written by hand and the one edited by hand still arrive unreviewed —
/// no approval among the bundle's decided/ records wrote them as they are —
/// and `import-check` shows the person each new object's text, marking
/// those two.
#[test]
fn a_bundle_stripped_of_its_unreviewed_list_still_imports_them_unreviewed() {
    let (p, honest, edited) = kb_edited_by_hand();
    let members = without_manifest(unpack(&export(&p, "b.tar.gz")));
    let q = Project::new();
    let stripped = q.root().join("stripped.tar.gz");
    std::fs::write(&stripped, bundle(members)).unwrap();
    let stripped = stripped.to_str().unwrap();

    let check = q.ok("bob", &["import-check", stripped]);
    let mut listed: Vec<&str> = check["unreviewed"]
        .as_array()
        .unwrap_or_else(|| panic!("nothing unreviewed: {check:#}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    listed.sort();
    let mut expected = vec![
        format!("claims/{edited}.yaml"),
        "claims/invoices-are-never-due.yaml".to_string(),
    ];
    expected.sort();
    assert_eq!(listed, expected, "{check:#}");
    let object = |id: &str| new_object(&check, id);
    assert_eq!(object(&edited)["text"], "Refunds are never given");
    assert_eq!(object(&edited)["unreviewed"], true);
    assert_eq!(object("invoices-are-never-due")["unreviewed"], true);
    assert_eq!(object(&honest)["text"], "Invoices are due in 30 days");
    assert!(object(&honest).get("unreviewed").is_none(), "{check:#}");
    let text = q.run("bob", &["import-check", stripped]).stdout;
    for said in [
        "| Refunds are never given",
        "| Invoices are never due",
        "| Invoices are due in 30 days",
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
    assert_eq!(text.matches("[UNREVIEWED").count(), 2, "{text}");

    let r = q.ok("bob", &["import-apply", stripped]);
    assert_eq!(r["unreviewed"], 2, "{r}");
    assert_eq!(
        unaudited(
            &q,
            "invoices refunds",
            &[&honest, &edited, "invoices-are-never-due"]
        ),
        (vec![Some(false), Some(true), Some(true)], 2)
    );
}

/// Knowledge no review let in travels as such: an export lists a claim
/// written by hand and an approved claim edited by hand as `unreviewed`,
/// and an import (by a person) writes them but does not admit them — they
/// are unaudited in the new KB as in the old, while the reviewed claim
/// arrives reviewed.
#[test]
fn unreviewed_knowledge_stays_unreviewed_through_a_bundle() {
    let (p, honest, edited) = kb_edited_by_hand();
    let claims = p.vouch_dir().join("claims");
    let out = p.root().join("b.tar.gz");
    let v = p.ok("alice", &["export", out.to_str().unwrap()]);
    let listed = |v: &Value| -> Vec<String> {
        let mut l: Vec<String> = v["unreviewed"]
            .as_array()
            .unwrap_or_else(|| panic!("no unreviewed in {v}"))
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        l.sort();
        l
    };
    let mut expected = vec![
        format!("claims/{edited}.yaml"),
        "claims/invoices-are-never-due.yaml".to_string(),
    ];
    expected.sort();
    assert_eq!(listed(&v), expected, "{v}");

    let q = Project::new();
    let check = q.ok("bob", &["import-check", out.to_str().unwrap()]);
    assert_eq!(listed(&check), expected, "{check}");
    let r = q.ok("bob", &["import-apply", out.to_str().unwrap()]);
    assert_eq!(r["unreviewed"], 2, "{r}");
    assert_eq!(
        unaudited(
            &q,
            "invoices refunds",
            &[&honest, &edited, "invoices-are-never-due"]
        ),
        (vec![Some(false), Some(true), Some(true)], 2)
    );

    // A KB with nothing unreviewed exports no such list.
    std::fs::remove_file(claims.join("invoices-are-never-due.yaml")).unwrap();
    edit(
        &claims.join(format!("{edited}.yaml")),
        "Refunds are never given",
        "Refunds take a week",
    );
    let clean = p.ok("alice", &["export", out.to_str().unwrap()]);
    assert!(clean.get("unreviewed").is_none(), "{clean}");
}

/// Round six, C07: a bundle's own `decided/` records name their approver
/// as they like. In the KB a bundle comes from, `cursor` proposes and
/// `claude` "approves" (claude never proposed there); in the KB importing
/// it, claude is an agent — it proposes and never decided. Its approval
/// does not count: the claim arrives unreviewed, `import-check` names the
/// approver and marks it an agent, search marks the claim unaudited and
/// `doctor` names it. An approver this KB never saw decide still counts,
/// marked so the person sees who vouched; so does a reviewer the person
/// named, though they propose here.
#[test]
fn an_approval_by_an_agent_of_the_importing_kb_does_not_count() {
    let from = Project::new();
    let src = from.source("Deploys are frozen on Fridays. Rollbacks need two people.\n");
    let approved = |proposer: &str, approver: &str, text: &str| -> String {
        let v = from.ok(proposer, &["propose-claim", text, "--evidence", &src]);
        from.ok(approver, &["approve", v["proposal_id"].as_str().unwrap()]);
        v["claim_id"].as_str().unwrap().to_string()
    };
    let by_agent = approved("cursor", "claude", "Agents may deploy on Fridays");
    let by_stranger = approved("cursor", "dave", "Deploys are frozen on Fridays");
    let by_reviewer = approved("cursor", "rita", "Rollbacks need two people");
    let out = export(&from, "b.tar.gz");
    let out = out.to_str().unwrap();

    // The importing KB: claude and rita propose here; alice decides; the
    // person names rita a reviewer.
    let q = Project::new();
    let here = q.source("Invoices are due in 30 days.\n");
    for agent in ["claude", "rita"] {
        let v = q.ok(
            agent,
            &[
                "propose-claim",
                &format!("Invoices by {agent}"),
                "--evidence",
                &here,
            ],
        );
        q.ok("alice", &["approve", v["proposal_id"].as_str().unwrap()]);
    }
    q.reviewers(&["rita"]);

    let check = q.ok("alice", &["import-check", out]);
    let object = |id: &str| new_object(&check, id);
    assert_eq!(object(&by_agent)["approved_by"], "claude", "{check:#}");
    assert_eq!(object(&by_agent)["approver"], "agent", "{check:#}");
    assert_eq!(object(&by_agent)["unreviewed"], true, "{check:#}");
    assert_eq!(object(&by_stranger)["approved_by"], "dave", "{check:#}");
    assert_eq!(object(&by_stranger)["approver"], "unknown", "{check:#}");
    assert!(
        object(&by_stranger).get("unreviewed").is_none(),
        "{check:#}"
    );
    assert_eq!(object(&by_reviewer)["approver"], "reviewer", "{check:#}");
    assert!(
        object(&by_reviewer).get("unreviewed").is_none(),
        "{check:#}"
    );
    assert_eq!(
        check["unreviewed"],
        json!([format!("claims/{by_agent}.yaml")]),
        "{check:#}"
    );
    let text = q.run("alice", &["import-check", out]).stdout;
    assert_eq!(text.matches("[APPROVED BY AN AGENT").count(), 1, "{text}");
    assert_eq!(text.matches("[APPROVER UNKNOWN HERE").count(), 1, "{text}");
    assert!(
        text.contains("(approved by claude, the bundle says)"),
        "{text}"
    );

    let r = q.ok("alice", &["import-apply", out]);
    assert_eq!(r["unreviewed"], 1, "{r}");
    assert_eq!(
        unaudited(
            &q,
            "deploy Fridays rollbacks",
            &[&by_agent, &by_stranger, &by_reviewer]
        ),
        (vec![Some(true), Some(false), Some(false)], 1)
    );
}

/// The new object `id` that `import-check` lists.
fn new_object(check: &Value, id: &str) -> Value {
    check["new_objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not new: {check:#}"))
}

/// Whether a search for `query` marks each of `ids` unaudited (`None`:
/// not found), and how many objects `doctor` reports unaudited.
fn unaudited(q: &Project, query: &str, ids: &[&str]) -> (Vec<Option<bool>>, usize) {
    let hits = q.ok("x", &["search", query]);
    let marked = ids
        .iter()
        .map(|id| {
            hits.as_array()
                .unwrap()
                .iter()
                .find(|h| h["id"] == *id)
                .map(|h| h["_meta"]["unaudited"] == true)
        })
        .collect();
    let kinds = q.doctor_kinds();
    let n = kinds.iter().filter(|k| *k == "unaudited-object").count();
    (marked, n)
}
