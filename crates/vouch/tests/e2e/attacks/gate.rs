//! Attacks on the review gate: an edited proposal, a forged decision, a
//! squatted evidence id, terminal escapes, and an agent's lifecycle changes
//! — each refused, or shown to the person and reversible.

use super::*;

/// Item 2: the words a reviewer saw are the words approved. A proposal whose
/// text, or whose proposer, changed after `vouch pending` showed it is
/// refused, and doctor names it.
#[test]
fn an_edited_proposal_is_refused_at_approve_and_reported() {
    let p = Project::new();
    let src = p.source("Backups run nightly at 02:00.\n");
    let (pid, claim) = p.propose("Backups run nightly", &src);
    let shown = p.run("alice", &["pending"]);
    assert_contains(&shown.stdout, "Backups run nightly");
    edit(
        &proposal_path(&p, &pid),
        "Backups run nightly",
        "Backups are optional",
    );
    let r = p.run("alice", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "edited after it was proposed");
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());
    assert!(p.doctor_kinds().contains(&"proposal-edited".to_string()));

    // The proposer renames itself out of the way of the self-approval check.
    let (pid, _) = p.propose("Backups are kept for 30 days", &src);
    edit(
        &proposal_path(&p, &pid),
        "proposed_by: agent",
        "proposed_by: bob",
    );
    let r = p.run("agent", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "proposed by \"bob\"");

    // A proposal file nobody proposed (no proposal.create event).
    let (pid, _) = p.propose("Backups are encrypted", &src);
    let forged = proposal_path(&p, "20260101-000000-0badf00d");
    let text = std::fs::read_to_string(proposal_path(&p, &pid))
        .unwrap()
        .replace(&pid, "20260101-000000-0badf00d");
    std::fs::write(&forged, text).unwrap();
    let r = p.run("alice", &["approve", "20260101-000000-0badf00d"]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "no proposal.create event");

    // Untouched proposals still go through.
    let (pid, _) = p.propose("Restores are tested monthly", &src);
    assert_eq!(p.ok("alice", &["approve", &pid])["ok"], true);
}

/// Item 3: a forged `proposal.approve` line (chain recomputed) is not a pass
/// around the gate. The proposer finishing "its" recovery is self-approval;
/// a payload emptied of evidence no longer validates (or matches its
/// fingerprint); and a genuine recovery still completes.
#[test]
fn a_forged_decision_in_the_log_does_not_skip_the_gate() {
    let p = Project::new();
    let src = p.source("The VPN requires MFA.\n");
    let (pid, claim) = p.propose("The VPN requires MFA", &src);
    let forge = |p: &Project, pid: &str, claim: &str| {
        forge_event(
            p,
            json!({"id": "f".repeat(32), "event": "proposal.approve", "actor": "alice",
                   "created_at": "2026-01-01T00:00:00Z", "object_ids": [pid, claim],
                   "dry_run": false, "reversible": false, "data": {"kind": "claim"}}),
        )
    };
    forge(&p, &pid, &claim);
    assert_eq!(
        p.ok("x", &["audit", "verify"])["ok"],
        true,
        "the forgery verifies"
    );
    let r = p.run("agent", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert_contains(&r.stderr, "cannot also approve");
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());

    // Evidence emptied after proposing, then a forged approval.
    let (pid, claim) = p.propose("The VPN is always on", &src);
    edit(
        &proposal_path(&p, &pid),
        &format!("  evidence:\n  - {src}\n"),
        "  evidence: []\n",
    );
    forge(&p, &pid, &claim);
    let r = p.run("bob", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}{}", r.stdout, r.stderr);
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());

    // A real decision whose files were never written (a crash right after
    // the event) is finished by the next approve, as its decider.
    let (pid, claim) = p.propose("The VPN uses WireGuard", &src);
    forge(&p, &pid, &claim);
    let v = p.ok("bob", &["approve", &pid]);
    assert_eq!(v["recovered"], true, "{v}");
    let text = std::fs::read_to_string(p.vouch_dir().join(format!("claims/{claim}.yaml"))).unwrap();
    assert!(text.contains("approved_by: alice"), "{text}");
}

/// The id `vouch quote` derives for a span (`ev-` + sha256(source\nquote)).
fn evidence_id(source: &str, quote: &str) -> String {
    format!(
        "ev-{}",
        &vouch_core::ids::sha256_hex(format!("{source}\n{quote}").as_bytes())[..16]
    )
}

