//! The rule table of the secret scan: what each kind of secret looks like,
//! and the checks that keep look-alikes (hashes, ids, placeholders, code
//! that reads a secret from elsewhere) from being taken for one. Precision
//! comes first: a rule names a secret only when its shape is specific (a
//! vendor's prefix, a PEM block with a body, a JWT whose header is JSON
//! with `alg`) or when a credential's name is assigned a literal value that
//! is neither a placeholder nor a reference.

use regex::bytes::{Captures, Regex};
use std::sync::LazyLock;

/// One kind of secret: the pattern that finds it and the checks a match
/// must pass.
pub(super) struct Rule {
    /// The stable snake_case name findings carry (`aws_access_key_id`).
    pub(super) kind: &'static str,
    /// The capture groups that may hold the secret itself, the first that
    /// took part in the match (0: the whole match). Only its bytes are
    /// reported and masked: `password = "…"` keeps its name and quotes.
    pub(super) secret: &'static [usize],
    /// Bytes that continue a token of this kind: a match with one right
    /// before or after it is a piece of a longer string (a hash, an
    /// identifier), not the secret.
    pub(super) continues: fn(u8) -> bool,
    /// Whether a match really is a secret (its value is not a placeholder,
    /// its header decodes, ...).
    pub(super) holds: fn(&Captures) -> bool,
    regex: &'static str,
}

/// Each rule with its pattern, compiled once, in [`RULES`]' order.
pub(super) fn compiled() -> impl Iterator<Item = (&'static Rule, &'static Regex)> {
    static COMPILED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        RULES
            .iter()
            .map(|r| Regex::new(r.regex).expect("the rule table's patterns compile"))
            .collect()
    });
    RULES.iter().zip(COMPILED.iter())
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}
fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}
fn url_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}
/// Base64's letters (padding `=` ends a token, and also assigns one).
fn base64_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'/' || b == b'+'
}
fn nothing(_: u8) -> bool {
    false
}
fn always(_: &Captures) -> bool {
    true
}

