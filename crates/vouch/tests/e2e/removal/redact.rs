//! `vouch redact` and `kb.propose_redact`: a person redacts; an agent only
//! proposes it, on every transport; every surface shows what is left; the
//! secret leaves the working tree, the log, exports and (rebuilt) the
//! index; doctor, source_verify and the pull-request check accept it and
//! refuse the same done by hand; a bundle bringing the bytes back is
//! refused.

use super::{Call, Who, events, on_every_transport};
use crate::common::{Project, assert_contains, assert_lacks};
use crate::teams::git;
use serde_json::{Value, json};
use std::path::Path;

/// A credential of a common token format (the scan at the door knows it).
const SECRET: &str = "ghp_Zq8rT4vW2yX6aB1cD5eF9gH3jK7mN0pQ2sU4";
const NOTES: &str = "Deploys run scripts/deploy.sh from the ops box.\n";

/// Every file under .vouch/ (the derived index too, unless `index` is
/// false) that holds `needle`.
fn holding(p: &Project, needle: &str, index: bool) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, needle: &[u8], out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, base, needle, out);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(&p.vouch_dir(), &p.vouch_dir(), needle.as_bytes(), &mut out);
    out.retain(|f| index || !f.starts_with("state.db"));
    out.sort();
    out
}

/// A source holding SECRET (a person let it in as is), an approved claim
/// citing a quote of it and one citing the source whole. (source id,
/// claim by quote, claim by source)
fn leaked() -> (Project, String, String, String) {
    let p = Project::new();
    let text = format!("{NOTES}token = {SECRET}\n");
    let src = p.ok(
        "alice",
        &[
            "source",
            "add",
            "--text",
            &text,
            "--locator",
            "ops.md",
            "--allow-secrets",
        ],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let quoted = p.propose_quoted(
        "Deploys run scripts/deploy.sh.",
        &src,
        "Deploys run scripts/deploy.sh",
    );
    p.ok(
        "alice",
        &["approve", quoted["proposal_id"].as_str().unwrap()],
    );
    let whole = p.claim("The ops box runs the deploys.", &src);
    (
        p,
        src,
        quoted["claim_id"].as_str().unwrap().to_string(),
        whole,
    )
}

/// A person redacts the source: its content leaves the working tree and
/// the log records it by hash; the claims stay, shown as evidence
/// redacted in context packs and answers; the command prints the paths to
/// purge and the filter-repo command; search, exports and a fresh index
/// hold no trace; doctor and source_verify accept it; a bundle that would
/// bring the bytes back is refused.
#[test]
fn a_person_redacts_a_source_and_nothing_serves_its_bytes() {
    let (p, src, quoted, whole) = leaked();
    let before = p.root().join("before.tar.gz");
    p.ok("x", &["export", before.to_str().unwrap()]);
    assert!(!holding(&p, SECRET, false).is_empty());

    let r = p.run(
        "alice",
        &["redact", "source", &src, "--reason", "a CI token"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let content = format!(".vouch/sources/{src}/content");
    assert_contains(&r.stdout, &content);
    assert_contains(
        &r.stdout,
        &format!("git filter-repo --invert-paths --path '{content}'"),
    );
    assert_lacks(&r.stdout, SECRET);

    // The working tree (the index aside) and the log hold no trace.
    assert_eq!(holding(&p, SECRET, false), Vec::<String>::new());
    let ev = events(&p).pop().unwrap();
    assert_eq!(ev["event"], "object.redact", "{ev}");
    assert_eq!(
        ev["data"]["removed"][&format!("sources/{src}/content")],
        src.as_str(),
        "{ev}"
    );
    let meta =
        std::fs::read_to_string(p.vouch_dir().join(format!("sources/{src}/meta.yaml"))).unwrap();
    assert!(
        meta.contains("redacted:") && meta.contains("a CI token"),
        "{meta}"
    );
    let size = NOTES.len() + "token = ".len() + SECRET.len() + 1;
    assert!(meta.contains(&format!("byte_size: {size}")), "{meta}");

    // The claims stay; what they cite reads as redacted.
    for claim in [&quoted, &whole] {
        assert!(p.vouch_dir().join(format!("claims/{claim}.yaml")).exists());
    }
    let pack = p.ok("x", &["context", "deploys ops box"]);
    assert!(
        pack["text"].as_str().unwrap().contains("evidence redacted"),
        "{pack}"
    );
    let cited: Vec<Value> = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["citations"].as_array().unwrap().clone())
        .collect();
    assert!(
        !cited.is_empty() && cited.iter().all(|c| c["redacted"] == true),
        "{pack}"
    );
    let answer = p.ok("x", &["synthesize", "how do deploys run"]);
    assert!(answer.to_string().contains("\"redacted\":true"), "{answer}");
    for shown in [
        p.run("x", &["synthesize", "how do deploys run"]).stdout,
        p.run("x", &["context", "deploys ops box"]).stdout,
    ] {
        assert!(shown.contains("evidence redacted"), "{shown}");
    }
    assert_eq!(p.ok("x", &["search", "token"]), json!([]));

    // Accepted as what a redaction did.
    let verified = p.ok("x", &["source", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["redacted"], json!([src]), "{verified}");
    assert!(p.doctor_kinds().is_empty(), "{:?}", p.doctor_kinds());

    // Exports carry nothing of it; a bundle from before is refused.
    let after = p.root().join("after.tar.gz");
    p.ok("x", &["export", after.to_str().unwrap()]);
    let bytes = std::fs::read(&after).unwrap();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut plain).unwrap();
    assert!(!plain.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()));
    // Another KB takes the tombstone as what a redaction left.
    let other = Project::beside(&p);
    other.ok("alice", &["import-apply", after.to_str().unwrap()]);
    assert_eq!(
        other.ok("x", &["source", "verify"])["redacted"],
        json!([src])
    );
    assert!(
        other.doctor_kinds().is_empty(),
        "{:?}",
        other.doctor_kinds()
    );
    let r = p.run(
        "alice",
        &["--json", "import-apply", before.to_str().unwrap()],
    );
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        (r.stdout.clone() + &r.stderr).contains("redacted in this KB"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(holding(&p, SECRET, false), Vec::<String>::new());

    // A fresh index holds nothing of it either.
    p.drop_index();
    p.ok("x", &["index", "rebuild"]);
    assert_eq!(holding(&p, SECRET, true), Vec::<String>::new());
}

/// The agent cannot redact; it proposes; alice approves; the claim's text
/// is masked and its status redacted, out of search.
fn redact_over(p: &Project, claim: &str, call: &mut Call) -> Vec<Value> {
    let params = json!({"kind": "claim", "id": claim, "reason": "it names the token"});
    let (_, refused) =
        call(Who::Agent, "kb.redact", params.clone()).expect_err("an agent never redacts");
    assert!(refused.contains("kb.propose_redact"), "{refused}");
    let proposed = call(Who::Agent, "kb.propose_redact", params).expect("propose_redact");
    assert_eq!(proposed["valid"], true, "{proposed}");
    let pid = proposed["proposal_id"].as_str().unwrap();
    let approved = call(Who::Alice, "kb.approve", json!({"proposal_id": pid})).expect("approve");
    assert_eq!(approved["object_kind"], "redact", "{approved}");
    // The words left the claim's file and its approval's decided record.
    let file = std::fs::read_to_string(p.vouch_dir().join(format!("claims/{claim}.yaml"))).unwrap();
    assert!(file.contains("status: redacted"), "{file}");
    let decided = p.vouch_dir().join("decided");
    for f in std::fs::read_dir(decided).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        assert!(!text.contains("The ops box runs"), "{text}");
    }
    let read = call(Who::Agent, "kb.read_claim", json!({"id": claim})).expect("read");
    let hits = call(Who::Agent, "kb.search", json!({"query": "ops box deploys"})).expect("search");
    vec![
        read["status"].clone(),
        read["text"].clone(),
        json!(hits.to_string().contains(claim)),
    ]
}

#[test]
fn an_agent_proposes_a_redaction_and_a_person_approves_it_on_every_transport() {
    // The claim citing the source whole is the one redacted.
    let claim = "the-ops-box-runs-the-deploys";
    let got = on_every_transport(|| leaked().0, |p, call| redact_over(p, claim, call));
    let expect = vec![json!("redacted"), json!("[REDACTED]"), json!(false)];
    for ((got, p), on) in got.iter().zip(["JSONL", "MCP", "HTTP"]) {
        assert_eq!(got, &expect, "{on}");
        assert!(p.doctor_kinds().is_empty(), "{on}: {:?}", p.doctor_kinds());
    }
}

fn commit(p: &Project, message: &str) {
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "--allow-empty", "-m", message]);
}

