//! Id rules. Every id that becomes a path component is validated here before
//! any file is touched, so no request can name a file outside `.vouch/`.

use crate::error::{Error, Result};

/// Longest id accepted from a caller (ids become file names).
pub const MAX_ID_LEN: usize = 200;
/// Longest slug minted from a title, before any `-N` suffix.
pub const MAX_SLUG_LEN: usize = 60;

/// Slug rule (protocol §10, ids): lowercase; runs of non-alphanumerics become
/// one `-`; trimmed; at most 60 characters, never ending in `-`; empty becomes
/// `untitled`.
pub fn slugify(title: &str) -> String {
    let mut out = String::new();
    let mut pending_dash = false;
    for ch in title.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_alphanumeric() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(ch);
            if out.len() >= MAX_SLUG_LEN {
                out.truncate(MAX_SLUG_LEN);
                break;
            }
        } else {
            pending_dash = true;
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "untitled".to_string()
    } else {
        trimmed.to_string()
    }
}

/// Validate an id that names a file (claims, pages, entities, relations,
/// evidence, sessions, proposals). Accepts the slugs we mint and the ids
/// vouch 1.x wrote (letters, digits, `-`, `_`, `.`), nothing that could
/// walk out of its directory.
pub fn check_id(what: &str, id: &str) -> Result<()> {
    let problem = if id.is_empty() {
        Some("is empty".to_string())
    } else if id.len() > MAX_ID_LEN {
        Some(format!(
            "is {} characters long (max {MAX_ID_LEN})",
            id.len()
        ))
    } else if id.contains('\0') {
        Some("contains a NUL byte".to_string())
    } else if id.contains('/') || id.contains('\\') {
        Some("contains a path separator".to_string())
    } else if id.starts_with('.') || id.contains("..") {
        Some("contains `.` path components".to_string())
    } else {
        id.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .map(|c| format!("contains {c:?}; ids are letters, digits, `-`, `_` and `.`"))
    };
    match problem {
        Some(p) => Err(Error::invalid(format!(
            "{what} {:?} {p}",
            truncate_for_message(id)
        ))),
        None => Ok(()),
    }
}

/// True when `id` has the shape of a source id: 64 lowercase hex characters.
pub fn is_source_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Refuse an id that is not a source id ([`is_source_id`]) as invalid params.
pub fn check_source_id(id: &str) -> Result<()> {
    if is_source_id(id) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "source id {:?} is not a lowercase hex sha256 (64 characters)",
            truncate_for_message(id)
        )))
    }
}

/// Would this character, printed raw, let text steer a terminal or the
/// order in which it is read? C0 controls other than newline and tab (an
/// `ESC[8m` makes the rest of a line invisible, `\r` overwrites it), DEL,
/// C1 controls, and the bidi overrides and isolates that reorder a line
/// ("Trojan Source").
pub fn steers_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_format_char(c)
}

/// Unicode's format characters (general category Cf, Unicode 16): they
/// draw nothing, yet an agent reads them — zero-width spaces and joiners,
/// the bidi overrides and isolates that reorder a line ("expire after
/// U+202E 42 U+202C hours" shows "24"), and the tag characters (U+E0000 block) that
/// spell a hidden instruction after "Deploys are frozen on Fridays".
pub fn is_format_char(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061c}'
            | '\u{06dd}'
            | '\u{070f}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    ) || matches!(
        c,
        // Not Cf, but as invisible: the combining grapheme joiner, the
        // Hangul fillers, the line and paragraph separators, and the
        // variation selectors but the emoji pair (U+FE0E, U+FE0F, judged
        // by `hidden_char` by what precedes them).
        '\u{034f}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{3164}'
            | '\u{ffa0}'
            | '\u{fe00}'..='\u{fe0d}'
            | '\u{e0100}'..='\u{e01ef}'
    ) || matches!(
        c,
        // The rest of Unicode's Default_Ignorable_Code_Point (16.0), which
        // a renderer must draw as nothing — assigned (Khmer inherent vowels,
        // Mongolian variation selectors) and reserved for more of the same
        // (U+2065, U+FFF0..FFF8, the unassigned rest of the tag and
        // variation-selector planes: some 3,800 code points enough to carry
        // any bytes unseen).
        '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180d}'
            | '\u{180f}'
            | '\u{2065}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{e0000}'
            | '\u{e0002}'..='\u{e001f}'
            | '\u{e0080}'..='\u{e00ff}'
            | '\u{e01f0}'..='\u{e0fff}'
    ) || is_noncharacter(c)
}

