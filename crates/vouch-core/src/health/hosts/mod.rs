//! What `doctor` reads in a project's own agent-host configs (a cloned
//! repository's files): whether one would start vouch as a reviewer the
//! person named, under a name only the host decides (`${USER}`), or with
//! its config home moved. The files are parsed (JSON with comments and
//! trailing commas, as hosts accept them), so an escaped key or value
//! (`"VOUCH_\u0041GENT"`) reads as what the host reads; every `env` and
//! every launch (`command` and `args`) is looked at, through the `env`,
//! `sh -c` (and other shells') and `cmd /c` wrappers, and a value the host
//! or a shell expands (`$…`, `%…%`) is unknown, so reported.

use serde_json::Value;

mod words;

use words::{
    EnvNext, Word, assignment, cmd_script, env_command, program_name, shell_commands, shell_script,
    split_words,
};

/// The project's host configs doctor reads, relative to the project.
pub(crate) const HOST_FILES: &[&str] = &[
    ".mcp.json",
    ".cursor/mcp.json",
    ".vscode/mcp.json",
    // VS Code's workspace settings (`mcp.servers`, where it read servers
    // before `mcp.json`), Gemini CLI's and Zed's project settings.
    ".vscode/settings.json",
    ".gemini/settings.json",
    ".zed/settings.json",
    // Claude Code's project settings: their `env` reaches every server
    // and command it starts.
    ".claude/settings.json",
    ".claude/settings.local.json",
];

/// What a host config would do that a repository must not decide: each a
/// phrase ("starts vouch as alice, a reviewer in your config"). `Err` when
/// the file does not parse.
pub(crate) fn concerns(text: &str, reviewers: &[String]) -> Result<Vec<String>, String> {
    let value: Value = serde_json::from_str(&jsonc_to_json(text)).map_err(|e| e.to_string())?;
    let mut seen = Seen {
        reviewers,
        mentions_vouch: value.to_string().to_lowercase().contains("vouch"),
        why: Vec::new(),
        settings: 0,
    };
    walk(&value, &mut seen);
    let mut once = std::collections::HashSet::new();
    seen.why.retain(|w| once.insert(w.clone()));
    Ok(seen.why)
}

struct Seen<'a> {
    reviewers: &'a [String],
    /// The file names vouch somewhere (decoded): a moved config home
    /// matters only to a server that is vouch.
    mentions_vouch: bool,
    why: Vec<String>,
    /// Agent names and config homes read so far (to tell a launch read
    /// through from one that only mentions them).
    settings: usize,
}

