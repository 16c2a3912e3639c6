//! Writing for a terminal: results (through [`crate::human::Human`]),
//! JSON, warnings, and the escaping every human-facing text passes through.

use crate::human::Human;
use serde_json::Value;
use vouch_core::ids::steers_terminal;

/// Write to stdout. A reader that went away (`vouch search x | head -1`)
/// is not an error: exit 0 quietly, as ripgrep does.
pub(crate) fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let res = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Err(e) = res {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing output: {e}");
        std::process::exit(1);
    }
}

/// Print warnings to stderr, escaped. Runs of the same kind (a 1.x KB with
/// thousands of files this vouch cannot read) are summed up after the
/// first few, so a command's output stays readable; `vouch doctor` lists
/// every one.
pub(crate) fn print_warnings(warnings: Vec<String>) {
    const SHOWN: usize = 5;
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    let mut order: Vec<String> = Vec::new();
    for w in warnings {
        // The kind: the text before the file-specific part.
        let kind = w
            .split_once(": ")
            .map(|(k, _)| k.to_string())
            .unwrap_or_else(|| w.clone());
        let n = seen.entry(kind.clone()).or_insert(0);
        *n += 1;
        if *n <= SHOWN {
            eprintln!("warning: {}", terminal_safe(&w));
        } else if *n == SHOWN + 1 {
            order.push(kind);
        }
    }
    for kind in order {
        eprintln!(
            "warning: … and {} more like {:?} (`vouch doctor` lists them all)",
            seen[&kind] - SHOWN,
            terminal_safe(&kind)
        );
    }
}

/// Pretty JSON and a newline. serde_json leaves C1 controls and bidi
/// overrides raw; they are written as `\uXXXX` escapes, which decode to the
/// same string.
pub(crate) fn emit_json(v: &Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    emit(&(json_safe(&text).into_owned() + "\n"));
}

/// `text` with every character that could hide or reorder what a person
/// reads written as a visible escape: `\uXXXX`, or `\u{XXXXX}` beyond
/// U+FFFF. Every human-facing output passes through here: proposals and
/// sources come from agents and from cloned repositories.
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c, out| {
        if (c as u32) > 0xffff {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push_str(&format!("\\u{:04x}", c as u32));
        }
    })
}

/// [`terminal_safe`] for JSON text: the same characters escaped as JSON
/// escapes them (beyond U+FFFF, as a UTF-16 pair), so `--json` output
/// still decodes to the same string.
pub(crate) fn json_safe(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c, out| {
        for unit in c.encode_utf16(&mut [0u16; 2]) {
            out.push_str(&format!("\\u{unit:04x}"));
        }
    })
}

fn escaped(text: &str, escape: impl Fn(char, &mut String)) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(steers_terminal) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if steers_terminal(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

use crate::human::{HIGHLIGHT_END, HIGHLIGHT_START};

/// `--color`: when the terminal shows highlights in colour.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ColorChoice {
    /// When stdout is a terminal and NO_COLOR is not set.
    #[default]
    Auto,
    Always,
    Never,
}

static COLOR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Decide once, at start, whether highlights are painted.
pub(crate) fn set_color(choice: ColorChoice) {
    use std::io::IsTerminal;
    let on = match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let _ = COLOR.set(on);
}

/// `text` with its highlight marks as bold yellow, or removed.
pub(crate) fn paint(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains([HIGHLIGHT_START, HIGHLIGHT_END]) {
        return std::borrow::Cow::Borrowed(text);
    }
    let on = *COLOR.get().unwrap_or(&false);
    let (start, end) = if on {
        ("\x1b[1;33m", "\x1b[0m")
    } else {
        ("", "")
    };
    std::borrow::Cow::Owned(
        text.replace(HIGHLIGHT_START, start)
            .replace(HIGHLIGHT_END, end),
    )
}

/// Print a result: as the wire carries it with `--json`, else as a person
/// reads it (escaped, highlights painted, ending in a newline).
pub(crate) fn print<T: Human>(json: bool, result: &T) {
    if json {
        emit_json(&serde_json::to_value(result).unwrap_or_default());
        return;
    }
    let text = result.human();
    let text = terminal_safe(&text);
    let text = paint(&text);
    if text.ends_with('\n') {
        emit(&text);
    } else {
        emit(&(text.into_owned() + "\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_escapes_what_steers_a_terminal_and_keeps_the_rest() {
        for (text, shown) in [
            ("plain\ttext\nnext é 中", "plain\ttext\nnext é 中"),
            (
                "shown\u{1b}[8mhidden\u{1b}[0m",
                "shown\\u001b[8mhidden\\u001b[0m",
            ),
            ("a\rb\u{9b}c\u{7f}", "a\\u000db\\u009bc\\u007f"),
            ("x\u{202e}y\u{2066}", "x\\u202ey\\u2066"),
            ("x\u{e0041}y", "x\\u{e0041}y"),
        ] {
            assert_eq!(terminal_safe(text), shown, "{text:?}");
        }
        // JSON keeps its meaning: the escape decodes to the same string.
        let v = serde_json::json!({"t": "a\u{9b}b\u{202e}c\u{e0020}d\u{e0f41}"});
        let safe = json_safe(&serde_json::to_string(&v).unwrap()).into_owned();
        assert!(safe.is_ascii(), "{safe}");
        assert_eq!(serde_json::from_str::<Value>(&safe).unwrap(), v);
    }
}