/// The rules, most specific first: where two findings overlap, the earlier
/// rule's is kept (`password = "ghp_…"` is a GitHub token).
pub(super) static RULES: &[Rule] = &[
    Rule {
        kind: "private_key",
        // A whole PEM block, however its lines are broken (a JSON string
        // holds `\n` escapes).
        regex: r"(?s)-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----(?-u:.)*?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----",
        secret: &[0],
        continues: nothing,
        holds: pem_body,
    },
    Rule {
        kind: "private_key",
        // A block cut off before its END line is still the key.
        regex: r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----(?:(?:\r?\n|\\r?\\n)[A-Za-z0-9+/=]+)+",
        secret: &[0],
        continues: nothing,
        holds: pem_body,
    },
    Rule {
        kind: "aws_access_key_id",
        regex: r"(?:AKIA|ASIA)[A-Z0-9]{16}",
        secret: &[0],
        continues: alnum,
        holds: always,
    },
    Rule {
        kind: "aws_secret_access_key",
        regex: r#"(?i:aws_?secret_?(?:access_?)?key)["']?\s*(?:=|:=|:|=>)\s*["']?([A-Za-z0-9/+]{40})"#,
        secret: &[1],
        continues: base64_char,
        holds: always,
    },
    Rule {
        kind: "github_token",
        regex: r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255}",
        secret: &[0],
        continues: word,
        holds: always,
    },
    Rule {
        kind: "gitlab_token",
        regex: r"glpat-[A-Za-z0-9_-]{20,}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "slack_token",
        regex: r"xox[abeoprs]-(?:[0-9]{6,}-){1,3}[A-Za-z0-9]{16,}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "slack_webhook",
        regex: r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}",
        secret: &[0],
        continues: alnum,
        holds: always,
    },
    Rule {
        kind: "stripe_key",
        // Live keys only: Stripe's documentation publishes test keys.
        regex: r"(?:sk|rk)_live_[A-Za-z0-9]{20,}",
        secret: &[0],
        continues: alnum,
        holds: always,
    },
    Rule {
        kind: "google_api_key",
        regex: r"AIza[0-9A-Za-z_-]{35}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "anthropic_api_key",
        regex: r"sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_-]{32,}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "openai_api_key",
        regex: r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{48}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "npm_token",
        regex: r"npm_[A-Za-z0-9]{36}",
        secret: &[0],
        continues: word,
        holds: always,
    },
    Rule {
        kind: "pypi_token",
        regex: r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "huggingface_token",
        regex: r"hf_[A-Za-z0-9]{34,40}",
        secret: &[0],
        continues: word,
        holds: mixed_case,
    },
    Rule {
        kind: "sendgrid_api_key",
        regex: r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        secret: &[0],
        continues: url_token,
        holds: always,
    },
    Rule {
        kind: "azure_storage_key",
        regex: r"AccountKey=([A-Za-z0-9+/]{86}==)",
        secret: &[1],
        continues: base64_char,
        holds: always,
    },
    Rule {
        kind: "jwt",
        regex: r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
        secret: &[0],
        continues: url_token,
        holds: jwt_header,
    },
    Rule {
        kind: "basic_auth",
        regex: r#"(?i:authorization)["']?\s*[:=]\s*["']?(?i:basic)[ \t]+([A-Za-z0-9+/]{8,}={0,2})"#,
        secret: &[1],
        continues: base64_char,
        holds: basic_credentials,
    },
    Rule {
        kind: "bearer_token",
        regex: r"(?i:bearer)[ \t]+([A-Za-z0-9_.~+/-]{16,}=*)",
        secret: &[1],
        continues: base64_char,
        holds: bearer_value,
    },
    Rule {
        kind: "connection_string_password",
        regex: r#"[A-Za-z][A-Za-z0-9+.-]{1,30}://([^\s:/?#@"'<>\[\]{}]{0,128}):([^\s:/?#@"'<>\[\]{}]{1,256})@[A-Za-z0-9._-]"#,
        secret: &[2],
        continues: nothing,
        holds: connection_password,
    },
    Rule {
        kind: "password_assignment",
        regex: ASSIGNMENT_PASSWORD,
        secret: &[1, 2, 3, 4],
        continues: nothing,
        holds: assigned_password,
    },
    Rule {
        kind: "secret_assignment",
        regex: ASSIGNMENT_SECRET,
        secret: &[1, 2, 3, 4],
        continues: nothing,
        holds: assigned_credential,
    },
    Rule {
        kind: "api_key_assignment",
        regex: ASSIGNMENT_API_KEY,
        secret: &[1, 2, 3, 4],
        continues: nothing,
        holds: assigned_credential,
    },
    Rule {
        kind: "token_assignment",
        regex: ASSIGNMENT_TOKEN,
        secret: &[1, 2, 3, 4],
        continues: nothing,
        holds: assigned_credential,
    },
];

// A credential's name (ending in the keyword: `db_password`, `"apiKey"`,
// `--password`; `password_hash` and `password_min_length` name no secret),
// an assignment (`=`, `:`, `:=`, `=>`), then a value: in double quotes
// (group 2), in single quotes (group 3) or bare (group 4). In a URL's
// query (`?access_token=…&page=2`) the value ends at the next `&` (group 1).
macro_rules! assignment {
    ($words:literal) => {
        concat!(
            r#"(?i)(?:[?&][A-Za-z0-9_.-]*?(?:"#,
            $words,
            r#")=([^&\s#"']+)|(?:^|[^A-Za-z0-9])[A-Za-z0-9_.-]*?(?:"#,
            $words,
            r#")["']?[ \t]*(?::=|=>|=|:)[ \t]*(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"',;\\]+)))"#
        )
    };
}
const ASSIGNMENT_PASSWORD: &str = assignment!("password|passwd|passphrase");
const ASSIGNMENT_SECRET: &str = assignment!("secret|secret_?key");
const ASSIGNMENT_API_KEY: &str = assignment!("api_?key|api-key");
const ASSIGNMENT_TOKEN: &str =
    assignment!("access_?token|auth_?token|refresh_?token|api_?token|bearer_?token|private_?token");