impl Seen<'_> {
    fn agent(&mut self, how: &str, w: &Word) {
        self.settings += 1;
        let name = w.text.trim();
        if w.unknown {
            self.why.push(format!(
                "starts vouch with {how} {:?}, a name decided only when it starts (the host or a \
                 shell expands it; `${{USER}}` is your own name), which may be a reviewer's",
                w.text
            ));
        } else if self.reviewers.iter().any(|r| r == name) {
            self.why
                .push(format!("starts vouch as {name}, a reviewer in your config"));
        }
    }

    fn env(&mut self, name: &str, value: &Word) {
        if name.eq_ignore_ascii_case("VOUCH_AGENT") {
            self.agent("VOUCH_AGENT", value);
        }
        if RUNS_CODE.iter().any(|v| name.eq_ignore_ascii_case(v)) && self.mentions_vouch {
            self.why.push(format!(
                "sets {name} for the server, which decides what program or code runs, so \
                 doctor cannot vet what it starts"
            ));
        }
        for var in ["XDG_CONFIG_HOME", "HOME"] {
            if name.eq_ignore_ascii_case(var) {
                self.settings += 1;
                if self.mentions_vouch {
                    self.why.push(format!(
                        "sets {var} for the server, which moves where your own config is read"
                    ));
                }
            }
        }
    }

    /// A program and its arguments, through the wrappers that run another
    /// (`env`, `exec`, `nohup`, `sh -c`, `cmd /c`).
    fn launch(&mut self, argv: &[Word], depth: usize) {
        if depth > 8 || argv.is_empty() {
            return;
        }
        // `NAME=value prog …`, as a shell runs a command line.
        if let Some((name, value)) = assignment(&argv[0]) {
            self.env(&name, &value);
            return self.launch(&argv[1..], depth + 1);
        }
        let program = program_name(&argv[0].text);
        match program.as_str() {
            "env" => {
                let env = env_command(argv);
                for (name, value) in &env.assignments {
                    self.env(name, value);
                }
                match env.next {
                    EnvNext::Again(rest) => self.launch(&rest, depth + 1),
                    EnvNext::Program(at) => self.launch(&argv[at..], depth + 1),
                }
            }
            "exec" | "nohup" | "command" => self.launch(&argv[1..], depth + 1),
            p if PASS_THROUGH.contains(&p) => {
                if let Some(k) = runs_next(argv) {
                    self.launch(&argv[k..], depth + 1);
                }
            }
            p if SHELLS.contains(&p) => {
                let shell = shell_script(argv);
                if let (true, Some(script)) = (shell.c, argv.get(shell.operand)) {
                    self.script(script, false, depth);
                }
            }
            "cmd" => {
                if let Some(script) = cmd_script(argv) {
                    self.script(&script, true, depth);
                }
            }
            _ => {
                let mut args = argv[1..].iter();
                while let Some(w) = args.next() {
                    if w.text == "--agent" {
                        if let Some(v) = args.next() {
                            self.agent("--agent", v);
                        }
                    } else if let Some(v) = w.text.strip_prefix("--agent=") {
                        self.agent(
                            "--agent",
                            &Word {
                                text: v.to_string(),
                                unknown: w.unknown,
                            },
                        );
                    }
                }
            }
        }
    }

    /// A shell script (or `cmd /c` line): each simple command's leading
    /// assignments (and `export`/`set`'s) and what it runs.
    fn script(&mut self, script: &Word, cmd: bool, depth: usize) {
        for mut words in shell_commands(&script.text) {
            for w in &mut words {
                w.unknown |= script.unknown && w.text.contains('$');
                if cmd && w.text.contains('%') {
                    w.unknown = true;
                }
            }
            let mut i = 0;
            while let Some(w) = words.get(i) {
                let t = w.text.as_str();
                if matches!(t, "export" | "set" | "declare" | "typeset" | "local" | "-x") {
                    i += 1;
                } else if let Some((name, value)) = assignment(w) {
                    self.env(&name, &value);
                    i += 1;
                } else {
                    break;
                }
            }
            self.launch(&words[i..], depth + 1);
        }
    }
}

/// Every object of the file: its `env` entries, and the launch its
/// `command` and `args` make; a launch that names the agent or the config
/// home in a way not read through here is reported as such.
fn walk(v: &Value, seen: &mut Seen) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Object(env)) = o.get("env") {
                for (k, v) in env {
                    seen.env(k, &Word::json(v));
                }
            }
            if seen.mentions_vouch
                && let Some(file) = o.get("envFile").or_else(|| o.get("env_file"))
            {
                seen.why.push(format!(
                    "reads the server's environment from {}, which doctor cannot vet",
                    Word::json(file).text
                ));
            }
            let mut argv: Vec<Word> = match o.get("command") {
                Some(Value::String(s)) if s.trim().contains(char::is_whitespace) => {
                    split_words(&Word::json(&Value::String(s.clone())))
                }
                Some(Value::Array(a)) => a.iter().map(Word::json).collect(),
                Some(Value::Object(c)) => c.get("path").map(Word::json).into_iter().collect(),
                Some(other) => vec![Word::json(other)],
                None => Vec::new(),
            };
            if !argv.is_empty() {
                let args = o
                    .get("args")
                    .or_else(|| match o.get("command") {
                        Some(Value::Object(c)) => c.get("args"),
                        _ => None,
                    })
                    .and_then(Value::as_array);
                argv.extend(args.into_iter().flatten().map(Word::json));
                let before = seen.settings;
                seen.launch(&argv, 0);
                // Read through or not, a launch that mentions vouch is
                // vetted only when every word is literal and every
                // program is one read through here.
                if argv.iter().any(mentions_vouch)
                    && let Err(why) = vetted(&argv, 0)
                {
                    seen.why.push(format!(
                        "runs {:?}, which doctor cannot vet ({why}): it may start vouch under \
                         any name; write it as `vouch …` or `env NAME=value vouch …` with plain \
                         words",
                        argv.iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    ));
                }
                let names = |w: &Word| {
                    let t = w.text.to_ascii_lowercase();
                    ["vouch_agent", "--agent", "xdg_config_home"]
                        .iter()
                        .any(|n| t.contains(n))
                };
                if seen.settings == before && argv.iter().any(names) {
                    seen.why.push(format!(
                        "runs {:?} naming the agent or the config home in a way doctor cannot \
                         read through",
                        argv.iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    ));
                }
            }
            for child in o.values() {
                walk(child, seen);
            }
        }
        Value::Array(a) => {
            for child in a {
                walk(child, seen);
            }
        }
        _ => {}
    }
}

