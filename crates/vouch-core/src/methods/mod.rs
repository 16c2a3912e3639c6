//! The `kb.*` surface: one registry that every transport reads. Each method
//! is defined once — name, summary, agent-facing description, effect, typed
//! params and result with JSON Schemas — and dispatched from JSON here.
//! Adding a method is one entry in [`REGISTRY`].

use crate::error::{Error, ErrorKind, Result};
use crate::kb::{Caller, Kb};
use crate::model::{Claim, Entity, Evidence, Proposal, Relation, Session, Source};
use crate::params::*;
use crate::review::{gate, lifecycle, sessions};
use crate::{health, reads, sources};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::OnceLock;

mod limits;
mod schema;

pub use limits::check_limits;
pub use schema::{STANDARD_FORMATS, portable};
use schema::{result_schema, schema};

/// What a method does to the knowledge base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Reads only.
    Read,
    /// Records captured material or metadata (sources, evidence, sessions,
    /// lifecycle); audited, not gated.
    Write,
    /// Creates a pending proposal; nothing becomes knowledge until reviewed.
    Propose,
    /// Decides proposals (approve / reject).
    Review,
    /// Maintenance (index, bundles, health).
    Admin,
}

/// One registry entry: a `kb.*` method as the wire sees it, JSON in and
/// JSON out.
pub struct Method {
    /// The wire name (`kb.search`).
    pub name: &'static str,
    /// A few words for a host's tool list.
    pub title: &'static str,
    /// Calling it again with the same params has no further effect.
    pub idempotent: bool,
    /// It may replace something that exists (a file at a given path);
    /// every other write only adds.
    pub destructive: bool,
    /// One line, for catalogs.
    pub summary: &'static str,
    /// For agents: when to use it, and what review it needs.
    pub description: &'static str,
    /// What it does to the knowledge base.
    pub effect: Effect,
    /// Called by the person (the command line), it decides what agents
    /// read without another review: approve and reject, the lifecycle
    /// changes, a bundle import. From a gated agent it is refused or
    /// becomes a proposal. A host keeps its agent from running these as
    /// the person (`vouch install-mcp claude-code`'s deny rules).
    pub decides: bool,
    /// The JSON Schema of its params.
    pub params_schema: fn() -> Value,
    /// The JSON Schema of its result, as serialized.
    pub result_schema: fn() -> Value,
    /// Decode the params, call the method, encode the result.
    pub call: fn(&Kb, &Caller, Value) -> Result<Value>,
}

impl Method {
    /// MCP tool name: dots become underscores (`kb.search` → `kb_search`).
    pub fn tool_name(&self) -> String {
        self.name.replace('.', "_")
    }
}

/// Decode params: `null` means `{}`; top-level `null` values count as absent
/// (so a required param given as null is `missing_param`); unknown keys and
/// wrong types are `invalid_request` naming the field.
pub fn decode<P: DeserializeOwned>(params: Value) -> Result<P> {
    let mut params = match params {
        Value::Null => Value::Object(Default::default()),
        v @ Value::Object(_) => v,
        other => {
            return Err(Error::invalid(format!(
                "params must be a JSON object, not {}",
                json_type(&other)
            )));
        }
    };
    if let Value::Object(m) = &mut params {
        m.retain(|_, v| !v.is_null());
    }
    serde_json::from_value(params).map_err(|e| {
        let msg = e.to_string();
        match msg.strip_prefix("missing field `") {
            Some(rest) => Error::missing(rest.split('`').next().unwrap_or(rest)),
            None => Error::invalid(format!("invalid params: {msg}")),
        }
    })
}

/// What kind of JSON value `v` is, for messages (`a string`, `an object`).
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn encode<R: Serialize>(r: R) -> Result<Value> {
    serde_json::to_value(r).map_err(|e| Error::internal(format!("result encoding: {e}")))
}

/// A method as a type: its name, typed params and typed result. The CLI
/// and in-process callers use it to call with params they built and to
/// get the result back as its type (`methods::call::<kb::Search>(…)`);
/// the wire reaches the same function through [`dispatch`].
pub trait Call {
    /// The wire name (`kb.search`).
    const NAME: &'static str;
    /// What the method accepts.
    type Params: DeserializeOwned + JsonSchema + 'static;
    /// What it returns.
    type Output: Serialize + JsonSchema;
    /// Run the method as `caller`.
    fn call(kb: &Kb, caller: &Caller, params: Self::Params) -> Result<Self::Output>;
}

/// Call a method with typed params, as a person's command does: no agent
/// request limits (those guard what crosses a transport, see [`dispatch`]).
pub fn call<M: Call>(kb: &Kb, caller: &Caller, params: M::Params) -> Result<M::Output> {
    before_dispatch(kb, M::NAME, backend_of(&params));
    M::call(kb, caller, params)
}

