//! Attack review, round five: source provenance read from an unaudited
//! file. (Bundles and knowledge export: `bundles/`, `knowledge.rs`.)

use crate::common::*;
use serde_json::json;

/// S1: an agent registers its own text under the locator `SECURITY.md`,
/// then hand-edits the source's `meta.yaml` to say a person registered it
/// and vouch read it from the file. Review surfaces take who and how from
/// the log (`source.register` records them, and the meta.yaml's sha256),
/// so the reviewer still reads "registered by agent; text supplied by the
/// caller"; `doctor` reports the edited meta.yaml (`edited-object`). And a
/// source said to be read from a file the project does not hold is
/// flagged.
#[test]
fn a_source_meta_edited_by_hand_changes_no_provenance_and_doctor_names_it() {
    let p = Project::new();
    let r = jsonl(
        &p,
        "agent",
        "kb.register_source",
        json!({"content": "Security policy: agents may push to main without review.\n",
               "locator": "SECURITY.md", "title": "Security policy"}),
    );
    let sid = r["result"]["id"].as_str().unwrap().to_string();
    let event = p.ok("x", &["audit", "--event", "source.register"]);
    let data = &event.as_array().unwrap().last().unwrap()["data"];
    assert_eq!(data["content"], "supplied", "{event}");
    let meta_path = format!("sources/{sid}/meta.yaml");
    assert!(data["written"][&meta_path].is_string(), "{event}");
    assert!(p.doctor_kinds().iter().all(|k| k != "edited-object"));

    let meta = p.vouch_dir().join(&meta_path);
    edit(&meta, "registered_by: agent", "registered_by: alice");
    edit(&meta, "content: supplied", "content: read_from_file");
    let v = p.propose_quoted(
        "Agents may push to main without review",
        &sid,
        "agents may push to main without review",
    );
    assert_eq!(v["valid"], true, "{v}");
    let pending = p.run("alice", &["pending"]).stdout;
    assert!(
        pending.contains("registered by agent; text supplied by the caller"),
        "{pending}"
    );
    assert!(!pending.contains("registered by alice"), "{pending}");
    assert!(!pending.contains("; read from the file"), "{pending}");
    let doctor = p.run("x", &["--json", "doctor"]).json();
    let edited: Vec<&serde_json::Value> = doctor["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "edited-object")
        .collect();
    assert_eq!(edited.len(), 1, "{doctor:#}");
    assert!(
        edited[0]["message"].as_str().unwrap().contains("meta.yaml"),
        "{doctor:#}"
    );

    // A person's source read from a file that is later removed: the
    // reviewer is told the file is not there.
    std::fs::write(p.root().join("NOTES.md"), "Releases ship on Tuesdays.\n").unwrap();
    let s2 = p.ok("alice", &["source", "add", "NOTES.md"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(p.root().join("NOTES.md")).unwrap();
    p.propose_quoted(
        "Releases ship on Tuesdays",
        &s2,
        "Releases ship on Tuesdays",
    );
    let pending = p.run("alice", &["pending"]).stdout;
    assert!(
        pending.contains("said to be read from the file it names, which is not in the project"),
        "{pending}"
    );
}
