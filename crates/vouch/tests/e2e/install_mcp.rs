//! `vouch install-mcp` against a fixture config of each host, written where
//! that host keeps it (HOME is the temp project): other servers, keys and
//! comments are kept; a backup is made; a second run changes nothing; a
//! different `vouch` entry needs --force; --dry-run writes nothing; a file
//! that does not parse is refused with its line.

use crate::common::{Project, assert_contains};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

struct Case {
    host: &'static str,
    /// Relative to the project (which is also HOME).
    file: &'static str,
    fixture: &'static str,
    /// Where the entry sits (JSON pointer) once installed.
    pointer: &'static str,
    comments: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        host: "claude-code",
        file: ".mcp.json",
        fixture: r#"{
  "mcpServers": {
    "github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {"GH_TOKEN": "x"}}
  }
}
"#,
        pointer: "/mcpServers",
        comments: &[],
    },
    Case {
        host: "cursor",
        file: ".cursor/mcp.json",
        fixture: r#"{"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}, "other": 1}"#,
        pointer: "/mcpServers",
        comments: &[],
    },
    Case {
        host: "vscode",
        file: ".vscode/mcp.json",
        fixture: r#"{
  // Servers for this workspace.
  "inputs": [],
  "servers": {
    /* the team's search */
    "search": {"type": "http", "url": "http://localhost:9000/mcp"},
  },
}
"#,
        pointer: "/servers",
        comments: &["// Servers for this workspace.", "/* the team's search */"],
    },
    Case {
        host: "claude-desktop",
        file: ".config/Claude/claude_desktop_config.json",
        fixture: r#"{"globalShortcut": "Ctrl+Space", "mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}"#,
        pointer: "/mcpServers",
        comments: &[],
    },
    Case {
        host: "zed",
        file: ".config/zed/settings.json",
        fixture: r#"// Zed settings
{
  "theme": "One Dark", // my theme
  "context_servers": {
    "postgres": {"source": "custom", "command": "pg-mcp", "args": []}
  }
}
"#,
        pointer: "/context_servers",
        comments: &["// Zed settings", "// my theme"],
    },
    Case {
        host: "codex",
        file: ".codex/config.toml",
        fixture: r#"# my codex config
model = "o4-mini"

[mcp_servers.docs]
command = "docs-mcp" # keep me
args = ["--port", "1"]
"#,
        pointer: "/mcp_servers",
        comments: &["# my codex config", "# keep me"],
    },
];

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "toml") {
        let v: toml_edit::DocumentMut = text.parse().unwrap();
        // Just the parts the test reads, as JSON.
        let servers = v["mcp_servers"].as_table().unwrap();
        let mut out = serde_json::Map::new();
        for (name, item) in servers.iter() {
            let args: Vec<Value> = item["args"]
                .as_array()
                .map(|a| a.iter().map(|x| Value::from(x.as_str().unwrap())).collect())
                .unwrap_or_default();
            let mut e = serde_json::json!({"command": item["command"].as_str(), "args": args});
            if let Some(env) = item.get("env").and_then(|e| e.as_inline_table()) {
                e["env"] = env
                    .iter()
                    .map(|(k, v)| (k.to_string(), Value::from(v.as_str().unwrap())))
                    .collect::<serde_json::Map<_, _>>()
                    .into();
            }
            out.insert(name.to_string(), e);
        }
        return serde_json::json!({"mcp_servers": out});
    }
    jsonc_parser::parse_to_serde_value(&text, &Default::default()).unwrap()
}

fn install(p: &Project, args: &[&str]) -> crate::common::Run {
    let mut c = p.command("tester");
    // Host configs are found under HOME here (~/.config/Claude, ...).
    c.env("PATH", "").env_remove("XDG_CONFIG_HOME");
    c.arg("--json").arg("install-mcp").args(args);
    crate::common::Run::from(c.output().unwrap())
}

fn path_of(p: &Project, case: &Case) -> PathBuf {
    p.root().join(case.file)
}

