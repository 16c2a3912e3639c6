//! A fast reader for the plainest YAML: the shape vouch and vouch 1.x
//! write a record in (keys, plain or quoted scalars, `[]` and `{}`, a list
//! of scalars, one nested mapping of scalars). serde-saphyr reads a 1.x
//! claim in 40–70 µs, a third to a half of a million-claim rebuild and
//! 50 parses in every context pack; with this reader first, the rebuild's
//! user CPU fell from 104–142 s to 75–79 s (docs/benchmarks.md).
//!
//! It answers only where it is sure to agree with serde-saphyr, and
//! `None` for anything else — a comment, an anchor, a tag, an escape,
//! a tab, an empty line, a duplicate key, a scalar whose type a schema
//! might read another way (`yes`, `0x1f`, `1e3`, `.inf`, `Null`, `~`) —
//! which the caller then reads with serde-saphyr, errors and all. Its
//! agreement is tested against serde-saphyr ([`tests`]).

use serde_json::{Map, Number, Value};

/// `text` as a JSON value, when it is in the plain shape; `None` when
/// serde-saphyr must read it.
pub(crate) fn read(text: &str) -> Option<Value> {
    if text.bytes().any(|b| b == b'\t' || b == b'\r' || b == b'#')
        || text
            .chars()
            .any(|c| matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}'))
    {
        return None;
    }
    let mut lines = Lines {
        lines: text
            .strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .collect(),
        at: 0,
    };
    if lines.lines.iter().any(|l| l.is_empty() || l.ends_with(' ')) {
        return None;
    }
    let top = lines.mapping(0, true)?;
    (lines.at == lines.lines.len()).then_some(Value::Object(top))
}

struct Lines<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

impl<'a> Lines<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    /// A block mapping whose keys sit at `at` spaces; `nested` allows one
    /// more level (a mapping or a list under a key).
    fn mapping(&mut self, at: usize, nested: bool) -> Option<Map<String, Value>> {
        let mut map = Map::new();
        while let Some(line) = self.peek() {
            let ind = indent(line);
            if ind < at {
                break;
            }
            if ind > at {
                return None;
            }
            let (key, rest) = line[at..].split_once(':')?;
            if !is_key(key) || map.contains_key(key) {
                return None;
            }
            self.at += 1;
            let value = if rest.is_empty() {
                self.block(at, nested)?
            } else {
                let rest = rest.strip_prefix(' ')?;
                self.scalar_from(rest, at)?
            };
            map.insert(key.to_string(), value);
        }
        Some(map)
    }

    /// What follows `key:` on the lines after it: a list, a mapping, or
    /// nothing (null).
    fn block(&mut self, at: usize, nested: bool) -> Option<Value> {
        let Some(next) = self.peek() else {
            return Some(Value::Null);
        };
        let ind = indent(next);
        if next[ind..].starts_with('-') {
            return (nested && (ind == at || ind == at + 2))
                .then(|| self.list(ind))
                .flatten();
        }
        if ind <= at {
            return Some(Value::Null);
        }
        if nested && ind == at + 2 {
            return Some(Value::Object(self.mapping(ind, false)?));
        }
        None
    }

    /// A list of scalars, each `- value` on one line, at `at` spaces.
    fn list(&mut self, at: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if indent(line) != at || !line[at..].starts_with('-') {
                break;
            }
            let item = line[at..].strip_prefix("- ")?;
            self.at += 1;
            // A continued item, or anything under it, is saphyr's to read.
            if self.peek().is_some_and(|l| indent(l) > at) {
                return None;
            }
            items.push(scalar(item)?);
        }
        Some(Value::Array(items))
    }

    /// A scalar that starts on the key's line (`key: value`), continued on
    /// the more indented lines after it when it is plain.
    fn scalar_from(&mut self, first: &str, key_at: usize) -> Option<Value> {
        let mut continued: Option<String> = None;
        while let Some(line) = self.peek() {
            if indent(line) <= key_at {
                break;
            }
            let part = line.trim_start_matches(' ');
            if !plain_safe(part) {
                return None;
            }
            let text = continued.get_or_insert_with(|| first.to_string());
            text.push(' ');
            text.push_str(part);
            self.at += 1;
        }
        match continued {
            // Only a plain string folds; quoted or typed ones are saphyr's.
            Some(text) => (plain_safe(first) && starts_as_text(first) && !may_be_number(first))
                .then_some(Value::String(text)),
            None => scalar(first),
        }
    }
}

/// A key as records have them: ASCII letters, digits and `_`.
fn is_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// One scalar on one line.
fn scalar(s: &str) -> Option<Value> {
    match s {
        "[]" => return Some(Value::Array(Vec::new())),
        "{}" => return Some(Value::Object(Map::new())),
        _ => {}
    }
    if let Some(inner) = s.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        // Every quote inside is doubled ('' stands for ').
        if inner.replace("''", "").contains('\'') || inner.chars().any(char::is_control) {
            return None;
        }
        return Some(Value::String(inner.replace("''", "'")));
    }
    if let Some(inner) = s.strip_prefix('"') {
        // Without a backslash, a double-quoted scalar on one line is its
        // text as written.
        let inner = inner.strip_suffix('"')?;
        if inner.contains(['"', '\\']) || inner.chars().any(char::is_control) {
            return None;
        }
        return Some(Value::String(inner.to_string()));
    }
    if !plain_safe(s) {
        return None;
    }
    match s {
        "null" => return Some(Value::Null),
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    if may_be_number(s) {
        return number(s);
    }
    if !starts_as_text(s) || special_word(s) {
        return None;
    }
    Some(Value::String(s.to_string()))
}

/// Text a plain scalar may hold here: printable, no `: ` (a key), no
/// trailing `:`, and no indicator or quote at its start.
fn plain_safe(s: &str) -> bool {
    !s.is_empty()
        && !s.contains(": ")
        && !s.ends_with(':')
        && s.chars().all(|c| !c.is_control())
        && !s.starts_with([
            '-', '?', ':', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '%', '@', '`', '.',
            '+', '~', '=', '<', '\\', '\'', '"',
        ])
}

/// A plain string starts with a letter, a digit or `/`.
fn starts_as_text(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphanumeric() || c == '/' || c == '_')
}

/// Words that some YAML schema reads as a boolean or null: left to saphyr.
fn special_word(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
    ];
    s.len() <= 5 && WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

/// Whether a schema might read `s` as a number (generously: digits, signs,
/// points, exponents, `_`, the `:` of base 60, `0x`/`0o`/`0b`).
fn may_be_number(s: &str) -> bool {
    let body = s.trim_start_matches(['-', '+']);
    let radix = ["0x", "0o", "0b"].iter().any(|p| {
        body.strip_prefix(p)
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_'))
    });
    radix
        || body.bytes().any(|b| b.is_ascii_digit())
            && body.bytes().all(|b| {
                b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'e' | b'E' | b'-' | b'+' | b':')
            })
}

/// A number written the one way every schema reads alike: `-?(0|[1-9]\d*)`
/// with an optional `.\d+`; any other form is saphyr's.
fn number(s: &str) -> Option<Value> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let whole = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if !whole(int) || (int.len() > 1 && int.starts_with('0')) || frac.is_some_and(|f| !whole(f)) {
        return None;
    }
    match frac {
        None => s.parse::<i64>().ok().map(|n| Value::Number(n.into())),
        Some(_) => {
            let f: f64 = s.parse().ok()?;
            Number::from_f64(f).map(Value::Number)
        }
    }
}

#[cfg(test)]
mod tests;
