//! The app's end-to-end tests in one binary (one link, not 26): the real
//! `vouch` binary driven through a temp project (`common`), one module per
//! concern. `scripts/test.sh -p vouch --test e2e gate::` runs one module.

mod attacks;
mod bundles;
mod catalog;
mod common;
mod crash;
mod fuzz;
mod gate;
mod health;
mod install_mcp;
mod interop_1x;
mod interop_real_1x;
mod knowledge;
mod limits;
mod mcp_sdk;
mod mcp_ts_sdk;
mod recall;
mod reliability;
mod review_terminal;
mod search;
mod semantic;
mod servers;
mod soak;
mod synthesize;
mod teams;
mod transports;
mod trust;
mod ui_browser;
mod watch;

/// Every file and folder here is a module of this binary: one left out of
/// the list above would silently never compile nor run.
#[test]
fn every_test_file_is_a_module() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e");
    let main = include_str!("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&here).unwrap() {
        let path = entry.unwrap().path();
        let name = match path.extension() {
            Some(ext) if ext == "rs" => path.file_stem(),
            None if path.join("mod.rs").is_file() => path.file_name(),
            _ => None,
        };
        let Some(name) = name.and_then(|n| n.to_str()) else {
            continue;
        };
        if name != "main" && !main.contains(&format!("\nmod {name};\n")) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in tests/e2e/main.rs: {missing:?}"
    );
}
