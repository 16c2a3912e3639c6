//! Property tests (proptest): every object kind written as vouch writes it
//! and read back from its file through the KB's own read path comes back
//! equal — with text that YAML likes to reinterpret (`null`, `true`,
//! `1.5`, `- a`, `a: b`, leading spaces, quotes, `#`, newlines, any
//! Unicode), floats, nested values in `scope`/`metadata`, unknown keys of
//! a newer version, and page bodies that contain `---` lines.

use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use vouch_core::Kb;
use vouch_core::model::*;
use vouch_core::stored::Stored;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,40}",
        "[a-z :#\\-'\"\\n\\t]{0,30}",
        Just("null".to_string()),
        Just("true".to_string()),
        Just("1.5".to_string()),
        Just("- a".to_string()),
        Just("a: b".to_string()),
        Just(" leading".to_string()),
        Just("trailing ".to_string()),
        Just("~".to_string()),
        Just("'quoted'".to_string()),
        Just("line\n---\nafter".to_string()),
        Just(String::new()),
    ]
}

fn id() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9-]{0,30}"
}

fn ids() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(id(), 0..4)
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(text(), 0..4)
}

fn time() -> impl Strategy<Value = Timestamp> {
    // Microseconds, the precision vouch writes.
    (0i64..4_102_444_800, 0u32..1_000_000).prop_map(|(s, us)| {
        Timestamp(chrono::DateTime::from_timestamp(s, us * 1000).expect("in range"))
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Keys a newer version might write; never one this version knows.
fn extra() -> impl Strategy<Value = BTreeMap<String, Value>> {
    prop::collection::btree_map("x_[a-z]{1,8}", json_value(), 0..3)
}

fn pick<T: Copy + std::fmt::Debug + 'static>(all: &'static [T]) -> impl Strategy<Value = T> {
    prop::sample::select(all)
}

fn confidence() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.0f64..=1.0,
        Just(0.0),
        Just(1.0),
        Just(0.7),
        Just(0.1 + 0.2)
    ]
}

prop_compose! {
    fn claim()(id in id(), text in text(), t in pick(ClaimType::ALL), s in pick(ClaimStatus::ALL),
               confidence in confidence(), evidence in ids(), entities in ids(), supersedes in ids(),
               superseded_by in proptest::option::of(id()), contradicts in ids(),
               scope in proptest::option::of(json_value().prop_filter("a scope is not null", |v| !v.is_null())),
               tags in texts(), created_at in time(), updated_at in time(),
               last_confirmed_at in proptest::option::of(time()),
               approved_by in proptest::option::of(id()), extra in extra()) -> Claim {
        Claim { id, text, claim_type: t, status: s, confidence, evidence, entities, supersedes,
                superseded_by, contradicts, scope, tags, created_at, updated_at,
                last_confirmed_at, approved_by, extra }
    }
}

prop_compose! {
    fn entity()(id in id(), name in text(), t in pick(EntityType::ALL), aliases in texts(),
                description in proptest::option::of(text()), tags in texts(),
                created_at in time(), updated_at in time(),
                approved_by in proptest::option::of(id()), extra in extra()) -> Entity {
        Entity { id, name, entity_type: t, aliases, description, tags, created_at, updated_at,
                 approved_by, extra }
    }
}

prop_compose! {
    fn relation()(id in id(), source in id(), r in pick(RelationType::ALL), target in id(),
                  confidence in confidence(), evidence in ids(), created_at in time(),
                  updated_at in time(), approved_by in proptest::option::of(id()),
                  extra in extra()) -> Relation {
        Relation { id, source, relation: r, target, confidence, evidence, created_at,
                   updated_at, approved_by, extra }
    }
}

prop_compose! {
    fn evidence()(id in id(), source_id in "[0-9a-f]{64}", locator in text(),
                  quote in proptest::option::of(text()), hash in proptest::option::of("[0-9a-f]{64}"),
                  created_at in time(), extra in extra()) -> Evidence {
        Evidence { id: format!("ev-{id}"), source_id, source_type: None, locator, quote, hash,
                   created_at, extra }
    }
}

prop_compose! {
    fn page()(id in id(), title in text(), t in pick(PageType::ALL), s in pick(PageStatus::ALL),
              claims in ids(), entities in ids(), tags in texts(), created_at in time(),
              updated_at in time(), approved_by in proptest::option::of(id()), extra in extra(),
              body in prop_oneof![text(), Just("# T\n\n---\n\nafter a rule\n---\n".to_string())])
              -> Page {
        Page { id, title, page_type: t, status: s, claims, entities, sources: Vec::new(), tags,
               created_at, updated_at, approved_by, extra, body }
    }
}