#[test]
fn every_host_keeps_what_was_there_and_runs_twice_as_once() {
    for case in CASES {
        let p = Project::new();
        let path = path_of(&p, case);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, case.fixture).unwrap();
        let host = case.host;

        // --dry-run: a diff, nothing written.
        let r = install(&p, &[host, "--dry-run"]);
        assert_eq!(r.code, 0, "{host}: {}{}", r.stdout, r.stderr);
        let v = r.json();
        assert_eq!(v["outcome"], "would update", "{host}: {v:#}");
        assert!(v["diff"].as_str().unwrap().contains("+"), "{host}: {v:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), case.fixture);

        let r = install(&p, &[host]);
        assert_eq!(r.code, 0, "{host}: {}{}", r.stdout, r.stderr);
        let v = r.json();
        assert_eq!(v["outcome"], "updated", "{host}: {v:#}");
        let backup = v["backup"].as_str().unwrap();
        assert_eq!(
            std::fs::read_to_string(backup).unwrap(),
            case.fixture,
            "{host}"
        );
        let after = std::fs::read_to_string(&path).unwrap();
        for c in case.comments {
            assert!(after.contains(c), "{host}: comment {c:?} lost:\n{after}");
        }
        let parsed = parse(&path);
        let servers = parsed.pointer(case.pointer).unwrap().as_object().unwrap();
        assert_eq!(
            servers.len(),
            2,
            "{host}: the other server is kept: {parsed:#}"
        );
        let entry = &servers["vouch"];
        assert_eq!(entry["args"][0], "serve", "{host}: {entry:#}");
        assert!(entry["env"]["VOUCH_AGENT"].is_string(), "{host}: {entry:#}");
        // Hosts with a user-wide file name the KB; project files do not.
        let names_kb = entry["args"].as_array().unwrap().len() > 1;
        assert_eq!(
            names_kb,
            matches!(host, "claude-desktop" | "zed" | "codex"),
            "{host}: {entry:#}"
        );
        if host == "cursor" {
            assert_eq!(parsed["other"], 1);
        }

        // Twice: unchanged, byte for byte.
        let r = install(&p, &[host]);
        assert_eq!(r.json()["outcome"], "unchanged", "{host}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after, "{host}");

        // Another agent name is a different entry: refused without --force.
        let r = install(&p, &[host, "--agent", "helper"]);
        assert_eq!(r.code, 4, "{host}: {}{}", r.stdout, r.stderr);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after, "{host}");
        let r = install(&p, &[host, "--agent", "helper", "--force"]);
        assert_eq!(r.code, 0, "{host}: {}", r.stderr);
        let parsed = parse(&path);
        assert_eq!(
            parsed.pointer(case.pointer).unwrap()["vouch"]["env"]["VOUCH_AGENT"],
            "helper",
            "{host}"
        );
    }
}

