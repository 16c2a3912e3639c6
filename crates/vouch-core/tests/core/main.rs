//! The core's integration tests in one binary: golden on-disk formats
//! (`format`), property round trips (`roundtrip`, `synthesize_props`) and
//! the hostile-bundle corpus (`bundle_corpus`), the secret scan's corpus
//! (`secrets_corpus`) and its batch path (`secrets_gate`), through the public
//! API.

mod bundle_corpus;
mod format;
mod redaction_corpus;
mod roundtrip;
mod secrets_corpus;
mod secrets_gate;
mod synthesize_props;

/// Every file here is a module of this binary: one left out of the list
/// above would silently never compile nor run.
#[test]
fn every_test_file_is_a_module() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/core");
    let main = include_str!("main.rs");
    let missing: Vec<String> = std::fs::read_dir(&here)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_stem()?.to_str()?.to_string();
            (path.extension()? == "rs" && name != "main").then_some(name)
        })
        .filter(|name| !main.contains(&format!("\nmod {name};\n")))
        .collect();
    assert!(
        missing.is_empty(),
        "not declared in tests/core/main.rs: {missing:?}"
    );
}