/// Programs that run the rest of their words as another program, after
/// options of their own (`nice -n 5 …`, `timeout 30 …`).
const PASS_THROUGH: &[&str] = &[
    "nice",
    "timeout",
    "stdbuf",
    "setsid",
    "ionice",
    "chrt",
    "taskset",
    "time",
    "caffeinate",
    "sudo",
    "doas",
    "flock",
];

/// Variables that decide which program or code runs (a `PATH` to a
/// `vouch` of the repository's, a shell's start-up file, a preloaded
/// library, a runtime's options).
const RUNS_CODE: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "NODE_OPTIONS",
    "PYTHONSTARTUP",
    "PERL5OPT",
    "RUBYOPT",
];

/// Shells whose `-c` script is read here.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"];

/// Whether a word names vouch anywhere (decoded, in any case).
fn mentions_vouch(w: &Word) -> bool {
    w.text.to_ascii_lowercase().contains("vouch")
}

/// Where a pass-through wrapper's program starts: the first word after it
/// that names a program read here.
fn runs_next(argv: &[Word]) -> Option<usize> {
    (1..argv.len()).find(|&k| {
        let p = program_name(&argv[k].text);
        p == "vouch"
            || p == "env"
            || p == "cmd"
            || SHELLS.contains(&p.as_str())
            || PASS_THROUGH.contains(&p.as_str())
            || matches!(p.as_str(), "exec" | "nohup" | "command")
    })
}

/// Whether doctor can tell everything a launch that mentions vouch would
/// do: every word literal, every program `vouch` or a wrapper read through
/// here (`env` with plain assignments, `exec`, a shell's `-c` script of
/// such commands, `cmd /c`, a pass-through like `nice`). Anything else —
/// a word a shell or the host expands, `eval`, `source`, an alias, an
/// interpreter's `-c`/`-e`, a shell reading a file — could start vouch
/// under any name. `Err` says why not.
fn vetted(argv: &[Word], depth: usize) -> Result<(), String> {
    if depth > 8 {
        return Err("wrappers nested too deep".into());
    }
    let Some(first) = argv.first() else {
        return Ok(());
    };
    let program = program_name(&first.text);
    // A shell's script is read below, its own expansions word by word; a
    // host's `${…}` in it could write any code into it.
    let shell = SHELLS.contains(&program.as_str());
    if let Some(w) = argv
        .iter()
        .find(|w| w.unknown && (!shell || w.text.contains("${")))
    {
        return Err(format!("{:?} is expanded only when it starts", w.text));
    }
    if assignment(first).is_some() {
        return vetted(&argv[1..], depth + 1);
    }
    match program.as_str() {
        "vouch" => Ok(()),
        "env" => match env_command(argv).next {
            EnvNext::Again(rest) => vetted(&rest, depth + 1),
            EnvNext::Program(at) => vetted(&argv[at..], depth + 1),
        },
        "exec" | "nohup" | "command" => vetted(&argv[1..], depth + 1),
        p if PASS_THROUGH.contains(&p) => match runs_next(argv) {
            Some(k) => vetted(&argv[k..], depth + 1),
            None => Err(format!("{p} runs a program not read here")),
        },
        p if SHELLS.contains(&p) => {
            let shell = shell_script(argv);
            if let Some(file) = shell.reads {
                return Err(format!("{p} reads {file}"));
            }
            match (shell.c, argv.get(shell.operand)) {
                (true, Some(script)) => script_vetted(script, false, depth),
                _ => Err(format!("{p} runs a script doctor cannot read")),
            }
        }
        "cmd" => match cmd_script(argv) {
            Some(script) => script_vetted(&script, true, depth),
            None => Err("cmd runs a script doctor cannot read".into()),
        },
        p if argv[1..].iter().any(mentions_vouch) => {
            Err(format!("{p} runs code or a program not read here"))
        }
        _ => Ok(()),
    }
}

