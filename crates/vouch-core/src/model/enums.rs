//! The closed vocabularies of protocol §2. Each enum serializes as its
//! lowercase spec spelling; an unknown value is an error that lists the
//! allowed ones.

/// A vocabulary read strictly, as new input (params) must be.
pub trait Vocabulary: Sized {
    /// The value `s` names, or a message that lists the allowed ones.
    fn parse_or_explain(s: &str) -> Result<Self, String>;
}

/// What every vocabulary has: its names, strict parsing, and the
/// Display / Serialize / Vocabulary / JsonSchema impls (through `as_str`).
macro_rules! vocabulary_common {
    ($name:ident : $what:literal, open = $open:literal { $($var:ident = $s:literal),+ }) => {
        impl $name {
            /// Every value the vocabulary lists, in order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// How each of [`Self::ALL`] is spelled, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// What a value is called in messages (`claim status`).
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
    ($(#[$meta:meta])* $name:ident : $what:literal { $($(#[$vmeta:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $var),+ }

        impl $name {
            /// The spec's spelling, as files and params hold it.
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
    ($(#[$meta:meta])* $name:ident : $what:literal { $($(#[$vmeta:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $var,)+
            /// A value outside the vocabulary, as a file held it (kept on rewrite).
            Other(&'static str)
        }

        impl $name {
            /// The spelling a file holds: the spec's, or another writer's.
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

open_enum!(
    /// What kind of material a source is; `file` when not given.
    SourceType: "source type" {
    /// A file's bytes (the default).
    File = "file",
    /// A web page.
    Url = "url",
    /// A transcript of a conversation or recording.
    Transcript = "transcript",
    /// A message (chat, email).
    Message = "message",
    /// A version-control commit.
    Commit = "commit",
    /// An issue or ticket.
    Issue = "issue",
    /// A screenshot.
    Screenshot = "screenshot",
    /// A PDF document.
    Pdf = "pdf",
    /// An audio recording.
    Audio = "audio",
    /// A video recording.
    Video = "video",
    /// A folder of files.
    Folder = "folder",
});

string_enum!(
    /// Who a claim or source is meant for.
    Scope: "scope" {
    /// One person or agent (a knowledge file's `agents/`).
    Private = "private",
    /// This project (a knowledge file's `repos/`).
    Project = "project",
    /// The team, across projects (a knowledge file's `global/`).
    Team = "team",
    /// Anyone.
    Public = "public",
});

open_enum!(
    /// What kind of assertion a claim makes.
    ClaimType: "claim type" {
    /// Something that is so (a knowledge file's `fact`).
    Fact = "fact",
    /// A choice that was made.
    Decision = "decision",
    /// How someone wants things done.
    Preference = "preference",
    /// How to do something (a knowledge file's `pattern`).
    Workflow = "workflow",
    /// Something seen to happen (a knowledge file's `tool-quirk`).
    Observation = "observation",
    /// An open question.
    Question = "question",
    /// A pitfall to avoid (a knowledge file's `pitfall`).
    Warning = "warning",
});

open_enum!(
    /// Where a claim stands; [`ClaimStatus::is_current`] says which statuses
    /// context packs and answers may use.
    ClaimStatus: "claim status" {
    /// Approved, not yet settled: every approved claim starts here.
    Working = "working",
    /// Trusted enough to act on; ranks above `working`.
    Actionable = "actionable",
    /// Settled; ranks first in context packs.
    Stable = "stable",
    /// Contradicted by another claim (see `contradicts`); served, but marked.
    Contested = "contested",
    /// Superseded by a newer claim (see `superseded_by`).
    Superseded = "superseded",
    /// Retired by `kb.archive`: kept, no longer current.
    Archived = "archived",
    /// Withdrawn: no search, context pack or answer returns it.
    Redacted = "redacted",
});

open_enum!(
    /// What kind of thing an entity is.
    EntityType: "entity type" {
    /// A person.
    Person = "person",
    /// A project.
    Project = "project",
    /// A code repository.
    Repo = "repo",
    /// A company or organisation.
    Company = "company",
    /// An idea or notion.
    Concept = "concept",
    /// A decision.
    Decision = "decision",
    /// A way of doing a task.
    Workflow = "workflow",
    /// A file.
    File = "file",
    /// An API.
    Api = "api",
    /// An incident (an outage, a failure).
    Incident = "incident",
    /// A source of information.
    Source = "source",
    /// An agent.
    Agent = "agent",
    /// A tool.
    Tool = "tool",
    /// A team.
    Team = "team",
    /// A system.
    System = "system",
});

open_enum!(
    /// What a relation says, read `source relation target`.
    RelationType: "relation type" {
    /// `source` uses `target`.
    Uses = "uses",
    /// `source` depends on `target`.
    DependsOn = "depends_on",
    /// `source` contradicts `target`.
    Contradicts = "contradicts",
    /// `source` supersedes `target`.
    Supersedes = "supersedes",
    /// `source` supports `target`.
    Supports = "supports",
    /// `source` is caused by `target`.
    CausedBy = "caused_by",
    /// `source` is owned by `target`.
    OwnedBy = "owned_by",
    /// `source` is derived from `target`.
    DerivedFrom = "derived_from",
    /// `source` is similar to `target`.
    SimilarTo = "similar_to",
    /// `source` blocks `target`.
    Blocks = "blocks",
    /// `source` implements `target`.
    Implements = "implements",
    /// `source` references `target` (a knowledge file's `related`).
    References = "references",
    // Written by vouch 1.x.
    /// `source` mentions `target`.
    Mentions = "mentions",
    /// `source` relates to `target` (exported like `references`).
    RelatesTo = "relates_to",
});

open_enum!(
    /// What a page is for; `concept` when absent.
    PageType: "page type" {
    /// About one entity.
    Entity = "entity",
    /// Explains a concept (the default).
    Concept = "concept",
    /// Records a decision.
    Decision = "decision",
    /// Describes a way of doing a task.
    Workflow = "workflow",
    /// Sums up a work session (`kb.crystallize` proposes one).
    Session = "session",
    /// Lists other pages.
    Index = "index",
    /// A running log.
    Log = "log",
    /// A report.
    Report = "report",
    /// Sums up a source.
    SourceSummary = "source-summary",
    // Written by vouch 1.x.
    /// A theme page.
    Theme = "theme",
});

open_enum!(
    /// Where a page stands; `active` when absent.
    PageStatus: "page status" {
    /// Unfinished; ranks below active pages in context packs.
    Draft = "draft",
    /// Current: approval writes it.
    Active = "active",
    /// Possibly out of date; ranks below active pages in context packs.
    Stale = "stale",
    /// Retired by `kb.archive`: kept, left out of context packs and answers.
    Archived = "archived",
    /// Its body masked by a person's redaction (`vouch redact`): never
    /// served.
    Redacted = "redacted",
});

string_enum!(
    /// What a proposal asks for.
    ProposalKind: "proposal kind" {
    /// A new claim.
    Claim = "claim",
    /// A new page.
    Page = "page",
    /// A new entity.
    Entity = "entity",
    /// A new relation.
    Relation = "relation",
    // A lifecycle change an agent asked for under `review.gate_lifecycle`.
    /// A lifecycle change to approved knowledge, held for review.
    Lifecycle = "lifecycle",
    // `kb.propose_delete`'s (and vouch 1.x's) request to delete an
    // object: approving it removes the object's file.
    /// A request to delete an approved claim, page, entity or relation.
    Delete = "delete",
    /// A request to redact a source, evidence, claim or page
    /// (`kb.propose_redact`): approving it masks what it names.
    Redact = "redact",
});

string_enum!(
    /// The reviewed kinds a delete proposal may remove (`kb.propose_delete`).
    DeleteKind: "kind" {
    /// A claim.
    Claim = "claim",
    /// A page.
    Page = "page",
    /// An entity.
    Entity = "entity",
    /// A relation.
    Relation = "relation",
});

string_enum!(
    /// What a redaction may mask (`vouch redact`, `kb.propose_redact`).
    RedactKind: "kind" {
    /// A source: its content becomes a tombstone.
    Source = "source",
    /// A claim: its text is masked.
    Claim = "claim",
    /// Evidence: its quote goes.
    Evidence = "evidence",
    /// A page: its body is masked.
    Page = "page",
});

string_enum!(
    /// The kinds of object retrieval indexes and finds: what a search hit
    /// or a context item is.
    DocKind: "kind" {
    /// A claim.
    Claim = "claim",
    /// A page.
    Page = "page",
    /// An entity.
    Entity = "entity",
    /// A source.
    Source = "source",
});

string_enum!(
    /// Where a proposal stands in the review gate.
    ProposalStatus: "proposal status" {
    /// Awaiting a decision, in `proposed/`.
    Pending = "pending",
    /// Approved: its object is written; the record is in `decided/`.
    Approved = "approved",
    /// Rejected with a reason; the record is in `decided/`, nothing written.
    Rejected = "rejected",
});

string_enum!(
    /// Whether a session still takes proposals.
    SessionStatus: "session status" {
    /// Takes proposals.
    Open = "open",
    /// Ended by `kb.session_end`; takes no more proposals.
    Ended = "ended",
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