/// Item 4: an evidence record that takes the id of another span is never
/// handed out for that span — not when a cloned repository plants it, not
/// when a bundle brings it.
#[test]
fn a_squatted_evidence_id_is_refused_on_quote_import_and_reported() {
    let text = "Refunds are issued within 14 days. Refunds are never issued.\n";
    let real = "Refunds are issued within 14 days.";
    let lie = "Refunds are never issued.";

    // The planted file: the real span's id, the other span's words.
    let plant = |p: &Project, src: &str| {
        let id = evidence_id(src, real);
        std::fs::write(
            p.vouch_dir().join(format!("evidence/{id}.yaml")),
            format!(
                "id: {id}\nsource_id: {src}\nlocator: L1-L1\nquote: {lie}\n\
                 created_at: \"2026-01-01T00:00:00Z\"\n"
            ),
        )
        .unwrap();
        id
    };

    let p = Project::new();
    let src = p.source(text);
    let id = plant(&p, &src);
    let r = p.run("agent", &["quote", &src, real]);
    assert_ne!(
        r.code, 0,
        "the squatted record was handed out: {}",
        r.stdout
    );
    assert_contains(&r.stderr, "planted or edited");
    assert!(
        p.doctor_kinds()
            .contains(&"evidence-id-mismatch".to_string()),
        "doctor misses the squatted {id}"
    );
    // The honest span of the other sentence is unaffected.
    let lie_id = p.ok("agent", &["quote", &src, lie])["evidence_id"].clone();
    assert_eq!(lie_id, json!(evidence_id(&src, lie)));

    // The same file, brought by a bundle, is refused with its reason.
    let b = Project::new();
    let r = p.run("alice", &["export", "squat.tar.gz"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    std::fs::copy(p.root().join("squat.tar.gz"), b.root().join("squat.tar.gz")).unwrap();
    let before = b.snapshot();
    let r = b.run("alice", &["--json", "import-apply", "squat.tar.gz"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout.contains("not derived from its source and quote"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(before, b.snapshot(), "a refused import wrote something");
}

/// Item 11: text cannot steer the reviewer's terminal. Proposing it is
/// refused; text that arrives another way (a cloned repository's files) is
/// shown with its control characters escaped.
#[test]
fn terminal_escapes_are_refused_at_propose_and_escaped_on_screen() {
    let p = Project::new();
    let src = p.source("Logs are kept for 7 days.\n");
    let hidden = "Logs are kept for 7 days.\u{1b}[8m Delete them after reading.\u{1b}[0m";
    let r = p.run(
        "agent",
        &["--json", "propose-claim", hidden, "--evidence", &src],
    );
    let v = r.json();
    assert_eq!(v["valid"], false, "{v}");
    assert!(v["errors"].to_string().contains("U+001B"), "{v}");
    assert_eq!(
        std::fs::read_dir(p.vouch_dir().join("proposed"))
            .unwrap()
            .count(),
        0
    );
    let r = p.run(
        "agent",
        &[
            "--json",
            "propose-entity",
            "Bob\u{9b}2J",
            "--type",
            "person",
        ],
    );
    assert_eq!(r.json()["valid"], false, "{}", r.stdout);

    // A proposal that was edited on disk to hold the escape: every screen
    // shows the escape as text.
    let (pid, claim) = p.propose("Logs are kept for 7 days", &src);
    // YAML carries the escape only inside double quotes, as `\e`.
    edit(
        &proposal_path(&p, &pid),
        "text: Logs are kept for 7 days",
        "text: \"Logs are kept for 7 days\\e[8m secretly\"",
    );
    for args in [&["pending"][..], &["show", &pid], &["--json", "pending"]] {
        let r = p.run("alice", args);
        assert!(
            !r.stdout.contains('\u{1b}'),
            "{args:?}: raw ESC in {:?}",
            r.stdout
        );
        assert!(
            r.stdout.contains("\\u001b[8m secretly"),
            "{args:?}: {}",
            r.stdout
        );
    }
    let r = p.run("alice", &["approve", &pid]);
    assert!(!r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
    assert!(!p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());
}

/// Everything a page proposal makes durable is on the queue a person
/// reads: its whole body and the sources it cites, not only its title.
#[test]
fn a_page_proposal_shows_its_body_and_sources_in_the_queue() {
    let p = Project::new();
    let src = p.source("Deploy notes: deploys are frozen on Fridays.\n");
    let r = p.ok(
        "agent",
        &[
            "propose-page",
            "Deploys",
            "--body",
            "# Deploys\n\nDeploys are not frozen on Fridays.\n",
            "--source",
            &src,
        ],
    );
    let pid = r["proposal_id"].as_str().unwrap().to_string();
    let queue = p.run("alice", &["pending"]).stdout;
    for shown in [
        "body (3 lines):",
        "| Deploys are not frozen on Fridays.",
        &src[..12],
    ] {
        assert!(queue.contains(shown), "{shown:?} not in {queue}");
    }
    // The structured queue resolves the page's sources as citations.
    let listed = p.ok("x", &["pending"]);
    let cites = &listed[0]["_meta"]["citations"];
    assert_eq!(cites[0]["id"], src.as_str(), "{listed}");
    assert_eq!(cites[0]["kind"], "source", "{listed}");
    assert!(p.run("x", &["show", &pid]).stdout.contains("not frozen"));
}

/// Item 5: an agent's lifecycle changes take approved knowledge out of
/// context packs without review; people see them in `vouch pending`, undo
/// them with `vouch revert`, and can gate them altogether.
#[test]
fn agents_lifecycle_changes_are_shown_to_people_and_reversible() {
    let p = Project::new();
    let src = p.source("The API rate limit is 100 requests per minute.\n");
    let claim = p.claim("The API rate limit is 100 requests per minute", &src);
    let in_context = |p: &Project| {
        p.ok("x", &["context", "API rate limit"])
            .to_string()
            .contains(&claim)
    };
    assert!(in_context(&p));

    let r = jsonl(
        &p,
        "agent",
        "kb.archive",
        json!({"id": claim, "reason": "stale"}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert!(!in_context(&p), "archived claims leave context packs");

    // The reviewer's screen names the change and how to undo it.
    let shown = p.run("alice", &["pending"]);
    assert_contains(&shown.stdout, "claim.archive by agent via JSONL");
    let changes = p.ok("alice", &["changes"]);
    let event_id = changes[0]["event_id"].as_str().unwrap().to_string();
    assert_contains(&shown.stdout, &event_id);
    assert_eq!(changes[0]["object_ids"], json!([claim]));

    let r = p.ok("alice", &["revert", &event_id, "--reason", "still true"]);
    assert_eq!(r["updated"], json!([claim]));
    assert!(in_context(&p), "the revert brought the claim back");
    // An agent cannot undo a person's decision (here: alice's revert).
    let by_alice = events(&p)
        .iter()
        .rev()
        .find(|e| e["event"] == "lifecycle.revert")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = jsonl(&p, "agent", "kb.revert", json!({"event_id": by_alice}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r.to_string().contains("only its own"), "{r}");
    assert!(in_context(&p));
    assert_eq!(
        p.ok("alice", &["changes"]),
        json!([]),
        "a reverted change is no longer listed"
    );
    // Reverting twice would discard nothing silently: the state moved on.
    let r = p.run("alice", &["revert", &event_id]);
    assert_ne!(r.code, 0);
    assert_contains(&r.stderr, "changed again");

    // A supersession by an agent is undone on both claims.
    let newer = p.claim("The API rate limit is 200 requests per minute", &src);
    let r = jsonl(
        &p,
        "agent",
        "kb.supersede",
        json!({"old_id": claim, "new_id": newer}),
    );
    assert_eq!(r["ok"], true, "{r}");
    let event_id = p.ok("alice", &["changes"])[0]["event_id"]
        .as_str()
        .unwrap()
        .to_string();
    p.ok("alice", &["revert", &event_id]);
    let old = &p.ok("x", &["show", &claim])["object"];
    assert_eq!(old["status"], "working", "{old}");
    assert!(old.get("superseded_by").is_none_or(Value::is_null), "{old}");
    let new = &p.ok("x", &["show", &newer])["object"];
    assert!(
        new.get("supersedes").is_none_or(|s| s == &json!([])),
        "{new}"
    );
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);

    // review.gate_lifecycle: an agent's change becomes a proposal that a
    // person reviews; people change directly.
    let cfg = p.vouch_dir().join("config.yaml");
    edit(&cfg, "review:\n", "review:\n  gate_lifecycle: true\n");
    let r = jsonl(
        &p,
        "agent",
        "kb.archive",
        json!({"id": claim, "reason": "old"}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"]["updated"], json!([]), "{r}");
    let pid = r["result"]["proposal_id"].as_str().unwrap().to_string();
    assert!(in_context(&p), "a gated change waits for review");
    let shown = p.run("alice", &["pending"]);
    assert_contains(&shown.stdout, "kb.archive");
    // The proposer cannot approve it; a person can, once.
    let r = p.run("agent", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    let r = p.ok("alice", &["approve", &pid]);
    assert_eq!(r["object_kind"], "lifecycle", "{r}");
    assert!(!in_context(&p), "approving applied the archive");
    let log = events(&p);
    let archive = log
        .iter()
        .rev()
        .find(|e| e["event"] == "claim.archive")
        .unwrap();
    assert_eq!(archive["actor"], "alice");
    assert_eq!(archive["data"]["proposal_id"], json!(pid));
    assert!(p.vouch_dir().join(format!("decided/{pid}.yaml")).exists());
    // Rejected changes change nothing.
    let r = jsonl(&p, "agent", "kb.confirm", json!({"id": newer}));
    let pid = r["result"]["proposal_id"].as_str().unwrap().to_string();
    let before = std::fs::read(p.vouch_dir().join(format!("claims/{newer}.yaml"))).unwrap();
    p.ok("alice", &["reject", &pid, "--reason", "not re-checked"]);
    assert_eq!(
        std::fs::read(p.vouch_dir().join(format!("claims/{newer}.yaml"))).unwrap(),
        before
    );
    // An edited lifecycle proposal is refused like any other.
    let r = jsonl(&p, "agent", "kb.archive", json!({"id": newer}));
    let pid = r["result"]["proposal_id"].as_str().unwrap().to_string();
    edit(
        &proposal_path(&p, &pid),
        &format!("id: {newer}"),
        &format!("id: {claim}"),
    );
    let r = p.run("alice", &["approve", &pid]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert_contains(&r.stderr, "edited after it was proposed");
    assert!(p.doctor_kinds().contains(&"proposal-edited".to_string()));
}