/// [`vetted`] for each simple command of a `-c` script (or a `cmd /c`
/// line). A command that builds a name when it runs (`export
/// "$(…)_AGENT=…"`, `${V}AGENT=…`), runs code of its own (`eval`,
/// `source`, `.`, an alias or a function) or whose program is expanded
/// is not vetted; a literal command that does not run vouch (`cd x`) is.
fn script_vetted(script: &Word, cmd: bool, depth: usize) -> Result<(), String> {
    for mut words in shell_commands(&script.text) {
        for w in &mut words {
            if cmd && w.text.contains('%') {
                w.unknown = true;
            }
        }
        let mut i = 0;
        while let Some(w) = words.get(i) {
            let t = w.text.as_str();
            if matches!(
                t,
                "export" | "set" | "declare" | "typeset" | "local" | "readonly"
            ) || (i > 0 && t.starts_with('-') && !w.unknown)
            {
                i += 1;
            } else if assignment(w).is_some() {
                // A value expanded when it runs is unknown (reported by
                // name where it matters); which variable is not.
                i += 1;
            } else if w.unknown {
                return Err(format!("{:?} is expanded only when it starts", w.text));
            } else {
                break;
            }
        }
        let rest = &words[i..];
        let Some(first) = rest.first() else { continue };
        let program = program_name(&first.text);
        if matches!(
            program.as_str(),
            "eval" | "source" | "." | "alias" | "function" | "trap" | "builtin"
        ) || first.text.contains("()")
        {
            return Err(format!("{program} runs code doctor cannot read"));
        }
        if first.unknown {
            return Err(format!("{:?} is expanded only when it starts", first.text));
        }
        // A command that does not run vouch or a wrapper may expand its
        // arguments (`cd "$HOME/x"`); one that does may not.
        let wraps = program == "vouch"
            || program == "env"
            || program == "cmd"
            || SHELLS.contains(&program.as_str())
            || PASS_THROUGH.contains(&program.as_str())
            || matches!(program.as_str(), "exec" | "nohup" | "command");
        if wraps || rest.iter().any(mentions_vouch) {
            vetted(rest, depth + 1)?;
        }
    }
    Ok(())
}