/// In a process without a background keeper (a one-shot command, a
/// library caller), the keeper's explicit step before a method runs:
/// the index caught up with the files when its last catch-up is older
/// than the sync interval, and — for a read by meaning — the vectors
/// within a search's budget. Methods themselves never catch up: a read
/// writes nothing ([`crate::index::keeper`]).
fn before_dispatch(kb: &Kb, name: &str, backend: Option<&str>) {
    let options = kb.index().options();
    // A rebuild builds (or, on what this process just built, catches up)
    // itself; the doctor first looks at how far the index is from the
    // files, then catches up.
    if options.upkeep == crate::index::IndexUpkeep::Background
        || name == "kb.index_rebuild"
        || name == "kb.doctor"
        || !reads_the_index(kb, name)
    {
        return;
    }
    let words = kb
        .index()
        .caught_up_at()
        .is_none_or(|at| at.elapsed() >= options.sync_interval);
    let vectors = reads_by_meaning(kb, name, backend)
        .then_some(crate::index::SEARCH_BUDGET)
        .filter(|_| kb.embedder().is_some());
    // A catch-up that cannot run (another process holds `state.db`) is a
    // warning: each read then answers as it can (a search by words from
    // the files), and a write never needs it.
    let caught = if words {
        kb.catch_up(vectors).map(|_| ())
    } else if let (Some(within), Some(embedder)) = (vectors, kb.embedder()) {
        kb.index()
            .embed(
                kb,
                embedder,
                crate::index::Budget::Until(std::time::Instant::now() + within),
                false,
                &mut |_, _| {},
            )
            .map(|_| ())
    } else {
        Ok(())
    };
    if let Err(e) = caught {
        kb.warn(format!("index: not brought in step with the files: {e}"));
    }
    // The review queue names near-duplicates by the vectors made here.
    if name == "kb.list_pending"
        && let Err(e) = kb.embed_pending_proposals()
    {
        kb.warn(format!("review queue: proposals not embedded: {e}"));
    }
}

/// Whether method `name` reads the derived index at all: these work on
/// the files alone (capturing sources and evidence, sessions, proposals
/// that check nothing by meaning, a rejection, checks of a folder or a
/// bundle), and a one-shot command running them pays no catch-up.
fn reads_the_index(kb: &Kb, name: &str) -> bool {
    match name {
        "kb.register_source"
        | "kb.register_source_from_path"
        | "kb.register_evidence"
        | "kb.session_start"
        | "kb.session_end"
        | "kb.propose_page"
        | "kb.propose_entity"
        | "kb.propose_relation"
        | "kb.reject"
        | "kb.capabilities"
        | "kb.knowledge_validate"
        | "kb.export_check" => false,
        // Near-duplicates by meaning, with a model only.
        "kb.propose_claim" => kb.embedder().is_some(),
        _ => true,
    }
}

/// Whether method `name` (asked for `backend`, if it says) reads by
/// meaning — so a one-shot catch-up embeds what is new before it runs.
/// A proposed claim and the review queue name near-duplicates by meaning.
fn reads_by_meaning(kb: &Kb, name: &str, backend: Option<&str>) -> bool {
    let semantic = |b: &str| matches!(b, "embedding" | "hybrid" | "auto");
    let configured = matches!(
        kb.settings().retrieval.backend,
        crate::settings::RetrievalBackend::Embedding | crate::settings::RetrievalBackend::Hybrid
    );
    match name {
        "kb.propose_claim" | "kb.list_pending" | "kb.knowledge_import" => true,
        // Hybrid by default when a model is installed.
        "kb.synthesize" => backend.is_none_or(semantic),
        "kb.search" | "kb.context" | "kb.recall" | "kb.eval" => {
            backend.map_or(configured, semantic)
        }
        _ => false,
    }
}

/// The backend typed params ask for, where the method takes one.
fn backend_of<P: 'static>(params: &P) -> Option<&str> {
    let any = params as &dyn std::any::Any;
    if let Some(p) = any.downcast_ref::<crate::retrieval::SearchParams>() {
        return p.backend.as_deref();
    }
    if let Some(p) = any.downcast_ref::<crate::retrieval::eval::EvalParams>() {
        return p.backend.as_deref();
    }
    any.downcast_ref::<crate::answer::SynthesizeParams>()
        .and_then(|p| p.backend.as_deref())
}

/// Call a method with typed params for a caller who reached it over a
/// transport (the review pages): an agent's params meet the request
/// limits [`dispatch`] applies on the wire, a person's do not.
pub fn call_over_transport<M: Call>(
    kb: &Kb,
    caller: &Caller,
    params: M::Params,
) -> Result<M::Output>
where
    M::Params: Serialize,
{
    if caller.is_agent() {
        let value = serde_json::to_value(&params)
            .map_err(|e| Error::internal(format!("params encoding: {e}")))?;
        check_limits(&kb.settings().limits, M::NAME, &value)?;
    }
    before_dispatch(kb, M::NAME, backend_of(&params));
    M::call(kb, caller, params)
}

/// Wire adapter: decode params, call, encode the result.
fn run<M: Call>(kb: &Kb, caller: &Caller, params: Value) -> Result<Value> {
    encode(M::call(kb, caller, decode(params)?)?)
}

