//! The secret scan at the door (docs/secrets.md). Knowledge is committed to
//! git and shared with everyone who clones the project, so a source, a
//! quote, a claim's text, a page's body (and the other text a proposal
//! stores) is scanned before anything is written: private keys, cloud and
//! vendor tokens, JWTs, `Bearer`/`Basic` credentials, passwords in
//! connection strings, and literal values assigned to a credential's name.
//!
//! Precision over recall: a rule fires on a specific shape only
//! ([`rules`]), so ordinary hashes, ids, UUIDs and base64 pass. An agent's
//! call holding a secret is refused, naming the field, line, column and
//! kind — never the secret's bytes. A person may store it masked (each
//! secret replaced by `[REDACTED:<kind>]` before the content is hashed, so
//! a source's id is the hash of what is stored) or, explicitly, as is.

mod rules;

use crate::error::{Error, ErrorKind, Result};
use crate::kb::Caller;
use crate::params::SecretsPolicy;
use serde::Serialize;
use serde_json::{Value, json};

/// One secret found: its kind and where it is. Never its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's stable snake_case name (`aws_access_key_id`).
    pub kind: &'static str,
    /// Byte offset where the secret starts.
    #[serde(skip)]
    pub start: usize,
    /// Byte offset just past its end.
    #[serde(skip)]
    pub end: usize,
    /// 1-based line of its first character.
    pub line: usize,
    /// 1-based column (in characters) of its first character.
    pub column: usize,
    /// 1-based line of its last character.
    pub end_line: usize,
    /// 1-based column of its last character.
    pub end_column: usize,
}

impl Finding {
    /// `line 3, columns 9-28` (or `lines 3-30` for a block), for messages.
    pub fn place(&self) -> String {
        if self.line == self.end_line {
            format!(
                "line {}, columns {}-{}",
                self.line, self.column, self.end_column
            )
        } else {
            format!("lines {}-{}", self.line, self.end_line)
        }
    }
}

/// Every secret in `bytes`, in order of position. Findings never overlap:
/// where two rules match the same bytes, the more specific rule's finding
/// is kept (`password = "ghp_…"` is a `github_token`).
pub fn scan(bytes: &[u8]) -> Vec<Finding> {
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    for (rule, regex) in rules::compiled() {
        for caps in regex.captures_iter(bytes) {
            let Some(secret) = rule.secret.iter().find_map(|g| caps.get(*g)) else {
                continue;
            };
            let (start, end) = (secret.start(), secret.end());
            let before = start.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(end).copied();
            if before.is_some_and(rule.continues) || after.is_some_and(rule.continues) {
                continue;
            }
            if start == end || !(rule.holds)(&caps) {
                continue;
            }
            if spans.iter().any(|(s, e, _)| start < *e && *s < end) {
                continue;
            }
            spans.push((start, end, rule.kind));
        }
    }
    spans.sort_unstable();
    spans
        .into_iter()
        .map(|(start, end, kind)| {
            let (line, column) = position(bytes, start);
            let (end_line, end_column) = position(bytes, end.saturating_sub(1).max(start));
            Finding {
                kind,
                start,
                end,
                line,
                column,
                end_line,
                end_column,
            }
        })
        .collect()
}

/// 1-based line and column (in characters) of byte `at`.
fn position(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    let line = 1 + memchr::memchr_iter(b'\n', before).count();
    let column = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, column)
}

