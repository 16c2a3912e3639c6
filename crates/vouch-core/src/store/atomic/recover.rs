//! [`recover`]: the next holder of the KB lock finishes a journaled batch
//! a crash interrupted when its audit event is in the log, discards it
//! otherwise, and refuses a journal it did not write itself.

use super::batch::{
    JOURNAL_FILE, Journal, apply, clear_staging, folder_identity, staged_file, staging,
};
use crate::error::Result;
use crate::store::nofollow;
use std::fs;
use std::path::{Path, PathBuf};

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// No staging folder: nothing was interrupted.
    Clean,
    /// The authorizing event is in the log: the batch was completed.
    Completed {
        /// The id of the audit event that authorized it.
        event_id: String,
        /// How many files it wrote or removed.
        files: usize,
    },
    /// The batch never reached the point of no return (no journal, or its
    /// event is not in the log): its staged files were removed and nothing
    /// in the KB had changed.
    Discarded {
        /// The event its journal names, when it got as far as a journal.
        event_id: Option<String>,
        /// How many files it held: as staged, or as its journal planned them.
        files: usize,
    },
    /// The journal could not be read or names paths a batch never writes
    /// (edited, or planted by a repository): the staging folder was
    /// removed, and nothing the journal names was touched.
    Refused {
        /// Why the journal was refused.
        why: String,
    },
}

/// Finish or discard a batch that a crash interrupted. `logged` says
/// whether the audit event with that id is in the log. Caller holds the KB
/// lock; costs one `lstat` when nothing was interrupted.
pub fn recover(root: &Path, logged: impl FnOnce(&str, &str) -> Result<bool>) -> Result<Recovery> {
    let dir = staging(root);
    if matches!(fs::symlink_metadata(&dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(Recovery::Clean);
    }
    let staged_files = || {
        fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok()).count())
            .unwrap_or(0)
    };
    let bytes = match nofollow::read(root, &dir.join(JOURNAL_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let files = staged_files();
            clear_staging(root)?;
            return Ok(Recovery::Discarded {
                event_id: None,
                files,
            });
        }
        Err(e) => {
            clear_staging(root)?;
            return Ok(Recovery::Refused {
                why: format!("its journal is unreadable ({e})"),
            });
        }
    };
    let mut journal_sha = String::new();
    let plan = match serde_json::from_slice::<Journal>(&bytes)
        .map_err(|e| format!("its journal is not a batch plan ({e})"))
        .and_then(|j| made_here(&dir, j))
        .inspect(|j| journal_sha = j.plan_sha256())
        .and_then(|j| resolve_journal(root, j))
        .and_then(|p| check_staged(&dir, p))
    {
        Ok(p) => p,
        Err(why) => {
            clear_staging(root)?;
            return Ok(Recovery::Refused { why });
        }
    };
    let files = plan.targets.len() + plan.removes.len();
    if logged(&plan.event_id, &journal_sha)? {
        apply(root, &plan.targets, &plan.removes)?;
        clear_staging(root)?;
        Ok(Recovery::Completed {
            event_id: plan.event_id,
            files,
        })
    } else {
        clear_staging(root)?;
        Ok(Recovery::Discarded {
            event_id: Some(plan.event_id),
            files,
        })
    }
}

/// Only a journal written in this very staging folder is finished: one
/// that came with a clone (a branch can commit `.staging/` past
/// `.gitignore`) or a copy names writes this installation never staged,
/// and the audit log that "authorizes" it is as easy to write by hand.
fn made_here(dir: &Path, j: Journal) -> std::result::Result<Journal, String> {
    match folder_identity(dir) {
        Some(here) if !j.made_in.is_empty() && j.made_in == here => Ok(j),
        _ => Err(
            "its journal was not written in this folder (it came with a clone, a copy or a \
             commit, or from an older vouch); a crash here never leaves one like it"
                .into(),
        ),
    }
}

struct Resolved {
    event_id: String,
    targets: Vec<PathBuf>,
    sha256: Vec<String>,
    removes: Vec<PathBuf>,
}

/// Every staged file is a regular file (never a link) holding what the
/// journal says it holds.
fn check_staged(dir: &Path, plan: Resolved) -> std::result::Result<Resolved, String> {
    if plan.sha256.len() != plan.targets.len() {
        return Err("its journal does not give every staged file's sha256".into());
    }
    for (i, want) in plan.sha256.iter().enumerate() {
        let staged = staged_file(dir, i);
        match fs::symlink_metadata(&staged) {
            // Moved already by the run that was interrupted.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Ok(m) if m.is_file() => {}
            _ => return Err(format!("staged file {i} is not a regular file")),
        }
        let bytes = fs::read(&staged).map_err(|e| format!("staged file {i}: {e}"))?;
        if crate::ids::sha256_hex(&bytes) != *want {
            return Err(format!(
                "staged file {i} does not hold what the journal says"
            ));
        }
    }
    Ok(plan)
}

/// Where a batch may write: the knowledge folders, review records and
/// sources — never the audit log, config.yaml, state.db or the lock.
const BATCH_FOLDERS: &[&str] = &[
    "claims",
    "pages",
    "entities",
    "relations",
    "evidence",
    "sessions",
    "decided",
    "proposed",
    "sources",
];

