//! Running a command: the knowledge base opened as the command needs it,
//! the commands that are not one method (`call`, `show`, `review`,
//! checkpoints, models), errors printed and mapped to exit codes.

use super::calls::{Run, print_warnings, run_method};
use super::*;
use crate::context;
use crate::errors::mapping;
use crate::human::Shown;
use crate::render;
use serde_json::{Value, json};
use vouch_core::methods;
use vouch_core::params::*;
use vouch_core::{Error, Kb, Transport};

/// Run the CLI; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    render::set_color(cli.color);
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

fn run_inner(cli: &Cli) -> Result<i32, Error> {
    methods::set_transports(crate::TRANSPORTS);
    match &cli.command {
        // A check of files: it needs no knowledge base (outside one, the
        // folder is read where it is).
        Command::Knowledge(KnowledgeCmd::Validate { dir })
            if context::locate(cli.kb.as_deref()).is_err() =>
        {
            let today = context::clock().now().format("%Y-%m-%d").to_string();
            let report =
                vouch_core::interop::knowledge::validate_folder(std::path::Path::new(dir), &today)?;
            render::print(cli.json, &report);
            return Ok(crate::human::Human::exit_code(&report));
        }
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
            let in_git = crate::personal::work_tree(&dir).is_some();
            render::print(cli.json, &crate::human::Initialized { report, in_git });
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
        Command::Watch(args) => return crate::serve::run_watch(cli, args),
        Command::Capture(args) => return Ok(crate::capture::run(cli, args)),
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
                render::emit(&crate::install::render(&v));
            }
            return Ok(0);
        }
        Command::Model(cmd) => return model_command(cli, cmd),
        Command::Team(TeamCmd::Pull { team, git_args }) => {
            let kb = team.open(cli)?;
            let code = crate::team::pull(&kb, git_args)?;
            print_warnings(&kb);
            return Ok(code);
        }
        Command::Team(TeamCmd::PruneVectors {
            team,
            other_models,
            index_dir,
        }) => {
            let mut kb = team.open(cli)?;
            if let Some(dir) = index_dir {
                crate::team::keep_index_in(&mut kb, dir)?;
            }
            let v = crate::team::prune_vectors(&kb, *other_models)?;
            print_warnings(&kb);
            if cli.json {
                render::emit_json(&v);
            } else {
                render::emit(&crate::team::render_pruned(&v));
            }
            return Ok(0);
        }
        Command::Team(TeamCmd::Unqueue { team }) => {
            let kb = team.open(cli)?;
            let (moved, left) = kb.unqueue()?;
            print_warnings(&kb);
            if cli.json {
                render::emit_json(&serde_json::json!({ "moved": moved, "left": left }));
            } else {
                render::emit(&format!(
                    "moved {} pending proposal(s) from the team database into proposed/\n",
                    moved.len()
                ));
                if !left.is_empty() {
                    render::emit(&format!(
                        "left {} in the database (see the warnings): {}\n",
                        left.len(),
                        left.join(", ")
                    ));
                }
            }
            // Not done while the database keeps a proposal the tree lacks:
            // a conflict (a file in the way, a row that is not one).
            return Ok(if left.is_empty() { 0 } else { 4 });
        }
        Command::Team(TeamCmd::Adopt { team }) => {
            let kb = team.open(cli)?;
            let v = crate::team::adopt(&kb)?;
            if cli.json {
                render::emit_json(&v);
            } else {
                render::emit(&format!(
                    "the chain's head in {} is now {} (was {})\n",
                    v["database"].as_str().unwrap_or_default(),
                    v["head"]["id"].as_str().unwrap_or_default(),
                    v["replaced"]["id"].as_str().unwrap_or("none")
                ));
            }
            return Ok(0);
        }
        _ => {}
    }
    // The doctor must run on a KB whose config.yaml does not parse, to say so.
    let mut kb = if matches!(cli.command, Command::Doctor { .. }) {
        context::open_tolerant(cli.kb.as_deref())?
    } else {
        context::open(cli.kb.as_deref())?
    };
    // One command, then exit: a live watcher's word spares the scan.
    kb.configure_index(|o| o.trust_watcher = true);
    // A decision is signed by the person who named themselves, never by
    // the `cli` nobody set.
    let caller = if decides(&cli.command) {
        context::decider(cli.agent.as_deref())?
    } else {
        context::caller(cli.agent.as_deref(), Transport::Cli)?
    };
    let run = Run {
        kb: &kb,
        caller: &caller,
        json: cli.json,
    };
    // A command that stands for one method: the registry takes the index
    // keeper's step before it dispatches, where the method reads the index.
    if let Some(code) = run_method(cli, &run)? {
        return Ok(code);
    }
    // Any other command reads as it likes: the keeper's explicit step
    // first (reads never catch up themselves).
    if let Err(e) = kb.catch_up(None) {
        kb.warn(format!("index: not brought in step with the files: {e}"));
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
            let name = method_name(method);
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
            let cp = vouch_core::health::checkpoint(&kb, &caller.actor, &key)?;
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

/// The method `vouch call` names: `kb.search`, `search` or `kb_search`.
fn method_name(method: &str) -> String {
    if method.starts_with("kb.") {
        method.to_string()
    } else if let Some(m) = methods::find_tool(method) {
        m.name.to_string()
    } else {
        format!("kb.{method}")
    }
}

/// Whether the command calls a method that decides what agents read
/// (the registry's `decides`: approve and reject, the lifecycle changes,
/// a bundle import), itself or through `call`.
fn decides(command: &Command) -> bool {
    let method = match command {
        Command::Approve { .. } | Command::Review { .. } => "kb.approve".to_string(),
        Command::Reject { .. } => "kb.reject".to_string(),
        Command::Supersede { .. } => "kb.supersede".to_string(),
        Command::Contradict { .. } => "kb.contradict".to_string(),
        Command::Archive { .. } => "kb.archive".to_string(),
        Command::Confirm { .. } => "kb.confirm".to_string(),
        Command::Cite { .. } => "kb.cite".to_string(),
        Command::Revert { .. } => "kb.revert".to_string(),
        Command::ImportApply { .. } => "kb.import_apply".to_string(),
        Command::Insight(c) => c.method().to_string(),
        Command::Redact { .. } => "kb.redact".to_string(),
        Command::Call { method, .. } => method_name(method),
        _ => return false,
    };
    methods::find(&method).is_some_and(|m| m.decides)
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
