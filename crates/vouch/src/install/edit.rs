//! How `install-mcp` edits a host's config file: the `vouch` entry put
//! into JSON, JSONC or TOML keeping every other key and comment, and
//! Claude Code's deny rules added to its settings.

use serde_json::{Value, json};
use std::path::Path;
use vouch_core::{Error, ErrorKind};

fn to_cst(v: &Value) -> jsonc_parser::cst::CstInputValue {
    use jsonc_parser::cst::CstInputValue as C;
    match v {
        Value::Null => C::Null,
        Value::Bool(b) => C::Bool(*b),
        Value::Number(n) => C::Number(n.to_string()),
        Value::String(s) => C::String(s.clone()),
        Value::Array(a) => C::Array(a.iter().map(to_cst).collect()),
        Value::Object(o) => C::Object(o.iter().map(|(k, v)| (k.clone(), to_cst(v))).collect()),
    }
}

/// Whether an existing `vouch` entry is already the wanted one; a
/// different one is refused unless `force`.
fn unchanged_or_refused(
    path: &Path,
    current: &Value,
    wanted: &Value,
    force: bool,
) -> Result<bool, Error> {
    if current == wanted {
        return Ok(true);
    }
    if !force {
        return Err(Error::new(
            ErrorKind::Conflict,
            format!(
                "{} already has a different `vouch` server: {current}; rerun with --force to \
                 replace it (a backup is kept)",
                path.display()
            ),
        ));
    }
    Ok(false)
}

/// What the file would hold with the entry, or `None` when it already
/// holds exactly this entry.
pub(super) fn edit_json(
    path: &Path,
    text: &str,
    comments: bool,
    keys: &[&str],
    wanted: &Value,
    force: bool,
) -> Result<Option<String>, Error> {
    use jsonc_parser::ParseOptions;
    use jsonc_parser::cst::CstRootNode;
    let shown = path.display();
    let options = ParseOptions {
        allow_comments: comments,
        allow_trailing_commas: comments,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        ..ParseOptions::default()
    };
    let what = if comments {
        "JSON (comments allowed)"
    } else {
        "JSON"
    };
    let refuse = |m: String| Error::invalid(format!("{shown}: {m}; nothing was changed"));
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let value: Value = jsonc_parser::parse_to_serde_value(text, &options)
        .map_err(|e| refuse(format!("not valid {what}: {e}")))?;
    if !value.is_object() {
        return Err(refuse("the top level is not an object".into()));
    }
    let mut existing = Some(&value);
    for k in keys {
        existing = existing.and_then(|v| v.get(*k));
        if let Some(v) = existing
            && !v.is_object()
        {
            return Err(refuse(format!("`{k}` is not an object")));
        }
    }
    if let Some(current) = existing.and_then(|v| v.get("vouch"))
        && unchanged_or_refused(path, current, wanted, force)?
    {
        return Ok(None);
    }
    let root =
        CstRootNode::parse(text, &options).map_err(|e| refuse(format!("not valid {what}: {e}")))?;
    let mut obj = root.object_value_or_set();
    for k in keys {
        obj = obj.object_value_or_set(k);
    }
    match obj.get("vouch") {
        Some(prop) => prop.set_value(to_cst(wanted)),
        None => {
            obj.append("vouch", to_cst(wanted));
        }
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

pub(super) fn edit_toml(
    path: &Path,
    text: &str,
    wanted: &Value,
    force: bool,
) -> Result<Option<String>, Error> {
    use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};
    let shown = path.display();
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        Error::invalid(format!(
            "{shown}: not valid TOML: {}; nothing was changed",
            e.to_string().trim()
        ))
    })?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| {
            Error::invalid(format!(
                "{shown}: `mcp_servers` is not a table; nothing was changed"
            ))
        })?;
    // The entry as the same JSON shape, to compare with what is there.
    let current: Option<Value> = servers.get("vouch").map(|item| {
        let s = |k: &str| item.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let args: Vec<String> = item
            .get("args")
            .and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let env: serde_json::Map<String, Value> = item
            .get("env")
            .and_then(|e| e.as_table_like())
            .map(|t| {
                t.iter()
                    .filter_map(|(k, v)| Some((k.to_string(), json!(v.as_str()?))))
                    .collect()
            })
            .unwrap_or_default();
        json!({"command": s("command"), "args": args, "env": env})
    });
    if let Some(current) = &current
        && unchanged_or_refused(path, current, wanted, force)?
    {
        return Ok(None);
    }
    let mut table = Table::new();
    table.insert(
        "command",
        value(wanted["command"].as_str().unwrap_or("vouch")),
    );
    let mut args = Array::new();
    for a in wanted["args"].as_array().into_iter().flatten() {
        args.push(a.as_str().unwrap_or_default());
    }
    table.insert("args", value(args));
    let mut env = InlineTable::new();
    for (k, v) in wanted["env"].as_object().into_iter().flatten() {
        env.insert(k, v.as_str().unwrap_or_default().into());
    }
    table.insert("env", value(env));
    servers.insert("vouch", Item::Table(table));
    Ok(Some(doc.to_string()))
}

