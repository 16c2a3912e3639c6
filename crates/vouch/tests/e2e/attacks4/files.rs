//! The pull-request check against the files under `.vouch/` themselves:
//! links, gitlinks and other spellings of the folder, sources and evidence
//! written once, and a config that loosens the gate.

use super::*;

/// Stage a gitlink (another repository, as a submodule records it) at
/// `path`, pointing at HEAD.
fn stage_gitlink(p: &Project, path: &str) {
    let head = git(p.root(), &["rev-parse", "HEAD"]);
    let entry = format!("160000,{},{path}", head.trim());
    git(p.root(), &["update-index", "--add", "--cacheinfo", &entry]);
}

/// Item 3: `.vouch` moved and replaced by a link, the log rewritten: the
/// check does not read the moved folder's history as the base's, and no
/// command serves the linked folder's rewritten text.
#[test]
fn a_vouch_folder_replaced_by_a_link_is_refused() {
    let (p, claim) = branched("Tokens expire after a day.");
    std::fs::create_dir(p.root().join("kbdata")).unwrap();
    git(p.root(), &["mv", ".vouch", "kbdata/.vouch"]);
    std::os::unix::fs::symlink("kbdata/.vouch", p.root().join(".vouch")).unwrap();
    let file = p.root().join(format!("kbdata/.vouch/claims/{claim}.yaml"));
    edit(&file, "expire after a day", "never expire");
    let mut all = events(&p);
    for ev in &mut all {
        if let Some(w) = ev["data"]["written"].as_object_mut()
            && w.contains_key(&format!("claims/{claim}.yaml"))
        {
            w.insert(format!("claims/{claim}.yaml"), json!(sha(&file)));
        }
    }
    write_chain(&p, all);
    commit(&p, "moved");
    check_errs(&p, "is a symbolic link");
    for args in [
        vec!["show", claim.as_str()],
        vec!["search", "tokens"],
        vec!["call", "kb.read_claim", &format!("{{\"id\": \"{claim}\"}}")],
        vec!["call", "kb.list_claims", "{}"],
    ] {
        let r = p.run("x", &args);
        assert_ne!(r.code, 0, "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("never expire"), "{args:?}: {}", r.stdout);
        assert!(
            r.stderr.contains("is a symbolic link"),
            "{args:?}: {}",
            r.stderr
        );
    }
    let request = json!({"id": "1", "method": "kb.recall", "params": {}}).to_string();
    let r = p.run_with_stdin("agent", &["serve", "--transport", "jsonl"], &request);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_lacks(&r.stdout, "never expire");

    // On disk a folder again, but git still records the link: refused.
    std::fs::remove_file(p.root().join(".vouch")).unwrap();
    copy_dir(&p.root().join("kbdata/.vouch"), &p.vouch_dir());
    check_errs(&p, "git records .vouch as a symbolic link");
}

/// Item 9: every change to `.vouch/config.yaml` is named in the report,
/// and one that loosens the gate (turns off `review.gate_lifecycle`, or
/// adds a widening only a person's own config may hold) fails the check.
#[test]
fn config_changes_are_named_and_a_loosened_gate_fails() {
    let p = Project::new();
    git(p.root(), &["init", "-q", "-b", "main"]);
    let config = p.vouch_dir().join("config.yaml");
    edit(
        &config,
        "  approver_role: human",
        "  approver_role: human\n  gate_lifecycle: true",
    );
    commit(&p, "main gates lifecycle changes");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);

    edit(&config, "max_bytes: 16777216", "max_bytes: 1048576");
    let v = passes(&p, "smaller sources");
    assert_eq!(
        v["base"]["config_changes"],
        json!(["sources.max_bytes: 16777216 -> 1048576"]),
        "{v:#}"
    );
    let text = p.run("x", &["audit", "verify", "--base", "main"]).stdout;
    assert!(
        text.contains("config.yaml: sources.max_bytes: 16777216 -> 1048576"),
        "{text}"
    );

    edit(&config, "  gate_lifecycle: true\n", "");
    commit(&p, "ungated");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        v["base"]["config_changes"]
            .to_string()
            .contains("review.gate_lifecycle: true -> (absent)"),
        "{v:#}"
    );
    assert!(
        problems(&v).contains("review.gate_lifecycle is turned off"),
        "{v:#}"
    );

    edit(
        &config,
        "approver_role: human",
        "approver_role: trusted-agent",
    );
    refused(
        &p,
        "trusted",
        "review.approver_role: trusted-agent would widen the gate",
    );
}

/// Round 5, D (a05): a `.vouch` that git records as another repository (a
/// submodule's gitlink), on the branch or at the base, is refused with an
/// error — never read as an empty history.
#[test]
fn round5_a_vouch_gitlink_is_refused() {
    let (p, _) = branched("Backups run nightly.");
    git(p.root(), &["rm", "-r", "-q", "--cached", ".vouch"]);
    stage_gitlink(&p, ".vouch");
    git(p.root(), &["commit", "-q", "-m", "a submodule"]);
    check_errs(&p, "git records .vouch as another repository");

    // The base's .vouch a gitlink, the branch's a folder again.
    git(p.root(), &["branch", "-q", "-f", "main", "HEAD"]);
    git(p.root(), &["rm", "-q", "--cached", ".vouch"]);
    git(
        p.root(),
        &["add", "-f", ".vouch/audit.log.jsonl", ".vouch/claims"],
    );
    git(p.root(), &["commit", "-q", "-m", "a folder again"]);
    check_errs(&p, "another repository (a submodule, at main)");
}