/// Unicode's noncharacters (U+FDD0..FDEF and the last two code points of
/// every plane): never meant to be shown, so nothing draws them.
fn is_noncharacter(c: char) -> bool {
    matches!(c, '\u{fdd0}'..='\u{fdef}') || (c as u32 & 0xfffe) == 0xfffe
}

/// `field: …` naming the hidden character in `text`, for refusals.
pub fn hidden_char_problem(field: &str, text: &str) -> Option<String> {
    let (at, c) = hidden_char(text)?;
    Some(format!(
        "{field}: contains the {} U+{:04X} at byte {at}; it could hide or reorder what a \
         reviewer sees, so it is refused",
        if c.is_control() {
            "control character"
        } else {
            "invisible format character"
        },
        c as u32
    ))
}

/// Why `name` cannot name an actor in the audit log (a proposer, an
/// approver, a caller), if it cannot: it is blank, has spaces around it,
/// or holds a control character or an invisible one ([`is_format_char`]:
/// zero-width spaces and joiners, bidi overrides, tag characters) — a name
/// a reader of the log cannot see, or one that passes for another's
/// (`alice\u{200b}` is not `alice`).
pub fn actor_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("is blank".into());
    }
    if name.trim() != name {
        return Some("has spaces around it".into());
    }
    let (at, c) = name
        .char_indices()
        .find(|(_, c)| c.is_control() || is_format_char(*c))?;
    Some(format!(
        "contains the {} U+{:04X} at byte {at}; a name in the audit log must read as what \
         it is",
        if c.is_control() {
            "control character"
        } else {
            "invisible character"
        },
        c as u32
    ))
}

/// What `name` reads as, for telling names apart by eye: case folded,
/// compatibility forms taken as the letters they stand for (NFKC's
/// fullwidth ASCII `ｃｌｉ`, the mathematical letters `𝐜𝐥𝐢`, the Roman
/// numerals `ⅽⅼⅰ`), the common Cyrillic and Greek look-alikes of Latin
/// letters as those letters (`сli` with a Cyrillic `с`, `αlice`), `0` as
/// `o` and `1` or `|` as `l`, and what draws nothing or only a mark on a
/// letter (invisible characters, combining accents) left out. Two names
/// with one skeleton pass for each other; a name whose skeleton is `cli`
/// passes for the placeholder that stands for "no name". A small table,
/// not Unicode's whole confusables list: it covers the look-alikes an
/// attacker reaches for first, nothing more.
pub fn name_skeleton(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if is_format_char(c) || matches!(c, '\u{0300}'..='\u{036f}') {
            continue;
        }
        let c = compatibility_letter(c);
        match capital_look_alike(c) {
            Some(latin) => out.push(latin),
            None => out.extend(c.to_lowercase().map(latin_look_alike)),
        }
    }
    out
}

/// The name the audit log uses for "no name": the actor of a command when
/// nothing names anyone (no --agent, VOUCH_AGENT or $USER).
pub const NO_NAME: &str = "cli";

/// Whether `name` reads as [`NO_NAME`] ([`name_skeleton`]): `CLI`,
/// fullwidth `ｃｌｉ`, a Cyrillic `сli`. No decision is signed with such a
/// name: a reader of the log would take it for one nobody signed.
pub fn reads_as_no_name(name: &str) -> bool {
    name_skeleton(name) == NO_NAME
}

/// The ASCII character a compatibility form stands for (NFKC): fullwidth
/// ASCII, the mathematical alphanumeric letters and digits, the Roman
/// numerals that are letters; any other character as it is.
fn compatibility_letter(c: char) -> char {
    let n = c as u32;
    let ascii = |b: u32| char::from_u32(b).unwrap_or(c);
    match n {
        0xff01..=0xff5e => ascii(n - 0xfee0),
        // Bold, italic, script, fraktur, double-struck, sans-serif and
        // monospace A-Z a-z, 52 to a style.
        0x1d400..=0x1d6a3 => {
            let i = (n - 0x1d400) % 52;
            ascii('a' as u32 + i % 26)
        }
        // Mathematical digits 0-9, five styles.
        0x1d7ce..=0x1d7ff => ascii('0' as u32 + (n - 0x1d7ce) % 10),
        _ => match c {
            'Ⅰ' | 'ⅰ' => 'i',
            'Ⅴ' | 'ⅴ' => 'v',
            'Ⅹ' | 'ⅹ' => 'x',
            'Ⅼ' | 'ⅼ' => 'l',
            'Ⅽ' | 'ⅽ' => 'c',
            'Ⅾ' | 'ⅾ' => 'd',
            'Ⅿ' | 'ⅿ' => 'm',
            _ => c,
        },
    }
}

