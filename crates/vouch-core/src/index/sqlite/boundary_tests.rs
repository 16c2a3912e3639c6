//! The engine's boundary: `rusqlite` is named nowhere else in the core.

use std::path::Path;

/// `rusqlite` belongs to the SQLite engine: no other file of the core
/// names it (in code, test modules and `*_tests.rs` files included;
/// comment lines are free to), so a second engine never has to reach
/// through SQLite's types. A text check, not clippy's
/// `disallowed-types`: that lint sees types only, not a `use`, a
/// function or `params!`, and would have to be allowed again inside
/// the engine. This test lives in the engine's folder, so naming the crate to look for
/// it keeps the rule it checks.
#[test]
fn only_the_sqlite_engine_names_rusqlite() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let engine = src.join("index").join("sqlite");
    let mut files = Vec::new();
    crate::layers::tests::rust_files(&src, &mut files);
    let mut named = Vec::new();
    for file in files {
        if file.starts_with(&engine) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, line) in text.lines().enumerate() {
            if !line.trim_start().starts_with("//") && line.contains("rusqlite") {
                let rel = file.strip_prefix(&src).unwrap();
                named.push(format!("{}:{}: {}", rel.display(), at + 1, line.trim()));
            }
        }
    }
    assert!(
        named.is_empty(),
        "rusqlite named outside src/index/sqlite/:\n{}",
        named.join("\n")
    );
}
