//! The pull-request check against forged decisions and imports: an agent
//! never decides nor imports knowledge, a proposal is decided once, an
//! approval writes its payload and nothing else, and a new or look-alike
//! decider is named.

use super::*;

/// `approval` forged again by bob, its claim's text (`Backups run
/// nightly.`) edited by hand and recorded as what it wrote. The claim's
/// file.
fn approved_again(p: &Project, approval: &Value, claim: &str) -> std::path::PathBuf {
    let file = claim_file(p, claim);
    edit(&file, "Backups run nightly.", "Backups are optional.");
    let mut again = approval.clone();
    again["id"] = json!("evt-second-approve");
    again["actor"] = json!("bob");
    again["data"]["written"] = json!({format!("claims/{claim}.yaml"): sha(&file)});
    forge(p, again);
    file
}

/// Item 1: a claim written by hand behind a forged `bundle.import` whose
/// actor is an agent (one that proposes and never decided) is named in
/// the check's decisions and refused; locally `doctor` names the event
/// and reads mark the claim unaudited. A person's real import passes and
/// is listed too.
#[test]
fn an_agents_forged_import_is_listed_refused_and_marked_unaudited() {
    let (p, claim) = branched("Deploys need a person's review.");
    let approved = std::fs::read_to_string(claim_file(&p, &claim)).unwrap();
    let id = "agents-may-deploy-on-fridays";
    std::fs::write(
        claim_file(&p, id),
        approved.replace(&claim, id).replace(
            "Deploys need a person's review.",
            "Agents may deploy on Fridays.",
        ),
    )
    .unwrap();
    let path = format!("claims/{id}.yaml");
    forge(
        &p,
        json!({
            "id": "evt-forged-import",
            "event": "bundle.import",
            "actor": "agent",
            "object_ids": ["0".repeat(64)],
            "dry_run": false,
            "reversible": false,
            "data": {"path": "team.tar.gz", "on_conflict": "skip", "imported": 1,
                     "objects": [id], "written": {path.clone(): sha(&claim_file(&p, id))}},
        }),
    );
    commit(&p, "an import");
    let (code, v) = base_check(&p);
    assert_eq!(code, 6, "{v:#}");
    let decisions = v["base"]["decisions"].to_string();
    assert!(
        decisions.contains(&format!(
            "agent bundle.import [{id}] from bundle team.tar.gz"
        )),
        "{v:#}"
    );
    assert!(
        problems(&v).contains("an agent's import files proposals"),
        "{v:#}"
    );
    assert!(
        problems(&v).contains(&format!("{path}: this claim is not what event")),
        "{v:#}"
    );

    // Locally: doctor names the event, every read marks the claim.
    let kinds = p.doctor_kinds();
    assert!(kinds.contains(&"agent-import".to_string()), "{kinds:?}");
    assert!(unaudited(&hit(&p, "deploy on Fridays", id)));
    let pack = p.ok("x", &["context", "agents deploy fridays"]);
    let item = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("{pack}"));
    assert!(unaudited(item), "{pack}");
    assert!(!unaudited(&hit(&p, "person's review", &claim)));
}