/// Claude Code's deny rules that keep its agent from deciding for the
/// person through the shell they share (an agent with the person's shell
/// is the person, docs/trust.md; these close the easy path):
///
/// - every method the registry marks as deciding ([`Method::decides`]:
///   approve, reject, the lifecycle changes, a bundle import), as its own
///   command (`vouch import-apply`) and through `vouch call` in each name
///   `call` takes (`kb.import_apply`, `kb_import_apply`, `import_apply`);
/// - `vouch review`, `vouch ui` and `vouch serve` (a token-less HTTP
///   server prints a sign-in link for the person);
/// - edits under `.vouch/`, and of the host's own configuration (its
///   permissions and which actor the server runs as). Claude Code checks
///   `Edit(…)` for every file-writing tool.
///
/// [`Method::decides`]: vouch_core::methods::Method::decides
pub(crate) fn claude_code_deny() -> Vec<String> {
    let mut rules: Vec<String> = ["review", "ui", "serve"]
        .iter()
        .map(|c| format!("Bash(vouch {c}:*)"))
        .collect();
    for m in vouch_core::methods::REGISTRY.iter().filter(|m| m.decides) {
        let bare = m.name.trim_start_matches("kb.");
        rules.push(format!("Bash(vouch {}:*)", bare.replace('_', "-")));
        for name in [m.name.to_string(), m.tool_name(), bare.to_string()] {
            rules.push(format!("Bash(vouch call {name}:*)"));
        }
    }
    rules.extend(
        [
            "Edit(**/.vouch/**)",
            "Edit(**/.claude/**)",
            "Edit(**/.mcp.json)",
        ]
        .map(String::from),
    );
    rules
}

/// One Claude Code hook: the event it runs on, its tool matcher (tool
/// events only) and its command.
pub(crate) struct Hook {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub command: String,
}

/// The hooks that hand a session to `vouch capture` as `agent`: each tool
/// use, each prompt, the session's start (what an earlier one left
/// behind) and its end (filed for review).
pub(crate) fn claude_code_hooks(agent: &str) -> Vec<Hook> {
    // The agent's name is one word for the shell, quoted unless plain.
    let plain = agent
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    let agent = if plain {
        agent.to_string()
    } else {
        format!("'{}'", agent.replace('\'', r"'\''"))
    };
    let command = format!("vouch capture --host claude-code --agent {agent}");
    [
        ("PostToolUse", Some("*")),
        ("UserPromptSubmit", None),
        ("SessionStart", None),
        ("SessionEnd", None),
    ]
    .into_iter()
    .map(|(event, matcher)| Hook {
        event,
        matcher,
        command: command.clone(),
    })
    .collect()
}

/// What `.claude/settings.json` would hold with every rule of `deny` in
/// `permissions.deny` and every hook of `hooks` under `hooks.<event>`,
/// keeping all else; `None` when it has them all.
pub(super) fn edit_settings(
    path: &Path,
    text: &str,
    deny: &[String],
    hooks: &[Hook],
) -> Result<Option<String>, Error> {
    let denied = match deny {
        [] => None,
        _ => edit_deny(path, text, deny)?,
    };
    let text = denied.as_deref().unwrap_or(text);
    match hooks {
        [] => Ok(denied),
        _ => Ok(edit_hooks(path, text, hooks)?.or(denied)),
    }
}

