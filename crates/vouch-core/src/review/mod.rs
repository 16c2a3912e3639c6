//! The review gate and what surrounds it (protocol §3–§4): proposals and
//! decisions (`gate`), lifecycle changes of reviewed knowledge
//! (`lifecycle`) and agents' work sessions (`sessions`) — the only writers
//! of knowledge.

pub mod gate;
pub mod lifecycle;
pub mod sessions;

/// Every field of a proposal's payload besides its headline (text, title
/// or name, a page's body, a relation's ends, the object id every surface
/// already shows) and its citations, as
/// (name, value shown): what else becomes durable if it is approved.
/// Every review surface prints these, so no field (claim metadata, an
/// entity's description or aliases, one a later version adds) reaches
/// agents without the person having seen it.
pub fn payload_fields(payload: &serde_json::Value) -> Vec<(String, String)> {
    use serde_json::Value;
    const HEADLINE: &[&str] = &[
        "id", "text", "title", "name", "body", "evidence", "sources", "source", "relation",
        "target",
    ];
    let Some(map) = payload.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(k, v)| !HEADLINE.contains(&k.as_str()) && !v.is_null())
        .filter(|(_, v)| !matches!(v, Value::Array(a) if a.is_empty()))
        .filter(|(_, v)| !matches!(v, Value::Object(o) if o.is_empty()))
        .map(|(k, v)| {
            let shown = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) if a.iter().all(Value::is_string) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            (k.clone(), shown)
        })
        .collect()
}