/// Item 2: a proposal decided at the base is not decided again on the
/// branch — (a) approved again with new text recorded as written, (b)
/// rejected at the base and approved on the branch. And an approval's
/// file must be its proposal's payload: text changed at approval time,
/// with the event and the decision record made to match, is refused.
#[test]
fn a_decided_proposal_is_not_decided_again_and_an_approval_writes_its_payload() {
    let (p, claim) = branched("Backups run nightly.");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let approval = events(&p)
        .into_iter()
        .find(|e| e["event"] == "proposal.approve")
        .unwrap();
    let pid = approval["object_ids"][0].as_str().unwrap().to_string();

    // (a) approved again, writing new text.
    let file = approved_again(&p, &approval, &claim);
    let v = refused(
        &p,
        "approve again",
        &format!("decides proposal {pid} again"),
    );
    assert!(
        problems(&v).contains(&format!("claims/{claim}.yaml: this claim changed in text")),
        "{v:#}"
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // (b) rejected at the base, approved on the branch.
    git(p.root(), &["checkout", "-q", "main"]);
    let src = p.source("Restores are never tested.\n");
    let (rejected, object) = p.propose("Restores are never tested.", &src);
    p.ok("alice", &["reject", &rejected, "--reason", "wrong"]);
    commit(&p, "a rejection");
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    let text = std::fs::read_to_string(&file).unwrap();
    let object_file = claim_file(&p, &object);
    std::fs::write(
        &object_file,
        text.replace(&claim, &object)
            .replace("Backups run nightly.", "Restores are never tested."),
    )
    .unwrap();
    let mut forged = approval.clone();
    forged["id"] = json!("evt-approve-rejected");
    forged["object_ids"] = json!([rejected, object]);
    forged["data"]["written"] = json!({format!("claims/{object}.yaml"): sha(&object_file)});
    forge(&p, forged);
    let v = refused(
        &p,
        "approve the rejected",
        &format!("decides proposal {rejected} again"),
    );
    assert!(problems(&v).contains("records another decision"), "{v:#}");

    // An approval on the branch whose file is not the payload, its event
    // and decision record rewritten to match the edited file.
    git(p.root(), &["reset", "-q", "--hard", "main"]);
    git(p.root(), &["checkout", "-q", "-B", "feature"]);
    let src = p.source("Logs are kept for a year.\n");
    let (pending, fresh) = p.propose("Logs are kept for a year.", &src);
    p.ok("alice", &["approve", &pending]);
    commit(&p, "a real approval");
    let (code, v) = base_check(&p);
    assert_eq!(code, 0, "a real approval passes: {v:#}");
    let fresh_file = claim_file(&p, &fresh);
    edit(&fresh_file, "kept for a year", "kept forever");
    let mut all = events(&p);
    let last = all.pop().unwrap();
    assert_eq!(last["event"], "proposal.approve");
    let mut rewritten = last.clone();
    rewritten["data"]["written"] = json!({format!("claims/{fresh}.yaml"): sha(&fresh_file)});
    all.push(rewritten);
    write_chain(&p, all);
    let hash = events(&p).pop().unwrap()["hash"].clone();
    let decided = p.vouch_dir().join(format!("decided/{pending}.yaml"));
    edit(
        &decided,
        last["hash"].as_str().unwrap(),
        hash.as_str().unwrap(),
    );
    refused(
        &p,
        "approved other words",
        &format!(
            "claims/{fresh}.yaml: this claim changed in text since what approving proposal \
             {pending} writes"
        ),
    );
}

/// Round 5, B (a06): an approval's `data.written` naming another claim —
/// one the base archived, un-archived by hand — is refused: an approval
/// writes its object and the claims its payload supersedes, nothing else.
#[test]
fn round5_an_approval_does_not_carry_other_files() {
    let (p, claim) = branched("The API uses OAuth2.");
    archived_at_base(&p, &claim);
    let src = p.source("The API uses OAuth2 scopes.\n");
    let (pending, _) = p.propose("The API uses OAuth2 scopes.", &src);
    p.ok("alice", &["approve", &pending]);
    let file = claim_file(&p, &claim);
    edit(&file, "status: archived", "status: working");
    let mut all = events(&p);
    let at = all
        .iter()
        .rposition(|e| e["event"] == "proposal.approve")
        .unwrap();
    let old_hash = all[at]["hash"].as_str().unwrap().to_string();
    all[at]["data"]["written"][format!("claims/{claim}.yaml")] = json!(sha(&file));
    write_chain(&p, all);
    let new_hash = events(&p)[at]["hash"].as_str().unwrap().to_string();
    edit(
        &p.vouch_dir().join(format!("decided/{pending}.yaml")),
        &old_hash,
        &new_hash,
    );
    refused(
        &p,
        "an approval carries an un-archive",
        &format!(
            "records writing claims/{claim}.yaml, which approving the proposal does not write"
        ),
    );
}

/// Round 5, F: an agent (it files proposals at the base) never decides:
/// its forged rejection on a branch is refused (a15, pull request 1);
/// merged anyway, that rejection does not make it one who decides, so its
/// import stays refused (pull request 2); and an import by a name the base
/// never saw decide is listed for a person to confirm (a07).
#[test]
fn round5_an_agent_never_becomes_a_decider_and_a_new_decider_is_named() {
    let (p, _) = branched("Deploys happen on Tuesdays only.");
    let src = p.source("Cursor thinks so.\n");
    let v = p.ok(
        "cursor",
        &["propose-claim", "Cursor thinks so.", "--evidence", &src],
    );
    let pid = v["proposal_id"].as_str().unwrap().to_string();
    let ev = forge(
        &p,
        json!({"id": "evt-forged-reject", "event": "proposal.reject", "actor": "agent",
               "object_ids": [pid, v["claim_id"]], "dry_run": false, "reversible": false,
               "data": {"kind": "claim", "reason": "dup"}}),
    );
    let proposed = p.vouch_dir().join(format!("proposed/{pid}.yaml"));
    let record = std::fs::read_to_string(&proposed)
        .unwrap()
        .replace("status: pending", "status: rejected")
        + &format!(
            "decided_by: agent\ndecided_at: {}\nreason: dup\ndecision_hash: {}\n",
            ev["created_at"], ev["hash"]
        );
    std::fs::write(p.vouch_dir().join(format!("decided/{pid}.yaml")), record).unwrap();
    std::fs::remove_file(&proposed).unwrap();
    refused(
        &p,
        "pull request 1",
        "(proposal.reject) by \\\"agent\\\", who files proposals",
    );

    // Merged anyway: the agent's import on the next branch is still an
    // agent's.
    git(p.root(), &["branch", "-q", "-f", "main", "HEAD"]);
    let approved = std::fs::read_dir(p.vouch_dir().join("claims"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&approved).unwrap();
    let id = "fridays-are-fine";
    std::fs::write(claim_file(&p, id), text.replace("Tuesdays only", "any day")).unwrap();
    let import = |actor: &str| {
        json!({"id": "evt-forged-import", "event": "bundle.import", "actor": actor,
               "object_ids": ["0".repeat(64)], "dry_run": false, "reversible": false,
               "data": {"path": "team.tar.gz", "objects": [id],
                        "written": {format!("claims/{id}.yaml"): sha(&claim_file(&p, id))}}})
    };
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    forge(&p, import("agent"));
    refused(&p, "pull request 2", "an agent's import files proposals");
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    // A name the base never saw decide.
    std::fs::write(claim_file(&p, id), text.replace("Tuesdays only", "any day")).unwrap();
    forge(&p, import("vouch-sync"));
    commit(&p, "a new name imports");
    let (_, v) = base_check(&p);
    assert!(
        v["base"]["warnings"]
            .to_string()
            .contains("new decider: vouch-sync decides here (bundle.import"),
        "{v:#}"
    );
    let text = p.run("x", &["audit", "verify", "--base", "main"]).stdout;
    assert!(text.contains("CONFIRM: new decider: vouch-sync"), "{text}");
}

/// Round 5, G (a13, a09): locally, an approval lets nothing in unless its
/// proposal was created before it and not decided since: `doctor` names
/// an approval of a proposal nobody created and a second approval of a
/// decided one, and reads mark what they wrote.
#[test]
fn round5_doctor_names_approvals_of_proposals_never_made_or_decided_before() {
    let p = Project::new();
    let src = p.source("Backups run nightly.\n");
    let (pid, claim) = p.propose("Backups run nightly.", &src);
    p.ok("alice", &["approve", &pid]);
    let approval = events(&p)
        .into_iter()
        .rfind(|e| e["event"] == "proposal.approve")
        .unwrap();

    // Approved again, with new text recorded as written.
    let file = approved_again(&p, &approval, &claim);

    // An approval of a proposal nobody created.
    let id = "fridays-are-fine";
    let forged_file = claim_file(&p, id);
    std::fs::write(
        &forged_file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace(&claim, id)
            .replace("Backups are optional.", "Deploys on Fridays are fine."),
    )
    .unwrap();
    let mut orphan = approval.clone();
    orphan["id"] = json!("evt-orphan-approve");
    orphan["object_ids"] = json!(["20260101-000000-deadbeef", id]);
    orphan["data"]["written"] = json!({format!("claims/{id}.yaml"): sha(&forged_file)});
    forge(&p, orphan);

    let report = p.run("x", &["--json", "doctor"]).json();
    let text = report.to_string();
    assert!(
        text.contains("evt-second-approve") && text.contains("decided proposal"),
        "{report:#}"
    );
    assert!(
        text.contains("evt-orphan-approve") && text.contains("no proposal.create event"),
        "{report:#}"
    );
    assert!(
        issue_kinds(&report).contains(&"unfounded-decision".to_string()),
        "{report:#}"
    );
    assert!(unaudited(&hit(&p, "optional", &claim)));
    assert!(unaudited(&hit(&p, "Fridays", id)));
}

/// Round 6, C02: a name that neither proposed nor decided at the base is
/// unknown. Under the base's `review.gate_lifecycle` its direct cite or
/// archive fails the check; without the gate its cite asks the reviewer to
/// confirm who it is.
#[test]
fn round6_a_made_up_name_makes_no_gated_change() {
    gated_changes_refused(
        "claude-bot",
        "by \\\"claude-bot\\\", a name that neither proposed nor decided at main, makes a citation",
        "makes a lifecycle change of",
    );

    // Without the gate: a CONFIRM line.
    let (p, claim) = branched("Deploys happen on Tuesdays only.");
    forge_cite(&p, &claim, "claude-bot");
    let v = passes(&p, "a cite by a made-up name");
    assert!(
        v["base"]["warnings"]
            .to_string()
            .contains("unknown name: claude-bot makes a citation"),
        "{v:#}"
    );
}

/// Round 6, C09: a person's import of an honestly exported bundle, with
/// the `decided/` records of the KB it came from, passes the check on a
/// branch (each record named by the import); a decision record beside it
/// that the import does not name still fails.
#[test]
fn round6_an_honest_import_on_a_branch_passes() {
    let a = Project::new();
    let src = a.source("Backups run nightly at 02:00.\n");
    a.claim("Backups run nightly at 02:00.", &src);
    let bundle = a.root().join("kb.tar.gz");
    a.ok("alice", &["export", bundle.to_str().unwrap()]);

    let p = Project::beside(&a);
    git(p.root(), &["init", "-q", "-b", "main"]);
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "feature"]);
    p.ok("bob", &["import-apply", bundle.to_str().unwrap()]);
    let decided: Vec<_> = std::fs::read_dir(p.vouch_dir().join("decided"))
        .unwrap()
        .collect();
    assert!(!decided.is_empty(), "the bundle brings decided/");
    let v = passes(&p, "import");
    assert!(
        v["base"]["decisions"]
            .to_string()
            .contains("bob bundle.import"),
        "{v:#}"
    );

    let record = decided[0].as_ref().unwrap().path();
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(
        p.vouch_dir().join("decided/20260101-000000-deadbeef.yaml"),
        text,
    )
    .unwrap();
    refused(
        &p,
        "a decision record by hand",
        "decided/20260101-000000-deadbeef.yaml: a decision record with no approval",
    );
}

