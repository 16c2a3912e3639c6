//! The method catalog, generated from the registry: `vouch methods --json`
//! and `--markdown` (which is docs/methods.md, kept current by a test).

use serde_json::{Value, json};
use std::fmt::Write as _;
use vouch_core::methods::{Method, REGISTRY};

pub(crate) fn json() -> Value {
    Value::Array(
        REGISTRY
            .iter()
            .map(|m| {
                json!({
                    "name": m.name,
                    "tool": m.tool_name(),
                    "title": m.title,
                    "effect": m.effect,
                    "idempotent": m.idempotent,
                    "destructive": m.destructive,
                    "decides": m.decides,
                    "summary": m.summary,
                    "description": m.description,
                    "params": (m.params_schema)(),
                    "result": (m.result_schema)(),
                })
            })
            .collect(),
    )
}

pub(crate) fn markdown() -> String {
    let mut out = String::from(
        "# kb.* methods\n\n\
         Generated from the method registry by `vouch methods --markdown`; a test keeps it current.\n\
         Every method is served on every transport: JSONL and HTTP use the dotted name,\n\
         MCP the tool name. Params and results are JSON; the schemas below are exact.\n\n\
         | method | MCP tool | effect | summary |\n|---|---|---|---|\n",
    );
    let effect = |m: &Method| format!("{:?}", m.effect).to_lowercase();
    for m in REGISTRY {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} |",
            m.name,
            m.tool_name(),
            effect(m),
            m.summary
        );
    }
    for m in REGISTRY {
        let repeat = match (m.idempotent, m.destructive) {
            (_, true) => "; may replace an existing file",
            (true, false) if m.effect != vouch_core::methods::Effect::Read => {
                "; idempotent (a repeat changes nothing)"
            }
            _ => "",
        };
        let schema = |f: fn() -> Value| serde_json::to_string_pretty(&f()).unwrap_or_default();
        let _ = write!(
            out,
            "\n## `{}`\n\n{}. {}\n\nEffect: {}{repeat}.\n\n<details><summary>params schema</summary>\n\n```json\n{}\n```\n</details>\n\n<details><summary>result schema</summary>\n\n```json\n{}\n```\n</details>\n",
            m.name,
            m.title,
            m.description,
            effect(m),
            schema(m.params_schema),
            schema(m.result_schema),
        );
    }
    out
}
