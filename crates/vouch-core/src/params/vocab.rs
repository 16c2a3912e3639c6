//! Reading a vocabulary value in params strictly: only the vocabulary's
//! own values (files may hold others another writer added; new input may
//! not). Named in `#[serde(deserialize_with)]` attributes.

use serde::Deserialize;

/// A vocabulary value in params: only the vocabulary's own values (files
/// may hold others another writer added; new input may not).
pub(super) fn strict<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: crate::model::Vocabulary,
{
    let s = <std::borrow::Cow<'de, str> as Deserialize>::deserialize(d)?;
    T::parse_or_explain(&s).map_err(serde::de::Error::custom)
}

pub(super) fn strict_opt<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: crate::model::Vocabulary,
{
    let s = <Option<std::borrow::Cow<'de, str>> as Deserialize>::deserialize(d)?;
    s.map(|s| T::parse_or_explain(&s))
        .transpose()
        .map_err(serde::de::Error::custom)
}
