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

/// A run of words of a text, and whether it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    /// The words, each with the whitespace that follows it.
    pub text: String,
    /// Whether they were removed (in the old text) or added (in the new).
    pub changed: bool,
}

/// What changed from `old` to `new`, word by word, for a review surface to
/// mark beside each other (a proposal that supersedes a claim): the old
/// text's runs, with the removed words changed, and the new text's, with
/// the added words changed. A longest common subsequence of words; texts
/// of more than 250,000 word pairs come back whole, unmarked.
pub fn diff_words(old: &str, new: &str) -> (Vec<Words>, Vec<Words>) {
    let a: Vec<&str> = old.split_inclusive(char::is_whitespace).collect();
    let b: Vec<&str> = new.split_inclusive(char::is_whitespace).collect();
    let whole = |t: &str| {
        vec![Words {
            text: t.to_string(),
            changed: false,
        }]
    };
    if a.len().saturating_mul(b.len()) > 250_000 {
        return (whole(old), whole(new));
    }
    let same = |x: &str, y: &str| x.trim_end() == y.trim_end();
    // lcs[i][j]: the longest common run of words of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if same(a[i], b[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // A changed word's trailing space is not part of the mark.
    fn push(out: &mut Vec<Words>, t: &str, changed: bool) {
        let (word, space) = if changed {
            let w = t.trim_end();
            (w, &t[w.len()..])
        } else {
            (t, "")
        };
        for (text, changed) in [(word, changed), (space, false)] {
            if text.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.changed == changed && !changed => last.text.push_str(text),
                _ => out.push(Words {
                    text: text.to_string(),
                    changed,
                }),
            }
        }
    }
    let (mut was, mut now) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && same(a[i], b[j]) {
            push(&mut was, a[i], false);
            push(&mut now, b[j], false);
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            push(&mut now, b[j], true);
            j += 1;
        } else {
            push(&mut was, a[i], true);
            i += 1;
        }
    }
    (was, now)
}

#[cfg(test)]
mod diff_tests {
    use super::*;

    fn shown(runs: &[Words]) -> String {
        runs.iter()
            .map(|w| {
                if w.changed {
                    format!("[{}]", w.text)
                } else {
                    w.text.clone()
                }
            })
            .collect()
    }

    #[test]
    fn changed_words_are_marked_on_their_side_only() {
        let (was, now) = diff_words(
            "Restores are tested quarterly by ops",
            "Restores are tested monthly by ops and QA",
        );
        assert_eq!(shown(&was), "Restores are tested [quarterly] by ops");
        assert_eq!(
            shown(&now),
            "Restores are tested [monthly] by ops [and] [QA]"
        );
        let (was, now) = diff_words("same text", "same text");
        assert!(was.iter().chain(&now).all(|w| !w.changed));
        assert_eq!(shown(&now), "same text");
    }
}
