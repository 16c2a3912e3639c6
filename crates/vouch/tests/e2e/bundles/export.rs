//! Export: the same bytes every time, only the bundle's files, never a path
//! inside `.vouch/`, and only an earlier bundle replaced.

use super::*;

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

#[test]
fn export_replaces_an_earlier_bundle_but_no_other_file() {
    let f = fixture();
    std::fs::write(f.p.root().join("notes.txt"), "my notes").unwrap();
    let r = f.p.run("alice", &["export", "notes.txt"]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert_contains(&r.stderr, "is not a vouch bundle");
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
        assert_contains(&r.stderr, "is not a vouch bundle");
    }
    assert_eq!(std::fs::read(&data).unwrap(), gz);
    f.p.ok("alice", &["export", "b.tar.gz"]);
    f.p.ok("alice", &["export", "b.tar.gz"]);
}
