//! What an agent transport may send: the request limits of `limits:` in
//! config.yaml, checked before a method runs.

use crate::error::{Error, Result};
use serde_json::Value;

/// What an agent transport may send: nesting, string and array sizes, and
/// the `limit` it asks for (`limits:` in config.yaml). Each refusal names
/// the limit and its key.
pub fn check_limits(
    limits: &crate::settings::LimitsSettings,
    method: &str,
    params: &Value,
) -> Result<()> {
    // `path` names where a value sits only when a refusal needs it: a
    // request within every limit allocates nothing for it.
    fn walk(
        l: &crate::settings::LimitsSettings,
        method: &str,
        v: &Value,
        path: &dyn Fn() -> String,
        depth: u64,
        exempt: bool,
    ) -> Result<()> {
        let refuse = |what: String, key: &str, value: u64| {
            Err(Error::invalid(format!(
                "{method}: {what} (limit {value}; config.yaml `limits.{key}`)"
            )))
        };
        if depth > l.max_json_depth {
            return refuse(
                format!(
                    "params nest deeper than {} levels at {}",
                    l.max_json_depth,
                    path()
                ),
                "max_json_depth",
                l.max_json_depth,
            );
        }
        match v {
            Value::String(s) if !exempt && s.len() as u64 > l.max_string_bytes => {
                return refuse(
                    format!("{} is {} bytes", path(), s.len()),
                    "max_string_bytes",
                    l.max_string_bytes,
                );
            }
            Value::Array(a) => {
                if a.len() as u64 > l.max_array_items {
                    return refuse(
                        format!("{} has {} items", path(), a.len()),
                        "max_array_items",
                        l.max_array_items,
                    );
                }
                for (i, x) in a.iter().enumerate() {
                    walk(
                        l,
                        method,
                        x,
                        &|| format!("{}[{i}]", path()),
                        depth + 1,
                        false,
                    )?;
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    // A source's text is bounded by `sources.max_bytes`.
                    let content = depth == 1 && k == "content" && method == "kb.register_source";
                    walk(
                        l,
                        method,
                        x,
                        &|| format!("{}.{k}", path()),
                        depth + 1,
                        content,
                    )?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    walk(limits, method, params, &|| "params".to_string(), 1, false)?;
    // `limit` (lists, search) and `tail` (the audit log) ask for results.
    for key in ["limit", "tail"] {
        let Some(v) = params.get(key).filter(|v| v.is_number()) else {
            continue;
        };
        if v.as_f64().is_some_and(|n| n > limits.max_results as f64) {
            return Err(Error::invalid(format!(
                "{method}: {key} {v} asks for more than {} results (config.yaml \
                 `limits.max_results`); page with `offset` instead",
                limits.max_results
            )));
        }
    }
    Ok(())
}
