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
    use std::time::{Duration, SystemTime};

    /// Set a folder's mtime, as a change long ago left it.
    fn set_mtime(folder: &std::path::Path, at: SystemTime) {
        std::fs::File::open(folder)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    /// `kb.status` counts a folder's names once and again only when its
    /// mtime moved: a name added with the mtime put back where it was is
    /// not seen (the count was kept), one added that moves it is. A folder
    /// changed just now is listed every time.
    #[test]
    fn a_folders_count_is_listed_again_only_when_its_mtime_moves() {
        let (_dir, kb) = crate::testing::test_kb();
        for id in ["a-claim", "b-claim"] {
            crate::testing::write_claim_file(&kb, id, "drills run monthly");
        }
        let claims = kb.layout().dir(Dir::Claims);
        // Changed just now: not kept.
        assert_eq!(kb.count(Dir::Claims).unwrap(), 2);
        crate::testing::write_claim_file(&kb, "c-claim", "drills run weekly");
        assert_eq!(kb.count(Dir::Claims).unwrap(), 3);
        // Settled: kept with its mtime.
        let long_ago = SystemTime::now() - Duration::from_secs(60);
        set_mtime(&claims, long_ago);
        assert_eq!(kb.count(Dir::Claims).unwrap(), 3);
        crate::testing::write_claim_file(&kb, "d-claim", "drills run daily");
        set_mtime(&claims, long_ago);
        assert_eq!(kb.count(Dir::Claims).unwrap(), 3, "the kept count");
        set_mtime(&claims, long_ago + Duration::from_secs(1));
        assert_eq!(kb.count(Dir::Claims).unwrap(), 4);
        assert_eq!(kb.count(Dir::Pages).unwrap(), 0);
    }
}
