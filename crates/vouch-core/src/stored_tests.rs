//! Tests of the store: warnings and notes a call collects, unreadable files.

mod warning_tests {
    use super::super::*;

    #[test]
    fn a_call_gets_its_own_warnings_and_no_one_elses() {
        let (_dir, kb) = crate::testing::test_kb();
        kb.warn("outside any call".into());
        let barrier = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for who in ["a", "b"] {
                let (kb, barrier) = (&kb, &barrier);
                s.spawn(move || {
                    let ((), mine) = Store::collecting_warnings(|| {
                        kb.warn(format!("{who} 1"));
                        barrier.wait();
                        kb.warn(format!("{who} 2"));
                    });
                    assert_eq!(mine, [format!("{who} 1"), format!("{who} 2")]);
                });
            }
        });
        assert_eq!(kb.take_warnings(), ["outside any call"]);
        // Nested: the inner call's warnings are the inner call's.
        let ((), outer) = Store::collecting_warnings(|| {
            kb.warn("outer".into());
            let ((), inner) = Store::collecting_warnings(|| kb.warn("inner".into()));
            assert_eq!(inner, ["inner"]);
        });
        assert_eq!(outer, ["outer"]);
    }
}

mod unreadable_files {
    use crate::model::Claim;

    #[test]
    fn a_broken_file_is_read_and_reported_once_until_it_changes() {
        let (_dir, kb) = crate::testing::test_kb();
        let path = kb.layout().root().join("claims/broken.yaml");
        std::fs::write(&path, "id: broken\ntext: [unclosed\n").unwrap();
        assert!(kb.load_all::<Claim>().unwrap().is_empty());
        assert_eq!(kb.take_warnings().len(), 1);
        // Unchanged: skipped without a second parse or warning.
        assert!(kb.load_all::<Claim>().unwrap().is_empty());
        assert!(kb.take_warnings().is_empty());
        // Changed but still broken: read again, reported again.
        std::fs::write(&path, "id: broken\ntext: [still unclosed\n").unwrap();
        assert!(kb.load_all::<Claim>().unwrap().is_empty());
        assert_eq!(kb.take_warnings().len(), 1);
        // Fixed: it loads.
        std::fs::write(
            &path,
            "id: broken\ntext: fixed\ntype: fact\nstatus: working\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\n",
        )
        .unwrap();
        assert_eq!(kb.load_all::<Claim>().unwrap().len(), 1);
        assert!(kb.take_warnings().is_empty());
    }
}

/// What `keep` makes of each name in the folder at `path`, sorted; none
/// when the folder does not exist.
mod call_notes {
    use super::super::CallNotes;
    use std::path::Path;

    /// A warning an agent receives names files relative to the project,
    /// never by the server's absolute path; counts say the answer is
    /// partial.
    #[test]
    fn notes_name_files_relative_to_the_project_and_say_what_is_partial() {
        let notes = CallNotes {
            warnings: vec![
                "skipped /srv/team/kb/.vouch/claims/broken.yaml: bad YAML".into(),
                "no path here".into(),
            ],
            vectors_pending: Some(3),
            index_catching_up: false,
        };
        let meta = notes.meta(Path::new("/srv/team/kb/.vouch")).unwrap();
        assert_eq!(meta["partial"], true);
        assert_eq!(meta["vectors_pending"], 3);
        assert!(meta.get("index_catching_up").is_none());
        assert_eq!(
            meta["warnings"][0],
            "skipped .vouch/claims/broken.yaml: bad YAML"
        );
        assert_eq!(meta["warnings"][1], "no path here");
        assert!(CallNotes::default().meta(Path::new("/x/.vouch")).is_none());
        // An index not yet caught up: partial, and said so by name.
        let catching_up = CallNotes {
            index_catching_up: true,
            ..CallNotes::default()
        };
        let meta = catching_up.meta(Path::new("/x/.vouch")).unwrap();
        assert_eq!(meta["partial"], true);
        assert_eq!(meta["index_catching_up"], true);
    }
}

mod counts {
    use crate::store::Dir;
    use std::sync::atomic::Ordering::SeqCst;

    /// `kb.status` lists a folder once and again only when its stamp
    /// moved (a name added moves it); a folder changed in the last two
    /// seconds is listed every time.
    #[test]
    fn a_folders_count_is_listed_again_only_when_its_stamp_moves() {
        let (_dir, kb) = crate::testing::test_kb();
        let listed = || kb.listings.load(SeqCst);
        for id in ["a-claim", "b-claim"] {
            crate::testing::write_claim_file(&kb, id, "drills run monthly");
        }
        // Changed just now: listed each time.
        assert_eq!(kb.count(Dir::Claims).unwrap(), 2);
        assert_eq!(kb.count(Dir::Claims).unwrap(), 2);
        assert_eq!(listed(), 2);
        // Settled: listed once more, then kept.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        assert_eq!(kb.count(Dir::Claims).unwrap(), 2);
        assert_eq!(kb.count(Dir::Claims).unwrap(), 2);
        assert_eq!(listed(), 3, "the kept count");
        // A name added moves the stamp.
        crate::testing::write_claim_file(&kb, "c-claim", "drills run weekly");
        assert_eq!(kb.count(Dir::Claims).unwrap(), 3);
        assert_eq!(listed(), 4);
        // Each folder has its own count.
        assert_eq!(kb.count(Dir::Pages).unwrap(), 0);
        assert_eq!(kb.count(Dir::Claims).unwrap(), 3);
    }
}