/// `text` (`.claude/settings.json`, JSONC) edited by `add`, which sees the
/// parsed value and the tree, adds what is missing to the tree and says
/// whether it added anything (`None` when not). A file that is not JSON,
/// or a key of the wrong shape (`add`'s refusal), changes nothing.
fn edit_settings_tree(
    path: &Path,
    text: &str,
    add: impl FnOnce(&Value, &jsonc_parser::cst::CstRootNode) -> Result<bool, String>,
) -> Result<Option<String>, Error> {
    use jsonc_parser::ParseOptions;
    use jsonc_parser::cst::CstRootNode;
    let refuse =
        |m: String| Error::invalid(format!("{}: {m}; nothing was changed", path.display()));
    let options = ParseOptions::default();
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let value: Value = jsonc_parser::parse_to_serde_value(text, &options)
        .map_err(|e| refuse(format!("not valid JSON: {e}")))?;
    let root =
        CstRootNode::parse(text, &options).map_err(|e| refuse(format!("not valid JSON: {e}")))?;
    if !add(&value, &root).map_err(refuse)? {
        return Ok(None);
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// `text` with each hook of `hooks` added to `hooks.<event>` as a group of
/// its own, unless a group of that event runs its command already; `None`
/// when all are there.
fn edit_hooks(path: &Path, text: &str, hooks: &[Hook]) -> Result<Option<String>, Error> {
    edit_settings_tree(path, text, |value, root| {
        let present = &value["hooks"];
        if !(present.is_null() || present.is_object()) {
            return Err("`hooks` is not an object".into());
        }
        if let Some(h) = hooks
            .iter()
            .find(|h| !(present[h.event].is_null() || present[h.event].is_array()))
        {
            return Err(format!("`hooks.{}` is not a list", h.event));
        }
        let runs = |h: &Hook| {
            present[h.event].as_array().is_some_and(|groups| {
                groups.iter().any(|g| {
                    g["hooks"]
                        .as_array()
                        .is_some_and(|hs| hs.iter().any(|x| x["command"] == json!(h.command)))
                })
            })
        };
        let missing: Vec<&Hook> = hooks.iter().filter(|h| !runs(h)).collect();
        let events = root.object_value_or_set().object_value_or_set("hooks");
        for h in &missing {
            let mut group = json!({"hooks": [{"type": "command", "command": h.command}]});
            if let Some(m) = h.matcher {
                group["matcher"] = json!(m);
            }
            events.array_value_or_set(h.event).append(to_cst(&group));
        }
        Ok(!missing.is_empty())
    })
}

/// What `.claude/settings.json` would hold with every rule of `deny` in
/// `permissions.deny`, keeping all else; `None` when it has them all.
fn edit_deny(path: &Path, text: &str, deny: &[String]) -> Result<Option<String>, Error> {
    edit_settings_tree(path, text, |value, root| {
        let permissions = &value["permissions"];
        if !(permissions.is_null() || permissions.is_object()) {
            return Err("`permissions` is not an object".into());
        }
        let present = &permissions["deny"];
        if !(present.is_null() || present.is_array()) {
            return Err("`permissions.deny` is not a list".into());
        }
        let missing: Vec<&str> = deny
            .iter()
            .map(String::as_str)
            .filter(|r| !present.as_array().is_some_and(|a| a.iter().any(|x| x == r)))
            .collect();
        if missing.is_empty() {
            return Ok(false);
        }
        let list = root
            .object_value_or_set()
            .object_value_or_set("permissions")
            .array_value_or_set("deny");
        for rule in missing {
            list.append(to_cst(&json!(rule)));
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_keeps_comments_and_other_servers() {
        let text = "{\n  // mine\n  \"servers\": {\n    \"other\": {\"command\": \"x\"}, // keep\n  },\n}\n";
        let wanted = json!({"command": "vouch", "args": ["serve"]});
        let out = edit_json(
            Path::new("mcp.json"),
            text,
            true,
            &["servers"],
            &wanted,
            false,
        )
        .unwrap()
        .unwrap();
        assert!(out.contains("// mine") && out.contains("// keep"), "{out}");
        let v: Value = jsonc_parser::parse_to_serde_value(&out, &Default::default()).unwrap();
        assert_eq!(v["servers"]["other"]["command"], "x");
        assert_eq!(v["servers"]["vouch"], wanted);
        // Twice: nothing to do.
        assert!(
            edit_json(
                Path::new("mcp.json"),
                &out,
                true,
                &["servers"],
                &wanted,
                false
            )
            .unwrap()
            .is_none()
        );
    }

    #[test]
    fn strict_json_refuses_comments_with_the_line() {
        let e = edit_json(
            Path::new("a.json"),
            "{\n // no\n}",
            false,
            &["mcpServers"],
            &json!({}),
            false,
        )
        .unwrap_err();
        assert!(e.message.contains("line 2"), "{}", e.message);
    }

    /// Each deciding method's own command is a real subcommand (a rule
    /// for a command that does not exist would hide a missing one).
    #[test]
    fn every_deciding_method_has_the_command_its_rule_names() {
        use clap::CommandFactory;
        let cli = crate::cli::Cli::command();
        let rules = claude_code_deny();
        let deciding: Vec<_> = vouch_core::methods::REGISTRY
            .iter()
            .filter(|m| m.decides)
            .collect();
        assert!(deciding.len() >= 9, "{}", deciding.len());
        for m in deciding {
            let sub = m.name.trim_start_matches("kb.").replace('_', "-");
            assert!(
                cli.find_subcommand(&sub).is_some(),
                "no `vouch {sub}` for {}",
                m.name
            );
            assert!(rules.contains(&format!("Bash(vouch {sub}:*)")), "{sub}");
        }
    }
}
