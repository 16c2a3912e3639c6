//! The closed vocabularies of protocol §2. Each enum serializes as its
//! lowercase spec spelling; an unknown value is an error that lists the
//! allowed ones.

/// A vocabulary read strictly, as new input (params) must be.
pub trait Vocabulary: Sized {
    fn parse_or_explain(s: &str) -> Result<Self, String>;
}

/// What every vocabulary has: its names, strict parsing, and the
/// Display / Serialize / Vocabulary / JsonSchema impls (through `as_str`).
macro_rules! vocabulary_common {
    ($name:ident : $what:literal, open = $open:literal { $($var:ident = $s:literal),+ }) => {
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            pub const WHAT: &'static str = $what;
            /// A value of the vocabulary.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$var),)+ _ => None }
            }
            /// Parse, or say what is allowed.
            pub fn parse_or_explain(s: &str) -> Result<Self, String> {
                Self::parse(s).ok_or_else(|| format!(
                    "unknown {} {:?}; expected one of: {}",
                    $what, crate::ids::truncate_for_message(s), Self::NAMES.join(", ")
                ))
            }
        }

        impl crate::model::Vocabulary for $name {
            fn parse_or_explain(s: &str) -> Result<Self, String> {
                $name::parse_or_explain(s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // `pad`, so a width (`{:<7}`) lines values up.
                f.pad(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> { stringify!($name).into() }
            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                // What a server answers may hold a value another writer
                // added (an open vocabulary), so a result schema names the
                // vocabulary without refusing the rest; params stay closed.
                let answered = matches!(generator.contract(), schemars::generate::Contract::Serialize);
                if $open && answered {
                    schemars::json_schema!({
                        "type": "string",
                        "description": concat!("One of: ", $($s, " "),+, "(or a value another implementation wrote)."),
                        "examples": [$($s),+],
                    })
                } else {
                    schemars::json_schema!({"type": "string", "enum": [$($s),+]})
                }
            }
        }
    };
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident : $what:literal { $($var:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($var),+ }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
        }

        vocabulary_common!($name : $what, open = false { $($var = $s),+ });

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::parse_or_explain(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Values outside a vocabulary that files hold (vouch 1.x and newer
/// versions write some), interned so the enums stay `Copy`. Bounded: a
/// repository with more distinct ones than this has them refused as before.
const MAX_INTERNED: usize = 4096;

fn intern(s: &str) -> Option<&'static str> {
    static SEEN: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = seen.get(s) {
        return Some(v);
    }
    if seen.len() >= MAX_INTERNED
        || s.len() > 64
        || s.trim().is_empty()
        || s.chars().any(char::is_control)
    {
        return None;
    }
    let v: &'static str = Box::leak(s.to_string().into_boxed_str());
    seen.insert(v);
    Some(v)
}

/// A vocabulary stored objects use: a value outside it, as another
/// implementation wrote it, is read as `Other`, kept on rewrite, listed
/// and searched, and named by `doctor` as non-standard. New input is held
/// to the vocabulary where it enters (the gate, source registration).
macro_rules! open_enum {
    ($(#[$meta:meta])* $name:ident : $what:literal { $($var:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($var,)+ Other(&'static str) }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s,)+ $name::Other(s) => s }
            }
            /// As a file holds it: a value outside the vocabulary too.
            pub fn read(s: &str) -> Result<Self, String> {
                Self::parse(s)
                    .or_else(|| intern(s).map($name::Other))
                    .ok_or_else(|| Self::parse_or_explain(s).unwrap_err())
            }
            /// In the vocabulary (not a value another writer added).
            pub fn is_standard(self) -> bool {
                !matches!(self, $name::Other(_))
            }
        }

        vocabulary_common!($name : $what, open = true { $($var = $s),+ });

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::read(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

open_enum!(SourceType: "source type" {
    File = "file", Url = "url", Transcript = "transcript", Message = "message",
    Commit = "commit", Issue = "issue", Screenshot = "screenshot", Pdf = "pdf",
    Audio = "audio", Video = "video", Folder = "folder",
});

string_enum!(Scope: "scope" {
    Private = "private", Project = "project", Team = "team", Public = "public",
});

open_enum!(ClaimType: "claim type" {
    Fact = "fact", Decision = "decision", Preference = "preference", Workflow = "workflow",
    Observation = "observation", Question = "question", Warning = "warning",
});

open_enum!(ClaimStatus: "claim status" {
    Working = "working", Actionable = "actionable", Stable = "stable",
    Contested = "contested", Superseded = "superseded", Archived = "archived",
    Redacted = "redacted",
});

open_enum!(EntityType: "entity type" {
    Person = "person", Project = "project", Repo = "repo", Company = "company",
    Concept = "concept", Decision = "decision", Workflow = "workflow", File = "file",
    Api = "api", Incident = "incident", Source = "source", Agent = "agent", Tool = "tool",
    Team = "team", System = "system",
});

open_enum!(RelationType: "relation type" {
    Uses = "uses", DependsOn = "depends_on", Contradicts = "contradicts",
    Supersedes = "supersedes", Supports = "supports", CausedBy = "caused_by",
    OwnedBy = "owned_by", DerivedFrom = "derived_from", SimilarTo = "similar_to",
    Blocks = "blocks", Implements = "implements", References = "references",
    // Written by vouch 1.x.
    Mentions = "mentions", RelatesTo = "relates_to",
});

open_enum!(PageType: "page type" {
    Entity = "entity", Concept = "concept", Decision = "decision", Workflow = "workflow",
    Session = "session", Index = "index", Log = "log", Report = "report",
    SourceSummary = "source-summary",
    // Written by vouch 1.x.
    Theme = "theme",
});

open_enum!(PageStatus: "page status" {
    Draft = "draft", Active = "active", Stale = "stale", Archived = "archived",
});

string_enum!(ProposalKind: "proposal kind" {
    Claim = "claim", Page = "page", Entity = "entity", Relation = "relation",
    // A lifecycle change an agent asked for under `review.gate_lifecycle`.
    Lifecycle = "lifecycle",
    // vouch 1.x's request to delete an object: listed for review, decided
    // with vouch 1.x (or rejected here).
    Delete = "delete",
});

string_enum!(
    /// The kinds of object retrieval indexes and finds: what a search hit
    /// or a context item is.
    DocKind: "kind" {
    Claim = "claim", Page = "page", Entity = "entity", Source = "source",
});

string_enum!(ProposalStatus: "proposal status" {
    Pending = "pending", Approved = "approved", Rejected = "rejected",
});

string_enum!(SessionStatus: "session status" {
    Open = "open", Ended = "ended",
});

impl ClaimStatus {
    /// protocol §3: every claim cites evidence; a `working` claim may go
    /// uncited only when `review.require_citations` is false.
    pub fn needs_citation(self, require_citations: bool) -> bool {
        require_citations || self != ClaimStatus::Working
    }

    /// Current knowledge: what context packs and answers may use.
    pub fn is_current(self) -> bool {
        // A status another writer added is not vouched for as current.
        matches!(
            self,
            ClaimStatus::Working
                | ClaimStatus::Actionable
                | ClaimStatus::Stable
                | ClaimStatus::Contested
        )
    }
}