/// Round 5, C (a12): a source's `meta.yaml` and an evidence record are
/// written once: rewritten behind any event that merely names them (here
/// a `session.start`) they are refused; one added with no event that
/// registers it is refused too.
#[test]
fn round5_sources_and_evidence_are_written_once_and_registered() {
    let (p, _) = branched("Backups run nightly at two.");
    let src = std::fs::read_dir(p.vouch_dir().join("sources"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let evidence = std::fs::read_dir(p.vouch_dir().join("evidence"))
        .unwrap()
        .next()
        .map(|e| e.unwrap().path());
    let meta = p.vouch_dir().join(format!("sources/{src}/meta.yaml"));
    edit(&meta, "registered_by: agent", "registered_by: alice");
    let mut named = vec![src.clone()];
    if let Some(ev) = &evidence {
        let t = std::fs::read_to_string(ev).unwrap();
        std::fs::write(ev, t.replace("locator:", "locator: signed off,")).unwrap();
        named.push(ev.file_stem().unwrap().to_string_lossy().into_owned());
    }
    let planted = "ev-0123456789abcdef";
    std::fs::write(
        p.vouch_dir().join(format!("evidence/{planted}.yaml")),
        format!("id: {planted}\nsource_id: {src}\nlocator: L1-L1\nquote: Backups are optional.\ncreated_at: \"2026-01-01T00:00:00Z\"\n"),
    )
    .unwrap();
    named.push(planted.to_string());
    forge(
        &p,
        json!({"id": "evt-forged-session", "event": "session.start", "actor": "agent",
               "object_ids": named, "dry_run": false, "reversible": false, "data": {}}),
    );
    let v = refused(
        &p,
        "provenance rewritten",
        &format!("sources/{src}/meta.yaml: this source file was changed"),
    );
    assert!(
        problems(&v).contains(&format!(
            "evidence/{planted}.yaml: this evidence was added with no event that registers it"
        )),
        "{v:#}"
    );
}

/// Round 5, E (a04, a11, a14): inside `.vouch/`, a link or a gitlink
/// committed on the branch, a path in another case (`.vouch/Claims/`,
/// `.VOUCH/claims/`, which a case-insensitive checkout reads as
/// `.vouch/claims/`) and a path outside the layout are refused.
#[test]
fn round5_links_case_variants_and_unknown_paths_under_vouch_are_refused() {
    let (p, claim) = branched("Tokens expire after a day.");
    let text = std::fs::read_to_string(claim_file(&p, &claim)).unwrap();
    std::fs::create_dir_all(p.vouch_dir().join("Claims")).unwrap();
    std::fs::write(
        p.vouch_dir().join(format!("Claims/{claim}.yaml")),
        text.replace("after a day", "never"),
    )
    .unwrap();
    std::fs::create_dir_all(p.root().join(".VOUCH/claims")).unwrap();
    std::fs::write(p.root().join(".VOUCH/claims/weekends.yaml"), &text).unwrap();
    std::fs::write(p.vouch_dir().join("notes.txt"), "hello").unwrap();
    std::fs::create_dir_all(p.root().join("elsewhere")).unwrap();
    std::fs::remove_dir_all(p.vouch_dir().join("pages")).ok();
    std::os::unix::fs::symlink("../elsewhere", p.vouch_dir().join("pages")).unwrap();
    git(p.root(), &["add", "-A"]);
    stage_gitlink(&p, ".vouch/entities/planted.yaml");
    git(p.root(), &["commit", "-q", "-m", "around the layout"]);
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    let found = problems(&v);
    for expected in [
        format!(".vouch/Claims/{claim}.yaml: this path differs only in case"),
        ".VOUCH/claims/weekends.yaml: this path is .vouch/claims/weekends.yaml spelled another \
         way"
        .to_string(),
        ".vouch/notes.txt: not part of a knowledge base's layout".to_string(),
        ".vouch/pages: git records it as a symbolic link".to_string(),
        ".vouch/entities/planted.yaml: git records it as another repository".to_string(),
    ] {
        assert!(found.contains(&expected), "{expected}: {v:#}");
    }
}

/// Round 6, C08: the KB folder spelled as another file system reads it —
/// with a character HFS+ ignores, as Windows' short name, with a trailing
/// dot or space — is refused, as `.git` is.
#[test]
fn round6_the_vouch_folder_spelled_another_way_is_refused() {
    let (p, claim) = branched("Deploys happen on Tuesdays only.");
    let text = std::fs::read(claim_file(&p, &claim)).unwrap();
    let aliases = [".vou\u{200c}ch", "VOUCH~1", ".vouch.", ".vouch "];
    for alias in aliases {
        let dir = p.root().join(alias).join("claims");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agents-may-deploy-on-fridays.yaml"), &text).unwrap();
    }
    let v = refused(&p, "aliases", "spelled another way");
    for shown in [
        r".vou\\u{200c}ch/claims",
        "VOUCH~1/claims",
        ".vouch./claims",
        ".vouch /claims",
    ] {
        assert!(problems(&v).contains(shown), "{shown}: {v:#}");
    }
}