/// The Latin letter a capital look-alike passes for where its own
/// lowercase does not (Greek `Ν` is `N`, its `ν` reads as `v`).
fn capital_look_alike(c: char) -> Option<char> {
    Some(match c {
        'Ν' => 'n',
        'Μ' | 'М' => 'm',
        'Ζ' => 'z',
        'Υ' | 'Ү' => 'y',
        'Н' => 'h',
        _ => return None,
    })
}

/// The Latin letter a lowercase look-alike from Cyrillic, Greek or IPA
/// passes for (and `0`, `1`, `|`); any other character as it is.
fn latin_look_alike(c: char) -> char {
    match c {
        'а' | 'α' | 'ɑ' => 'a',
        'в' | 'β' | 'ь' => 'b',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ё' | 'ε' => 'e',
        'ɡ' => 'g',
        'һ' | 'η' => 'h',
        'і' | 'ї' | 'ι' | 'ı' | 'ɪ' => 'i',
        'ј' | 'ϳ' => 'j',
        'к' | 'κ' => 'k',
        'ӏ' | 'ɩ' | 'ʟ' | '1' | '|' => 'l',
        'м' => 'm',
        'п' => 'n',
        'о' | 'ο' | 'σ' | '0' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' | 'ս' => 'u',
        'ν' | 'ѵ' => 'v',
        'ԝ' | 'ω' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        'ʐ' => 'z',
        _ => c,
    }
}

/// Part of an emoji sequence a zero-width joiner may stand between
/// (👩‍💻): pictographs, dingbats, and the emoji presentation selector.
fn emoji_part(c: char) -> bool {
    matches!(c, '\u{2600}'..='\u{27bf}' | '\u{fe0f}' | '\u{1f000}'..='\u{1faff}')
        || matches!(c, '\u{1f3fb}'..='\u{1f3ff}')
}

/// The first character in `text` that a reviewer could not see or that
/// would steer how it is shown: a control character (C0 but newline and
/// tab, and a `\r` right before a newline; DEL; C1) or a format character,
/// except a zero-width joiner inside an emoji sequence. With its byte
/// offset.
pub fn hidden_char(text: &str) -> Option<(usize, char)> {
    let mut prev: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let crlf = c == '\r' && next == Some('\n');
        let emoji_zwj =
            c == '\u{200d}' && prev.is_some_and(emoji_part) && next.is_some_and(emoji_part);
        // Text or emoji presentation, right after what it presents.
        let stray_selector = matches!(c, '\u{fe0e}' | '\u{fe0f}') && !prev.is_some_and(emoji_part);
        if (c.is_control() && c != '\n' && c != '\t' && !crlf)
            || (is_format_char(c) && !emoji_zwj)
            || stray_selector
        {
            return Some((at, c));
        }
        prev = Some(c);
    }
    None
}

/// An id as one URL path segment: anything but `[A-Za-z0-9._-]` is
/// percent-encoded, so an id can never add a segment or a query.
pub fn url_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Keep error messages readable when an id is enormous.
pub fn truncate_for_message(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_string()
    } else {
        let head: String = s.chars().take(77).collect();
        format!("{head}...")
    }
}

/// Lowercase hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

