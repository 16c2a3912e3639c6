//! `vouch install-mcp HOST`: put a `vouch` MCP server entry into an agent
//! host's own config file, where that host reads it. Every other key,
//! server and comment stays as written (JSON and JSONC through a concrete
//! syntax tree, TOML through `toml_edit`); the file is replaced atomically
//! after a backup; running it twice changes nothing; a different `vouch`
//! entry is only replaced with `--force`. A file that does not parse is
//! refused with its line, and nothing is written. Every file written is
//! reported (`files`), and whether the host will find the command.

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use vouch_core::{Error, ErrorKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Claude Code: the project's `.mcp.json`.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` in the OS's app config.
    ClaudeDesktop,
    /// Cursor: the project's `.cursor/mcp.json`.
    Cursor,
    /// OpenAI Codex CLI: `~/.codex/config.toml` (or `$CODEX_HOME`).
    Codex,
    /// VS Code: the project's `.vscode/mcp.json` (JSONC).
    Vscode,
    /// Zed: `~/.config/zed/settings.json` (JSONC).
    Zed,
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The host whose config to edit.
    #[arg(value_enum)]
    pub host: Host,
    /// Print the change to every file it would write (for claude-code also
    /// `.claude/settings.json`) as a diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace a `vouch` entry that says something else.
    #[arg(long)]
    pub force: bool,
}

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Cursor => "cursor",
            Host::Codex => "codex",
            Host::Vscode => "vscode",
            Host::Zed => "zed",
        }
    }

    /// The actor the agent acts as when `--agent` is not given: never the
    /// person, so the person can approve what it proposes.
    fn default_agent(self) -> &'static str {
        match self {
            Host::ClaudeCode | Host::ClaudeDesktop => "claude",
            Host::Cursor => "cursor",
            Host::Codex => "codex",
            Host::Vscode => "copilot",
            Host::Zed => "zed",
        }
    }

    /// Project files are shared through git: they name no absolute KB path
    /// (the host starts the server in the project).
    fn per_project(self) -> bool {
        matches!(self, Host::ClaudeCode | Host::Cursor | Host::Vscode)
    }
}

/// Where a config lives and how it is written.
struct Target {
    path: PathBuf,
    kind: Kind,
}

enum Kind {
    /// JSON (comments allowed or not); the entry goes under `keys`.
    Json {
        comments: bool,
        keys: &'static [&'static str],
    },
    /// TOML; the entry is the table `[mcp_servers.vouch]`.
    Toml,
}

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home() -> Result<PathBuf, Error> {
    env_path("HOME")
        .or_else(|| env_path("USERPROFILE"))
        .ok_or_else(|| Error::invalid("HOME is not set, so the host's config cannot be found"))
}

fn target(host: Host, project: &Path) -> Result<Target, Error> {
    let json = |comments, keys| Kind::Json { comments, keys };
    Ok(match host {
        Host::ClaudeCode => Target {
            path: project.join(".mcp.json"),
            kind: json(false, &["mcpServers"]),
        },
        Host::Cursor => Target {
            path: project.join(".cursor/mcp.json"),
            kind: json(false, &["mcpServers"]),
        },
        Host::Vscode => Target {
            path: project.join(".vscode/mcp.json"),
            kind: json(true, &["servers"]),
        },
        Host::ClaudeDesktop => {
            let dir = if cfg!(target_os = "macos") {
                home()?.join("Library/Application Support/Claude")
            } else if cfg!(windows) {
                env_path("APPDATA")
                    .ok_or_else(|| Error::invalid("APPDATA is not set"))?
                    .join("Claude")
            } else {
                env_path("XDG_CONFIG_HOME")
                    .unwrap_or(home()?.join(".config"))
                    .join("Claude")
            };
            Target {
                path: dir.join("claude_desktop_config.json"),
                kind: json(false, &["mcpServers"]),
            }
        }
        Host::Zed => Target {
            path: env_path("XDG_CONFIG_HOME")
                .unwrap_or(home()?.join(".config"))
                .join("zed/settings.json"),
            kind: json(true, &["context_servers"]),
        },
        Host::Codex => Target {
            path: env_path("CODEX_HOME")
                .unwrap_or(home()?.join(".codex"))
                .join("config.toml"),
            kind: Kind::Toml,
        },
    })
}