/// JSON with comments (`//`, `/* */`) and trailing commas, as hosts
/// accept it (VS Code's `mcp.json` is JSONC), as plain JSON: comments
/// become spaces, a comma before `}` or `]` is dropped, a byte-order mark
/// is skipped. Strings are copied as they are.
fn jsonc_to_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.trim_start_matches('\u{feff}').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push(c);
                while let Some(c) = chars.next() {
                    out.push(c);
                    if c == '\\' {
                        if let Some(n) = chars.next() {
                            out.push(n);
                        }
                    } else if c == '"' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|c| *c != '\n') {
                    chars.next();
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '}' | ']' => {
                let kept = out.trim_end().len();
                if out[..kept].ends_with(',') {
                    out.truncate(kept - 1);
                }
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(text: &str) -> Vec<String> {
        concerns(text, &["alice".to_string()]).expect("parses")
    }

    fn server(inner: &str) -> String {
        format!(r#"{{"mcpServers": {{"kb": {{{inner}}}}}}}"#)
    }

    #[test]
    fn escaped_names_and_values_read_as_the_host_reads_them() {
        for inner in [
            r#""command": "vouch", "args": ["serve"], "env": {"VOUCH_\u0041GENT": "alice"}"#,
            r#""command": "vouch", "args": ["serve"], "env": {"VOUCH_AGENT": "\u0061lice"}"#,
            r#""command": "vouch", "args": ["serve", "--agent", "\u0061lice"]"#,
            r#""command": "vouch", "args": ["--agent=alice", "serve"]"#,
        ] {
            let w = why(&server(inner));
            assert!(w.iter().any(|w| w.contains("as alice")), "{inner}: {w:?}");
        }
        let w = why(&server(
            r#""command": "vouch", "env": {"XDG_CONFIG_\u0048OME": "./c"}"#,
        ));
        assert!(
            w.iter().any(|w| w.contains("sets XDG_CONFIG_HOME")),
            "{w:?}"
        );
    }

    #[test]
    fn wrappers_are_followed() {
        for inner in [
            r#""command": "env", "args": ["VOUCH_AGENT=alice", "vouch", "serve"]"#,
            r#""command": "/usr/bin/env", "args": ["-i", "PATH=/bin", "VOUCH_AGENT=alice", "vouch", "serve"]"#,
            r#""command": "env", "args": ["-S", "VOUCH_AGENT=alice vouch serve"]"#,
            r#""command": "sh", "args": ["-c", "VOUCH_AGENT=alice exec vouch serve"]"#,
            r#""command": "bash", "args": ["-lc", "export VOUCH_AGENT='alice'; vouch serve"]"#,
            r#""command": "sh", "args": ["-c", "cd x && vouch --agent \"alice\" serve"]"#,
            r#""command": "env", "args": ["sh", "-c", "env VOUCH_AGENT=alice vouch serve"]"#,
            r#""command": "cmd", "args": ["/c", "set VOUCH_AGENT=alice&& vouch serve"]"#,
            r#""command": "VOUCH_AGENT=alice vouch serve""#,
        ] {
            let w = why(&server(inner));
            assert!(w.iter().any(|w| w.contains("as alice")), "{inner}: {w:?}");
        }
    }

    #[test]
    fn names_the_host_or_a_shell_expands_are_unknown() {
        for inner in [
            r#""command": "vouch", "env": {"VOUCH_AGENT": "${USER}"}"#,
            r#""command": "vouch", "env": {"VOUCH_AGENT": "${env:USER}"}"#,
            r#""command": "vouch", "args": ["serve", "--agent", "${USER:-claude}"]"#,
            r#""command": "sh", "args": ["-c", "VOUCH_AGENT=$USER vouch serve"]"#,
            r#""command": "sh", "args": ["-c", "vouch serve --agent \"$(whoami)\""]"#,
            r#""command": "cmd", "args": ["/c", "set VOUCH_AGENT=%USERNAME%&& vouch serve"]"#,
        ] {
            let w = why(&server(inner));
            assert!(
                w.iter().any(|w| w.contains("decided only when it starts")),
                "{inner}: {w:?}"
            );
        }
        // Single quotes keep a shell from expanding (the host's own
        // `${…}` comes first, so a script with `$` is read as unknown).
        let words = &shell_commands("A='$x' \"$y\" z\\ q")[0];
        let unknown: Vec<bool> = words.iter().map(|w| w.unknown).collect();
        assert_eq!(unknown, [false, true, false]);
        assert_eq!(words[0].text, "A=$x");
        assert_eq!(words[2].text, "z q");
    }

    #[test]
    fn agents_that_are_not_reviewers_pass_and_unread_launches_are_named() {
        let ok = why(&server(
            r#"// vouch for this project
            "command": "vouch", "args": ["serve", "--agent", "claude",],
            /* the host's name */ "env": {"VOUCH_AGENT": "claude"},"#,
        ));
        assert!(ok.is_empty(), "{ok:?}");
        let w = why(&server(
            r#""command": "pwsh", "args": ["-Command", "$env:VOUCH_AGENT='alice'; vouch serve"]"#,
        ));
        assert!(w.iter().any(|w| w.contains("cannot read through")), "{w:?}");
        // Claude Code's settings: their env reaches every server.
        let w = why(r#"{"env": {"VOUCH_AGENT": "alice"}, "permissions": {}}"#);
        assert!(w.iter().any(|w| w.contains("as alice")), "{w:?}");
        assert!(concerns("{\"a\": ", &[]).is_err());
    }

    /// Round 5, D1b: launches that build the agent's name when they start
    /// (each really starts vouch as alice) are reported as not vetted; a
    /// plain launch, or one through wrappers with plain words, is read.
    #[test]
    fn launches_that_build_names_when_they_start_are_not_vetted() {
        for inner in [
            r#""command": "sh", "args": ["-c", "export \"$(echo VOUCH)_AGENT=alice\"; exec vouch serve"]"#,
            r#""command": "sh", "args": ["-c", "V=VOUCH_; export ${V}AGENT=alice; exec vouch serve"]"#,
            r#""command": "sh", "args": ["-c", "exec env \"$(printf 'VOUCH\\137AGENT=alice')\" vouch serve"]"#,
            r#""command": "python3", "args": ["-c", "import os;e=dict(os.environ);e['VOUCH_'+'AGENT']='alice';os.execvpe('vouch',['vouch','serve'],e)"]"#,
            r#""command": "sh", "args": ["-c", "eval \"$(echo ZXhwb3J0IFZPVUNIX0FHRU5UPWFsaWNlCg== | base64 -d)\"; exec vouch serve"]"#,
            r#""command": "bash", "args": ["-c", "export $'VOUCH\\x5fAGENT'=alice; exec vouch serve"]"#,
            r#""command": "bash", "args": ["-c", ". ./agent.env; exec vouch serve"]"#,
            r#""command": "bash", "args": ["start-vouch.sh"]"#,
            r#""command": "node", "args": ["-e", "require('child_process').spawn('vouch')"]"#,
            r#""command": "sh", "args": ["-c", "alias vouch='VOUCH_AGENT=alice vouch'; vouch serve"]"#,
            r#""command": "sh", "args": ["-c", "vouch ${ARGS}"]"#,
            r#""command": "vouch", "args": ["serve"], "env": {"PATH": "./bin:/usr/bin"}"#,
        ] {
            let w = why(&server(inner));
            assert!(w.iter().any(|w| w.contains("cannot vet")), "{inner}: {w:?}");
        }
        // Read through: the name is seen.
        for inner in [
            r#""command": "nice", "args": ["env", "VOUCH_AGENT=alice", "vouch", "serve"]"#,
            r#""command": "timeout", "args": ["0", "vouch", "serve", "--agent", "alice"]"#,
            r#""command": "sh", "args": ["-c", "exec vouch serve --ag\"\"ent alice"]"#,
            r#""command": "sh", "args": ["-c", "exec vouch serve --age\\nt alice"]"#,
        ] {
            let w = why(&server(inner));
            assert!(w.iter().any(|w| w.contains("as alice")), "{inner}: {w:?}");
        }
        // Plain launches pass.
        for inner in [
            r#""command": "vouch", "args": ["serve", "--agent", "claude"]"#,
            r#""command": "env", "args": ["VOUCH_AGENT=claude", "vouch", "serve"]"#,
            r#""command": "sh", "args": ["-c", "cd \"$HOME/proj\" && exec vouch serve"]"#,
            r#""command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]"#,
        ] {
            let w = why(&server(inner));
            assert!(w.is_empty(), "{inner}: {w:?}");
        }
        // VS Code's settings: `mcp.servers`.
        let w = why(
            r#"{"mcp": {"servers": {"kb": {"type": "stdio", "command": "vouch", "args": ["serve"], "env": {"VOUCH_AGENT": "alice"}}}}}"#,
        );
        assert!(w.iter().any(|w| w.contains("as alice")), "{w:?}");
        assert!(HOST_FILES.contains(&".vscode/settings.json"));
    }

    #[test]
    fn jsonc_comments_and_trailing_commas_only_outside_strings() {
        let v: Value = serde_json::from_str(&jsonc_to_json(
            "\u{feff}{\"a\": \"// not /* a comment\", // c\n \"b\": [1, 2, ], /* x */ \"c\": \"x,]\",}",
        ))
        .unwrap();
        assert_eq!(v["a"], "// not /* a comment");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
        assert_eq!(v["c"], "x,]");
    }
}