#[test]
fn a_missing_file_is_created_and_a_broken_one_is_refused() {
    let p = Project::new();
    let r = install(&p, &["claude-code"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["outcome"], "created");
    let v = parse(&p.root().join(".mcp.json"));
    assert_eq!(v["mcpServers"]["vouch"]["env"]["VOUCH_AGENT"], "claude");

    for (file, host, broken) in [
        (
            ".cursor/mcp.json",
            "cursor",
            "{\"mcpServers\": {\n  \"a\": 1,,\n}",
        ),
        (
            ".mcp.json",
            "claude-code",
            "{\n  // comments are not JSON\n  \"mcpServers\": {}\n}",
        ),
        (".codex/config.toml", "codex", "[mcp_servers\ncommand = 1\n"),
        (".vscode/mcp.json", "vscode", "[1, 2]"),
    ] {
        let path = p.root().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, broken).unwrap();
        let r = install(&p, &[host]);
        assert_eq!(r.code, 2, "{host}: {}{}", r.stdout, r.stderr);
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(said.contains("nothing was changed"), "{host}: {said}");
        if host != "vscode" {
            assert!(said.contains("line"), "{host}: {said}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken, "{host}");
    }
    // A config location that cannot be a directory: a clear error.
    let q = Project::new();
    std::fs::write(q.root().join(".cursor"), "a file, not a folder").unwrap();
    let r = install(&q, &["cursor"]);
    assert_ne!(r.code, 0);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains(".cursor"),
        "{}",
        r.stderr
    );
}

#[test]
fn runs_at_once_do_not_lose_each_others_edits() {
    let p = Project::new();
    let children: Vec<_> = ["claude-code", "claude-code", "claude-code", "claude-code"]
        .iter()
        .map(|h| {
            let mut c = p.command("tester");
            c.env("PATH", "").args(["--json", "install-mcp", h]);
            c.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outcomes: Vec<String> = children
        .into_iter()
        .map(|c| {
            let r = crate::common::Run::from(c.wait_with_output().unwrap());
            assert_eq!(r.code, 0, "{}", r.stderr);
            r.json()["outcome"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        outcomes.iter().filter(|o| *o == "created").count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| *o == "unchanged").count(),
        3,
        "{outcomes:?}"
    );
    let v = parse(&p.root().join(".mcp.json"));
    assert_eq!(v["mcpServers"].as_object().unwrap().len(), 1);
}

#[test]
fn links_and_backups_are_never_written_through() {
    let p = Project::new();
    let vscode = p.root().join(".vscode");
    std::fs::create_dir_all(&vscode).unwrap();
    // A cloned repository plants links: the config itself, and the backup
    // name pointing at a file of the user's.
    let victim = p.root().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, vscode.join("mcp.json")).unwrap();
    let r = install(&p, &["vscode"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(format!("{}{}", r.stdout, r.stderr).contains("symbolic link"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    std::fs::remove_file(vscode.join("mcp.json")).unwrap();
    std::fs::write(vscode.join("mcp.json"), "{\"servers\": {}}\n").unwrap();
    std::os::unix::fs::symlink(&victim, vscode.join("mcp.json.bak")).unwrap();
    let r = install(&p, &["vscode"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.json()["backup"]
            .as_str()
            .unwrap()
            .ends_with("mcp.json.bak.2")
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    // Every backup is kept: a second change makes another.
    let r = install(&p, &["vscode", "--agent", "other", "--force"]);
    assert!(
        r.json()["backup"]
            .as_str()
            .unwrap()
            .ends_with("mcp.json.bak.3"),
        "{}",
        r.stdout
    );
    assert_eq!(
        std::fs::read_to_string(vscode.join("mcp.json.bak.2")).unwrap(),
        "{\"servers\": {}}\n"
    );
}

/// Claude Code also gets deny rules in the project's `.claude/settings.json`
/// (approve, reject, review, ui, import-apply and edits under `.vouch/`
/// through the shell it shares with the person), keeping what is there;
/// `--dry-run` shows them, a second run changes nothing.
#[test]
fn claude_code_gets_deny_rules_for_deciding_through_the_shell() {
    let p = Project::new();
    let settings = p.root().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        "{\n  \"permissions\": {\"allow\": [\"Bash(npm test)\"], \"deny\": [\"Read(.env)\"]},\n  \"model\": \"x\"\n}\n",
    )
    .unwrap();
    let dry = install(&p, &["claude-code", "--dry-run"]).json();
    assert_eq!(dry["permissions"]["outcome"], "would update", "{dry:#}");
    let diff = dry["permissions"]["diff"].as_str().unwrap();
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.contains("\"Bash(vouch approve:*)\"")),
        "{dry:#}"
    );
    let r = install(&p, &["claude-code"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let deny: Vec<&str> = v["permissions"]["deny"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    for rule in [
        "Read(.env)",
        "Bash(vouch approve:*)",
        "Bash(vouch reject:*)",
        "Bash(vouch review:*)",
        "Edit(**/.vouch/**)",
    ] {
        assert!(deny.contains(&rule), "{rule} missing: {deny:?}");
    }
    assert_eq!(v["permissions"]["allow"], json!(["Bash(npm test)"]));
    assert_eq!(v["model"], "x");
    let again = install(&p, &["claude-code"]).json();
    assert_eq!(again["permissions"]["outcome"], "unchanged", "{again:#}");
}

/// A project's host folder that is a link (`.cursor -> elsewhere`) is not
/// written through, nor is a project file under such a folder.
#[test]
fn a_linked_host_folder_in_the_project_is_refused() {
    let p = Project::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), p.root().join(".cursor")).unwrap();
    let r = install(&p, &["cursor"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(said.contains("does not write through links"), "{said}");
    assert!(
        std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none(),
        "something was written through the link"
    );
}

/// `--dry-run` on a 40,000-line config shows a short diff (the lines
/// around the change), not the whole file, and does not align 40,000 ×
/// 40,000 lines.
#[test]
fn a_dry_run_on_a_large_config_shows_only_the_change() {
    let p = Project::new();
    let mut big = String::from("{\n  \"mcpServers\": {},\n");
    for i in 0..40_000 {
        big.push_str(&format!("  \"k{i}\": {i},\n"));
    }
    big.push_str("  \"last\": 0\n}\n");
    std::fs::write(p.root().join(".mcp.json"), &big).unwrap();
    let dry = install(&p, &["claude-code", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let diff = dry.json()["diff"].as_str().unwrap().to_string();
    assert!(diff.lines().count() < 40, "{diff}");
    assert!(diff.contains("unchanged line(s)"), "{diff}");
    assert!(diff.contains("+") && diff.contains("vouch"), "{diff}");
}

/// Whether Claude Code's deny rules stop `command`, read as its
/// permission docs say: leading `VAR=value` assignments are not part of
/// the command, and `Bash(PREFIX:*)` matches `PREFIX` followed by the end
/// or a space. (The real matcher is Claude Code's; this is the shape of
/// rule `install-mcp` must write for it.)
fn denied(rules: &[&str], command: &str) -> bool {
    let mut words: Vec<&str> = command.split_whitespace().collect();
    while words.first().is_some_and(|w| {
        w.split_once('=')
            .is_some_and(|(k, _)| !k.is_empty() && !k.contains('/'))
    }) {
        words.remove(0);
    }
    let command = words.join(" ");
    rules.iter().any(|r| {
        r.strip_prefix("Bash(")
            .and_then(|r| r.strip_suffix(":*)"))
            .is_some_and(|prefix| command == prefix || command.starts_with(&format!("{prefix} ")))
    })
}

/// Issue 39.10: `VOUCH_AGENT=claude vouch call kb.import_apply '{"path": …}'`
/// imported agent-written claims as reviewed knowledge through the
/// person's shell, and `kb.archive`, `kb.supersede`, `kb.revert` through
/// `call` were open too. Every method the registry marks as deciding
/// (`vouch methods --json`: `decides`) is denied as its own command and
/// through `call` in every name `call` takes.
#[test]
fn claude_code_deny_rules_cover_every_deciding_method_through_call() {
    let p = Project::new();
    let methods = crate::common::Run::from(
        p.command("tester")
            .args(["--json", "methods"])
            .output()
            .unwrap(),
    )
    .json();
    let deciding: Vec<String> = methods
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["decides"] == json!(true))
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    for m in [
        "kb.approve",
        "kb.reject",
        "kb.import_apply",
        "kb.archive",
        "kb.supersede",
        "kb.revert",
        "kb.cite",
    ] {
        assert!(
            deciding.iter().any(|d| d == m),
            "{m} not deciding: {deciding:?}"
        );
    }
    let r = install(&p, &["claude-code"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(p.root().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let rules: Vec<&str> = v["permissions"]["deny"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    // The attacks of the review, as the agent ran them.
    for attack in [
        r#"VOUCH_AGENT=claude vouch call kb.import_apply '{"path": "team.tar.gz"}'"#,
        r#"vouch call kb.archive '{"id": "c-1"}'"#,
        r#"vouch call kb.supersede '{"old_id": "a", "new_id": "b"}'"#,
        r#"vouch call kb.revert '{"event_id": "e"}'"#,
    ] {
        assert!(denied(&rules, attack), "not denied: {attack}\n{rules:#?}");
    }
    // Every deciding method, in each name `vouch call` takes, and as its
    // own command.
    for m in &deciding {
        let bare = m.trim_start_matches("kb.");
        for call in [m.clone(), m.replace('.', "_"), bare.to_string()] {
            let attack = format!("VOUCH_AGENT=claude vouch call {call} '{{}}'");
            assert!(denied(&rules, &attack), "not denied: {attack}");
        }
        let own = format!("vouch {} x", bare.replace('_', "-"));
        assert!(denied(&rules, &own), "not denied: {own}");
    }
    // What is not deciding stays open: the agent may search and propose.
    for fine in [
        r#"vouch call kb.search '{"query": "x"}'"#,
        "vouch propose-claim x",
        "vouch search x",
    ] {
        assert!(!denied(&rules, fine), "denied: {fine}");
    }
}

/// Issue 40: `install-mcp claude-code --dry-run` showed the diff of
/// `.mcp.json` only, and the real run reported only `.mcp.json` though it
/// also wrote `.claude/settings.json`. Every file is shown and reported,
/// and the output says whether the host will find `vouch`.
#[test]
fn install_shows_and_reports_every_file_it_writes() {
    let p = Project::new();
    let human = |args: &[&str], path: &str| {
        let mut c = p.command("tester");
        c.env("PATH", path).arg("install-mcp").args(args);
        crate::common::Run::from(c.output().unwrap())
    };
    let dry = human(&["claude-code", "--dry-run"], "");
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    for (file, shows) in [
        (".mcp.json", "\"mcpServers\""),
        (
            ".claude/settings.json",
            "\"Bash(vouch call kb.import_apply:*)\"",
        ),
    ] {
        assert_contains(
            &dry.stdout,
            &format!("+++ {}", p.root().join(file).display()),
        );
        assert_contains(
            &dry.stdout,
            &format!("would create: {}", p.root().join(file).display()),
        );
        assert_contains(&dry.stdout, shows);
    }
    assert!(!p.root().join(".mcp.json").exists());
    assert!(!p.root().join(".claude").exists());
    // Not on PATH: the file still says `vouch` (it is committed, and works
    // for everyone who clones the project), and the output says so.
    assert_contains(&dry.stdout, "`vouch` is not on this PATH");

    // The real run, with this binary on PATH.
    let bin_dir = Path::new(crate::common::bin()).parent().unwrap();
    let run = human(&["claude-code"], &bin_dir.display().to_string());
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for file in [".mcp.json", ".claude/settings.json"] {
        assert_contains(
            &run.stdout,
            &format!("created: {}", p.root().join(file).display()),
        );
        assert!(p.root().join(file).is_file(), "{file}");
    }
    assert_contains(&run.stdout, "from its own PATH");
    let v = parse(&p.root().join(".mcp.json"));
    assert_eq!(v["mcpServers"]["vouch"]["command"], "vouch", "{v:#}");

    // --json lists them too.
    let again = install(&p, &["claude-code"]).json();
    let files: Vec<&str> = again["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2, "{again:#}");
    assert!(files[1].ends_with(".claude/settings.json"), "{again:#}");

    // A user-wide file is the person's own: it names this binary by path,
    // since a desktop host does not get this shell's PATH.
    let r = install(&p, &["claude-desktop"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v = r.json();
    let command = v["entry"]["command"].as_str().unwrap();
    assert!(Path::new(command).is_absolute(), "{v:#}");
    assert_eq!(
        Path::new(command).canonicalize().unwrap(),
        Path::new(crate::common::bin()).canonicalize().unwrap()
    );
}
