//! The core's floors, bottom first, and the test that keeps every file on
//! its own: a file may use its floor and the ones below, never one above
//! (`../shared/tools/import-cycles` checks that no files import each other
//! in a loop; this checks the direction). Test modules are not read: a
//! test may drive its code through anything.

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
    // interop, health.
    &[
        "rules",
        "sources",
        "review",
        "retrieval",
        "answer",
        "interop",
        "health",
        "reads",
        "params",
    ],
    // The `kb.*` registry every transport reads.
    &["methods"],
];

#[cfg(test)]
mod tests {
    use super::FLOORS;
    use std::path::{Path, PathBuf};

    fn floor_of(module: &str) -> Option<usize> {
        FLOORS.iter().position(|f| f.contains(&module))
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn no_file_uses_a_floor_above_its_own() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut wrong = Vec::new();
        for file in files {
            let rel = file.strip_prefix(&src).unwrap();
            let top = rel.components().next().unwrap().as_os_str();
            let top = top.to_str().unwrap().trim_end_matches(".rs");
            if matches!(top, "lib" | "testing" | "layers") {
                continue;
            }
            let Some(own) = floor_of(top) else {
                wrong.push(format!(
                    "{}: module `{top}` has no floor in FLOORS",
                    rel.display()
                ));
                continue;
            };
            let text = std::fs::read_to_string(&file).unwrap();
            // Inline test modules come last by convention.
            let code = text.split("#[cfg(test)]\nmod ").next().unwrap();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (at, _) in line.match_indices("crate::") {
                    let used: String = line[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if let Some(floor) = floor_of(&used)
                        && floor > own
                    {
                        wrong.push(format!("{}: uses crate::{used}", rel.display()));
                    }
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "uses above its floor:\n{}",
            wrong.join("\n")
        );
    }
}
