//! The floors of the core and of the app, bottom first, and the test that
//! keeps every file on its own: a file may use its floor and the ones
//! below, never one above (`../shared/tools/import-cycles` checks that no
//! files import each other in a loop; this checks the direction). Test
//! modules and test files are not read: a test may drive its code through
//! anything. The app's table lives here too, so that one check reads both
//! crates.

/// Top-level modules by floor, bottom first. A new module gets a floor
/// here, or the test below names it.
pub(crate) const FLOORS: &[&[&str]] = &[
    // What everything shares: errors, ids, time, the object model, paths
    // and atomic writes, configuration.
    &[
        "error", "fail", "ids", "clock", "model", "settings", "store",
    ],
    // The audit log, and the services the app injects (below `Kb`).
    &["audit", "services"],
    // An opened knowledge base's files.
    &["stored"],
    // The derived index: the trait, and `state.db` behind it.
    &["index"],
    // `Kb`: the files, the index and the services together.
    &["kb"],
    // What a knowledge base does: reading, the gate, retrieval, answers,
    // interop, health, provenance and the gate's health (insight).
    &[
        "rules",
        "secrets",
        "sources",
        "review",
        "retrieval",
        "answer",
        "interop",
        "health",
        "reads",
        "insight",
        "params",
    ],
    // The `kb.*` registry every transport reads.
    &["methods"],
    // Session capture, which files what a session did through the registry.
    &["capture"],
];

/// The app's top-level modules by floor, bottom first.
pub(crate) const APP_FLOORS: &[&[&str]] = &[
    // Leaves: errors to exit and wire codes, secrets, the person's own
    // config, models on disk, host config files, the method catalogue.
    &[
        "errors", "auth", "team", "personal", "model", "install", "catalog", "gitbase",
    ],
    // Results for people, the language model command, checkpoint keys.
    &["human", "llm", "checkpoint"],
    // Writing for a terminal (through `human`).
    &["render"],
    // Transports and the review surfaces.
    &["jsonl", "mcp", "review", "ui"],
    // The HTTP server, which mounts MCP, JSONL envelopes and the pages.
    &["http"],
    // Opening a knowledge base from flags and the environment.
    &["context"],
    // The commands.
    &["cli", "serve", "capture"],
];

#[cfg(test)]
pub(crate) mod tests {
    use super::{APP_FLOORS, FLOORS};
    use std::path::{Path, PathBuf};

    fn floor_of(floors: &[&[&str]], module: &str) -> Option<usize> {
        floors.iter().position(|f| f.contains(&module))
    }

    /// Every `.rs` file under `dir`.
    pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// What the crate root re-exports, by the module that defines it.
    const ROOT_NAMES: &[(&str, &str)] = &[
        ("Kb", "kb"),
        ("Caller", "kb"),
        ("Role", "kb"),
        ("Transport", "kb"),
        ("IndexUpkeep", "index"),
        ("Error", "error"),
        ("ErrorKind", "error"),
        ("Result", "error"),
    ];

    /// The top-level modules a text names through `crate::` (or, in a
    /// top-level file, `super::`): `crate::a::…`, each `crate::{a::…, b}`,
    /// and a root re-export (`crate::Kb` is `kb`'s).
    fn used_modules(line: &str, top_level: bool, root_names: &[(&str, &str)]) -> Vec<String> {
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        let module = |name: String| -> String {
            root_names
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(name, |(_, m)| m.to_string())
        };
        let mut roots = vec!["crate::"];
        if top_level {
            roots.push("super::");
        }
        let mut out = Vec::new();
        for root in roots {
            for (at, _) in line.match_indices(root) {
                let rest = &line[at + root.len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or("");
                    out.extend(
                        group
                            .split(',')
                            .map(|p| ident(p.trim()))
                            .filter(|name| !name.is_empty())
                            .map(module),
                    );
                } else {
                    out.push(module(ident(rest)));
                }
            }
        }
        out
    }

    #[test]
    fn the_check_reads_groups_root_names_and_super() {
        assert_eq!(
            used_modules("use crate::{kb::Kb, retrieval};", false, ROOT_NAMES),
            ["kb", "retrieval"]
        );
        assert_eq!(
            used_modules("fn f(kb: &crate::Kb) {}", false, ROOT_NAMES),
            ["kb"]
        );
        assert_eq!(used_modules("use super::kb::Kb;", true, ROOT_NAMES), ["kb"]);
        assert!(used_modules("use super::kb::Kb;", false, ROOT_NAMES).is_empty());
        assert_eq!(
            used_modules(
                "use crate::{\n    answer::Synthesis,\n    kb::Kb,\n};",
                false,
                ROOT_NAMES
            ),
            ["answer", "kb"]
        );
    }

    /// Each use of a module on a floor above the file's own, in the
    /// crate whose sources are in `src`; `skip` names the crate roots and
    /// test harnesses (not on any floor).
    fn uses_above(
        src: &Path,
        floors: &[&[&str]],
        root_names: &[(&str, &str)],
        skip: &[&str],
    ) -> Vec<String> {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut wrong = Vec::new();
        for file in files {
            let rel = file.strip_prefix(src).unwrap();
            let top = rel.components().next().unwrap().as_os_str();
            let top = top.to_str().unwrap().trim_end_matches(".rs");
            // A file of tests only (`tests.rs`, `*_tests.rs`, included under
            // `#[cfg(test)]`) is on no floor, like an inline test module.
            let tests_only = file
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"));
            if skip.contains(&top) || tests_only {
                continue;
            }
            let Some(own) = floor_of(floors, top) else {
                wrong.push(format!("{}: module `{top}` has no floor", rel.display()));
                continue;
            };
            let text = std::fs::read_to_string(&file).unwrap();
            // Inline test modules come last by convention.
            let code = text.split("#[cfg(test)]\nmod ").next().unwrap();
            // In a file at the top, `super::` is the crate root too.
            let top_level = rel.components().count() == 1;
            // Comment lines dropped; the rest read as one text, so a group
            // of imports over several lines is read whole.
            let code: Vec<&str> = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            for used in used_modules(&code.join("\n"), top_level, root_names) {
                if let Some(floor) = floor_of(floors, &used)
                    && floor > own
                {
                    wrong.push(format!("{}: uses crate::{used}", rel.display()));
                }
            }
        }
        wrong
    }

    #[test]
    fn no_file_of_the_core_uses_a_floor_above_its_own() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let wrong = uses_above(&src, FLOORS, ROOT_NAMES, &["lib", "testing", "layers"]);
        assert!(
            wrong.is_empty(),
            "uses above its floor:\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn no_file_of_the_app_uses_a_floor_above_its_own() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vouch/src");
        let wrong = uses_above(&src, APP_FLOORS, &[], &["lib", "main"]);
        assert!(
            wrong.is_empty(),
            "uses above its floor:\n{}",
            wrong.join("\n")
        );
    }
}
