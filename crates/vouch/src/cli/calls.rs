//! Each command that stands for one `kb.*` method: its typed params, built
//! from the command line, and the call through `methods::kb::*`.

use super::*;
use crate::human::{AuditVerified, Human, Rebuilt, Rejected};
use crate::render;
use serde_json::Value;
use std::io::IsTerminal;
use vouch_core::answer::SynthesizeParams;
use vouch_core::answer::recall::RecallParams;
use vouch_core::interop::knowledge;
use vouch_core::methods::{self, Call};
use vouch_core::model::Vocabulary;
use vouch_core::params::*;
use vouch_core::retrieval::SearchParams;
use vouch_core::retrieval::eval::EvalParams;
use vouch_core::retrieval::pack::ContextParams;
use vouch_core::{Caller, Error, Kb};

pub(super) fn print_warnings(kb: &Kb) {
    render::print_warnings(kb.take_warnings());
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

/// The start of the gate's refusal of an uncited claim
/// (`vouch_core::review::gate`'s validation), which names the method agents
/// call.
const UNCITED: &str = "evidence: a claim must cite at least one source or evidence id";

/// A proposal's problems in the command line's words: an uncited claim
/// names `vouch source add` and `-e/--evidence`, not the method.
fn in_cli_words(mut result: ProposeResult) -> ProposeResult {
    for e in &mut result.errors {
        if e.starts_with(UNCITED) {
            *e = format!(
                "{UNCITED}: register the file with `vouch source add FILE` (or `--text TEXT`), \
                 then cite it with -e/--evidence SOURCE_ID, or a span of it with --quote \
                 SOURCE_ID=exact quote"
            );
        }
    }
    result
}

/// `audit verify --base REV` compares with REV through git: say what it
/// needs — a git work tree, and REV fetched into it — before git's own
/// words would.
fn base_reachable(kb: &Kb, rev: &str) -> Result<(), Error> {
    let root = kb.layout().root();
    let project = root.parent().unwrap_or(root);
    if crate::personal::work_tree(project).is_none() {
        return Err(Error::invalid(format!(
            "--base {rev:?}: {} is not in a git work tree; the check compares this branch \
             with {rev} through git, so run it in a clone of the repository, with {rev} fetched",
            project.display()
        )));
    }
    if rev.starts_with('-') || rev.is_empty() {
        return Ok(()); // the check itself refuses what is no revision
    }
    let known = std::process::Command::new("git")
        .current_dir(project)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .map_err(|e| Error::invalid(format!("--base needs git on PATH: {e}")))?;
    if !known.status.success() {
        return Err(Error::invalid(format!(
            "--base {rev:?}: git knows no such revision here; the check needs it fetched: \
             `git fetch` it first (in CI, check out with the target branch's history, e.g. \
             fetch-depth: 0)"
        )));
    }
    Ok(())
}

/// One method called with typed params, its result printed for a person
/// (or as JSON); the exit code is the result's own.
pub(super) struct Run<'a> {
    pub(super) kb: &'a Kb,
    pub(super) caller: &'a Caller,
    pub(super) json: bool,
}

impl Run<'_> {
    pub(super) fn call<M: Call>(&self, params: M::Params) -> Result<M::Output, Error> {
        let out = methods::call::<M>(self.kb, self.caller, params);
        print_warnings(self.kb);
        out
    }

    pub(super) fn print<T: Human>(&self, result: T) -> Result<i32, Error> {
        render::print(self.json, &result);
        Ok(result.exit_code())
    }

    pub(super) fn exec<M: Call>(&self, params: M::Params) -> Result<i32, Error>
    where
        M::Output: Human,
    {
        let out = self.call::<M>(params)?;
        self.print(out)
    }
}

