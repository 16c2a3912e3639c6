//! Issue 39, round five of the attack review: who a decision names and
//! where git keeps its files. A decision signed `cli` (the placeholder for
//! "no name") or by a name nobody can see; git folders that git accepts
//! but vouch did not count as one. Each test is the attack as it was made,
//! through the real binary (and the real `git`).

use crate::common::*;
use crate::teams::git;
use serde_json::json;

/// Round five, A7b/A7c: a git folder with `HEAD`, `refs/` and a
/// `commondir` file but no `objects/` (git accepts it: `git --git-dir`
/// reads it), one whose `objects` is a link, and `.g\u{200c}it/config`
/// (`.git/config` on a Mac, where HFS+ ignores the joiner, and to git's
/// own `is_hfs_dotgit`) were registered as an agent's sources. All three
/// are git's own files now; a folder that merely resembles one is not.
#[test]
fn git_folders_git_accepts_are_git_folders() {
    let p = Project::new();
    let root = p.root();
    git(root, &["init", "-q", "--bare", "vendor/repo.git"]);
    let half = root.join("vendor/half.git");
    std::fs::create_dir_all(half.join("refs")).unwrap();
    std::fs::write(half.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(half.join("commondir"), "../repo.git\n").unwrap();
    std::fs::write(half.join("config"), "[credential]\n\thelper = store\n").unwrap();
    let linked = root.join("vendor/linked.git");
    std::fs::create_dir_all(linked.join("refs")).unwrap();
    std::fs::write(linked.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::os::unix::fs::symlink("../repo.git/objects", linked.join("objects")).unwrap();
    std::fs::write(
        linked.join("config"),
        "[remote]\n\turl = https://u:s3cret@x/r\n",
    )
    .unwrap();
    // Git itself takes both for repositories.
    for dir in [&half, &linked] {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args(["rev-parse", "--git-dir"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git does not read {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let hfs = root.join(".g\u{200c}it");
    std::fs::create_dir_all(&hfs).unwrap();
    std::fs::write(hfs.join("config"), "[user]\n\tpassword = s3cret\n").unwrap();
    // Not a repository: a HEAD file and nothing git needs beside it.
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/HEAD"), "The head of the project.\n").unwrap();
    std::fs::write(root.join("notes/plan.md"), "The plan.\n").unwrap();

    for path in [
        "vendor/half.git/config",
        "vendor/linked.git/config",
        ".g\u{200c}it/config",
    ] {
        let r = jsonl(
            &p,
            "agent",
            "kb.register_source_from_path",
            json!({"path": path}),
        );
        let message = r["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{path:?} was registered: {r}"));
        assert!(message.contains("git's own files"), "{path:?}: {message}");
    }
    let ok = jsonl(
        &p,
        "agent",
        "kb.register_source_from_path",
        json!({"path": "notes/plan.md"}),
    );
    assert!(ok["result"]["id"].is_string(), "{ok}");
}
