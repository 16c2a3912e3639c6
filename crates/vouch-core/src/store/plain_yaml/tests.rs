use super::read;
use crate::model::Claim;
use serde_json::Value;

/// A claim as vouch 1.x writes one (Python's `yaml.safe_dump`).
const CLAIM_1X: &str = "id: the-gateway-webhook-relay-of-ember-0309-is-owned-by-the-core-c986
text: The gateway webhook relay of ember-0309 is owned by the core team, who answer
  its pages during business hours
type: observation
status: working
confidence: 0.7
evidence:
- ev-8b60a9f5e3d9127f
entities:
- gateway-service-c986
supersedes: []
superseded_by: null
contradicts: []
scope:
  visibility: project
  project: 2af77cca3ca14ebcb027e54c01cf6e80
  agent: null
tags:
- gateway
created_at: '2026-11-28T16:31:43.351732Z'
updated_at: '2026-11-28T16:31:43.351736Z'
last_confirmed_at: null
approved_by: alice
proposed_by: claude
auto_approved: false
";

/// Scalars every schema does not read alike, or that YAML gives a meaning
/// beyond text, beside ordinary ones.
const SCALARS: &[&str] = &[
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "N",
    "~",
    "Null",
    "NULL",
    "null",
    "true",
    "True",
    "FALSE",
    "0x1F",
    "0o17",
    "0b101",
    "1e3",
    "1E3",
    "-1.5e-3",
    ".5",
    "5.",
    "+5",
    "-5",
    "007",
    "0.70",
    "1_000",
    "12:30:45",
    "2026-11-28",
    "2026-11-28T16:31:43Z",
    ".inf",
    "-.inf",
    ".NaN",
    "nan",
    "inf",
    "a: b",
    "a:b",
    "a #b",
    "a#b",
    "'quoted'",
    "'it''s'",
    "'bad'quote'",
    "it's",
    "- x",
    "-x",
    "[a]",
    "{a: b}",
    "&anchor x",
    "*alias",
    "!tag x",
    "!!str 5",
    "|",
    "> folded",
    "@x",
    "`x",
    "%x",
    "?x",
    ":x",
    ",x",
    "x,",
    "x:",
    "x :",
    "é accent",
    "中文",
    "emoji 🎉",
    "a\\b",
    "https://x.y/z?q=1&r=2",
    "[]",
    "{}",
    "''",
    "'  padded  '",
    "9223372036854775807",
    "9223372036854775808",
    "-0",
    "0",
    "1.0",
    "3.14159265358979323846",
    "0.1e1",
    "1.",
    "\"dq\"",
    "a\u{2028}b",
    "a\u{a0}b",
    "x ",
    "<<",
    "=",
    "a 'b' c",
    "ab''",
    "7 days",
    "v1.2.3",
    "1.2.3",
    "_x",
    "/path/to",
    "0",
    "10",
    "-10.25",
    "a \"b\" c",
    "\"a\\nb\"",
    "\"a'b\"",
    "\"\"",
    "\"x\" y",
    "\"2026-11-28T16:31:43Z\"",
    "\"a: b # c\"",
];

