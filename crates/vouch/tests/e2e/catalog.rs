//! docs/methods.md is generated from the registry and must stay current.

#[test]
fn docs_methods_md_matches_the_registry() {
    let out = crate::common::command()
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
    let mut child = crate::common::command()
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

/// Every keyword draft 2020-12 defines (core, applicator, validation,
/// unevaluated, format, content, meta-data).
const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// Walk a schema; collect every unknown keyword, non-standard format and
/// boolean subschema (but `additionalProperties: false`) by JSON pointer.
fn schema_problems(s: &serde_json::Value, at: &str, key: Option<&str>, out: &mut Vec<String>) {
    use serde_json::Value;
    let map = match s {
        Value::Bool(false) if key == Some("additionalProperties") => return,
        Value::Bool(_) => return out.push(format!("{at}: boolean subschema")),
        Value::Object(m) => m,
        _ => return out.push(format!("{at}: not a schema")),
    };
    for (k, v) in map {
        let here = format!("{at}/{k}");
        if !KEYWORDS.contains(&k.as_str()) {
            out.push(format!("{here}: unknown keyword"));
        }
        match k.as_str() {
            "format" => {
                let f = v.as_str().unwrap_or_default();
                if !vouch_core::methods::STANDARD_FORMATS.contains(&f) {
                    out.push(format!("{here}: format {f:?} is not a JSON Schema format"));
                }
            }
            "properties" | "patternProperties" | "$defs" | "dependentSchemas" => {
                for (name, sub) in v.as_object().into_iter().flatten() {
                    schema_problems(sub, &format!("{here}/{name}"), Some(k), out);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (i, sub) in v.as_array().into_iter().flatten().enumerate() {
                    schema_problems(sub, &format!("{here}/{i}"), Some(k), out);
                }
            }
            "additionalProperties"
            | "items"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "contentSchema" => schema_problems(v, &here, Some(k), out),
            _ => {}
        }
    }
}

/// What MCP hosts choke on or warn about (the TypeScript SDK refused a
/// property schema of `true`; validators warn on `uint64`): none in any
/// method's params or result schema, nor in any MCP tool's schemas.
#[test]
fn every_schema_uses_only_standard_keywords_formats_and_object_subschemas() {
    let mut problems = Vec::new();
    for m in vouch_core::methods::REGISTRY {
        schema_problems(
            &(m.params_schema)(),
            &format!("{} params #", m.name),
            None,
            &mut problems,
        );
        schema_problems(
            &(m.result_schema)(),
            &format!("{} result #", m.name),
            None,
            &mut problems,
        );
        let input = serde_json::Value::Object(vouch::mcp::input_schema(m));
        schema_problems(
            &input,
            &format!("{} inputSchema #", m.name),
            None,
            &mut problems,
        );
        if let Some(output) = vouch::mcp::output_schema(m) {
            let output = serde_json::Value::Object(output);
            assert_eq!(output["type"], "object", "{}", m.name);
            schema_problems(
                &output,
                &format!("{} outputSchema #", m.name),
                None,
                &mut problems,
            );
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The guard above is not vacuous: the generator's raw output for an
/// unsigned count and an untyped value is what it catches.
#[test]
fn the_schema_walk_catches_what_portable_removes() {
    let mut raw = serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "format": "uint64", "minimum": 0}, "any": true},
    });
    let mut problems = Vec::new();
    schema_problems(&raw, "#", None, &mut problems);
    assert_eq!(problems.len(), 2, "{problems:?}");
    vouch_core::methods::portable(&mut raw);
    problems.clear();
    schema_problems(&raw, "#", None, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        raw["properties"]["n"],
        serde_json::json!({"type": "integer", "minimum": 0})
    );
    assert_eq!(raw["properties"]["any"], serde_json::json!({}));
}