/// Run a command that stands for one method. `None`: the command is
/// handled elsewhere.
pub(super) fn run_method(cli: &Cli, run: &Run) -> Result<Option<i32>, Error> {
    use methods::kb;
    Ok(Some(match &cli.command {
        Command::Status => run.exec::<kb::Status>(NoParams {})?,
        Command::Insight(c) => c.run(run)?,
        Command::Source(SourceCmd::Add {
            path,
            text,
            locator,
            title,
            source_type,
            secrets,
        }) => {
            let source_type = vocabulary("--type", source_type)?;
            match (path, text) {
                (Some(path), None) => {
                    run.exec::<kb::RegisterSourceFromPath>(RegisterSourceFromPathParams {
                        path: path.clone(),
                        source_type,
                        title: title.clone(),
                        secrets: secrets.policy(),
                    })?
                }
                (None, Some(text)) => run.exec::<kb::RegisterSource>(RegisterSourceParams {
                    content: text.clone(),
                    locator: locator.clone().unwrap_or_else(|| "cli:text".into()),
                    source_type,
                    title: title.clone(),
                    media_type: None,
                    tags: Vec::new(),
                    secrets: secrets.policy(),
                })?,
                _ => return Err(Error::missing("path (or --text)")),
            }
        }
        Command::Source(SourceCmd::Verify { id }) => {
            run.exec::<kb::SourceVerify>(SourceVerifyParams { id: id.clone() })?
        }
        Command::Quote {
            source_id,
            quote,
            allow_secrets,
        } => run.exec::<kb::RegisterEvidence>(RegisterEvidenceParams {
            source_id: source_id.clone(),
            quote: quote.clone(),
            secrets: if *allow_secrets {
                SecretsPolicy::Allow
            } else {
                SecretsPolicy::Refuse
            },
        })?,
        Command::ProposeClaim(a) => run.print(in_cli_words(run.call::<kb::ProposeClaim>(
            ProposeClaimParams {
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
                secrets: a.common.secrets.policy(),
            },
        )?))?,
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
                secrets: a.common.secrets.policy(),
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
            secrets: a.common.secrets.policy(),
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
            secrets: a.common.secrets.policy(),
        })?,
        Command::ProposeDelete {
            kind,
            id,
            reason,
            session,
            dry_run,
        } => run.exec::<kb::ProposeDelete>(ProposeDeleteParams {
            kind: vocabulary("kind", &Some(kind.clone()))?.expect("a value was given"),
            id: id.clone(),
            reason: reason.clone(),
            session_id: session.clone(),
            dry_run: *dry_run,
        })?,
        Command::Redact {
            kind,
            id,
            reason,
            dry_run,
        } => run.exec::<kb::Redact>(RedactParams {
            kind: vocabulary("kind", &Some(kind.clone()))?.expect("a value was given"),
            id: id.clone(),
            reason: reason.clone(),
            dry_run: *dry_run,
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
        } => {
            let result = run.call::<kb::Reject>(RejectParams {
                proposal_id: proposal_id.clone(),
                reason: reason.clone(),
            })?;
            run.print(Rejected {
                result,
                proposal_id: proposal_id.clone(),
                reason: reason.clone(),
            })?
        }
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
            verify: Some(AuditCmd::Verify { key_file, base }),
            ..
        }) => {
            let base = match base {
                Some(rev) => Some({
                    base_reachable(run.kb, rev)?;
                    crate::gitbase::check(run.kb, rev)?
                }),
                None => None,
            };
            let chain = run.call::<kb::AuditVerify>(NoParams {})?;
            // The keyed checkpoints too, when a key is at hand.
            // No HOME and no key named: there is no key to check with.
            let path = match crate::checkpoint::key_path(key_file.as_deref()) {
                Ok(p) => Some(p),
                Err(_) if key_file.is_none() => None,
                Err(e) => return Err(e),
            };
            let key = match &path {
                Some(p) => crate::checkpoint::load_key(run.kb, p, false)?,
                None => None,
            };
            let checkpoints = match (key, path) {
                (Some(key), Some(path)) => {
                    let kept = crate::checkpoint::read_kept(run.kb, &path);
                    Some(vouch_core::audit::checkpoints::verify_checkpoints(
                        run.kb.audit_log(),
                        &key,
                        kept.as_ref(),
                    )?)
                }
                (None, Some(path)) if key_file.is_some() => {
                    return Err(Error::invalid(format!(
                        "{}: no checkpoint key there",
                        path.display()
                    )));
                }
                _ => None,
            };
            run.print(AuditVerified {
                chain,
                checkpoints,
                base,
            })?
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
            if run.kb.embedder().is_some() && std::io::stderr().is_terminal() {
                eprintln!("rebuilding the index and embedding every document…");
            }
            // Words and vectors both: the method returns when they are whole.
            let rebuilt =
                run.call::<kb::IndexRebuild>(vouch_core::retrieval::IndexRebuildParams {
                    wait: Some(true),
                })?;
            let index = rebuilt.index;
            let embeddings = rebuilt
                .embeddings
                .map(|e| serde_json::to_value(e).unwrap_or_default());
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
        Command::Recall(a) => {
            let code = run.exec::<kb::Recall>(RecallParams {
                max_chars: Some(a.max_chars),
                task: a.task.clone(),
                per_section: Some(a.per_section),
            })?;
            if a.watch {
                crate::serve::watch_for_session(run.kb);
            }
            code
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
        | Command::Team(_)
        | Command::Ui(_)
        | Command::Watch(_)
        | Command::Capture(_)
        | Command::InstallMcp(_)
        | Command::Completions { .. }
        | Command::Man
        | Command::Review { .. }
        | Command::Model(_) => return Ok(None),
    }))
}
