//! YAML and frontmatter (de)serialization of model objects.

use crate::error::{Error, Result};
use crate::model::Page;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// Encode as YAML.
pub fn to_yaml<T: Serialize>(value: &T) -> Result<String> {
    serde_saphyr::to_string(value).map_err(|e| Error::internal(format!("YAML encoding: {e}")))
}

/// Decode YAML read from `path`; a parse error is [`Corrupt`], naming the
/// file and the first line of what the parser said. A record in the
/// plainest shape is read by [`super::plain_yaml`], without serde-saphyr's
/// cost; anything else, or anything that does not decode from it, by
/// serde-saphyr.
///
/// [`Corrupt`]: crate::error::ErrorKind::Corrupt
pub fn from_yaml<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    if let Some(value) = super::plain_yaml::read(text)
        && let Ok(decoded) = serde_json::from_value(value)
    {
        return Ok(decoded);
    }
    serde_saphyr::from_str(text).map_err(|e| Error::corrupt(path, first_line(&e.to_string())))
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// `---\n<frontmatter>---\n<body>`.
pub fn page_to_markdown(page: &Page) -> Result<String> {
    let front = to_yaml(page)?;
    let mut out = String::with_capacity(front.len() + page.body.len() + 8);
    out.push_str("---\n");
    out.push_str(&front);
    if !front.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("---\n");
    out.push_str(&page.body);
    Ok(out)
}

/// Parse a page file; CRLF line endings are accepted.
pub fn page_from_markdown(path: &Path, text: &str) -> Result<Page> {
    let text = if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    let rest = text
        .strip_prefix("---\n")
        .ok_or_else(|| Error::corrupt(path, "page does not start with `---` frontmatter"))?;
    let (front, body) = if let Some(front) = rest.strip_prefix("---\n") {
        ("", front)
    } else {
        match rest.find("\n---\n") {
            Some(i) => (&rest[..i + 1], &rest[i + 5..]),
            None => match rest.strip_suffix("\n---") {
                Some(front) => (front, ""),
                None => return Err(Error::corrupt(path, "frontmatter is not closed by `---`")),
            },
        }
    };
    let mut page: Page = from_yaml(path, front)?;
    page.body = body.to_string();
    Ok(page)
}