/// What replaces a secret of `kind` when it is masked.
pub fn mask_of(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// `bytes` with each finding's bytes replaced by [`mask_of`] its kind.
pub fn mask(bytes: &[u8], findings: &[Finding]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for f in findings {
        out.extend_from_slice(&bytes[at..f.start]);
        out.extend_from_slice(mask_of(f.kind).as_bytes());
        at = f.end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Every kind of secret the scan names, in the rule table's order.
pub fn kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for (rule, _) in rules::compiled() {
        if !kinds.contains(&rule.kind) {
            kinds.push(rule.kind);
        }
    }
    kinds
}

/// Where text enters the knowledge base, for the words of a refusal: the
/// command a person runs to store it anyway, and whether it can be masked
/// (a quote must be the source's own bytes: it cannot).
#[derive(Debug, Clone, Copy)]
pub struct Door {
    /// The command line's command (`vouch source add`).
    pub command: &'static str,
    /// Whether `--mask-secrets` applies.
    pub maskable: bool,
}

/// What was found in one field of a call (`content`, `text`, `body`,
/// `evidence[0].quote`).
#[derive(Debug, Clone)]
pub struct FieldFindings {
    /// The param it is in, as messages name it.
    pub field: String,
    /// Whether this field may be masked (quotes may not).
    pub maskable: bool,
    /// What the scan found there.
    pub findings: Vec<Finding>,
}

/// What a call may do with the secrets found in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    /// Nothing was found: store it.
    Clean,
    /// A person asked for it masked: store each field masked.
    Masked,
    /// A person asked for it as is: store it unchanged.
    AsIs,
}

/// Refuse `mask` and `allow` from an agent before anything is scanned:
/// only a person decides that a secret is stored.
pub fn check_policy(caller: &Caller, policy: SecretsPolicy) -> Result<()> {
    if caller.is_agent() && policy != SecretsPolicy::Refuse {
        return Err(Error::denied(format!(
            "secrets: {:?} is a person's choice (the command line's --mask-secrets or \
             --allow-secrets); a secret in what an agent sends is refused, never stored",
            policy.as_str()
        )));
    }
    Ok(())
}

/// Decide over what the scan found in a call's fields: store it (nothing
/// found, or a person's `mask` or `allow`), or refuse it naming each field,
/// line, column and kind, and how to proceed. The secret's bytes are never
/// in the message.
pub fn admit(
    caller: &Caller,
    policy: SecretsPolicy,
    door: Door,
    found: &[FieldFindings],
) -> Result<Admitted> {
    check_policy(caller, policy)?;
    let found: Vec<&FieldFindings> = found.iter().filter(|f| !f.findings.is_empty()).collect();
    if found.is_empty() {
        return Ok(Admitted::Clean);
    }
    let unmaskable: Vec<&&FieldFindings> = found.iter().filter(|f| !f.maskable).collect();
    match policy {
        SecretsPolicy::Allow => return Ok(Admitted::AsIs),
        SecretsPolicy::Mask if unmaskable.is_empty() => return Ok(Admitted::Masked),
        SecretsPolicy::Mask => {
            return Err(Error::new(
                ErrorKind::HoldsSecret,
                format!(
                    "{}. A quote must be the source's own bytes, so it cannot be masked: \
                     quote around the secret, or run with --allow-secrets to store it as is",
                    describe(&unmaskable.into_iter().copied().collect::<Vec<_>>())
                ),
            ));
        }
        SecretsPolicy::Refuse => {}
    }
    let how = if caller.is_agent() {
        let person = if door.maskable {
            format!(
                "; or ask a person to store it masked (`{} --mask-secrets`)",
                door.command
            )
        } else {
            "; quote around the secret".to_string()
        };
        format!(
            "Remove it — refer to the secret by name instead (an environment variable, a \
             vault path) — and call again{person}"
        )
    } else if door.maskable {
        "Remove it and run again, or run again with --mask-secrets to store it with each \
         secret replaced by [REDACTED:<kind>] (params: `\"secrets\": \"mask\"`), or with \
         --allow-secrets to store it as is (`\"secrets\": \"allow\"`): it is then committed \
         with the knowledge base and shared with everyone who clones it"
            .to_string()
    } else {
        "Quote around the secret, or run again with --allow-secrets (params: `\"secrets\": \
         \"allow\"`) to store it as is: it is then committed with the knowledge base and \
         shared with everyone who clones it"
            .to_string()
    };
    let count: usize = found.iter().map(|f| f.findings.len()).sum();
    let looks = if count == 1 {
        "That looks like a secret"
    } else {
        "Those look like secrets"
    };
    Err(Error::new(
        ErrorKind::HoldsSecret,
        format!(
            "{}. {looks} (the bytes are not repeated here), and nothing was stored: \
             knowledge is committed to git and shared. {how}. docs/secrets.md lists what is \
             scanned",
            describe(&found)
        ),
    ))
}

/// `content: line 2, columns 9-28: aws_access_key_id; ...` (at most eight
/// findings, then how many more).
fn describe(found: &[&FieldFindings]) -> String {
    const SHOWN: usize = 8;
    let all: Vec<String> = found
        .iter()
        .flat_map(|f| {
            f.findings
                .iter()
                .map(move |x| format!("{}: {}: {}", f.field, x.place(), x.kind))
        })
        .collect();
    let mut text = all
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if all.len() > SHOWN {
        text.push_str(&format!("; and {} more", all.len() - SHOWN));
    }
    text
}

/// What an audit event records of secrets a person let through: the
/// decision and, per field, each finding's kind and place. `None` when
/// nothing was found.
pub fn recorded(admitted: Admitted, found: &[FieldFindings]) -> Option<Value> {
    let decision = match admitted {
        Admitted::Clean => return None,
        Admitted::Masked => "masked",
        Admitted::AsIs => "allowed",
    };
    let findings: Vec<Value> = found
        .iter()
        .flat_map(|f| {
            f.findings
                .iter()
                .map(move |x| json!({"field": f.field, "kind": x.kind, "line": x.line}))
        })
        .collect();
    Some(json!({"decision": decision, "findings": findings}))
}

/// [`scan`] `text`, and after [`admit`] mask it in place if asked.
pub fn scan_field(field: impl Into<String>, maskable: bool, text: &str) -> FieldFindings {
    FieldFindings {
        field: field.into(),
        maskable,
        findings: scan(text.as_bytes()),
    }
}

/// `text` with the findings of its [`FieldFindings`] masked.
pub fn masked_text(text: &str, found: &FieldFindings) -> String {
    if found.findings.is_empty() {
        return text.to_string();
    }
    // Findings start and end on ASCII bytes, so the result is UTF-8.
    String::from_utf8_lossy(&mask(text.as_bytes(), &found.findings)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::Transport;

    fn key_id() -> String {
        // Split so that no scanner reads this file as holding a key.
        ["AKIA", "IOSFODNN7", "EXAMPLE"].concat()
    }

    #[test]
    fn a_finding_names_its_line_column_and_kind() {
        let text = format!("first line\nkey = {}\n", key_id());
        let found = scan(text.as_bytes());
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (f.kind, f.line, f.column, f.end_column),
            ("aws_access_key_id", 2, 7, 26)
        );
        assert_eq!(&text[f.start..f.end], key_id());
        assert_eq!(f.place(), "line 2, columns 7-26");
    }

    #[test]
    fn masking_replaces_only_the_secrets_bytes_and_leaves_nothing_to_find() {
        let text = format!("id {} and password = \"hunter22\" end", key_id());
        let found = scan(text.as_bytes());
        let masked = String::from_utf8(mask(text.as_bytes(), &found)).unwrap();
        assert_eq!(
            masked,
            "id [REDACTED:aws_access_key_id] and password = \"[REDACTED:password_assignment]\" end"
        );
        assert!(scan(masked.as_bytes()).is_empty(), "{masked}");
    }

    #[test]
    fn an_agent_is_refused_without_the_secret_being_echoed() {
        let agent = Caller::new("bot", Transport::Mcp);
        let text = format!("aws key {}", key_id());
        let found = [scan_field("content", true, &text)];
        let door = Door {
            command: "vouch source add",
            maskable: true,
        };
        let e = admit(&agent, SecretsPolicy::Refuse, door, &found).unwrap_err();
        assert_eq!(e.kind, ErrorKind::HoldsSecret);
        assert!(
            e.message
                .contains("content: line 1, columns 9-28: aws_access_key_id"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("vouch source add --mask-secrets"),
            "{}",
            e.message
        );
        assert!(!e.message.contains(&key_id()), "{}", e.message);
        for policy in [SecretsPolicy::Mask, SecretsPolicy::Allow] {
            let e = admit(&agent, policy, door, &found).unwrap_err();
            assert_eq!(e.kind, ErrorKind::GateDenied, "{policy:?}");
        }
    }

    #[test]
    fn a_person_chooses_masked_or_as_is_and_a_quote_cannot_be_masked() {
        let person = Caller::new("alice", Transport::Cli);
        let text = format!("aws key {}", key_id());
        let door = Door {
            command: "vouch source add",
            maskable: true,
        };
        let found = [scan_field("content", true, &text)];
        let e = admit(&person, SecretsPolicy::Refuse, door, &found).unwrap_err();
        assert!(e.message.contains("--mask-secrets") && e.message.contains("--allow-secrets"));
        assert_eq!(
            admit(&person, SecretsPolicy::Mask, door, &found),
            Ok(Admitted::Masked)
        );
        assert_eq!(
            admit(&person, SecretsPolicy::Allow, door, &found),
            Ok(Admitted::AsIs)
        );
        let quote = [scan_field("evidence[0].quote", false, &text)];
        let e = admit(&person, SecretsPolicy::Mask, door, &quote).unwrap_err();
        assert!(e.message.contains("cannot be masked"), "{}", e.message);
        let clean = [scan_field("content", true, "nothing here")];
        assert_eq!(
            admit(&person, SecretsPolicy::Refuse, door, &clean),
            Ok(Admitted::Clean)
        );
    }
}
