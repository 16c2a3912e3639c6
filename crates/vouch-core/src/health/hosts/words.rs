//! How a shell, `env` and `cmd /c` read a launch's words, as far as
//! [`super::concerns`] needs: the words of a script, a shell's `-c`
//! operand, `env`'s options and assignments, a program's name.

use serde_json::Value;

/// A word as a program receives it, and whether something expands it
/// first (the host's `${VAR}`, a shell's `$VAR`), so its value is unknown
/// here.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Word {
    pub(super) text: String,
    pub(super) unknown: bool,
}

impl Word {
    pub(super) fn json(v: &Value) -> Word {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Word {
            unknown: text.contains('$'),
            text,
        }
    }
}

/// How a shell was started: whether `-c` is among its options (`-c`,
/// `-lc`, `-ec`), where its first operand (the script, with `-c`) is, and
/// a start-up file it is told to read (`--rcfile`).
pub(super) struct ShellStart {
    pub(super) c: bool,
    pub(super) operand: usize,
    pub(super) reads: Option<String>,
}

pub(super) fn shell_script(argv: &[Word]) -> ShellStart {
    let mut start = ShellStart {
        c: false,
        operand: 1,
        reads: None,
    };
    while let Some(w) = argv.get(start.operand) {
        let t = w.text.as_str();
        if t == "--" {
            start.operand += 1;
            break;
        }
        if !(t.starts_with('-') || t.starts_with('+')) || t.len() < 2 {
            break;
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            if t.starts_with("--") {
                start.reads = Some(t.to_string());
            }
            start.operand += 2;
            continue;
        }
        if !t.starts_with("--") && t.contains('c') {
            start.c = true;
        }
        start.operand += 1;
    }
    start
}

/// The line `cmd /c` (or `/k`) runs, as one word.
pub(super) fn cmd_script(argv: &[Word]) -> Option<Word> {
    let at = argv
        .iter()
        .position(|w| w.text.eq_ignore_ascii_case("/c") || w.text.eq_ignore_ascii_case("/k"))?;
    let rest = &argv[at + 1..];
    Some(Word {
        text: rest
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        unknown: rest.iter().any(|w| w.unknown),
    })
}

/// A program's name as the system finds it: the last part of its path,
/// in lower case, without `.exe`.
pub(super) fn program_name(path: &str) -> String {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let base = base.to_ascii_lowercase();
    base.strip_suffix(".exe").unwrap_or(&base).to_string()
}

/// What `env …` (`argv[0]` is the `env`) does before it runs a program:
/// the assignments it makes, then what it runs.
pub(super) struct EnvCommand {
    pub(super) assignments: Vec<(String, Word)>,
    pub(super) next: EnvNext,
}

/// What an `env` command line runs.
pub(super) enum EnvNext {
    /// The program whose words start at this index of `argv`.
    Program(usize),
    /// `-S`/`--split-string`: its one word split into `env`'s own
    /// arguments, a new `env` command line to read instead.
    Again(Vec<Word>),
}

/// `env`'s options and assignments, read once for both [`Seen::launch`]
/// (which keeps the assignments) and [`vetted`] (which checks what runs).
pub(super) fn env_command(argv: &[Word]) -> EnvCommand {
    let mut assignments = Vec::new();
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if matches!(t, "-u" | "--unset" | "-C" | "--chdir") {
            i += 2;
        } else if t == "-S" || t == "--split-string" || t.starts_with("-S") {
            // `env -S "A=b prog args"` or `-S"…"`: one word split into
            // env's own arguments.
            let (joined, skip) = match t.strip_prefix("-S").filter(|j| !j.is_empty()) {
                Some(joined) => (
                    Some(Word {
                        text: joined.to_string(),
                        unknown: w.unknown,
                    }),
                    1,
                ),
                None => (argv.get(i + 1).cloned(), 2),
            };
            let mut rest = vec![argv[0].clone()];
            rest.extend(joined.as_ref().map(split_words).unwrap_or_default());
            rest.extend(argv.iter().skip(i + skip).cloned());
            return EnvCommand {
                assignments,
                next: EnvNext::Again(rest),
            };
        } else if t.starts_with('-') {
            i += 1;
        } else if let Some(assigned) = assignment(w) {
            assignments.push(assigned);
            i += 1;
        } else {
            break;
        }
    }
    EnvCommand {
        assignments,
        next: EnvNext::Program(i.min(argv.len())),
    }
}

/// `NAME=value`, NAME a variable's name.
pub(super) fn assignment(w: &Word) -> Option<(String, Word)> {
    let (name, value) = w.text.split_once('=')?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| {
        (
            name.to_string(),
            Word {
                text: value.to_string(),
                unknown: w.unknown || value.contains('$'),
            },
        )
    })
}

/// The word being read, begun if none is.
pub(super) fn start(word: &mut Option<Word>) -> &mut Word {
    word.get_or_insert_with(|| Word {
        text: String::new(),
        unknown: false,
    })
}

/// One word split as a shell splits a simple command.
pub(super) fn split_words(w: &Word) -> Vec<Word> {
    let mut out: Vec<Word> = shell_commands(&w.text).into_iter().flatten().collect();
    for x in &mut out {
        x.unknown |= w.unknown;
    }
    out
}

/// A shell script's simple commands, each as its words after quote
/// removal: `;`, `&`, `|`, `(`, `)` and line ends separate commands; a
/// word with an expansion (`$`, a backquote) outside single quotes is
/// unknown.
pub(super) fn shell_commands(script: &str) -> Vec<Vec<Word>> {
    let mut commands = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut word: Option<Word> = None;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' => words.extend(word.take()),
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                words.extend(word.take());
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '#' if word.is_none() => {
                while chars.peek().is_some_and(|c| *c != '\n') {
                    chars.next();
                }
            }
            '\'' => {
                let w = start(&mut word);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.text.push(c);
                }
            }
            '"' => {
                let w = start(&mut word);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(n @ ('$' | '`' | '"' | '\\')) => w.text.push(n),
                            Some('\n') => {}
                            Some(n) => {
                                w.text.push('\\');
                                w.text.push(n);
                            }
                            None => {}
                        },
                        '$' | '`' => {
                            w.unknown = true;
                            w.text.push(c);
                        }
                        c => w.text.push(c),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => start(&mut word).text.push(n),
            },
            '$' | '`' => {
                let w = start(&mut word);
                w.unknown = true;
                w.text.push(c);
            }
            c => start(&mut word).text.push(c),
        }
    }
    words.extend(word.take());
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}
