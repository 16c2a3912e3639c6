//! The pull-request check against forged lifecycle events: each changes only
//! what its kind changes, as who may make it, and a revert puts back only
//! what a lifecycle change recorded.

use super::*;

/// Item 4: lifecycle fields change only through lifecycle events that
/// record what they set and wrote, and only as the event does: an
/// archived claim un-archived and its citation swapped by hand is refused
/// behind a forged `session.start` naming it, a bare `claim.confirm`, and
/// a confirm that records the edit. Locally the bare confirm leaves the
/// recorded hash standing: `doctor` names the edit, search marks it.
#[test]
fn lifecycle_fields_change_only_as_a_recording_lifecycle_event_sets_them() {
    let (p, claim) = branched("Access tokens expire after a day.");
    git(p.root(), &["checkout", "-q", "main"]);
    p.ok("alice", &["archive", &claim]);
    commit(&p, "archived");
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    let file = claim_file(&p, &claim);
    let other = p.source("Tokens last forever, says this note.\n");
    commit(&p, "a source");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let unarchive = || {
        edit(&file, "status: archived", "status: working");
        swap_first_citation(&file, &other);
    };
    let event = |name: &str, data: Value| {
        json!({
            "id": format!("evt-forged-{}", name.replace('.', "-")),
            "event": name,
            "actor": "alice",
            "object_ids": [claim],
            "dry_run": false,
            "reversible": true,
            "data": data,
        })
    };
    let path = format!("claims/{claim}.yaml");

    // A forged session.start naming it.
    unarchive();
    forge(&p, event("session.start", json!({"task": "tidy"})));
    refused(
        &p,
        "session",
        &format!("{path}: this claim was changed with no event"),
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A bare claim.confirm; locally too.
    unarchive();
    forge(&p, event("claim.confirm", json!({})));
    let kinds = p.doctor_kinds();
    assert!(kinds.contains(&"edited-object".to_string()), "{kinds:?}");
    assert!(unaudited(&hit(&p, "access tokens", &claim)));
    commit(&p, "bare confirm");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    assert!(
        problems(&v).contains("(claim.confirm) names") && problems(&v).contains("records no"),
        "{v:#}"
    );
    assert!(
        problems(&v).contains(&format!("{path}: this claim was changed with no event")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A confirm recording the edit as what it set and wrote: a confirm
    // sets neither status nor evidence.
    unarchive();
    let state = json!({"status": "working", "evidence": [other], "last_confirmed_at": null,
                       "superseded_by": null, "supersedes": [], "contradicts": []});
    forge(
        &p,
        event(
            "claim.confirm",
            json!({"after": {claim.clone(): state}, "before": {claim.clone(): state},
                   "written": {path.clone(): sha(&file)}}),
        ),
    );
    let v = refused(
        &p,
        "recorded confirm",
        &format!("{path}: this claim changed in evidence, status since the base"),
    );
    assert!(problems(&v).contains("(claim.confirm) set only"), "{v:#}");
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A real lifecycle change passes.
    p.ok("alice", &["confirm", &claim]);
    passes(&p, "a real confirm");
}

/// Round 5, A: a lifecycle event is checked against what its kind means
/// and who may make it, not trusted by its name. An agent's forged revert
/// of a person's archive (a01), a revert that names no event it reverts, an
/// "archive" whose `after` un-archives (a08), an agent's direct cite (a02)
/// and, under the base's `review.gate_lifecycle`, an agent's direct
/// archive are refused; every lifecycle event is listed; a person's real
/// revert passes.
#[test]
fn round5_lifecycle_events_are_checked_by_what_they_mean_and_who_made_them() {
    let (p, claim) = branched("Access tokens expire after a day.");
    let archive = archived_at_base(&p, &claim);
    let archive_id = archive["id"].as_str().unwrap().to_string();
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let file = claim_file(&p, &claim);
    let unarchive = || edit(&file, "status: archived", "status: working");
    let revert = |actor: &str, key: &str| {
        lifecycle(
            &p,
            "lifecycle.revert",
            actor,
            json!([archive_id, claim]),
            json!({key: archive_id, "before": archive["data"]["after"],
                   "after": archive["data"]["before"], "via": "MCP"}),
        )
    };

    // An agent reverts a person's archive.
    unarchive();
    forge(&p, revert("agent", "reverts"));
    let v = refused(
        &p,
        "agent reverts",
        "an agent reverts only its own lifecycle changes",
    );
    assert!(
        v["base"]["lifecycle_changes"]
            .to_string()
            .contains(&format!("agent lifecycle.revert {archive_id}, {claim}")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A person's "revert" that names no event it reverts.
    unarchive();
    forge(&p, revert("alice", "reverted"));
    refused(&p, "revert of nothing", "it names no event it reverts");
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // An "archive" that un-archives.
    unarchive();
    let was = state(&p, &claim);
    let mut before = was.clone();
    before["status"] = json!("archived");
    forge(
        &p,
        lifecycle(
            &p,
            "claim.archive",
            "alice",
            json!([claim]),
            json!({"before": {claim.clone(): before}, "after": {claim.clone(): was}, "via": "command-line"}),
        ),
    );
    refused(
        &p,
        "archive that un-archives",
        &format!(
            "(claim.archive) sets {claim}'s status \\\"working\\\" (it makes it \\\"archived\\\")"
        ),
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A person's real revert passes, and is listed.
    p.ok("alice", &["revert", &archive_id]);
    let v = passes(&p, "a real revert");
    assert!(
        v["base"]["lifecycle_changes"]
            .to_string()
            .contains("alice lifecycle.revert"),
        "{v:#}"
    );
}

/// Round 5, A: what the runtime would have made a proposal, made directly
/// by an agent (one that files proposals at the base and decided nothing):
/// a cite always (a02); an archive when the base sets
/// `review.gate_lifecycle` (a08).
#[test]
fn round5_an_agents_direct_cite_or_gated_lifecycle_change_is_refused() {
    let (p, claim) = gated_changes_refused(
        "agent",
        "an agent's citation is always a proposal a person decides",
        "the base's review.gate_lifecycle makes an agent's lifecycle change",
    );

    // A person's direct archive passes.
    p.ok("alice", &["archive", &claim]);
    passes(&p, "a person archives");
}

/// Round 5, A (a01b): `vouch changes` shows a lifecycle change dated
/// before an event earlier in the log, whatever the date it claims: a
/// forged line cannot date itself out of the 7-day window.
#[test]
fn round5_a_backdated_lifecycle_change_is_still_shown() {
    let p = Project::new();
    let src = p.source("Access tokens expire after a day.\n");
    let claim = p.claim("Access tokens expire after a day.", &src);
    edit(
        &claim_file(&p, &claim),
        "status: working",
        "status: archived",
    );
    let was = json!({"status": "working", "evidence": [src], "last_confirmed_at": null,
                     "superseded_by": null, "supersedes": [], "contradicts": []});
    let mut after = was.clone();
    after["status"] = json!("archived");
    let mut ev = lifecycle(
        &p,
        "claim.archive",
        "agent",
        json!([claim]),
        json!({"before": {claim.clone(): was}, "after": {claim.clone(): after}, "via": "MCP"}),
    );
    let mut all = events(&p);
    ev["created_at"] = json!("2020-01-01T00:00:00Z");
    all.push(ev);
    write_chain(&p, all);
    let shown = p.ok("alice", &["changes"]).to_string();
    assert!(shown.contains("evt-forged-claim-archive"), "{shown}");
}

/// Round 6, C01: a revert puts back only what a lifecycle change recorded
/// writing. A "revert" of an event that is no lifecycle change (an
/// `index.note` whose made-up `data.before` swaps the claim's evidence and
/// makes it `stable`) fails the check, `doctor` names it
/// (`unfounded-revert`) and search marks the claim; the runtime refuses to
/// revert such an event; a revert of a branch's lifecycle change whose
/// own `before` was made up fails too; a person's real revert, and a revert
/// of that revert, pass and are listed with the state they put back.
#[test]
fn round6_a_revert_puts_back_only_what_a_lifecycle_change_recorded() {
    let (p, claim) = branched("The API uses OAuth2.");
    let other = p.source("The API uses API keys.\n");
    commit(&p, "a source");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let file = claim_file(&p, &claim);
    let cur = state(&p, &claim);
    let cited = cur["evidence"][0].as_str().unwrap().to_string();
    let mut evil = cur.clone();
    evil["evidence"] = json!([other]);
    evil["status"] = json!("stable");
    // The file made evil, and a revert of `target` by `actor` that
    // recorded doing it (from `was`).
    let revert_to_evil = |actor: &str, target: &str, was: &Value| {
        edit(&file, &format!("- {cited}\n"), &format!("- {other}\n"));
        edit(&file, "status: working", "status: stable");
        forge(
            &p,
            lifecycle(
                &p,
                "lifecycle.revert",
                actor,
                json!([target, claim]),
                json!({"reverts": target, "reverted_event": "claim.archive",
                       "before": {claim.clone(): was}, "after": {claim.clone(): evil},
                       "via": "MCP"}),
            ),
        );
    };
    let note = json!({"id": "evt-forged-note", "event": "index.note", "actor": "agent",
                      "object_ids": [], "dry_run": false, "reversible": false,
                      "data": {"before": {claim.clone(): evil}, "after": {claim.clone(): cur}}});

    // The attack: a note, then its "revert".
    forge(&p, note.clone());
    revert_to_evil("agent", "evt-forged-note", &cur);
    refused(
        &p,
        "revert of a note",
        "event evt-forged-note (index.note) is not a lifecycle change",
    );
    assert!(
        p.doctor_kinds().contains(&"unfounded-revert".to_string()),
        "{:?}",
        p.doctor_kinds()
    );
    assert!(unaudited(&hit(&p, "OAuth2", &claim)));
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // The runtime does not revert a note either.
    forge(&p, note);
    let r = p.call("agent", "kb.revert", json!({"event_id": "evt-forged-note"}));
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert_contains(&r.stderr, "not a lifecycle change");
    assert_eq!(state(&p, &claim), cur);
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // An archive whose `before` was made up, then its revert.
    let mut archived = cur.clone();
    archived["status"] = json!("archived");
    forge_archive(&p, &claim, "alice", Some(&evil));
    edit(&file, "status: archived", "status: working");
    revert_to_evil("alice", "evt-forged-claim-archive", &archived);
    refused(
        &p,
        "revert of a made-up archive",
        &format!("made no change of {claim} that this check found sound"),
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // Real: an archive, its revert and the revert's revert.
    p.ok("alice", &["archive", &claim]);
    let archive = events(&p).pop().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    p.ok("alice", &["revert", &archive]);
    let revert = events(&p).pop().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    p.ok("alice", &["revert", &revert]);
    let v = passes(&p, "real reverts");
    let lines = v["base"]["lifecycle_changes"].to_string();
    assert!(
        lines.contains(&format!("puts {claim} back to")) && lines.contains(r#"\"working\""#),
        "{v:#}"
    );
    assert!(lines.contains(r#"\"archived\""#), "{v:#}");
}
