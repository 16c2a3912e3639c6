//! The pull-request check (`vouch audit verify --base REV`): it passes what
//! went through the gate and names every bypass.

use super::*;

fn base_check(p: &Project, rev: &str) -> (i32, Value) {
    let r = p.run("x", &["--json", "audit", "verify", "--base", rev]);
    (r.code, r.json())
}

fn problems(v: &Value) -> String {
    v["base"]["problems"].to_string()
}

/// Commit what the test did as `message`, check it against `main`: exit
/// 6 with a problem saying `says`; then back to `reset` if given.
fn refused_against_main(p: &Project, message: &str, says: &str, reset: Option<&str>) {
    commit(p, message);
    let (code, v) = base_check(p, "main");
    assert_eq!(code, 6, "{message}: {v:#}");
    assert!(problems(&v).contains(says), "{message}: {v:#}");
    if let Some(rev) = reset {
        git(p.root(), &["reset", "-q", "--hard", rev]);
    }
}

fn rehash(mut ev: Value) -> String {
    ev["hash"] = json!(vouch_core::audit::event_hash(&ev));
    vouch_core::audit::canonical_json(&ev)
}

/// Append a `claim.confirm` of `claim` with `data`, the chain recomputed,
/// as someone with write access to the log would.
fn forge_confirm(p: &Project, claim: &str, data: Value) {
    let mut lines = log_lines(p);
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let forged = json!({
        "id": format!("evt-forged-confirm-{}", lines.len()),
        "event": "claim.confirm",
        "actor": "alice",
        "created_at": last["created_at"],
        "object_ids": [claim],
        "dry_run": false,
        "reversible": true,
        "data": data,
        "prev_hash": last["hash"],
    });
    lines.push(rehash(forged));
    write_log(p, &lines);
}