/// This binary, and the `vouch` the `PATH` of this shell finds.
struct Binary {
    /// This binary (canonical), when the OS says.
    me: Option<PathBuf>,
    /// The first `vouch` on `PATH`, as found (a link such as
    /// `~/.cargo/bin/vouch` or `/opt/homebrew/bin/vouch` stays a link, so
    /// an upgrade behind it keeps working).
    on_path: Option<PathBuf>,
}

impl Binary {
    fn find() -> Binary {
        let me = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
        let on_path = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .filter(|d| d.is_absolute())
                .map(|d| d.join(if cfg!(windows) { "vouch.exe" } else { "vouch" }))
                .find(|p| p.is_file())
        });
        Binary { me, on_path }
    }

    /// The `vouch` on `PATH` is this binary.
    fn on_path_is_me(&self) -> bool {
        let found = self.on_path.as_ref().and_then(|p| p.canonicalize().ok());
        found.is_some() && found == self.me
    }

    /// The command a host runs. A project file is committed and shared:
    /// it says `vouch`, and each person's host finds their own on its
    /// `PATH`. A user-wide file is the person's own: it names this binary
    /// by path (the `PATH` entry when that is this binary), since a host
    /// started from a desktop launcher does not get this shell's `PATH`.
    fn command(&self, host: Host) -> String {
        if host.per_project() {
            return "vouch".into();
        }
        if self.on_path_is_me()
            && let Some(p) = &self.on_path
        {
            return p.display().to_string();
        }
        match &self.me {
            Some(me) => me.display().to_string(),
            None => "vouch".into(),
        }
    }

    /// What the person should know about `command`: whether the host
    /// will find it.
    fn note(&self, host: Host, command: &str) -> String {
        let me = self
            .me
            .as_ref()
            .map_or("this binary".into(), |m| m.display().to_string());
        if command != "vouch" {
            return format!(
                "the host runs {command} (this file is yours and not committed); if vouch \
                 moves, run install-mcp again"
            );
        }
        match &self.on_path {
            Some(p) if self.on_path_is_me() || !host.per_project() => format!(
                "the host runs `vouch` from its own PATH (here: {}); a host started outside \
                 this shell needs vouch on its PATH too",
                p.display()
            ),
            Some(p) => format!(
                "the host runs `vouch` from its own PATH, which here finds {}, not this \
                 binary ({me})",
                p.display()
            ),
            None => format!(
                "`vouch` is not on this PATH, so the host cannot start the server: install it \
                 there (`cargo install --path crates/vouch`, or copy {me} into a folder on \
                 PATH); the file says `vouch` so that it works for everyone who clones the \
                 project"
            ),
        }
    }
}

