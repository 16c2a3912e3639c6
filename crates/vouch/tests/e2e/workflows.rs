//! The GitHub workflows the project ships (the release, and the pull
//! request check people copy) parse as YAML, and the scripts they run are
//! the project's own: a broken workflow is only found when a tag is pushed.

use serde_json::Value;
use std::path::Path;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn workflow(rel: &str) -> Value {
    let path = Path::new(ROOT).join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    vouch_core::store::yaml::from_yaml::<Value>(&path, &text)
        .unwrap_or_else(|e| panic!("{rel} is not YAML: {}", e.message))
}

/// Every `run:` of every step of every job.
fn runs(w: &Value) -> Vec<String> {
    w["jobs"]
        .as_object()
        .into_iter()
        .flat_map(|jobs| jobs.values())
        .flat_map(|job| job["steps"].as_array().cloned().unwrap_or_default())
        .filter_map(|step| step["run"].as_str().map(String::from))
        .collect()
}

#[test]
fn the_release_workflow_parses_and_runs_the_projects_scripts() {
    let w = workflow(".github/workflows/release.yml");
    let runs = runs(&w).join("\n");
    for script in ["scripts/package.sh", "scripts/install.sh"] {
        assert!(runs.contains(script), "release.yml does not run {script}");
        assert!(
            Path::new(ROOT).join(script).is_file(),
            "{script} is missing"
        );
    }
    let targets: Vec<&str> = w["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    for want in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(targets.contains(&want), "no {want} build: {targets:?}");
    }
}

#[test]
fn the_pull_request_check_parses_and_installs_a_release() {
    let w = workflow("docs/vouch-pr-check.yml");
    let runs = runs(&w).join("\n");
    assert!(runs.contains("install.sh"), "{runs}");
    assert!(runs.contains("vouch audit verify --base"), "{runs}");
    assert!(
        !runs.contains("cargo install"),
        "it installs a release, not a build"
    );
}
