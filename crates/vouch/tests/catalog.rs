//! docs/methods.md is generated from the registry and must stay current.

mod common;

#[test]
fn docs_methods_md_matches_the_registry() {
    let out = common::command()
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

/// `vouch methods --json | head -1`: the reader leaves early; vouch must exit
/// 0 without a panic message. The output (~70 KB) is larger than a pipe
/// buffer, so the write is certain to meet the closed pipe.
#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::io::Read;
    let mut child = common::command()
        .args(["methods", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