/// The body of a PEM block holds key material, not `...` in documentation.
fn pem_body(c: &Captures) -> bool {
    let block = &c[0];
    let after_header = block
        .windows(5)
        .enumerate()
        .filter(|(_, w)| *w == b"-----")
        .nth(1)
        .map_or(block.len(), |(i, _)| i + 5);
    let body = &block[after_header.min(block.len())..];
    let end = body
        .windows(9)
        .position(|w| w == b"-----END ")
        .unwrap_or(body.len());
    body[..end]
        .iter()
        .filter(|b| b.is_ascii_alphanumeric() || **b == b'+' || **b == b'/')
        .count()
        >= 40
}

fn mixed_case(c: &Captures) -> bool {
    let t = &c[0];
    t.iter().any(u8::is_ascii_uppercase) && t.iter().any(u8::is_ascii_lowercase)
}

/// A JWT's header is base64url of a JSON object naming its algorithm.
fn jwt_header(c: &Captures) -> bool {
    let token = &c[0];
    let header = token.split(|b| *b == b'.').next().unwrap_or_default();
    decode_base64(header)
        .and_then(|h| serde_json::from_slice::<serde_json::Value>(&h).ok())
        .is_some_and(|h| h.get("alg").is_some())
}

/// `Basic` credentials decode to `user:password` with a password.
fn basic_credentials(c: &Captures) -> bool {
    decode_base64(&c[1])
        .and_then(|d| String::from_utf8(d).ok())
        .and_then(|d| {
            d.split_once(':')
                .map(|(_, pass)| !pass.is_empty() && !is_placeholder(pass))
        })
        .unwrap_or(false)
}

/// A bearer token has letters and digits (`Bearer <token>`, `Bearer
/// $TOKEN` and `Bearer YOUR_ACCESS_TOKEN` are no token).
fn bearer_value(c: &Captures) -> bool {
    let t = &c[1];
    let text = String::from_utf8_lossy(t);
    t.iter().any(u8::is_ascii_digit)
        && t.iter().any(u8::is_ascii_alphabetic)
        && !is_placeholder(&text)
}

/// `scheme://user:password@host` with a password of six characters or
/// more that is not a placeholder (`user:xyz@`), a reference, a port
/// (`host:8080@`) or the user's own name (`postgres:postgres@localhost`, a
/// local default).
fn connection_password(c: &Captures) -> bool {
    let user = String::from_utf8_lossy(&c[1]);
    let pass = String::from_utf8_lossy(&c[2]);
    pass.chars().count() >= 6
        && !pass.bytes().all(|b| b.is_ascii_digit())
        && pass != user
        && !is_placeholder(&pass)
        && !pass.starts_with(['$', '%', '*'])
}

/// [`assigned`] for a password: six characters or more.
fn assigned_password(c: &Captures) -> bool {
    assigned(c, 6)
}

/// [`assigned`] for a key, a token or a secret: ten characters or more.
fn assigned_credential(c: &Captures) -> bool {
    assigned(c, 10)
}