/// The sha256 an event records of a knowledge file it wrote
/// (`data.written`), and what the file is checked against: of its bytes
/// with every CRLF read as LF, so a checkout that converts line endings
/// (git's `core.autocrlf` on Windows) is not taken for an edit.
pub fn content_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    if !bytes.windows(2).any(|w| w == b"\r\n") {
        return hex(&Sha256::digest(bytes));
    }
    let mut hasher = Sha256::new();
    let mut rest = bytes;
    while let Some(at) = rest.windows(2).position(|w| w == b"\r\n") {
        hasher.update(&rest[..at]);
        rest = &rest[at + 1..];
    }
    hasher.update(rest);
    hex(&hasher.finalize())
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every Default_Ignorable_Code_Point of Unicode 16 (DerivedCoreProperties.txt)
    /// is refused — assigned or not — bar the zero-width joiner and the
    /// emoji variation selectors, which `hidden_char` judges in context.
    /// A checkout that turned LF into CRLF holds the same content; any
    /// other change does not.
    #[test]
    fn content_sha256_reads_crlf_as_lf_and_nothing_else() {
        let lf = b"id: x\ntext: A claim.\n";
        let crlf = b"id: x\r\ntext: A claim.\r\n";
        assert_eq!(content_sha256(lf), sha256_hex(lf));
        assert_eq!(content_sha256(crlf), content_sha256(lf));
        assert_ne!(
            content_sha256(b"id: x\rtext: A claim.\n"),
            content_sha256(lf)
        );
        assert_ne!(
            content_sha256(b"id: x\ntext: A claim!\n"),
            content_sha256(lf)
        );
    }

    #[test]
    fn every_default_ignorable_code_point_is_hidden() {
        const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
            (0x00AD, 0x00AD),
            (0x034F, 0x034F),
            (0x061C, 0x061C),
            (0x115F, 0x1160),
            (0x17B4, 0x17B5),
            (0x180B, 0x180F),
            (0x200B, 0x200F),
            (0x202A, 0x202E),
            (0x2060, 0x206F),
            (0x3164, 0x3164),
            (0xFE00, 0xFE0F),
            (0xFEFF, 0xFEFF),
            (0xFFA0, 0xFFA0),
            (0xFFF0, 0xFFF8),
            (0x1BCA0, 0x1BCA3),
            (0x1D173, 0x1D17A),
            (0xE0000, 0xE0FFF),
        ];
        for &(first, last) in DEFAULT_IGNORABLE {
            for cp in first..=last {
                let c = char::from_u32(cp).unwrap();
                let judged_in_context = matches!(c, '\u{200d}' | '\u{fe0e}' | '\u{fe0f}');
                if !judged_in_context {
                    assert!(is_format_char(c), "U+{cp:04X}");
                }
                assert!(
                    hidden_char(&format!("a{c}b")).is_some(),
                    "U+{cp:04X} between letters"
                );
            }
        }
        for c in ['\u{fdd0}', '\u{fffe}', '\u{1ffff}', '\u{10ffff}'] {
            assert!(is_format_char(c), "U+{:04X}", c as u32);
        }
        for visible in ['a', 'é', '漢', '\u{1f600}', '\u{e000}', '\u{00a0}'] {
            assert!(!is_format_char(visible), "U+{:04X}", visible as u32);
        }
    }

    #[test]
    fn a_skeleton_is_what_a_name_reads_as() {
        // Case, fullwidth and mathematical forms, Roman numerals,
        // Cyrillic and Greek look-alikes, invisible characters and
        // accents: each reads as `cli`.
        for name in [
            "cli",
            "CLI",
            "Cli",
            "cLI",
            "ｃｌｉ",
            "ＣＬＩ",
            "сli",
            "СLI",
            "clі",
            "c1i",
            "c|i",
            "ⅽⅼⅰ",
            "𝐜𝐥𝐢",
            "𝙲𝙻𝙸",
            "c\u{200b}li",
            "cl\u{0301}i",
            "ϲӏі",
        ] {
            assert_eq!(name_skeleton(name), "cli", "{name:?}");
        }
        assert_eq!(name_skeleton("аlice"), name_skeleton("alice"));
        assert_eq!(name_skeleton("ΑLΙCΕ"), "alice");
        assert_eq!(name_skeleton("Νora"), "nora");
        assert_eq!(name_skeleton("Нugo"), "hugo");
        assert_eq!(name_skeleton("b0b"), "bob");
        // Names that differ to the eye keep apart.
        for (a, b) in [
            ("alice", "alicia"),
            ("bob", "rob"),
            ("cli", "clio"),
            ("ana", "anna"),
        ] {
            assert_ne!(name_skeleton(a), name_skeleton(b), "{a} {b}");
        }
        // Letters of other scripts that pass for no Latin one stay.
        assert_eq!(name_skeleton("Дмитрий"), "дmиtpий");
        assert_eq!(name_skeleton("李"), "李");
    }

    #[test]
    fn slug_rules() {
        assert_eq!(slugify("Hello, World!"), "hello-world");
        assert_eq!(slugify("  --Already-slugged--  "), "already-slugged");
        assert_eq!(slugify("!!!"), "untitled");
        assert_eq!(slugify(""), "untitled");
        let long = slugify(&"word ".repeat(40));
        assert!(long.len() <= MAX_SLUG_LEN, "{long}");
        assert!(!long.ends_with('-'));
        assert_eq!(slugify("Ünïcode Straße"), "n-code-stra-e");
    }

    #[test]
    fn path_tricks_are_refused() {
        for bad in [
            "../x", "a/b", "a\\b", "a\0b", ".hidden", "..", "a..b", "", "a b",
        ] {
            assert!(check_id("claim id", bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_id("claim id", &"a".repeat(201)).is_err());
        assert!(check_id("claim id", &"a".repeat(200)).is_ok());
        assert!(check_id("claim id", "auth-uses-jwt-2").is_ok());
        assert!(check_id("claim id", "legacy_id.v1").is_ok());
    }

    #[test]
    fn source_ids() {
        assert!(is_source_id(&sha256_hex(b"x")));
        assert!(!is_source_id(&sha256_hex(b"x").to_uppercase()));
        assert!(!is_source_id("abc"));
    }
}