prop_compose! {
    fn session()(id in "[0-9]{8}-[0-9]{6}-[a-f0-9]{6}", task in proptest::option::of(text()),
                 note in proptest::option::of(text()), actor in proptest::option::of(id()),
                 s in pick(SessionStatus::ALL), started_at in time(),
                 ended_at in proptest::option::of(time()), proposals in ids(),
                 extra in extra()) -> Session {
        Session { id: format!("sess-{id}"), task, note, actor, status: s, started_at, ended_at,
                  proposals, extra }
    }
}

prop_compose! {
    fn proposal()(n in "[0-9]{8}-[0-9]{6}-[a-f0-9]{8}", kind in pick(ProposalKind::ALL),
                  status in pick(ProposalStatus::ALL), object_id in id(), proposed_by in id(),
                  created_at in time(), session_id in proptest::option::of(id()),
                  rationale in proptest::option::of(text()), payload in json_value(),
                  decided_by in proptest::option::of(id()), decided_at in proptest::option::of(time()),
                  reason in proptest::option::of(text()), extra in extra()) -> Proposal {
        Proposal { id: n, kind, status, object_id, proposed_by, created_at, session_id, rationale,
                   payload, decided_by, decided_at, reason, decision_hash: None, extra }
    }
}

fn kb() -> (tempfile::TempDir, Kb) {
    let dir = tempfile::tempdir().unwrap();
    Kb::init(dir.path(), "roundtrip", None).unwrap();
    let kb = Kb::open(
        &dir.path().join(".vouch"),
        Arc::new(vouch_core::clock::SystemClock::default()),
    )
    .unwrap();
    (dir, kb)
}

/// Write `value` to its file as vouch does, read it back through the KB.
fn round_trip<T: Stored + PartialEq + std::fmt::Debug>(kb: &Kb, value: &T) -> T {
    let path = kb.layout().file(T::DIR, value.id()).unwrap();
    std::fs::write(&path, value.encode().unwrap()).unwrap();
    let back = kb
        .load::<T>(value.id())
        .unwrap()
        .expect("the file is there");
    std::fs::remove_file(&path).unwrap();
    back
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn claims_round_trip(c in claim()) {
        let (_d, kb) = kb();
        prop_assert_eq!(round_trip(&kb, &c), c);
    }

    #[test]
    fn entities_round_trip(e in entity()) {
        let (_d, kb) = kb();
        prop_assert_eq!(round_trip(&kb, &e), e);
    }

    #[test]
    fn relations_round_trip(r in relation()) {
        let (_d, kb) = kb();
        prop_assert_eq!(round_trip(&kb, &r), r);
    }

    #[test]
    fn evidence_round_trips(e in evidence()) {
        let (_d, kb) = kb();
        prop_assert_eq!(round_trip(&kb, &e), e);
    }

    #[test]
    fn pages_round_trip(p in page()) {
        let (_d, kb) = kb();
        prop_assert_eq!(round_trip(&kb, &p), p);
    }

    #[test]
    fn sessions_round_trip(s in session()) {
        let (_d, kb) = kb();
        prop_assert_eq!(round_trip(&kb, &s), s);
    }

    #[test]
    fn proposals_round_trip(p in proposal()) {
        let (_d, kb) = kb();
        let dir = kb.layout().root().join("proposed");
        let path = dir.join(format!("{}.yaml", p.id));
        std::fs::write(&path, vouch_core::store::yaml::to_yaml(&p).unwrap()).unwrap();
        let back = vouch_core::store::yaml::from_yaml::<Proposal>(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
        prop_assert_eq!(back, p);
    }

    #[test]
    fn audit_events_round_trip(data in json_value(), actor in id(), at in time(), ids in ids()) {
        let ev = AuditEvent {
            id: "e".into(), event: "claim.confirm".into(), actor, created_at: at,
            object_ids: ids, dry_run: false, reversible: true, data,
            prev_hash: "0".repeat(64), hash: "1".repeat(64), extra: Default::default(),
        };
        let line = serde_json::to_string(&ev).unwrap();
        let back: AuditEvent = serde_json::from_str(&line).unwrap();
        prop_assert_eq!(back, ev);
    }
}
