//! Hostile bundles: the corpus's families, decompression bombs, an agent's
//! import rewriting what backs reviewed knowledge, a forged quote — each
//! refused with a reason, nothing written.

use super::*;

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

/// vouch 1.x exports sources/ before evidence/, so a span's source content
/// has passed by when its evidence is read: the quote is still checked
/// against it (a second look at just those sources) — a true quote imports,
/// a quote the source does not hold at that span is refused by name.
#[test]
fn span_evidence_after_its_source_in_the_archive_is_still_checked() {
    let p = Project::new();
    let s = p.source("Runbook.\nThe cache directory is safe to delete between builds.\n");
    let c = p.propose_quoted(
        "The cache can be deleted",
        &s,
        "The cache directory is safe to delete",
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
