//! The JSON Schemas of the registry's params and results, made portable:
//! what every MCP client accepts.

use schemars::JsonSchema;
use serde_json::{Value, json};

/// The schema of what a method accepts.
pub(super) fn schema<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    portable(&mut schema);
    schema
}

/// The schema of what a method returns: as serialized, so a field left out
/// when empty (`skip_serializing_if`) is not required (MCP clients validate
/// results against it).
pub(super) fn result_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null);
    portable(&mut schema);
    schema
}

/// The formats JSON Schema (draft 2020-12) defines; a client's validator
/// knows these and warns about any other.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is one subschema.
const SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is a list of subschemas.
const SUBSCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Make a generated schema one every MCP client accepts: every subschema an
/// object (the TypeScript SDK refuses a property schema of `true`; `{}`
/// means the same), and only formats JSON Schema defines (schemars writes
/// Rust's `uint64`, `double`, … which validators warn about: an unsigned
/// integer keeps its `minimum: 0` instead). `additionalProperties: false`
/// stays: it is the closed-object idiom every client reads.
pub fn portable(schema: &mut Value) {
    let Value::Object(map) = schema else {
        if let Value::Bool(b) = schema {
            *schema = if *b { json!({}) } else { json!({"not": {}}) };
        }
        return;
    };
    if let Some(format) = map.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        if format.starts_with('u') && !map.contains_key("minimum") {
            map.insert("minimum".into(), json!(0));
        }
        map.remove("format");
    }
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if SUBSCHEMA.contains(&key) {
            if !(key == "additionalProperties" && *value == Value::Bool(false)) {
                portable(value);
            }
        } else if let (true, Value::Array(items)) = (SUBSCHEMA_LISTS.contains(&key), &mut *value) {
            items.iter_mut().for_each(portable);
        } else if let (true, Value::Object(named)) = (SUBSCHEMA_MAPS.contains(&key), value) {
            named.values_mut().for_each(portable);
        }
    }
}