/// The journal's paths beneath `root`, refusing what no batch writes: an
/// absolute path, `..`, the staging folder itself.
fn resolve_journal(root: &Path, j: Journal) -> std::result::Result<Resolved, String> {
    let under = |rel: &String| -> std::result::Result<PathBuf, String> {
        let p = Path::new(rel);
        let plain = !rel.is_empty()
            && p.components().count() >= 2
            && p.components()
                .next()
                .is_some_and(|c| BATCH_FOLDERS.iter().any(|f| c.as_os_str() == *f))
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if plain {
            Ok(root.join(p))
        } else {
            Err(format!("its journal names {rel:?}, which no batch writes"))
        }
    };
    Ok(Resolved {
        event_id: j.event_id,
        sha256: j.sha256,
        targets: j
            .writes
            .iter()
            .map(under)
            .collect::<std::result::Result<_, _>>()?,
        removes: j
            .removes
            .iter()
            .map(under)
            .collect::<std::result::Result<_, _>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::atomic::{Batch, STAGING_DIR};

    /// A journaled batch of two files, staged but not finished, as a crash
    /// after `stage_journaled` leaves it.
    fn interrupted(root: &Path, event_id: &str) -> Vec<PathBuf> {
        fs::create_dir(root.join("claims")).unwrap();
        fs::write(root.join("claims/old.yaml"), b"old").unwrap();
        let targets = vec![root.join("claims/a.yaml"), root.join("sources/s1/content")];
        let mut b = Batch::new(root);
        b.write(targets[0].clone(), b"a".to_vec());
        b.write(targets[1].clone(), b"content".to_vec());
        b.remove(root.join("claims/old.yaml"));
        std::mem::forget(b.stage_journaled(event_id).unwrap());
        targets
    }

    #[test]
    fn recovery_completes_a_logged_batch_and_discards_an_unlogged_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(recover(root, |_, _| Ok(true)).unwrap(), Recovery::Clean);
        let targets = interrupted(root, "ev1");
        assert!(!targets[0].exists());
        let r = recover(root, |id, _| Ok(id == "ev1")).unwrap();
        assert_eq!(
            r,
            Recovery::Completed {
                event_id: "ev1".into(),
                files: 3
            }
        );
        assert_eq!(fs::read(&targets[0]).unwrap(), b"a");
        assert_eq!(fs::read(&targets[1]).unwrap(), b"content");
        assert!(!root.join("claims/old.yaml").exists());
        assert!(!root.join(STAGING_DIR).exists());

        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let targets = interrupted(root, "ev2");
        let r = recover(root, |_, _| Ok(false)).unwrap();
        assert_eq!(
            r,
            Recovery::Discarded {
                event_id: Some("ev2".into()),
                files: 3
            }
        );
        assert!(!targets[0].exists() && !root.join("sources").exists());
        assert!(root.join("claims/old.yaml").exists());
        assert!(!root.join(STAGING_DIR).exists());
    }

    #[test]
    fn recovery_refuses_a_journal_that_names_paths_outside_the_kb() {
        for bad in [
            r#""../../etc/x""#,
            r#""/etc/x""#,
            r#"".staging/0""#,
            r#""audit.log.jsonl""#,
            r#""config.yaml""#,
            r#""state.db""#,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            fs::create_dir(root.join(STAGING_DIR)).unwrap();
            fs::write(root.join(STAGING_DIR).join("0"), b"planted").unwrap();
            // Made here, so what is refused is the path it names.
            let here = folder_identity(&root.join(STAGING_DIR)).unwrap();
            fs::write(
                root.join(STAGING_DIR).join(JOURNAL_FILE),
                format!(
                    r#"{{"event_id": "e", "made_in": "{here}", "writes": [{bad}], "removes": []}}"#
                ),
            )
            .unwrap();
            let r = recover(root, |_, _| Ok(true)).unwrap();
            assert!(matches!(r, Recovery::Refused { .. }), "{bad}: {r:?}");
            assert!(!root.join(STAGING_DIR).exists());
            assert_eq!(fs::read_dir(root).unwrap().count(), 0, "{bad}");
        }
    }

    /// A staging folder that came with a clone or a copy (a branch can
    /// commit `.staging/` past `.gitignore`, and the audit event that
    /// "authorizes" it is one line anyone can write) is never finished:
    /// only a journal a crash left in this very folder is.
    #[test]
    fn recovery_refuses_a_journal_that_was_not_written_here() {
        let made = tempfile::tempdir().unwrap();
        interrupted(made.path(), "ev4");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join(STAGING_DIR)).unwrap();
        for e in fs::read_dir(made.path().join(STAGING_DIR)).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), root.join(STAGING_DIR).join(e.file_name())).unwrap();
        }
        let r = recover(root, |_, _| Ok(true)).unwrap();
        assert!(
            matches!(&r, Recovery::Refused { why } if why.contains("not written in this folder")),
            "{r:?}"
        );
        assert!(!root.join(STAGING_DIR).exists());
        assert_eq!(
            fs::read_dir(root).unwrap().count(),
            0,
            "a planted file landed"
        );
        // The folder it was made in still finishes it.
        let r = recover(made.path(), |_, _| Ok(true)).unwrap();
        assert!(matches!(r, Recovery::Completed { .. }), "{r:?}");
    }

    #[test]
    fn recovery_refuses_a_staged_file_swapped_or_linked() {
        for swap in ["bytes", "link"] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let targets = interrupted(root, "ev3");
            let staged = root.join(STAGING_DIR).join("0");
            fs::remove_file(&staged).unwrap();
            if swap == "bytes" {
                fs::write(&staged, b"planted").unwrap();
            } else {
                std::os::unix::fs::symlink("/etc/hostname", &staged).unwrap();
            }
            let r = recover(root, |_, _| Ok(true)).unwrap();
            assert!(matches!(r, Recovery::Refused { .. }), "{swap}: {r:?}");
            assert!(!targets[0].exists(), "{swap}: the planted file landed");
        }
    }
}