/// The documents the oracle is run on: the 1.x claim with each scalar in
/// each of several places, and with its lines reshaped.
fn documents() -> Vec<String> {
    let mut docs = vec![CLAIM_1X.to_string()];
    for s in SCALARS {
        for (from, to) in [
            ("status: working", format!("status: {s}")),
            ("confidence: 0.7", format!("confidence: {s}")),
            ("- gateway\n", format!("- {s}\n")),
            ("  agent: null", format!("  agent: {s}")),
            ("approved_by: alice", format!("approved_by: {s}")),
            ("  its pages", format!("  {s}")),
            ("text: The gateway", format!("text: {s} The gateway")),
            ("auto_approved: false", format!("auto_approved: {s}")),
            ("superseded_by: null", format!("superseded_by: {s}")),
        ] {
            docs.push(CLAIM_1X.replacen(from, &to, 1));
        }
    }
    for (from, to) in [
        ("tags:\n- gateway", "tags:\n  - gateway"),
        ("tags:\n- gateway", "tags:\n- gateway\n  - nested"),
        ("tags:\n- gateway", "tags:"),
        ("tags:\n- gateway", "tags:\n-"),
        ("tags:\n- gateway", "tags:\n- a\n-  b"),
        ("scope:\n  visibility", "scope:\n   visibility"),
        ("scope:\n", "scope: x\n"),
        ("  agent: null\n", "  agent:\n    deeper: 1\n"),
        ("  agent: null\n", "  agent:\n  - x\n"),
        ("status: working", "status: working\nstatus: approved"),
        ("  project: 2af", "  visibility: team\n  project: 2af"),
        ("  its pages", "\n  its pages"),
        ("  its pages", "    its pages"),
        ("  its pages", "  its pages\n  and more: here"),
        ("  its pages", "  its pages\n  'quoted'"),
        ("id: ", "---\nid: "),
        ("auto_approved: false\n", "auto_approved: false\n...\n"),
        ("auto_approved: false\n", "auto_approved: false"),
        ("auto_approved: false\n", "auto_approved: false\n\n"),
        ("type: observation", "type : observation"),
        ("type: observation", "type:observation"),
        ("type: observation", "'type': observation"),
        ("type: observation", "ty pe: observation"),
        ("type: observation", "type: observation\t"),
        ("type: observation", "type:  observation"),
        ("id: ", " id: "),
        ("\n", "\r\n"),
    ] {
        docs.push(CLAIM_1X.replacen(from, to, 1));
    }
    docs
}

/// Wherever the fast reader answers, serde-saphyr reads the same value;
/// and as a claim, the same claim.
#[test]
fn where_it_answers_it_agrees_with_serde_saphyr() {
    let (mut answered, mut left) = (0, 0);
    for doc in documents() {
        let Some(fast) = read(&doc) else {
            left += 1;
            continue;
        };
        answered += 1;
        let full: Value = serde_saphyr::from_str(&doc)
            .unwrap_or_else(|e| panic!("fast read, saphyr refused ({e}):\n{doc}"));
        assert_eq!(fast, full, "as values:\n{doc}");
        let fast_claim: Result<Claim, _> = serde_json::from_value(fast);
        let full_claim: Result<Claim, _> = serde_saphyr::from_str(&doc);
        if let Ok(fast_claim) = fast_claim {
            let full_claim =
                full_claim.unwrap_or_else(|e| panic!("fast claim, saphyr refused ({e}):\n{doc}"));
            assert_eq!(
                serde_json::to_value(&fast_claim).unwrap(),
                serde_json::to_value(&full_claim).unwrap(),
                "as claims:\n{doc}"
            );
        }
    }
    // Both sides are exercised: most variants read fast, the rest fall back.
    assert!(answered > 300 && left > 300, "{answered} read, {left} left");
}

/// The shapes a rebuild meets most, read fast: a 1.x claim, and a claim as
/// vouch itself writes one.
#[test]
fn records_as_vouch_and_1x_write_them_are_read_fast() {
    let fast: Claim = serde_json::from_value(read(CLAIM_1X).expect("1.x claim")).unwrap();
    assert_eq!(
        fast.text,
        "The gateway webhook relay of ember-0309 is owned by the core team, who answer its pages during business hours"
    );
    let (_dir, kb) = crate::testing::test_kb();
    let src = crate::testing::test_source(&kb, "drills");
    let id = crate::testing::test_claim(&kb, &src, "Failover drills run monthly, it's policy");
    let path = kb.layout().file(crate::store::Dir::Claims, &id).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let fast = read(&text).unwrap_or_else(|| panic!("vouch's own claim:\n{text}"));
    let full: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(fast, full);
}

/// What YAML gives a meaning beyond plain text, or that a schema may type
/// otherwise, is always left to serde-saphyr.
#[test]
fn what_a_schema_may_read_otherwise_is_left_to_serde_saphyr() {
    for s in [
        "yes",
        "No",
        "~",
        "Null",
        "0x1F",
        "1e3",
        ".inf",
        "007",
        "1_000",
        "12:30:45",
        "&a x",
        "*a",
        "!t x",
        "\"x\\ty\"",
        "x # c",
    ] {
        let doc = CLAIM_1X.replacen("status: working", &format!("status: {s}"), 1);
        assert_eq!(read(&doc), None, "{s}");
    }
    let twice = CLAIM_1X.replacen("status: working", "status: working\nstatus: approved", 1);
    assert_eq!(read(&twice), None, "a duplicate key");
    assert!(serde_saphyr::from_str::<Value>(&twice).is_err());
}