/// The `vouch` server entry in the host's own shape.
fn entry(host: Host, command: &str, agent: &str, kb: Option<&Path>) -> Value {
    let mut args = vec![json!("serve")];
    if let Some(kb) = kb {
        args.push(json!("--kb"));
        args.push(json!(kb.display().to_string()));
    }
    let mut e = serde_json::Map::new();
    match host {
        Host::ClaudeCode | Host::Vscode => {
            e.insert("type".into(), json!("stdio"));
        }
        Host::Zed => {
            e.insert("source".into(), json!("custom"));
        }
        _ => {}
    }
    e.insert("command".into(), json!(command));
    e.insert("args".into(), Value::Array(args));
    e.insert("env".into(), json!({"VOUCH_AGENT": agent}));
    Value::Object(e)
}

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
fn edit_json(
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

fn edit_toml(
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

/// A line diff of two texts (for `--dry-run`): `-`, `+` and ` ` lines.
/// The lines both share at the start and the end are matched first (an
/// entry added to a 40,000-line file touches a few lines in its middle);
/// only a middle small enough is aligned line by line, a larger one is
/// shown as removed then added. Linear in the file's size either way.
fn diff(path: &Path, before: &str, after: &str) -> String {
    /// Most cells of the alignment table (lines × lines) of the middle.
    const MAX_CELLS: usize = 1_000_000;
    let a_all: Vec<&str> = before.lines().collect();
    let b_all: Vec<&str> = after.lines().collect();
    let head = a_all.iter().zip(&b_all).take_while(|(x, y)| x == y).count();
    let tail = a_all[head..]
        .iter()
        .rev()
        .zip(b_all[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let a = &a_all[head..a_all.len() - tail];
    let b = &b_all[head..b_all.len() - tail];
    /// Unchanged lines shown around the change.
    const CONTEXT: usize = 3;
    let mut out = format!("--- {0}\n+++ {0} (with vouch)\n", path.display());
    if head > CONTEXT {
        out.push_str(&format!("  … {} unchanged line(s)\n", head - CONTEXT));
    }
    for line in &a_all[head.saturating_sub(CONTEXT)..head] {
        out.push_str(&format!(" {line}\n"));
    }
    if (a.len() + 1).saturating_mul(b.len() + 1) > MAX_CELLS {
        for line in a {
            out.push_str(&format!("-{line}\n"));
        }
        for line in b {
            out.push_str(&format!("+{line}\n"));
        }
    } else {
        out.push_str(&aligned(a, b));
    }
    let rest = &a_all[a_all.len() - tail..];
    for line in rest.iter().take(CONTEXT) {
        out.push_str(&format!(" {line}\n"));
    }
    if rest.len() > CONTEXT {
        out.push_str(&format!("  … {} unchanged line(s)\n", rest.len() - CONTEXT));
    }
    out
}

/// `-`, `+` and ` ` lines aligning `a` with `b` by their longest common
/// subsequence.
fn aligned(a: &[&str], b: &[&str]) -> String {
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        }
    }
    out
}

/// Hold the config directory's lock while reading, editing and replacing,
/// so two runs at once do not lose each other's edit.
struct DirLock {
    #[cfg(unix)]
    _dir: std::fs::File,
}

fn lock_dir(dir: &Path) -> Result<DirLock, Error> {
    #[cfg(unix)]
    {
        let f = std::fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
        f.lock().map_err(|e| Error::io(dir, e))?;
        Ok(DirLock { _dir: f })
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(DirLock {})
    }
}

/// Replace `path` with `bytes`: a sibling temp file with the old file's
/// permissions, synced, renamed over it.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let tmp = path.with_file_name(format!(
        ".{}.vouch-{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("config"),
        std::process::id()
    ));
    let result = (|| {
        // Never through a link planted at the temp name.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        if let Ok(meta) = std::fs::metadata(path) {
            let _ = f.set_permissions(meta.permissions());
        }
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Keep `bytes` (the file as it was) beside `path`: `FILE.bak`, or
/// `FILE.bak.2`, … when earlier backups are there, so none is overwritten;
/// created new, never through a link.
fn backup(path: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
    use std::io::Write;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("config");
    for n in 1..1000 {
        let candidate = path.with_file_name(if n == 1 {
            format!("{name}.bak")
        } else {
            format!("{name}.bak.{n}")
        });
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut f) => {
                if let Ok(meta) = std::fs::metadata(path) {
                    let _ = f.set_permissions(meta.permissions());
                }
                f.write_all(bytes)
                    .and_then(|_| f.sync_all())
                    .map_err(|e| Error::io(&candidate, e))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&candidate, e)),
        }
    }
    Err(Error::invalid(format!(
        "{}: 999 backups already; remove old ones",
        path.display()
    )))
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
pub fn claude_code_deny() -> Vec<String> {
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

/// What `.claude/settings.json` would hold with every rule of `deny` in
/// `permissions.deny`, keeping all else; `None` when it has them all.
fn edit_deny(path: &Path, text: &str, deny: &[String]) -> Result<Option<String>, Error> {
    use jsonc_parser::ParseOptions;
    use jsonc_parser::cst::CstRootNode;
    let refuse =
        |m: String| Error::invalid(format!("{}: {m}; nothing was changed", path.display()));
    let options = ParseOptions::default();
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let value: Value = jsonc_parser::parse_to_serde_value(text, &options)
        .map_err(|e| refuse(format!("not valid JSON: {e}")))?;
    let permissions = &value["permissions"];
    if !(permissions.is_null() || permissions.is_object()) {
        return Err(refuse("`permissions` is not an object".into()));
    }
    let present = &permissions["deny"];
    if !(present.is_null() || present.is_array()) {
        return Err(refuse("`permissions.deny` is not a list".into()));
    }
    let missing: Vec<&str> = deny
        .iter()
        .map(String::as_str)
        .filter(|r| !present.as_array().is_some_and(|a| a.iter().any(|x| x == r)))
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    let root =
        CstRootNode::parse(text, &options).map_err(|e| refuse(format!("not valid JSON: {e}")))?;
    let list = root
        .object_value_or_set()
        .object_value_or_set("permissions")
        .array_value_or_set("deny");
    for rule in missing {
        list.append(to_cst(&json!(rule)));
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// Make (or check, for a dry run) the folders from `project` to `dir`:
/// inside a project none may be a link (`.cursor -> ~/.cursor` would
/// send the write elsewhere).
fn project_dirs(project: &Path, dir: &Path, dry_run: bool) -> Result<(), Error> {
    let checked = if dry_run {
        match vouch_core::store::nofollow::check_dirs(project, dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    } else {
        vouch_core::store::nofollow::ensure_dirs(project, dir)
    };
    checked.map_err(|e| {
        Error::invalid(format!(
            "{}: {e}; vouch does not write through links inside a project",
            dir.display()
        ))
    })
}

/// Edit one config file: `edit` turns its text into the new text (`None`:
/// nothing to change). Locked, backed up, replaced atomically; a dry run
/// only says what would change. Answers {file, outcome, diff|backup}.
fn apply(
    path: &Path,
    project: Option<&Path>,
    dry_run: bool,
    edit: impl FnOnce(&str) -> Result<Option<String>, Error>,
) -> Result<Value, Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    match project {
        Some(project) => project_dirs(project, dir, dry_run)?,
        None if !dry_run => std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?,
        None => {}
    }
    let _lock = if dir.is_dir() {
        Some(lock_dir(dir)?)
    } else {
        None
    };
    let before = match std::fs::read_to_string(path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(path, e)),
    };
    let text = before.clone().unwrap_or_default();
    let mut out = json!({"file": path.display().to_string()});
    let Some(after) = edit(&text)? else {
        out["outcome"] = json!("unchanged");
        return Ok(out);
    };
    if dry_run {
        out["outcome"] = json!(if before.is_some() {
            "would update"
        } else {
            "would create"
        });
        out["diff"] = json!(diff(path, &text, &after));
        return Ok(out);
    }
    if let Some(old) = &before {
        let backup = backup(path, old.as_bytes())?;
        out["backup"] = json!(backup.display().to_string());
    }
    replace(path, after.as_bytes())?;
    out["outcome"] = json!(if before.is_some() {
        "updated"
    } else {
        "created"
    });
    Ok(out)
}

/// A link where a file belongs: inside a project (a cloned repository
/// could point it at any file) it is refused; a user-wide config kept in a
/// dotfiles folder is edited where it really is.
fn resolve_link(path: &mut PathBuf, per_project: bool) -> Result<(), Error> {
    if std::fs::symlink_metadata(&*path).is_ok_and(|m| m.file_type().is_symlink()) {
        if per_project {
            return Err(Error::invalid(format!(
                "{} is a symbolic link; vouch does not write through links inside a project \
                 (replace it with the file itself)",
                path.display()
            )));
        }
        *path = std::fs::canonicalize(&*path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// Install the entry. `kb` is the knowledge base's `.vouch/` (found as
/// every command finds it); `agent` the actor the host's agent acts as.
/// For Claude Code, also the deny rules of [`claude_code_deny`] in the
/// project's `.claude/settings.json`. The answer lists every file written
/// (or, with `--dry-run`, that would be) under `files`, each with its
/// outcome and diff or backup; `note` says whether the host will find the
/// command.
pub fn install(args: &InstallArgs, kb: &Path, agent: Option<&str>) -> Result<Value, Error> {
    let host = args.host;
    let project = kb.parent().unwrap_or(kb);
    let mut t = target(host, project)?;
    resolve_link(&mut t.path, host.per_project())?;
    let agent = agent.unwrap_or(host.default_agent());
    vouch_core::ids::check_id("--agent", agent)?;
    let kb_arg = (!host.per_project()).then_some(project);
    let binary = Binary::find();
    let command = binary.command(host);
    let wanted = entry(host, &command, agent, kb_arg);
    let in_project = host.per_project().then_some(project);
    let mut written = apply(&t.path, in_project, args.dry_run, |text| match t.kind {
        Kind::Json { comments, keys } => {
            edit_json(&t.path, text, comments, keys, &wanted, args.force)
        }
        Kind::Toml => edit_toml(&t.path, text, &wanted, args.force),
    })?;
    written["holds"] = json!("the `vouch` MCP server entry");
    let mut out = json!({
        "host": host.name(),
        "file": t.path.display().to_string(),
        "agent": agent,
        "entry": wanted,
        "note": binary.note(host, &command),
    });
    for key in ["outcome", "diff", "backup"] {
        if let Some(v) = written.get(key) {
            out[key] = v.clone();
        }
    }
    let mut files = vec![written];
    if host == Host::ClaudeCode {
        let mut settings = project.join(".claude/settings.json");
        resolve_link(&mut settings, true)?;
        let deny = claude_code_deny();
        let mut permissions = apply(&settings, Some(project), args.dry_run, |text| {
            edit_deny(&settings, text, &deny)
        })?;
        permissions["holds"] = json!(format!(
            "{} deny rules: the agent may not decide as you through your shell",
            deny.len()
        ));
        files.push(permissions.clone());
        permissions["deny"] = json!(deny);
        out["permissions"] = permissions;
    }
    out["files"] = Value::Array(files);
    Ok(out)
}

/// `install`'s answer for a person: each file's diff (a dry run) and
/// outcome, the agent, and whether the host will find `vouch`.
pub fn render(v: &Value) -> String {
    let mut text = String::new();
    for f in v["files"].as_array().into_iter().flatten() {
        if let Some(d) = f["diff"].as_str() {
            text.push_str(d);
        }
        text.push_str(&format!(
            "{}: {} ({})\n",
            f["outcome"].as_str().unwrap_or(""),
            f["file"].as_str().unwrap_or(""),
            f["holds"].as_str().unwrap_or("")
        ));
        if let Some(b) = f["backup"].as_str() {
            text.push_str(&format!("  backup: {b}\n"));
        }
    }
    text.push_str(&format!(
        "the agent acts as {}\nnote: {}\n",
        v["agent"].as_str().unwrap_or(""),
        v["note"].as_str().unwrap_or("")
    ));
    text
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

    #[test]
    fn the_diff_marks_added_lines() {
        let d = diff(Path::new("f"), "a\nb\n", "a\nx\nb\n");
        assert_eq!(d.lines().skip(2).collect::<Vec<_>>(), [" a", "+x", " b"]);
    }
}
