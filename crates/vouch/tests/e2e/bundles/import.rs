//! Import: the diff, the conflict modes, the gate on agents, and the
//! manifests and archives other writers (the spec, vouch 1.x) make.

use super::*;

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
    assert_contains(&r.stderr, &rel);
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
            assert_contains(&r.stdout, "safety flag has_proposed is true");
            assert_contains(&r.stdout, "safety flag has_audit_log is true");
            let before = q.snapshot();
            assert_ne!(q.run("alice", &["import-apply", name]).code, 0);
            assert_eq!(before, q.snapshot(), "nothing imported");
        } else {
            assert_ne!(r.code, 0, "{name}");
            assert_contains(&r.stdout, "vouch-bundle-0.1");
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
    let texts = [
        "Long claim text one about the deployment pipeline and its many stages.",
        "Long claim text two about the deployment pipeline and its many stages too.",
    ];
    let src = p.source(&format!("{}\n{}\n", texts[0], texts[1]));
    let [a, b] = texts.map(|t| p.claim(t, &src));
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
    output_ok(
        std::process::Command::new(std::env::var("PYTHON").unwrap_or("python3".into()))
            .args([
                "-c",
                "import sys, tarfile\n\
                 with tarfile.open(sys.argv[1], 'r:gz') as a, \
                      tarfile.open(sys.argv[2], 'w:gz', format=tarfile.PAX_FORMAT) as b:\n\
                 \x20   for m in a.getmembers():\n\
                 \x20       b.addfile(m, a.extractfile(m) if m.isfile() else None)\n",
            ])
            .arg(&ours)
            .arg(&pax),
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