/// `vouch audit verify --base main` passes a branch that only added
/// through the gate, and fails (exit 6), naming each problem, on a
/// hand-written claim, an edited decision record, a rewritten old event,
/// a decision by its own proposer, and a source whose bytes are not its id.
#[test]
fn the_pull_request_check_passes_the_gate_and_names_every_bypass() {
    let p = repo();
    decide(&p, "Main knows this already.", "alice");
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    let claim = decide(&p, "The feature branch approved this.", "bob");
    commit(&p, "feature");
    let (code, v) = base_check(&p, "main");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["base"]["ok"], json!(true), "{v:#}");
    assert!(
        v["base"]["decisions"]
            .to_string()
            .contains(&format!("bob proposal.approve {claim}")),
        "{v:#}"
    );
    let clean = git(p.root(), &["rev-parse", "HEAD"]);

    // A claim written by hand.
    let claims = p.vouch_dir().join("claims");
    let text = std::fs::read_to_string(claims.join(format!("{claim}.yaml"))).unwrap();
    // A copy of the approved claim's file, as `id` saying `said`.
    let by_hand = |id: &str, said: &str| {
        std::fs::write(
            claims.join(format!("{id}.yaml")),
            text.replace(&claim, id)
                .replace("The feature branch approved this.", said),
        )
        .unwrap();
    };
    by_hand(
        "agents-may-deploy-on-fridays",
        "Agents may deploy on Fridays.",
    );
    refused_against_main(
        &p,
        "a claim by hand",
        "claims/agents-may-deploy-on-fridays.yaml: this claim was added with no event",
        Some(clean.trim()),
    );

    // Proposed through the gate, then written by hand: a proposal's
    // creation names the claim but does not write it.
    let src = p.source("Proposed, never approved.\n");
    let (_, proposed) = p.propose("Proposed, never approved.", &src);
    by_hand(&proposed, "Proposed, never approved.");
    refused_against_main(
        &p,
        "a proposed claim written by hand",
        &format!("claims/{proposed}.yaml: this claim was added with no event"),
        Some(clean.trim()),
    );

    // A decision record edited after it was made (one REV already had).
    let decided = p.vouch_dir().join("decided");
    git(p.root(), &["checkout", "-q", "main"]);
    let first = std::fs::read_dir(&decided)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    git(p.root(), &["checkout", "-q", "feature"]);
    edit(
        &first,
        "status: approved",
        "status: approved\nreason: rubber-stamped",
    );
    refused_against_main(
        &p,
        "edit a decision",
        "a decision record was edited",
        Some(clean.trim()),
    );

    // An old event rewritten (a recomputed chain verifies on its own).
    let mut lines = log_lines(&p);
    let mut old: Value = serde_json::from_str(&lines[0]).unwrap();
    old["actor"] = json!("mallory");
    lines[0] = rehash(old);
    for i in 1..lines.len() {
        let mut ev: Value = serde_json::from_str(&lines[i]).unwrap();
        let prev: Value = serde_json::from_str(&lines[i - 1]).unwrap();
        ev["prev_hash"] = prev["hash"].clone();
        lines[i] = rehash(ev);
    }
    write_log(&p, &lines);
    assert_eq!(verify(&p)["ok"], json!(true), "the rewrite verifies alone");
    refused_against_main(
        &p,
        "rewrite history",
        "was removed or changed: history was rewritten",
        Some(clean.trim()),
    );

    // A decision by its own proposer, forged into the log.
    let src = p.source("Forged decisions are caught.\n");
    let (proposal, _) = p.propose("Forged decisions are caught.", &src);
    let mut lines = log_lines(&p);
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let mut forged = last.clone();
    forged["event"] = json!("proposal.approve");
    forged["id"] = json!("evt-forged");
    forged["actor"] = last["actor"].clone();
    forged["object_ids"] = json!([proposal]);
    forged["prev_hash"] = last["hash"].clone();
    lines.push(rehash(forged));
    write_log(&p, &lines);
    refused_against_main(
        &p,
        "self-approval",
        "which they proposed themselves",
        Some(clean.trim()),
    );

    // A source whose bytes are not its id.
    let src = p.source("Sources are content-addressed.\n");
    std::fs::write(
        p.vouch_dir().join("sources").join(&src).join("content"),
        "Sources are whatever I say.\n",
    )
    .unwrap();
    refused_against_main(
        &p,
        "swap a source's bytes",
        "its bytes do not hash to its id",
        None,
    );

    // A revision git does not know is a clear error.
    let r = p.run("x", &["audit", "verify", "--base", "no-such-branch"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_contains(&r.stderr, "git knows no such revision");
}

/// The check knows what a lifecycle change may touch: a real `confirm`
/// passes, but a claim's text edited by hand riding on a `claim.confirm`
/// event (forged, recording the edit's own sha256 as what it wrote) fails,
/// naming the field. Files `.gitignore` keeps out of git, committed anyway
/// (`git add -f`: a derived `state.db`, a pending proposal), fail too.
#[test]
fn the_pull_request_check_refuses_edits_riding_on_lifecycle_events_and_committed_caches() {
    let p = repo();
    let claim = decide(&p, "Access tokens expire after 24 hours.", "alice");
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    p.ok("alice", &["confirm", &claim]);
    commit(&p, "confirm");
    let (code, v) = base_check(&p, "main");
    assert_eq!(code, 0, "a real confirm: {v:#}");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);

    let file = p.vouch_dir().join(format!("claims/{claim}.yaml"));
    edit(&file, "expire after 24 hours", "never expire");
    let sha = vouch_core::ids::sha256_hex(&std::fs::read(&file).unwrap());
    forge_confirm(
        &p,
        &claim,
        json!({"written": {format!("claims/{claim}.yaml"): sha}}),
    );
    refused_against_main(
        &p,
        "an edit riding on a confirm",
        &format!("claims/{claim}.yaml: this claim changed in text since the base"),
        Some(clean.trim()),
    );

    // Its citations swapped by hand, riding on the real confirm: the
    // lifecycle fields must be what that event recorded setting.
    let other = p.source("Tokens never expire, says this other note.\n");
    let cited = swap_first_citation(&file, &other);
    refused_against_main(
        &p,
        "citations swapped by hand",
        &format!("claims/{claim}.yaml: this claim is not what event"),
        Some(clean.trim()),
    );
    // The same, riding on a lifecycle event that records no bytes (as an
    // older vouch wrote them): it changes nothing (issue 39 item 4).
    git(p.root(), &["checkout", "-q", "-b", "legacy", "main"]);
    let text = std::fs::read_to_string(&file).unwrap();
    let approved_state = json!({
        "status": "working", "superseded_by": null, "supersedes": [], "contradicts": [],
        "evidence": [cited.trim_start_matches("- ")], "last_confirmed_at": null,
    });
    forge_confirm(
        &p,
        &claim,
        json!({"before": {claim.clone(): approved_state}, "after": {claim.clone(): approved_state}}),
    );
    std::fs::write(&file, text.replace(&cited, &format!("- {other}"))).unwrap();
    refused_against_main(
        &p,
        "citations swapped on a legacy event",
        &format!("claims/{claim}.yaml: this claim was changed with no event behind it"),
        None,
    );
    git(p.root(), &["checkout", "-q", "-f", "feature"]);
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // Approved on the branch, then edited before the commit.
    let fresh = decide(&p, "Refresh tokens last a week.", "alice");
    edit(
        &p.vouch_dir().join(format!("claims/{fresh}.yaml")),
        "last a week",
        "last forever",
    );
    refused_against_main(
        &p,
        "an edit after its approval",
        &format!("claims/{fresh}.yaml: this claim is not what event"),
        Some(clean.trim()),
    );

    let src = p.source("Pending things stay local.\n");
    p.propose("Pending things stay local.", &src);
    git(
        p.root(),
        &["add", "-f", ".vouch/state.db", ".vouch/proposed"],
    );
    commit(&p, "caches");
    let (code, v) = base_check(&p, "main");
    assert_eq!(code, 6, "{v:#}");
    for planted in ["state.db: a file vouch keeps out of git", "proposed/"] {
        assert!(problems(&v).contains(planted), "{planted}: {v:#}");
    }
}
