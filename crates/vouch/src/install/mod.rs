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
use vouch_core::Error;

mod edit;
mod files;

pub(crate) use edit::{claude_code_deny, claude_code_hooks};
use edit::{edit_json, edit_settings, edit_toml};
use files::{backup, diff, lock_dir, replace};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Host {
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
pub(crate) struct InstallArgs {
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
    /// claude-code only: also capture your sessions (`vouch capture`):
    /// hooks in your own `.claude/settings.local.json`, never the shared
    /// settings, so each person opts in for themselves. Your prompts and
    /// the agent's tool uses, masked for secrets, are filed at session end
    /// as a pending page citing a summary source (docs/review.md).
    #[arg(long)]
    pub capture: bool,
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
/// For Claude Code, also the deny rules of [`claude_code_deny`] and the
/// capture hooks of [`claude_code_hooks`] in the project's
/// `.claude/settings.json`. The answer lists every file written
/// (or, with `--dry-run`, that would be) under `files`, each with its
/// outcome and diff or backup; `note` says whether the host will find the
/// command.
pub(crate) fn install(args: &InstallArgs, kb: &Path, agent: Option<&str>) -> Result<Value, Error> {
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
            edit_settings(&settings, text, &deny, &[])
        })?;
        permissions["holds"] = json!(format!(
            "{} deny rules: the agent may not decide as you through your shell",
            deny.len()
        ));
        files.push(permissions.clone());
        permissions["deny"] = json!(deny);
        out["permissions"] = permissions;
        if args.capture {
            // The person's own file: Claude Code keeps it out of git.
            let mut local = project.join(".claude/settings.local.json");
            resolve_link(&mut local, true)?;
            let hooks = claude_code_hooks(agent);
            let mut capture = apply(&local, Some(project), args.dry_run, |text| {
                edit_settings(&local, text, &[], &hooks)
            })?;
            capture["holds"] = json!(format!(
                "{} hooks hand your session to `vouch capture`, which files it for review when \
                 it ends",
                hooks.len()
            ));
            files.push(capture.clone());
            capture["hooks"] = json!(hooks.iter().map(|h| h.event).collect::<Vec<_>>());
            out["capture"] = capture;
        }
    } else if args.capture {
        return Err(Error::invalid(format!(
            "--capture: {} has no session hooks vouch reads; only claude-code",
            host.name()
        )));
    }
    out["files"] = Value::Array(files);
    Ok(out)
}

/// `install`'s answer for a person: each file's diff (a dry run) and
/// outcome, the agent, and whether the host will find `vouch`.
pub(crate) fn render(v: &Value) -> String {
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
