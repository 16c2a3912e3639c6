//! Knowledge no review let in travels as such: unreviewed in the bundle,
//! unreviewed (unaudited) in the KB that imports it, whatever the manifest
//! or the bundle's own decision records say.

use super::*;

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

/// bob imports `bundle` (made from [`kb_edited_by_hand`]) into `q`: the
/// claims written and edited by hand arrive unreviewed and are marked
/// unaudited; the `honest` one arrives reviewed.
fn imported_unreviewed(q: &Project, bundle: &str, honest: &str, edited: &str) {
    let r = q.ok("bob", &["import-apply", bundle]);
    assert_eq!(r["unreviewed"], 2, "{r}");
    assert_eq!(
        unaudited(
            q,
            "invoices refunds",
            &[honest, edited, "invoices-are-never-due"]
        ),
        (vec![Some(false), Some(true), Some(true)], 2)
    );
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

    imported_unreviewed(&q, stripped, &honest, &edited);
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
    imported_unreviewed(&q, out.to_str().unwrap(), &honest, &edited);

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