/// The pull-request check passes a branch that redacts (listing each
/// redaction among its decisions) and refuses a branch that removed a
/// source's content by hand; doctor refuses a tombstone written by hand.
#[test]
fn redactions_pass_the_checks_and_the_same_by_hand_does_not() {
    let (p, src, _, whole) = leaked();
    git(p.root(), &["init", "-q", "-b", "main"]);
    commit(&p, "main");
    git(p.root(), &["checkout", "-q", "-b", "redacts"]);
    p.ok(
        "alice",
        &["redact", "source", &src, "--reason", "a CI token"],
    );
    p.ok(
        "alice",
        &["redact", "claim", &whole, "--reason", "it names the box"],
    );
    commit(&p, "two redactions");
    let r = p.run("x", &["--json", "audit", "verify", "--base", "main"]);
    let v = r.json();
    assert_eq!(r.code, 0, "{v:#}");
    let decisions = v["base"]["decisions"].to_string();
    assert!(
        decisions.contains(&format!("object.redact source {src}")),
        "{decisions}"
    );
    assert!(
        decisions.contains(&format!("object.redact claim {whole}")),
        "{decisions}"
    );

    // A branch of it that brings the bytes back (a hand copy from main).
    git(p.root(), &["checkout", "-q", "-b", "brought-back"]);
    let content = format!(".vouch/sources/{src}/content");
    let bytes = git(p.root(), &["show", &format!("main:{content}")]);
    std::fs::write(p.root().join(&content), bytes).unwrap();
    commit(&p, "the content back");
    let r = p.run("x", &["--json", "audit", "verify", "--base", "redacts"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert_contains(&r.stdout, "brings its bytes back");

    git(p.root(), &["checkout", "-q", "main"]);
    git(p.root(), &["checkout", "-q", "-b", "by-hand"]);
    git(p.root(), &["rm", "-q", &content]);
    commit(&p, "content removed by hand");
    let r = p.run("x", &["--json", "audit", "verify", "--base", "main"]);
    assert_eq!(r.code, 6, "{}", r.stdout);
    assert_contains(&r.stdout, &format!("sources/{src}/content"));
    // A tombstone written by hand is no redaction.
    let meta = p.vouch_dir().join(format!("sources/{src}/meta.yaml"));
    let mut text = std::fs::read_to_string(&meta).unwrap();
    text.push_str("redacted:\n  by: alice\n  reason: by hand\n");
    std::fs::write(&meta, text).unwrap();
    let verified = p.run("x", &["--json", "source", "verify"]).json();
    assert_eq!(verified["ok"], false, "{verified}");
    assert!(
        verified.to_string().contains("written by hand"),
        "{verified}"
    );
    assert!(!p.doctor_kinds().is_empty());
}