/// The value assigned to a credential's name is a literal credential of
/// `min` characters or more: not a placeholder or a reference (`${VAR}`,
/// `<...>`, `***`, an environment variable's name), not code that reads it
/// from elsewhere (`os.environ[...]`, `get_password()`, `self.password`),
/// not prose (a phrase, a plain word), not a name that says what it holds
/// (`db-password-file`) and not a path or URL.
fn assigned(c: &Captures, min: usize) -> bool {
    let quoted = c.get(2).or_else(|| c.get(3));
    let Some(raw) = quoted.or_else(|| c.get(4)).or_else(|| c.get(1)) else {
        return false;
    };
    let Ok(value) = std::str::from_utf8(raw.as_bytes()) else {
        return false;
    };
    if value.chars().count() < min || value.chars().any(char::is_whitespace) {
        return false;
    }
    if is_placeholder(value) || is_env_name(value) || value.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if value.starts_with([
        '$', '%', '!', '&', '*', '@', '{', '/', '~', '<', '(', '[', '#', ':', '_',
    ]) || value.starts_with("./")
        || value.starts_with("../")
        || value.contains("://")
    {
        return false;
    }
    let digit = value.bytes().any(|b| b.is_ascii_digit());
    let letter = value.bytes().any(|b| b.is_ascii_alphabetic());
    let symbol = value
        .bytes()
        .any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.'));
    if quoted.is_some() {
        let upper = value.bytes().any(|b| b.is_ascii_uppercase());
        let lower = value.bytes().any(|b| b.is_ascii_lowercase());
        digit || symbol || (upper && lower) || value.len() >= 16
    } else {
        // Unquoted, a value is code unless it looks like no identifier:
        // `api_key = config.api_key`, `password: core::PCWSTR`,
        // `get_secret(`, `password: str`.
        let identifier = value
            .split(['.', ':'])
            .filter(|part| !part.is_empty())
            .all(|part| part.bytes().all(word));
        let code = value.contains(['(', ')', '[', ']', '`'])
            || value.contains("::")
            || (identifier && (value.contains('.') || !digit));
        !code && letter && (digit || symbol)
    }
}

/// Words and marks that stand for a secret rather than being one.
fn is_placeholder(value: &str) -> bool {
    const STANDS_FOR: &[&str] = &[
        "example",
        "changeme",
        "change_me",
        "change-me",
        "placeholder",
        "your",
        "xxxx",
        "****",
        "...",
        "…",
        "redacted",
        "dummy",
        "sample",
        "${",
        "{{",
        "}}",
        "%(",
        "<",
        ">",
        "environ",
        "getenv",
        "process.env",
        "secrets.",
        "vault:",
        "insert",
        "replace",
        "todo",
        "fixme",
        // A value naming what it holds is a name (`db-password-file`).
        "secret",
        "passw",
        "token",
        "apikey",
        "api_key",
        "api-key",
    ];
    const WHOLE: &[&str] = &[
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "string",
        "str",
        "pass",
        "pwd",
        "user",
        "username",
        "required",
        "optional",
    ];
    let lower = value.to_ascii_lowercase();
    STANDS_FOR.iter().any(|s| lower.contains(s))
        || WHOLE.contains(&lower.as_str())
        || value
            .chars()
            .collect::<std::collections::HashSet<_>>()
            .len()
            <= 2
}

/// `API_KEY`, `DB_PASSWORD`: the name of an environment variable, which
/// holds the secret elsewhere.
fn is_env_name(value: &str) -> bool {
    let mut parts = value.split('_');
    value.contains('_')
        && parts.all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        })
        && value.as_bytes()[0].is_ascii_uppercase()
}

/// Base64 in either alphabet (standard or URL-safe), padding optional.
fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in text {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_both_alphabets_with_or_without_padding() {
        assert_eq!(decode_base64(b"dXNlcjpwYXNz").unwrap(), b"user:pass");
        assert_eq!(
            decode_base64(b"eyJhbGciOiJIUzI1NiJ9").unwrap(),
            br#"{"alg":"HS256"}"#
        );
        assert_eq!(decode_base64(b"Pz8_").unwrap(), b"??\x3f");
        assert_eq!(decode_base64(b"YQ==").unwrap(), b"a");
        assert!(decode_base64(b"a b").is_none());
    }

    #[test]
    fn environment_variable_names_are_references() {
        assert!(is_env_name("API_KEY"));
        assert!(is_env_name("DB_PASSWORD_2"));
        assert!(!is_env_name("hunter2"));
        assert!(!is_env_name("ABCD1234"));
        assert!(!is_env_name("_X"));
    }
}
