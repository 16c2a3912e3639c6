//! The review queue in the team database: the pending proposals live in
//! PostgreSQL, not in the shared tree's `proposed/` (which is each gate's
//! inbox, emptied before the write lock goes back).

use super::*;

/// The proposal files in `p`'s tree.
fn inbox(p: &Project) -> Vec<String> {
    std::fs::read_dir(p.vouch_dir().join("proposed"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_queue_is_the_databases_and_the_tree_holds_no_proposal() {
    let (pg, p, a, b) = two_replicas();
    let first = propose(&a, "The ledger service settles payments hourly");
    let second = propose(&b, "The ledger service keeps a copy in another region");
    assert_eq!(inbox(&p), Vec::<String>::new(), "no file in the tree");
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(pending_ids(&a), both);
    assert_eq!(pending_ids(&b), both);
    let read = ok(&b, REVIEWER, "kb.read_proposal", json!({"id": first}));
    assert_eq!(read["status"], json!("pending"), "{read}");

    // Only the database holds them: while it is away, the queue is not
    // listed (and says why); back, it is whole.
    pg.stop();
    let away = call(&a, REVIEWER, "kb.list_pending", json!({}));
    assert_eq!(away["ok"], json!(false), "{away}");
    let why = away["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("cannot be reached"), "{why}");
    ok(&a, AGENT, "kb.search", json!({"query": "ledger"}));
    pg.restart();
    assert_eq!(pending_ids(&a), both);

    ok(&a, REVIEWER, "kb.approve", json!({"proposal_id": second}));
    ok(
        &b,
        REVIEWER,
        "kb.reject",
        json!({"proposal_id": first, "reason": "unsure"}),
    );
    assert!(pending_ids(&a).is_empty() && pending_ids(&b).is_empty());
    assert_eq!(inbox(&p), Vec::<String>::new());
    sound(&p);
}

#[test]
fn proposals_made_before_the_database_move_into_it() {
    let pg = Postgres::start();
    let p = team_project();
    // Proposed in the tree before the team had a database.
    let src = p.source("Releases ship on Tuesdays.");
    let (before, _) = p.propose("Releases ship on Tuesdays", &src);
    assert_eq!(inbox(&p), vec![format!("{before}.yaml")]);
    let a = replica_of(&p, &pg.url, &[]);
    assert_eq!(
        pending_ids(&a),
        vec![before.clone()],
        "listed from the tree"
    );
    // The first write moves it into the database.
    let after = propose(&a, "Releases are announced a day before");
    assert_eq!(inbox(&p), Vec::<String>::new());
    let mut both = vec![before.clone(), after.clone()];
    both.sort();
    let b = replica_of(&p, &pg.url, &[]);
    assert_eq!(pending_ids(&b), both);
    ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": before}));
    assert_eq!(pending_ids(&a), vec![after]);
    sound(&p);
}

#[test]
fn a_replica_killed_before_its_proposal_reaches_the_database_loses_nothing() {
    let pg = Postgres::start();
    let p = team_project();
    let a = replica_of(&p, &pg.url, &[("VOUCH_FAILPOINT", "inbox.moving=kill")]);
    let b = replica_of(&p, &pg.url, &[]);
    let src = ok(
        &a,
        AGENT,
        "kb.register_source",
        json!({"content": "Alerts page the on-call engineer.", "locator": "alerts.txt"}),
    );
    let body = json!({"id": 1, "method": "kb.propose_claim",
        "params": {"text": "Alerts page the on-call engineer", "evidence": [src["id"]]}});
    // Killed after the proposal is logged and written to the inbox, before
    // it is moved into the database, holding both locks.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.rpc(Some(AGENT), body.to_string().as_bytes())
    }));
    let mut a = a;
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.child.try_wait().expect("wait").is_none() {
        assert!(
            Instant::now() < deadline,
            "inbox.moving did not kill replica a"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = inbox(&p);
    assert_eq!(left.len(), 1, "{left:?}");
    let id = left[0].trim_end_matches(".yaml").to_string();
    assert_eq!(events_naming(&p, "proposal.create", &id), 1);
    // The other replica lists it at once, and its next write moves it.
    assert_eq!(pending_ids(&b), vec![id.clone()]);
    ok(&b, REVIEWER, "kb.approve", json!({"proposal_id": id}));
    assert!(pending_ids(&b).is_empty());
    assert_eq!(inbox(&p), Vec::<String>::new());
    assert_eq!(events_naming(&p, "proposal.approve", &id), 1);
    sound(&p);
}

#[test]
fn unqueue_gives_a_tree_without_the_database_its_pending_proposals() {
    let (pg, p, a, b) = two_replicas();
    let id = propose(&a, "The cache holds ten minutes of prices");
    let blocked = propose(&b, "The cache is warmed at startup");
    let _ = a.terminate();
    let _ = b.terminate();
    // A file in the way of one: that one stays in the database, named,
    // and the command says it is not done.
    let in_the_way = p
        .vouch_dir()
        .join("proposed")
        .join(format!("{blocked}.yaml"));
    std::fs::create_dir_all(in_the_way.parent().expect("folder")).expect("proposed/");
    std::fs::write(&in_the_way, "kind: claim\n").expect("planted");
    let out = p
        .command("operator")
        .env("VOUCH_DATABASE_URL", &pg.url)
        .args(["--json", "team", "unqueue"])
        .output()
        .expect("vouch team unqueue");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(said["moved"], json!([id]), "{said}");
    assert_eq!(said["left"], json!([blocked]), "{said}");
    std::fs::remove_file(&in_the_way).expect("removed");
    // Without the database, the tree has no pending proposal to list.
    let listed = |p: &Project| -> Vec<String> {
        p.ok("x", &["pending"])
            .as_array()
            .expect("list")
            .iter()
            .map(|p| p["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(listed(&p), vec![id.clone()]);
    // Out of the way, the rest moves; nothing is left in the database.
    let moved = team_cli(&p, &pg.url, &["unqueue"]);
    assert_eq!(moved["moved"], json!([blocked]), "{moved}");
    let mut both = vec![format!("{id}.yaml"), format!("{blocked}.yaml")];
    both.sort();
    let mut files = inbox(&p);
    files.sort();
    assert_eq!(files, both);
    assert_eq!(team_cli(&p, &pg.url, &["unqueue"])["moved"], json!([]));
    p.ok("alice", &["approve", &id]);
    assert_eq!(listed(&p), vec![blocked]);
    sound(&p);
}