/// Whether a registry entry carries `+ mark` (`const`: the registry is a
/// static).
const fn marked(marks: &[&str], mark: &str) -> bool {
    let mut i = 0;
    while i < marks.len() {
        let (a, b) = (marks[i].as_bytes(), mark.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// The registry: for each method, a type in [`kb`] implementing [`Call`]
/// and one [`Method`] entry in [`REGISTRY`].
macro_rules! registry {
    ($($ty:ident: $name:literal, $effect:ident $(+ $mark:ident)*, $p:ty => $r:ty, $title:literal, $summary:literal, $desc:literal, $f:expr;)+) => {
        /// One type per `kb.*` method (`kb::Search` is `kb.search`), for
        /// typed calls through [`call`].
        pub mod kb {
            $(
                #[doc = concat!("`", $name, "`: ", $summary)]
                pub struct $ty;
            )+
        }

        $(
            impl Call for kb::$ty {
                const NAME: &'static str = $name;
                type Params = $p;
                type Output = $r;
                fn call(kb: &Kb, caller: &Caller, params: $p) -> Result<$r> {
                    let f: fn(&Kb, &Caller, $p) -> Result<$r> = $f;
                    let result = f(kb, caller, params);
                    if !matches!(Effect::$effect, Effect::Read) && result.is_ok() {
                        // Its lock released: what it wrote gets into the
                        // index's memory and its vectors before it returns,
                        // so searches only read.
                        kb.write_returned();
                    }
                    result
                }
            }
        )+

        /// Every `kb.*` method, one entry each, in the order catalogs list them.
        pub static REGISTRY: &[Method] = &[$(
            Method {
                name: $name,
                title: $title,
                // Reads change nothing; a write marked `+ idempotent`
                // changes nothing when repeated with the same params.
                idempotent: matches!(Effect::$effect, Effect::Read)
                    || marked(&[$(stringify!($mark)),*], "idempotent"),
                destructive: marked(&[$(stringify!($mark)),*], "destructive"),
                summary: $summary,
                description: $desc,
                effect: Effect::$effect,
                decides: matches!(Effect::$effect, Effect::Review)
                    || marked(&[$(stringify!($mark)),*], "decides"),
                params_schema: schema::<$p>,
                result_schema: result_schema::<$r>,
                call: run::<kb::$ty>,
            },
        )+];
    };
}

static TRANSPORTS: OnceLock<Vec<&'static str>> = OnceLock::new();

/// The app declares the transports it really serves, for `kb.capabilities`.
pub fn set_transports(list: &[&'static str]) {
    let _ = TRANSPORTS.set(list.to_vec());
}

/// What `kb.capabilities` answers.
#[derive(Serialize, JsonSchema)]
pub struct Capabilities {
    /// Always `vouch`.
    pub name: String,
    /// The version of vouch serving.
    pub version: String,
    /// The protocol implemented: `vouch-0.1`.
    pub spec: String,
    /// Every method's name, in registry order.
    pub methods: Vec<String>,
    /// Backends that work right now (`embedding` and `hybrid` only with a
    /// model installed).
    pub retrieval: Vec<String>,
    /// What `retrieval.backend` asks for and what answers.
    pub retrieval_state: crate::retrieval::backend::RetrievalState,
    /// Always true: agents propose, people approve.
    pub review_gated: bool,
    /// The transports this build serves, as the app declared them (none
    /// when it declared none).
    pub transports: Vec<String>,
    /// What kind of knowledge store this is.
    pub knowledge_capability: KnowledgeCapability,
}

/// What kind of knowledge store this is, for hosts that compare memories.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct KnowledgeCapability {
    /// Always `local-cited-review-gated-kb`.
    pub kind: String,
    /// Claims cite stored sources and spans.
    pub stores_evidence: bool,
    /// Every mutation is in a hash-chained log.
    pub audit_log: bool,
}

/// `kb.capabilities`: what this server implements.
pub fn capabilities(kb: &Kb) -> Capabilities {
    let state = crate::retrieval::backend::RetrievalState::of(kb);
    Capabilities {
        name: "vouch".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        spec: "vouch-0.1".into(),
        methods: REGISTRY.iter().map(|m| m.name.to_string()).collect(),
        retrieval: state.available.iter().map(|s| s.to_string()).collect(),
        retrieval_state: state,
        review_gated: true,
        transports: TRANSPORTS
            .get()
            .map(|t| t.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default(),
        knowledge_capability: KnowledgeCapability {
            kind: "local-cited-review-gated-kb".into(),
            stores_evidence: true,
            audit_log: true,
        },
    }
}

/// `kb.approve` answers one result for one id, or a list for many.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ApproveOutput {
    /// The result for one proposal id.
    One(ApproveResult),
    /// The results for a list of ids.
    Many {
        /// Always true: bulk approval is all or nothing, so a refusal is an
        /// error, not a result.
        ok: bool,
        /// One result per proposal listed.
        approved: Vec<ApproveResult>,
    },
}

fn approve(kb: &Kb, caller: &Caller, p: ApproveParams) -> Result<ApproveOutput> {
    let many = matches!(p.proposal_id, OneOrMany::Many(_));
    let mut results = gate::approve(kb, caller, p)?;
    Ok(if many {
        ApproveOutput::Many {
            ok: true,
            approved: results,
        }
    } else {
        ApproveOutput::One(results.remove(0))
    })
}

registry! {
    Capabilities: "kb.capabilities", Read, NoParams => Capabilities,
        "Server capabilities",
        "What this server implements: methods, retrieval backends, transports.",
        "Describe this vouch server: the kb.* methods it implements, its retrieval backends and transports. review_gated is always true: agents propose, people approve.",
        |kb, _, _| Ok(capabilities(kb));
    Status: "kb.status", Read, NoParams => StatusResult,
        "Knowledge base status",
        "Counts of durable objects, pending proposals and the last audit time.",
        "Overview of the knowledge base: how many claims, pages, sources, entities and relations are approved, how many proposals await review, and when the last change happened. Cheap; call it first.",
        |kb, _, _| reads::status(kb);
    ReadClaim: "kb.read_claim", Read, IdParams => Option<Read<Claim>>,
        "Read a claim",
        "One claim by id, or null.",
        "Read one approved claim (text, status, confidence, evidence ids). Returns null when no such claim exists.",
        |kb, _, p| reads::read::<Claim>(kb, p);
    ReadPage: "kb.read_page", Read, IdParams => Option<Read<PageWithBody>>,
        "Read a page",
        "One page (frontmatter and markdown body) by id, or null.",
        "Read one approved page with its markdown body. Returns null when no such page exists.",
        |kb, _, p| reads::read_page(kb, p);
    ReadEntity: "kb.read_entity", Read, IdParams => Option<Read<Entity>>,
        "Read an entity",
        "One entity by id, or null.",
        "Read one approved entity (a typed named thing). Returns null when missing.",
        |kb, _, p| reads::read::<Entity>(kb, p);
    ReadRelation: "kb.read_relation", Read, IdParams => Option<Read<Relation>>,
        "Read a relation",
        "One relation by id, or null.",
        "Read one approved relation (a typed edge between entities). Returns null when missing.",
        |kb, _, p| reads::read::<Relation>(kb, p);
    ReadSource: "kb.read_source", Read, IdParams => Option<Read<Source>>,
        "Read a source",
        "One source's metadata by sha256 id, or null.",
        "Read a registered source's metadata (locator, title, size). Returns null when missing.",
        |kb, _, p| reads::read_source(kb, p);
    ReadEvidence: "kb.read_evidence", Read, IdParams => Option<Read<Evidence>>,
        "Read evidence",
        "One evidence span by id, or null.",
        "Read an evidence record: the source it points into, the line locator and the quoted text. Returns null when missing.",
        |kb, _, p| reads::read::<Evidence>(kb, p);
    ReadSession: "kb.read_session", Read, IdParams => Option<Read<Session>>,
        "Read a session",
        "One session record by id, or null.",
        "Read a session: its task, status and the proposals made in it. Returns null when missing.",
        |kb, _, p| reads::read::<Session>(kb, p);
    ReadProposal: "kb.read_proposal", Read, IdParams => Option<Read<Proposal>>,
        "Read a proposal",
        "One proposal (pending or decided) by id, or null.",
        "Read a proposal wherever it is (pending or decided), with its payload, status and resolved citations. Returns null when missing.",
        |kb, _, p| reads::read_proposal(kb, p);
    ListClaims: "kb.list_claims", Read, ListParams => Vec<Read<Claim>>,
        "List claims",
        "Approved claims, sorted by id; limit, offset, filter by field equality.",
        "List approved claims. limit (default 100), offset, and filter by field equality such as {\"status\": \"stable\"}.",
        |kb, _, p| reads::list::<Claim>(kb, p);
    ListPages: "kb.list_pages", Read, ListParams => Vec<Read<PageWithBody>>,
        "List pages",
        "Approved pages, sorted by id.",
        "List approved pages with their bodies. limit (default 100), offset, filter.",
        |kb, _, p| reads::list_pages(kb, p);
    ListEntities: "kb.list_entities", Read, ListParams => Vec<Read<Entity>>,
        "List entities",
        "Approved entities, sorted by id.",
        "List approved entities. limit (default 100), offset, filter such as {\"type\": \"person\"}.",
        |kb, _, p| reads::list::<Entity>(kb, p);
    ListRelations: "kb.list_relations", Read, ListParams => Vec<Read<Relation>>,
        "List relations",
        "Approved relations, sorted by id.",
        "List approved relations. limit (default 100), offset, filter such as {\"source\": \"<id>\"}, or {\"end\": \"<id>\"} for relations touching an object at either end.",
        |kb, _, p| reads::list::<Relation>(kb, p);
    ListSources: "kb.list_sources", Read, ListParams => Vec<Read<Source>>,
        "List sources",
        "Registered sources, sorted by id.",
        "List registered sources' metadata. limit (default 100), offset, filter.",
        |kb, _, p| reads::list_sources(kb, p);
    ListEvidence: "kb.list_evidence", Read, ListParams => Vec<Read<Evidence>>,
        "List evidence",
        "Evidence spans, sorted by id.",
        "List evidence records (quoted spans of sources). limit (default 100), offset, filter such as {\"source_id\": \"...\"}.",
        |kb, _, p| reads::list::<Evidence>(kb, p);
    ListSessions: "kb.list_sessions", Read, ListParams => Vec<Read<Session>>,
        "List sessions",
        "Sessions, sorted by id (chronological).",
        "List agent sessions. limit (default 100), offset, filter such as {\"status\": \"open\"}.",
        |kb, _, p| reads::list::<Session>(kb, p);
    ListPending: "kb.list_pending", Read, ListParams => Vec<Read<Proposal>>,
        "List pending proposals",
        "Proposals awaiting review, oldest first, with what each cites.",
        "List proposals awaiting human review, oldest first. Each item carries _meta.citations: the sources and quoted spans it cites, and, with a local embedding model, _meta.possible_duplicates: current approved claims almost the same in meaning (cosine >= 0.95). Pending proposals are not knowledge yet.",
        |kb, _, p| reads::list_pending(kb, p);
    RegisterSource: "kb.register_source", Write + idempotent, RegisterSourceParams => RegisterSourceResult,
        "Register a source",
        "Capture text content as a source (id = sha256; idempotent).",
        "Capture source material (a document, message, transcript) so claims can cite it. The id is the sha256 of the content; registering the same content again returns the same id with deduplicated: true. Not gated (sources are evidence, not assertions) but audited.",
        sources::register_source;
    RegisterSourceFromPath: "kb.register_source_from_path", Write + idempotent, RegisterSourceFromPathParams => RegisterSourceResult,
        "Register a project file as a source",
        "Capture a file inside the project as a source.",
        "Capture a regular file inside the project (absolute or project-relative path). Paths leading outside the project (including through symlinks), directories, devices and files over the size limit are refused.",
        sources::register_source_from_path;
    SourceVerify: "kb.source_verify", Read, SourceVerifyParams => SourceVerifyResult,
        "Verify sources",
        "Re-hash stored source content; report missing or drifted sources.",
        "Check that stored source content still hashes to its id. Omit id to check every source. Reports missing and drifted content.",
        |kb, _, p| sources::source_verify(kb, p);
    RegisterEvidence: "kb.register_evidence", Write + idempotent, RegisterEvidenceParams => RegisterEvidenceResult,
        "Register quoted evidence",
        "Locate an exact quote in a source and mint citable Evidence for it.",
        "Cite a span rather than a whole source: give a source id and an exact quote; vouch finds the quote in the stored content, records its line range and sha256, and returns an evidence id a claim can cite. A quote not in the source is refused. Same quote twice gives the same id.",
        sources::register_evidence;
    ProposeClaim: "kb.propose_claim", Propose, ProposeClaimParams => ProposeResult,
        "Propose a claim",
        "Propose a cited claim for human review.",
        "Propose a one-sentence claim. It must cite evidence: source ids, evidence ids, or {\"source_id\", \"quote\"} spans (located and minted on write). The claim is NOT knowledge until a person (or a configured trusted agent other than you) approves it. Returns valid: false with every problem listed when it cannot be accepted; dry_run: true validates without writing. With a local embedding model, _meta.possible_duplicates lists approved claims that say almost the same (cosine >= 0.95): prefer citing or superseding them over a near copy. supersedes: [claim ids] proposes a correction: approving it marks those claims superseded by the new one.",
        gate::propose_claim;
    ProposePage: "kb.propose_page", Propose, ProposePageParams => ProposeResult,
        "Propose a page",
        "Propose a markdown page for human review.",
        "Propose a maintained markdown page (concept, decision, workflow, ...) that may reference approved claims, entities and sources. Pending until a reviewer approves it. dry_run: true validates only.",
        gate::propose_page;
    ProposeEntity: "kb.propose_entity", Propose, ProposeEntityParams => ProposeResult,
        "Propose an entity",
        "Propose a typed named entity for human review.",
        "Propose an entity (person, project, repo, api, ...). Pending until a reviewer approves it. dry_run: true validates only.",
        gate::propose_entity;
    ProposeRelation: "kb.propose_relation", Propose, ProposeRelationParams => ProposeResult,
        "Propose a relation",
        "Propose a typed edge between two approved objects.",
        "Propose a relation (uses, depends_on, supersedes, supports, references, mentions, relates_to, ...) between two existing objects — claims, entities, pages, relations, evidence or sources — optionally citing evidence. Pending until a reviewer approves it. dry_run: true validates only.",
        gate::propose_relation;
    ProposeDelete: "kb.propose_delete", Propose, ProposeDeleteParams => ProposeResult,
        "Propose a delete",
        "Propose removing an approved claim, page, entity or relation, for human review.",
        "Ask for an approved claim, page, entity or relation to be removed: kind, id and a reason. Nothing is removed until a person (or a reviewer the person named) approves it with kb.approve; approving removes the object's file, and the audit log and the decided record keep its path and sha256, never its content. Refused (valid: false, the errors naming them) while other objects refer to it: prefer kb.supersede or kb.archive, which keep the history. Earlier git commits still hold what a delete removes (docs/redaction.md). dry_run: true validates only.",
        gate::propose_delete;
    ProposeRedact: "kb.propose_redact", Propose, RedactParams => ProposeResult,
        "Propose a redaction",
        "Ask a person to redact what holds a secret: a source's content, a claim's text, a quote, a page's body.",
        "Ask for a source, evidence, claim or page that holds a secret (a key, a token, a password) to be redacted: kind, id and a reason (never the secret itself). Nothing changes until a person (or a reviewer the person named) approves it with kb.approve. Approving it turns a source's content into a tombstone that keeps its id and length (evidence quoting it loses the quote; claims citing it stay, shown as evidence redacted), masks a claim's text or a page's body (status redacted) and drops them from search, context, synthesis, recall, exports and bundles; the audit log records the sha256 of what was removed, never the bytes. Earlier git commits still hold the bytes until a person purges them (docs/redaction.md). Refused when the object does not exist or is redacted already. dry_run: true checks only.",
        gate::propose_redact;
    Approve: "kb.approve", Review + idempotent, ApproveParams => ApproveOutput,
        "Approve proposals",
        "Approve one or many pending proposals, writing durable knowledge.",
        "Approve pending proposals (one id, or a list approved all-or-nothing). Validation runs again. On agent transports only a reviewer the person named in their own config (review.reviewers) may approve, and approver may only be the caller's own actor (naming someone else is refused); nobody approves their own proposal. A proposal edited after it was proposed (it no longer matches its proposal.create fingerprint) is refused. Writes the durable artifact and an audit event.",
        approve;
    Reject: "kb.reject", Review + idempotent, RejectParams => OkResult,
        "Reject a proposal",
        "Reject a pending proposal with a reason.",
        "Reject a pending proposal; a reason is required and recorded. On agent transports only a reviewer the person named in their own config (review.reviewers) may reject. Nothing durable is written; the proposal moves to decided/.",
        gate::reject;
    Expire: "kb.expire", Review, ExpireParams => ExpireResult,
        "Expire stale proposals",
        "A person rejects proposals pending longer than an age, with a recorded reason; a dry run by default.",
        "Reject every proposal pending longer than older_than (30d, 12h, 2w), oldest first, each through kb.reject with the reason given (default `expired: pending longer than <older_than>`), so each is audited and moved to decided/. dry_run defaults to true: it lists what would be rejected and rejects nothing; pass dry_run: false to reject. A person's decision: refused over agent transports unless the person's own config trusts agents.",
        crate::insight::expire;
    Redact: "kb.redact", Write + destructive + decides, RedactParams => RedactResult,
        "Redact a secret",
        "A person redacts what holds a secret: a source's content, a claim's text, a quote, a page's body.",
        "Redact, as a person, a source (its content becomes a tombstone that keeps its id, length and who/when/why; evidence quoting it loses the quote), evidence (its quote goes), a claim (its text is masked, status redacted) or a page (its body is masked): the bytes leave the working tree and the index, and the decided record of its approval is masked too. The audit event (object.redact) records each file it rewrote or removed with the sha256 of what it took out, never the bytes; `purge` lists the paths whose earlier git commits still hold them (docs/redaction.md: purge them, then rotate the credential). Over an agent transport it is refused (unless the person's own config trusts agents): propose it with kb.propose_redact. dry_run: true reports what would go and writes nothing.",
        gate::redact;
    Supersede: "kb.supersede", Write + decides, SupersedeParams => LifecycleResult,
        "Supersede a claim",
        "Mark an approved claim as superseded by a newer one.",
        "Record that approved claim new_id replaces old_id: old becomes superseded (and leaves context packs). Self-supersession and cycles are refused. Audited.",
        lifecycle::supersede;
    Contradict: "kb.contradict", Write + decides, ContradictParams => LifecycleResult,
        "Mark a contradiction",
        "Mark two approved claims as contradicting each other.",
        "Record that two approved claims contradict each other (symmetric); both become contested unless superseded or archived. Audited.",
        lifecycle::contradict;
    Archive: "kb.archive", Write + decides, ArchiveParams => LifecycleResult,
        "Archive an object",
        "Archive an approved claim or page.",
        "Archive an approved claim or page: it stays on disk for history but leaves search context packs. Audited; kb.revert undoes it. Like every lifecycle change, under review.gate_lifecycle an agent's call becomes a pending proposal (result proposal_id) instead.",
        lifecycle::archive;
    Confirm: "kb.confirm", Write + decides, IdParams => LifecycleResult,
        "Confirm a claim",
        "Record that an approved claim was re-checked now.",
        "Set a claim's last_confirmed_at to now, after checking it still holds. Audited.",
        lifecycle::confirm;
    Cite: "kb.cite", Write + decides, CiteParams => LifecycleResult,
        "Add a citation",
        "Add a citation to an approved claim.",
        "Append a source id, evidence id or {\"source_id\", \"quote\"} span to an approved claim's evidence (idempotent). From an agent it is a lifecycle proposal (proposal_id in the result): the cited text reaches context packs only after a person approves it. Audited.",
        lifecycle::cite;
    Revert: "kb.revert", Write + decides, RevertParams => LifecycleResult,
        "Revert a lifecycle change",
        "Undo a lifecycle change (supersede, contradict, archive, confirm, cite, revert).",
        "Put back the lifecycle state that event event_id changed, as that event recorded it. Refused if an object changed again since (revert the later change first). Audited as lifecycle.revert, itself revertible. kb.lifecycle_changes lists the event ids.",
        lifecycle::revert;
    LifecycleChanges: "kb.lifecycle_changes", Read, LifecycleChangesParams => Vec<LifecycleChange>,
        "Recent lifecycle changes",
        "Recent lifecycle changes made by agents, not yet reverted.",
        "Lifecycle changes (supersede, contradict, archive, confirm, cite, revert) made over agent transports in the last days (default 7) and not reverted, newest first, with their event ids for kb.revert. all: true includes command-line changes.",
        |kb, _, p| lifecycle::recent_changes(kb, p);
    SessionStart: "kb.session_start", Write, SessionStartParams => SessionStartResult,
        "Start a session",
        "Open a work session to group proposals.",
        "Start a session for a task; pass its session_id to propose_* calls so kb.crystallize can summarise what the session produced.",
        sessions::start;
    SessionEnd: "kb.session_end", Write + idempotent, SessionIdParams => SessionEndResult,
        "End a session",
        "Close a session.",
        "End a session; returns how many proposals it produced.",
        sessions::end;
    Crystallize: "kb.crystallize", Propose, CrystallizeParams => CrystallizeResult,
        "Crystallize a session",
        "Propose a session-summary page and flag promotable claims.",
        "Summarise a session into a session page proposal (pending review) listing what was approved, what awaits review and what was rejected, and flag the session's pending claim proposals for a reviewer.",
        sessions::crystallize;
    Audit: "kb.audit", Read, AuditParams => Vec<AuditRecord>,
        "Read the audit log",
        "Audit events, oldest first; tail and filter by event, actor or object.",
        "Read the hash-chained audit log: every mutation with actor and time. tail: only the last N; filter: {event, actor, object} (object: events naming that id — a claim's history).",
        |kb, _, p| reads::audit(kb, p);
    AuditVerify: "kb.audit_verify", Read, NoParams => crate::audit::VerifyReport,
        "Verify the audit log",
        "Verify the audit log's hash chain; name the first bad line.",
        "Check the audit log's hash chain. Reports the first edited, reordered, deleted or truncated line.",
        |kb, _, _| kb.audit_log().verify();
    Why: "kb.why", Read, ObjectParams => WhyResult,
        "Why an object is there",
        "The whole story of an object: proposal, proposer, approver, citations with quotes, supersession chain, audit events.",
        "Tell how a claim, page, entity, relation, evidence record or source came to be, in one read: the object; the proposals that made or changed it (proposer, when, who decided, when, the reason); what it cites, resolved with the quoted text; a claim's supersession and contradiction chain; every audit event naming it or its proposals, oldest first; and unaudited: true when its file is not what an approval wrote (edited by hand). kind disambiguates an id two kinds share. An id nothing holds is not_found; an id with path characters is refused. Reads only.",
        |kb, _, p| crate::insight::why(kb, p);
    Impact: "kb.impact", Read, ObjectParams => ImpactResult,
        "What rests on an object",
        "What cites a source or evidence, what supersedes or contradicts a claim, the pages and relations naming it.",
        "List every stored object that refers to a claim, page, entity, relation, evidence record or source, with how: claims that cite it (directly or through evidence quoting a source), supersede, are superseded by, contradict or are about it; pages that draw on, are about or cite it; relations that start from, point to or cite it; evidence quoting a source. The same finder the reviewed delete uses to refuse removing what others rest on. Reads only.",
        |kb, _, p| crate::insight::impact(kb, p);
    Neighbors: "kb.neighbors", Read, NeighborsParams => NeighborsResult,
        "Neighbors of a node",
        "Entities, claims, pages and relations around a node, 1 to 3 hops out.",
        "Walk the knowledge graph breadth first from an id, depth 1 to 3 hops (default 1): relations in either direction, claims and pages naming an entity (about), pages drawing on a claim (draws_on). Returns the nodes reached (id, kind, label, depth) and the edges among them; at most limit nodes (default 100, max 1000), truncated: true when cut. Reads only.",
        |kb, _, p| crate::insight::neighbors(kb, p);
    GateStats: "kb.gate_stats", Read, GateStatsParams => GateStats,
        "Review gate statistics",
        "Queue size and age, proposals and decisions by agent and reviewer, approval rates, median time to decision.",
        "How the review gate fares: the pending queue (size, oldest and its age, median age), and over a window (since: an RFC 3339 time or an age such as 30d; default all time) the proposals made, approvals and rejections, approval and rejection rates, the median time from proposal to decision, by proposing agent and by reviewer. Read from the pending queue (proposed/, or a team server's database) and decided/. Reads only.",
        |kb, _, p| crate::insight::gate_stats(kb, p);
    Search: "kb.search", Read, crate::retrieval::SearchParams => Vec<crate::retrieval::SearchHit>,
        "Search knowledge",
        "Full-text search over approved claims, pages, entities and sources.",
        "Search approved knowledge (never pending proposals). query is plain words: any text is accepted, operators are treated as words. limit (default 10, max 1000); kinds narrows to claim, page, entity, source. Each hit has kind, id, snippet (plain text), highlights (the matched words in snippet as [start, end) character offsets), score and backend.",
        |kb, _, p| crate::retrieval::search(kb, p);
    Context: "kb.context", Read, crate::retrieval::pack::ContextParams => crate::retrieval::pack::ContextPack,
        "Context pack for a task",
        "A context pack for a task: current approved knowledge with citations, within a character budget.",
        "Use at the start of a task to load what the knowledge base already knows about it. Returns only current approved claims and pages (never pending, superseded, archived or redacted), ranked by relevance then trust (stable over working; contested ones are marked with what they contradict), each with its citations (source ids and quoted spans). `text` is ready to paste into a prompt and never exceeds max_chars (default 4000); `omitted` and `gaps` say what was left out and why. require_citations drops uncited items; min_items reports whether enough was found.",
        |kb, _, p| crate::retrieval::pack::context(kb, p);
    Recall: "kb.recall", Read, crate::answer::recall::RecallParams => crate::answer::recall::RecallResult,
        "Recall what is known",
        "A session-start digest: pending review (counts, ids), recently approved and superseded, the task's context.",
        "Call at the start of a session to catch up: how many proposals wait for review (ids only; their text is unreviewed and not knowledge), claims approved and superseded lately, and — with task — the context pack for it. `text` is ready to paste into a prompt and never exceeds max_chars (default 4000).",
        |kb, _, p| crate::answer::recall::recall(kb, p);
    Synthesize: "kb.synthesize", Propose, crate::answer::SynthesizeParams => crate::answer::Synthesis,
        "Answer from approved claims",
        "Answer a question only from current approved claims: every sentence cited, gaps named.",
        "Answer a question from the knowledge base without guessing. `answer` is markdown built only from current approved claims (never pending, superseded, archived or redacted), one paragraph per topic, every sentence ending in its [claim-id] citations; `sentences` and `citations` (each claim with its status, confidence and quoted evidence) let you check it; `gaps` lists what the question asks that no approved claim covers — say so rather than fill it in. When approved claims disagree the answer says `Sources disagree:` and cites both. `_meta.synthesis_confidence` is high (all stable), medium (some working) or low (contested, disagreement, or no answer). An uncovered question returns an empty answer and populated gaps. mode llm (only if the person running vouch configured a command) rewords it, keeping only sentences that cite offered claims in their words. propose_page: true files the answer as a page proposal for review.",
        crate::answer::synthesize;
    KnowledgeValidate: "kb.knowledge_validate", Read, crate::interop::knowledge::ValidateParams => crate::interop::knowledge::ValidateReport,
        "Validate knowledge files",
        "Check a knowledge folder (index.json + YAML fact files; docs/knowledge.md) against every rule of the format.",
        "Validate a knowledge folder in the project: index.json's shape, every fact's fields, ids {domain}:{category}:{sequence}, categories, confidence, dates, related ids, duplicates, each YAML file's frontmatter, and that the YAML files and index.json agree. Each problem names the file, line and fact id. ok is false when any error stands. Reads only.",
        |kb, _, p| crate::interop::knowledge::validate(kb, p);
    KnowledgeImport: "kb.knowledge_import", Propose, crate::interop::knowledge::ImportParams => crate::interop::knowledge::ImportResult,
        "Import knowledge files",
        "Import a knowledge folder's facts as claim proposals citing the files they come from.",
        "Import a knowledge folder: its files are registered as sources and each fact becomes a claim PROPOSAL citing the span of its file that states it (category -> claim type, domain -> tag and scope, the knowledge id and fields kept under metadata). Nothing is knowledge until a reviewer approves it. Nothing is proposed while validation finds an error, unless skip_invalid. Re-importing proposes nothing new; a fact whose text changed is proposed again (outcome changed, replaces the approved claim's id). dry_run reports only.",
        crate::interop::knowledge::import;
    KnowledgeExport: "kb.knowledge_export", Admin, crate::interop::knowledge::ExportParams => crate::interop::knowledge::ExportResult,
        "Export knowledge files",
        "Write current approved claims as a knowledge folder (index.json + YAML files).",
        "Export current approved claims (never pending, superseded, archived or redacted) to a knowledge folder in the project: index.json and the seed's YAML files, ids stable across exports (imported claims keep theirs). A claim no approval let in as its file is now (written or edited by hand) is left out and listed in left_out with the reason. Same KB, same bytes. Audited as knowledge.export.",
        crate::interop::knowledge::export;
    Eval: "kb.eval", Read, crate::retrieval::eval::EvalParams => crate::retrieval::eval::EvalReport,
        "Evaluate retrieval",
        "Score search against labelled queries: recall@k, MRR, nDCG@k.",
        "Measure retrieval quality: for each labelled query (query + expected claim ids) run kb.search over claims and report recall@k, mean reciprocal rank and nDCG@k, overall and per query. Reads only.",
        |kb, _, p| crate::retrieval::eval::eval(kb, p);
    IndexRebuild: "kb.index_rebuild", Admin, crate::retrieval::IndexRebuildParams => crate::retrieval::IndexRebuildResult,
        "Rebuild the search index",
        "Rebuild state.db from the files: the words, then every document's vectors.",
        "Drop and rebuild the derived search index from the files under .vouch/, then (with a model configured) embed every document before returning, so the next search is whole by meaning as by words; embeddings says what was embedded. wait: false returns once the words are indexed, with embeddings.pending counting the documents that still wait for vectors (and _meta.partial). Safe at any time.",
        crate::retrieval::rebuild_index;
    Lint: "kb.lint", Read, LintParams => HealthReport,
        "Lint the knowledge base",
        "Find rotting knowledge: uncited, stale, contradicted, duplicated, orphaned.",
        "Check approved knowledge for rot: uncited or dangling citations, claims not confirmed within stale_days (default 90), unresolved contradictions, pages citing superseded or archived claims, orphan entities, relations to missing entities, duplicate claim texts, proposals pending longer than pending_days (default 14). Each issue has a stable id, kind, severity (warn|error) and a message saying what to do. Changes nothing.",
        |kb, _, p| health::lint(kb, p);
    Doctor: "kb.doctor", Admin, DoctorParams => HealthReport,
        "Check knowledge base health",
        "lint plus file integrity: source hashes, references, audit chain, config, index.",
        "Everything kb.lint checks, plus: source content re-hashed against its id, every reference resolvable, the audit log's hash chain, config.yaml drift (unknown keys, unsupported version, unparseable), the index out of step with the files, proposals in both proposed/ and decided/, unparseable files. fix: true rebuilds the derived index; knowledge is never touched.",
        health::doctor;
    Export: "kb.export", Admin + destructive, ExportParams => ExportResult,
        "Export a bundle",
        "Write a deterministic .tar.gz bundle of the reviewed knowledge.",
        "Export claims, pages, sources, entities, relations, evidence, sessions, decided proposals and config.yaml as a .tar.gz with manifest.json (sha256 and size of every file). Never proposed/, state.db or audit.log.jsonl. The same KB always exports to the same bytes. out must be outside .vouch/ (and, for agents, inside the project). Audited as bundle.export.",
        crate::interop::bundle::export;
    ExportCheck: "kb.export_check", Read, BundlePathParams => ExportCheckResult,
        "Check an exported bundle",
        "Check that a bundle is internally consistent; writes nothing.",
        "Verify a bundle on its own: safe member names and types, every member in the manifest with matching size and sha256 and vice versa, source content hashing to its id, claims citing, references resolving within the bundle, size limits. Lists every problem.",
        crate::interop::bundle::export_check;
    ImportCheck: "kb.import_check", Read, BundlePathParams => ImportCheckResult,
        "Check a bundle before import",
        "Diff a bundle against this KB (new / conflict / identical) and list every problem; writes nothing.",
        "Dry run of an import: which files are new here, which conflict (same path, different content), which are identical, and every reason the bundle would be refused (references may resolve in the bundle or in this KB). Writes nothing.",
        crate::interop::bundle::import_check;
    ImportApply: "kb.import_apply", Admin + destructive + decides, ImportApplyParams => ImportApplyResult,
        "Import a bundle",
        "Import a checked bundle, all or nothing; agents' gated objects arrive as proposals.",
        "Import a bundle: refused with every problem listed (nothing written) unless it passes import_check. on_conflict: skip (default) keeps this KB's files, overwrite replaces them, fail refuses the import. Sources are re-verified against their hash. On agent transports (unless the person's own config trusts agents) claims, pages, entities and relations arrive as pending proposals for a person to review. Audited as bundle.import.",
        crate::interop::bundle::import_apply;
}

/// The registry entry named `name` (`kb.search`).
pub fn find(name: &str) -> Option<&'static Method> {
    REGISTRY.iter().find(|m| m.name == name)
}

/// Find by canonical name or MCP tool name.
pub fn find_tool(tool: &str) -> Option<&'static Method> {
    REGISTRY.iter().find(|m| m.tool_name() == tool)
}

/// Dispatch a call by name.
pub fn dispatch(kb: &Kb, caller: &Caller, name: &str, params: Value) -> Result<Value> {
    let m = find(name).ok_or_else(|| {
        Error::new(
            ErrorKind::MethodNotFound,
            format!(
                "unknown method {:?}; `vouch methods` or kb.capabilities lists them",
                crate::ids::truncate_for_message(name)
            ),
        )
    })?;
    if caller.is_agent() {
        check_limits(&kb.settings().limits, m.name, &params)?;
    }
    let backend = params.get("backend").and_then(Value::as_str);
    before_dispatch(kb, m.name, backend);
    (m.call)(kb, caller, params)
}