/// Round 6, C03: a decision by a look-alike of a base decider's name
/// (`\u{430}lice`, a Cyrillic а) is shown escaped and fails the check; an
/// ASCII look-alike (`aIice`) asks the reviewer to confirm it.
#[test]
fn round6_a_look_alike_name_is_shown_escaped_and_named() {
    let (p, _) = branched("Deploys happen on Tuesdays only.");
    let clean = git(p.root(), &["rev-parse", "HEAD"]);
    let src = p.source("Deploys on Fridays need no review.\n");
    let (pid, _) = p.propose("Deploys on Fridays need no review.", &src);
    p.ok("\u{430}lice", &["approve", &pid]);
    commit(&p, "a look-alike approves");
    let r = p.run("x", &["audit", "verify", "--base", "main"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert!(
        r.stdout.contains("\\u{430}lice, which reads as alice") && !r.stdout.contains('\u{430}'),
        "{}",
        r.stdout
    );
    git(p.root(), &["reset", "-q", "--hard", clean.trim()]);

    let src = p.source("Deploys on Fridays need no review.\n");
    let (pid, _) = p.propose("Deploys on Fridays need no review.", &src);
    p.ok("aIice", &["approve", &pid]);
    let v = passes(&p, "an ASCII look-alike approves");
    assert!(
        v["base"]["warnings"]
            .to_string()
            .contains("look-alike name: event"),
        "{v:#}"
    );
}
