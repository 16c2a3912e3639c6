//! docs/methods.md is generated from the registry and must stay current.

mod common;

#[test]
fn docs_methods_md_matches_the_registry() {
    let out = std::process::Command::new(common::bin())
        .args(["methods", "--markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/methods.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        generated == committed,
        "docs/methods.md is stale; regenerate with `vouch methods --markdown > docs/methods.md`"
    );
    for m in vouch_core::methods::REGISTRY {
        assert!(
            generated.contains(&format!("## `{}`", m.name)),
            "{} missing",
            m.name
        );
    }
}
