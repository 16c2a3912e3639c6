//! What `--base` says of `config.yaml`: every setting a branch changed,
//! and each change that loosens the gate.

use serde_json::Value;
use std::collections::HashSet;

/// `config.yaml`'s settings, flattened to `a.b` keys; `None` when it does
/// not parse.
fn settings_of(bytes: &[u8]) -> Option<std::collections::BTreeMap<String, String>> {
    fn flatten(prefix: &str, v: &Value, out: &mut std::collections::BTreeMap<String, String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let tree: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str(text).ok()?
    };
    let mut out = std::collections::BTreeMap::new();
    flatten("", &tree, &mut out);
    out.remove("");
    Some(out)
}

/// Every setting `config.yaml` changed since REV (`before`, `None` when
/// REV had none), and each change that loosens the gate as a problem: a
/// repository cannot widen its own gate locally, nor through a pull
/// request.
pub(super) fn config_changes(
    before: Option<&[u8]>,
    now: Option<&[u8]>,
    problems: &mut Vec<String>,
) -> Vec<String> {
    use crate::settings::Settings;
    let path = std::path::Path::new(crate::store::layout::CONFIG_FILE);
    let parse = |b: Option<&[u8]>| match b {
        None => Some(Settings::new("", None)),
        Some(b) => Settings::parse(path, std::str::from_utf8(b).ok()?).ok(),
    };
    let flat = |b: Option<&[u8]>| b.map_or_else(|| Some(Default::default()), settings_of);
    let (Some(old), Some(new)) = (flat(before), flat(now)) else {
        problems.push(
            "config.yaml: it does not parse as YAML, so what it changed cannot be told".into(),
        );
        return Vec::new();
    };
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let shown = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(absent)".into());
    let changes: Vec<String> = keys
        .into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .map(|k| format!("{k}: {} -> {}", shown(old.get(k)), shown(new.get(k))))
        .collect();
    if let (Some(old), Some(new)) = (parse(before), parse(now)) {
        if old.review.gate_lifecycle && !new.review.gate_lifecycle {
            problems.push(
                "config.yaml: review.gate_lifecycle is turned off: agents' lifecycle changes \
                 would apply without a person's decision; a pull request cannot loosen the gate"
                    .into(),
            );
        }
        let had: HashSet<&str> = old.ignored_widenings().iter().map(|(k, _)| *k).collect();
        for (key, value) in new.ignored_widenings() {
            if !had.contains(key) {
                problems.push(format!(
                    "config.yaml: {key}: {value} would widen the gate; a repository's config \
                     cannot (only the person's own config can), so a pull request must not \
                     add it"
                ));
            }
        }
    }
    changes
}
