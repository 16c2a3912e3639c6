//! The closed vocabularies of protocol §2. Each enum serializes as its
//! lowercase spec spelling; an unknown value is an error that lists the
//! allowed ones.

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident : $what:literal { $($var:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($var),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
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

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::parse_or_explain(&s).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> { stringify!($name).into() }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": [$($s),+]})
            }
        }
    };
}

string_enum!(SourceType: "source type" {
    File = "file", Url = "url", Transcript = "transcript", Message = "message",
    Commit = "commit", Issue = "issue", Screenshot = "screenshot", Pdf = "pdf",
    Audio = "audio", Video = "video", Folder = "folder",
});

string_enum!(Scope: "scope" {
    Private = "private", Project = "project", Team = "team", Public = "public",
});

string_enum!(ClaimType: "claim type" {
    Fact = "fact", Decision = "decision", Preference = "preference", Workflow = "workflow",
    Observation = "observation", Question = "question", Warning = "warning",
});

string_enum!(ClaimStatus: "claim status" {
    Working = "working", Actionable = "actionable", Stable = "stable",
    Contested = "contested", Superseded = "superseded", Archived = "archived",
    Redacted = "redacted",
});

string_enum!(EntityType: "entity type" {
    Person = "person", Project = "project", Repo = "repo", Company = "company",
    Concept = "concept", Decision = "decision", Workflow = "workflow", File = "file",
    Api = "api", Incident = "incident", Source = "source", Agent = "agent", Tool = "tool",
    Team = "team", System = "system",
});

string_enum!(RelationType: "relation type" {
    Uses = "uses", DependsOn = "depends_on", Contradicts = "contradicts",
    Supersedes = "supersedes", Supports = "supports", CausedBy = "caused_by",
    OwnedBy = "owned_by", DerivedFrom = "derived_from", SimilarTo = "similar_to",
    Blocks = "blocks", Implements = "implements", References = "references",
    // Written by vouch 1.x.
    Mentions = "mentions", RelatesTo = "relates_to",
});

string_enum!(PageType: "page type" {
    Entity = "entity", Concept = "concept", Decision = "decision", Workflow = "workflow",
    Session = "session", Index = "index", Log = "log", Report = "report",
    SourceSummary = "source-summary",
    // Written by vouch 1.x.
    Theme = "theme",
});

string_enum!(PageStatus: "page status" {
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
        !matches!(
            self,
            ClaimStatus::Superseded | ClaimStatus::Archived | ClaimStatus::Redacted
        )
    }
}
