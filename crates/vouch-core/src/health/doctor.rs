//! `kb.doctor`: lint plus the integrity of the files, the index and the
//! audit log, and how they vouch for each other.

use super::*;
use serde_json::Value;

/// Every reference lint does not already check.
pub(crate) fn reference_findings(kb: &Kb, l: &Loaded, known: &Known) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut dangling = |owner: &str, path: Option<String>, what: &str, id: &str| {
        out.push(finding(
            "dangling-reference",
            Severity::Error,
            &format!("{owner}:{id}"),
            path,
            format!(
                "{owner} refers to {what} {id:?}, which does not exist; restore it (e.g. from git) \
                 or correct the reference"
            ),
        ));
    };
    for c in &l.claims {
        let owner = format!("claim {}", c.id);
        for e in &c.entities {
            if !known.entities.contains(e) {
                dangling(&owner, claim_path(&c.id), "entity", e);
            }
        }
        for other in c
            .supersedes
            .iter()
            .chain(&c.contradicts)
            .chain(&c.superseded_by)
        {
            if !known.claims.contains_key(other) {
                dangling(&owner, claim_path(&c.id), "claim", other);
            }
        }
    }
    for pg in &l.pages {
        let owner = format!("page {}", pg.id);
        let path = Some(rel(KbFile::Object(Dir::Pages, pg.id.clone())));
        for c in &pg.claims {
            if !known.claims.contains_key(c) {
                dangling(&owner, path.clone(), "claim", c);
            }
        }
        for e in &pg.entities {
            if !known.entities.contains(e) {
                dangling(&owner, path.clone(), "entity", e);
            }
        }
        for s in &pg.sources {
            if !known.sources.contains(s) {
                dangling(&owner, path.clone(), "source", s);
            }
        }
    }
    for ev in &l.evidence {
        if !known.sources.contains(&ev.source_id) {
            dangling(
                &format!("evidence {}", ev.id),
                Some(rel(KbFile::Object(Dir::Evidence, ev.id.clone()))),
                "source",
                &ev.source_id,
            );
        }
    }
    for r in &l.relations {
        for e in &r.evidence {
            if let Some(why) = known.citation(kb, e) {
                out.push(finding(
                    "dangling-citation",
                    Severity::Error,
                    &format!("{}:{e}", r.id),
                    Some(rel(KbFile::Object(Dir::Relations, r.id.clone()))),
                    format!(
                        "relation {} {why}; register the source again or correct it",
                        r.id
                    ),
                ));
            }
        }
    }
    out
}

/// Symbolic links under `.vouch/`. vouch never follows them (a cloned
/// repository could point `sources/<id>/content` at `/proc/self/environ` or
/// `claims/` at another folder), so what they point to is missing from the
/// KB, and the user should know why.
pub(crate) fn link_findings(kb: &Kb) -> Vec<Finding> {
    crate::store::nofollow::find_links(kb.layout().root())
        .into_iter()
        .map(|path| {
            finding(
                "symlink",
                Severity::Error,
                &path,
                Some(path.clone()),
                format!(
                    "{path} is a symbolic link; vouch never follows links under .vouch/ (a \
                     cloned repository could aim one at your secrets or outside the project), \
                     so it reads nothing through it and refuses to write through it. Replace it \
                     with the real file or folder, or remove it"
                ),
            )
        })
        .collect()
}

/// Temp files (`.<name>.tmp-<pid>-<n>`) that a write killed before its
/// rename left behind, and a journal no command could finish. Each write
/// holds the KB lock while its temp files exist, so under the lock every
/// temp file found is a leftover: `fix` removes them.
pub(crate) fn interrupted_write_findings(kb: &Kb, r: &mut Repairs) -> Result<()> {
    let Repairs { fix, issues, fixed } = r;
    let fix = *fix;
    // Taking the lock finishes an interrupted journaled write first.
    let _lock = if fix { Some(kb.lock()?) } else { None };
    let staging = crate::store::atomic::STAGING_DIR;
    if std::fs::symlink_metadata(kb.layout().root().join(staging)).is_ok() {
        issues.push(finding(
            "interrupted-write",
            Severity::Warn,
            staging,
            Some(format!("{staging}/")),
            format!(
                ".vouch/{staging}/ holds a multi-file write (an approval, an import) that is in \
                 progress or was interrupted; the next command that writes (or `vouch doctor \
                 --fix`) completes it if its audit event was logged and discards it if not"
            ),
        ));
    }
    let mut temps: Vec<std::path::PathBuf> = Vec::new();
    let mut dirs = vec![kb.layout().root().to_path_buf()];
    dirs.extend(Dir::ALL.iter().map(|d| kb.layout().dir(*d)));
    if let Ok(entries) = std::fs::read_dir(kb.layout().sources_dir()) {
        dirs.extend(
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        temps.extend(
            entries
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with('.') && name.contains(".tmp-")
                })
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path()),
        );
    }
    if temps.is_empty() {
        return Ok(());
    }
    let bytes: u64 = temps
        .iter()
        .filter_map(|t| std::fs::symlink_metadata(t).ok())
        .map(|m| m.len())
        .sum();
    if fix {
        let mut removed = 0;
        for t in &temps {
            if crate::store::atomic::remove(kb.layout().root(), t).is_ok() {
                removed += 1;
            }
        }
        fixed.push(format!(
            "removed {removed} temp file(s) ({bytes} bytes) left by interrupted writes"
        ));
    } else {
        let rel_first = temps[0]
            .strip_prefix(kb.layout().root())
            .unwrap_or(&temps[0])
            .display()
            .to_string();
        issues.push(finding(
            "leftover-temp-files",
            Severity::Warn,
            &rel_first,
            Some(rel_first.clone()),
            format!(
                "{} temp file(s) ({bytes} bytes), e.g. {rel_first}, were left by writes a crash \
                 interrupted before their rename; they are not knowledge. `vouch doctor --fix` \
                 removes them",
                temps.len()
            ),
        ));
    }
    Ok(())
}

pub(crate) fn stray_findings(kb: &Kb) -> Vec<Finding> {
    let mut out = Vec::new();
    for dir in Dir::ALL {
        let Ok(entries) = std::fs::read_dir(kb.layout().dir(dir)) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue; // temp files of interrupted writes, editor files
            }
            let ok = id_from_file_name(dir, &name)
                .is_some_and(|id| crate::ids::check_id("id", &id).is_ok());
            if !ok {
                let path = format!("{}/{name}", dir.name());
                out.push(finding(
                    "stray-file",
                    Severity::Warn,
                    &path,
                    Some(path.clone()),
                    format!(
                        "{path} is not a `<id>.{}` file, so vouch ignores it; move it out of \
                         .vouch/ or rename it",
                        dir.extension()
                    ),
                ));
            }
        }
    }
    out
}

/// The files and the log vouch for each other. A chain that verifies proves
/// only that no line was changed in place; cutting the tail, emptying the
/// log or rewriting it whole with other actors leaves a valid chain. So each
/// `decided/` record carries the hash of its decision event, each durable
/// object must be named by the event that let it in, and each pending
/// proposal must still match its `proposal.create` event.
/// Events that say something was written which is not there: a
/// `source.register` with no source, an `evidence.register` with no
/// evidence, a `session.start` with no session. A write that fails takes
/// its event back; one left behind is a crash between the two, or files
/// removed by hand. (Pending proposals are git-ignored, so a
/// `proposal.create` from another clone names nothing here: not checked.)
pub(crate) fn event_object_findings(kb: &Kb) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    for ev in kb.audit_log().read_parsed()? {
        let name = ev.get("event").and_then(Value::as_str).unwrap_or("");
        let Some(id) = ev
            .get("object_ids")
            .and_then(|o| o.get(0))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let (what, there) = match name {
            "source.register" => ("source", kb.source_exists(id)),
            "evidence.register" => ("evidence", kb.exists(Dir::Evidence, id)),
            "session.start" => ("session", kb.exists(Dir::Sessions, id)),
            _ => continue,
        };
        if !there {
            out.push(finding(
                "event-without-object",
                Severity::Warn,
                id,
                None,
                format!(
                    "audit event {} ({name}) records {what} {id}, which does not exist: the \
                     write it announced did not finish (a crash), or the files were removed; \
                     register it again to restore it",
                    ev.get("id").and_then(Value::as_str).unwrap_or("?")
                ),
            ));
        }
    }
    Ok(out)
}

pub(crate) fn cross_link_findings(kb: &Kb, l: &Loaded, chain_ok: bool) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let trail = crate::audit::trail::Trail::of(kb.audit_log().read_parsed()?);
    for pr in &l.pending {
        if l.decided_ids.contains(&pr.id) {
            continue; // reported as proposal-in-both
        }
        if let Err(why) = crate::review::gate::check_integrity(pr, trail.created.get(&pr.id)) {
            let kind = if trail.created.contains_key(&pr.id) {
                "proposal-edited"
            } else {
                "proposal-unaudited"
            };
            out.push(finding(
                kind,
                Severity::Error,
                &pr.id,
                pending_file(kb, &pr.id),
                format!("{why}; approve refuses it"),
            ));
        }
    }
    for d in &l.decided {
        // A record an import brought in names its decision in the log of
        // the KB it came from.
        if let Some(h) = &d.decision_hash
            && !trail.hashes.contains(h)
            && !trail.admits(&d.id)
        {
            out.push(finding(
                "decision-not-in-log",
                Severity::Error,
                &d.id,
                Some(rel(KbFile::Object(Dir::Decided, d.id.clone()))),
                format!(
                    "proposal {} was {} by {} but the audit event that decided it ({h}) is not \
                     in audit.log.jsonl: the log was cut or rewritten after the decision; \
                     restore audit.log.jsonl from git",
                    d.id,
                    d.status,
                    d.decided_by.as_deref().unwrap_or("?")
                ),
            ));
        }
    }
    for (event, actor, objects) in &trail.agent_imports {
        out.push(finding(
            "agent-import",
            Severity::Error,
            event,
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "audit event {event} (bundle.import) by {actor:?}, who proposes and never \
                 decided, names {} as imported knowledge: an agent's import files proposals, it \
                 never writes knowledge, so the event was written by hand; what it names is \
                 not let in (search and context mark it `unaudited`). If {actor:?} is a \
                 person, have them import the bundle again",
                objects.join(", ")
            ),
        ));
    }
    for (event, actor, proposal, object, why) in &trail.unfounded {
        use crate::audit::trail::Unfounded;
        let why = match why {
            Unfounded::NeverProposed => {
                format!("no proposal.create event before it made proposal {proposal}")
            }
            Unfounded::DecidedBefore => format!(
                "an earlier event decided proposal {proposal} already, and a proposal is \
                 decided once"
            ),
        };
        out.push(finding(
            "unfounded-decision",
            Severity::Error,
            event,
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "audit event {event} (proposal.approve by {actor:?}) approves {object}, but \
                 {why}: the event was written by hand and lets nothing in (search and context \
                 mark {object} `unaudited`). Re-propose it and have a person approve it"
            ),
        ));
    }
    for (event, actor, target, files) in &trail.unfounded_reverts {
        out.push(finding(
            "unfounded-revert",
            Severity::Error,
            event,
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "audit event {event} (lifecycle.revert by {actor:?}) reverts event {target}, \
                 which is not the last lifecycle change recorded of {}: a revert puts back only \
                 what a lifecycle change recorded writing, so the event was written by hand and \
                 what it wrote is not reviewed (search and context mark it `unaudited`). Put \
                 the file back from git, or have a person archive or supersede it",
                files.join(", ")
            ),
        ));
    }
    let durable = l
        .claims
        .iter()
        .map(|c| (Dir::Claims, c.id.as_str()))
        .chain(l.pages.iter().map(|x| (Dir::Pages, x.id.as_str())))
        .chain(l.entities.iter().map(|x| (Dir::Entities, x.id.as_str())))
        .chain(l.relations.iter().map(|x| (Dir::Relations, x.id.as_str())));
    // An import by an older vouch did not name what it wrote, and vouch
    // 1.x's `init` seeds knowledge without an event: such objects are
    // reported (and marked in hits), but not as errors.
    // Only a log whose chain verifies can vouch for that leniency: one
    // planted line must not soften every finding.
    let severity = if chain_ok && (trail.legacy_import || trail.begun_by_1x) {
        Severity::Warn
    } else {
        Severity::Error
    };
    for (id, path) in crate::sources::edited_metas(kb, &trail) {
        out.push(finding(
            "edited-object",
            Severity::Error,
            &id,
            Some(path),
            format!(
                "source {id}'s meta.yaml was changed since source.register wrote it (its bytes \
                 are not the ones audit.log.jsonl records): who registered it and whether vouch \
                 read the file are shown from the log, not from it — restore it (git checkout)"
            ),
        ));
    }
    out.extend(removed_by_hand(kb, &trail));
    for (dir, id) in durable {
        let file = rel(KbFile::Object(dir, id.to_string()));
        if trail.admits(id)
            && let Ok(path) = kb.layout().file(dir, id)
            && let Ok(Some(bytes)) = kb.read_file(&path)
            && trail.edited(&kb.layout().inside(&path), &bytes)
        {
            out.push(finding(
                "edited-object",
                Severity::Error,
                id,
                Some(file.clone()),
                format!(
                    "{} {id} was changed since the last approval, import or lifecycle change \
                     wrote it (its bytes are not the ones audit.log.jsonl records): an edit by \
                     hand is not reviewed knowledge; search and context mark it `unaudited` and \
                     answers leave it out — restore it (git checkout), or propose the change \
                     for review",
                    dir.id_label().trim_end_matches(" id")
                ),
            ));
        }
        if !trail.admits(id) {
            out.push(finding(
                "unaudited-object",
                severity,
                id,
                Some(rel(KbFile::Object(dir, id.to_string()))),
                format!(
                    "{} {id} is not named by any approval or import in audit.log.jsonl: it \
                     never went through the review gate (written by hand, or the log was cut); \
                     search and context mark it `unaudited` — remove it, or propose it for review",
                    dir.id_label().trim_end_matches(" id")
                ),
            ));
        }
    }
    Ok(out)
}

/// Knowledge files an event recorded writing that are gone, with no
/// approved delete after it: removed by hand (a `git rm`, a file manager),
/// which no review decided. An approved delete records [`REMOVED`] at the
/// path it removes, so what it removed is accounted for.
///
/// [`REMOVED`]: crate::audit::trail::REMOVED
fn removed_by_hand(kb: &Kb, trail: &crate::audit::trail::Trail) -> Vec<Finding> {
    use crate::audit::trail::{NOT_REVIEWED, REMOVED};
    let mut gone: Vec<(&String, Dir, &str)> = trail
        .written
        .iter()
        .filter(|(_, sha)| *sha != REMOVED && *sha != NOT_REVIEWED)
        .filter_map(|(path, _)| {
            let (dir, name) = path.split_once('/')?;
            let dir = match dir {
                "claims" => Dir::Claims,
                "pages" => Dir::Pages,
                "entities" => Dir::Entities,
                "relations" => Dir::Relations,
                _ => return None,
            };
            let id = crate::store::layout::id_from_file_name(dir, name)?;
            let file = kb.layout().file(dir, &id).ok()?;
            // A folder that cannot be read is reported elsewhere.
            let missing = matches!(
                std::fs::symlink_metadata(&file),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound
            );
            missing.then_some((path, dir, crate::store::layout::id_of_inside(path)))
        })
        .collect();
    gone.sort_by(|a, b| a.0.cmp(b.0));
    gone.into_iter()
        .map(|(path, dir, id)| {
            let kind = dir.id_label().trim_end_matches(" id");
            finding(
                "removed-object",
                Severity::Error,
                id,
                Some(path.clone()),
                format!(
                    "{kind} {id} ({path}) is gone, but no approved delete removed it (the audit \
                     log records writing it, and no delete after that): removed by hand, which \
                     no review decided — or an approval a crash cut short (approve it again). \
                     Restore it (git checkout), or propose its deletion (`vouch propose-delete \
                     {kind} {id} --reason ...`) and have a person approve it"
                ),
            )
        })
        .collect()
}

/// `kb.doctor`: what `kb.lint` finds, plus the integrity of the files,
/// the index and the audit log. With `fix` it repairs what needs no
/// judgement (rebuilds the index, clears interrupted writes, repairs a log a
/// git merge left) and never touches knowledge.
pub fn doctor(kb: &Kb, caller: &Caller, p: DoctorParams) -> Result<HealthReport> {
    // Merges first: what follows reads the repaired log.
    let mut merges = Repairs {
        fix: p.fix,
        issues: Vec::new(),
        fixed: Vec::new(),
    };
    merge_findings(kb, caller, &mut merges)?;
    let l = load(kb)?;
    let known = Known::of(kb, &l)?;
    let lint_params = LintParams {
        stale_days: p.stale_days,
        pending_days: p.pending_days,
    };
    let mut issues = lint_findings(kb, &l, &known, &lint_params)?;
    let mut events_naming: Option<Vec<Value>> = None;
    for (path, why) in &l.unreadable {
        if let Some(f) = merge_conflict_finding(kb, path, &mut events_naming)? {
            issues.push(f);
            continue;
        }
        issues.push(finding(
            "unparseable-file",
            Severity::Error,
            path,
            Some(path.clone()),
            format!(
                "{why}; fix the file by hand or restore it from git (it is skipped by listings and \
                 search until then)"
            ),
        ));
    }
    issues.extend(non_standard_findings(&l));
    issues.extend(reference_findings(kb, &l, &known));
    issues.extend(config_findings(kb));
    issues.extend(stray_findings(kb));
    issues.extend(link_findings(kb));
    issues.extend(gitignore_findings(kb));
    issues.append(&mut merges.issues);
    issues.extend(host_config_findings(kb));
    issues.extend(team_findings(kb));
    let verify = crate::sources::source_verify(kb, Default::default())?;
    for i in verify.issues {
        let path = Some(format!("sources/{}", i.id));
        let (kind, severity, advice) = match (i.kind.as_str(), i.detail.contains("content")) {
            ("missing", true) => (
                "source-content-missing",
                Severity::Warn,
                "claims citing it cannot be re-verified; register the same bytes again to restore it",
            ),
            ("missing", false) => (
                "source-meta-missing",
                Severity::Error,
                "register the same bytes again to restore it",
            ),
            ("drifted", _) => (
                "source-drifted",
                Severity::Error,
                "sources are immutable: restore the original bytes from git",
            ),
            ("unparseable", _) => (
                "unparseable-file",
                Severity::Error,
                "fix the file by hand or restore it from git (listings and search skip the \
                 source until then)",
            ),
            _ => (
                "source-unreadable",
                Severity::Error,
                "check the file's permissions",
            ),
        };
        issues.push(finding(
            kind,
            severity,
            &i.id,
            path,
            format!("source {}: {}; {advice}", i.id, i.detail),
        ));
    }
    // A quoted span must still say what its source says, under its own id
    // (unless a redaction the log records took its quote).
    let trail = crate::audit::trail::Trail::of(kb.audit_log().read_parsed()?);
    for ev in &l.evidence {
        if crate::review::gate::redact::redacted_evidence(kb, &trail, ev) {
            continue;
        }
        if let Some(why) = crate::sources::evidence_id_mismatch(ev) {
            issues.push(finding(
                "evidence-id-mismatch",
                Severity::Error,
                &ev.id,
                Some(rel(KbFile::Object(Dir::Evidence, ev.id.clone()))),
                format!(
                    "evidence {}: {why}; `vouch quote` of that span would return this record. \
                     Restore the file from git or remove it",
                    ev.id
                ),
            ));
        }
        let Ok(Some(bytes)) = kb
            .layout()
            .source_content(&ev.source_id)
            .and_then(|path| kb.read_file(&path))
        else {
            continue; // missing or unreadable content is reported with the source
        };
        if let Some(why) = crate::sources::evidence_mismatch(ev, &bytes) {
            issues.push(finding(
                "evidence-mismatch",
                Severity::Error,
                &ev.id,
                Some(rel(KbFile::Object(Dir::Evidence, ev.id.clone()))),
                format!(
                    "evidence {}: {why}; claims citing it show a quote their source does not \
                     contain: restore the file from git, or mint the span again with `vouch quote`",
                    ev.id
                ),
            ));
        }
    }
    let audit = kb.audit_log().verify()?;
    issues.extend(cross_link_findings(kb, &l, audit.ok)?);
    issues.extend(event_object_findings(kb)?);
    if !audit.ok {
        issues.push(finding(
            "audit-chain-broken",
            Severity::Error,
            "audit.log.jsonl",
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "audit.log.jsonl line {}: {}; if a merge left it so (conflict markers, lines \
                 out of order), `vouch doctor --fix` repairs it keeping every event; otherwise \
                 the log is append-only: restore it from git (`vouch audit verify` names the \
                 line)",
                audit.first_bad_line.unwrap_or(0),
                audit.problem.unwrap_or_default()
            ),
        ));
    }
    if !audit.unjoined.is_empty() {
        issues.push(finding(
            "audit-unjoined",
            Severity::Warn,
            "audit.log.jsonl",
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "{} branch(es) a git merge brought into audit.log.jsonl are not joined yet \
                 (ending at line(s) {:?}); the next write joins them with an audit.merge event, \
                 or `vouch doctor --fix` now",
                audit.unjoined.len(),
                audit.unjoined
            ),
        ));
    }
    if !audit.duplicates.is_empty() {
        issues.push(finding(
            "audit-duplicate-event",
            Severity::Warn,
            "audit.log.jsonl",
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "audit.log.jsonl repeats {} event(s) exactly (line(s) {:?}; a cherry-pick merged \
                 back); `vouch doctor --fix` keeps one of each",
                audit.duplicates.len(),
                audit.duplicates
            ),
        ));
    }
    for id in &l.proposed_ids {
        if l.decided_ids.contains(id) {
            issues.push(finding(
                "proposal-in-both",
                Severity::Error,
                id,
                pending_file(kb, id),
                format!(
                    "proposal {id} is both pending and in decided/ (an interrupted decision); it \
                     is decided: `vouch approve {id}` reports the decision and removes the pending copy"
                ),
            ));
        }
    }
    if let Some(why) = &l.queue_unreadable {
        issues.push(finding(
            "team-queue-unreadable",
            Severity::Warn,
            "shared-queue",
            None,
            format!(
                "the pending proposals could not be read ({why}); the rest was checked, the \
                 proposals were not"
            ),
        ));
    }
    for (id, why) in &l.queued_unreadable {
        issues.push(finding(
            "queued-proposal-unreadable",
            Severity::Error,
            id,
            None,
            format!(
                "{why}; listings skip it and it cannot be decided: remove it from the team \
                 database (DELETE FROM vouch_proposals WHERE id = '{id}') and propose again"
            ),
        ));
    }
    let mut r = Repairs {
        fix: p.fix,
        issues,
        fixed: merges.fixed,
    };
    interrupted_write_findings(kb, &mut r)?;
    // A usable index only behind the files (an ordinary write by a
    // one-shot command) catches up as any read would: that is no finding,
    // and no row it still holds for an old version of a file is stray.
    if kb
        .index()
        .freshness(kb)?
        .is_some_and(|f| !f.in_step() && f.unusable.is_none())
    {
        let _ = kb.index().catch_up(kb);
    }
    stray_row_findings(kb, caller, &mut r)?;
    let Repairs {
        mut issues,
        mut fixed,
        ..
    } = r;
    if let Some(f) = kb.index().freshness(kb)?
        && !f.in_step()
    {
        let state = match &f.unusable {
            Some(why) => format!("state.db {why}"),
            None => format!(
                "state.db is out of step with the files ({} new or changed, {} gone)",
                f.changed, f.vanished
            ),
        };
        if p.fix {
            let r = crate::retrieval::rebuild_audited(kb, caller)?;
            fixed.push(format!(
                "{state}: rebuilt it from the files ({} documents)",
                r.indexed
            ));
        } else {
            issues.push(finding(
                "index-stale",
                Severity::Warn,
                "state.db",
                Some(crate::store::layout::INDEX_FILE.to_string()),
                format!(
                    "{state}; the next command catches up before it runs, or run `vouch doctor --fix` \
                     (rebuilds the derived index; knowledge is not touched)"
                ),
            ));
        }
    }
    Ok(report(issues, fixed))
}

/// Rows of the derived index that no file backs (planted in `state.db`,
/// or left by a file that is gone): search leaves them out; named here,
/// and with `fix` the index is rebuilt from the files.
fn stray_row_findings(kb: &Kb, caller: &Caller, r: &mut Repairs) -> Result<()> {
    let Repairs { fix, issues, fixed } = r;
    let fix = *fix;
    let Ok(rows) = kb.index().stray_rows(kb) else {
        return Ok(()); // an unusable index is reported as index-stale
    };
    if rows.is_empty() {
        return Ok(());
    }
    if fix {
        let r = crate::retrieval::rebuild_audited(kb, caller)?;
        fixed.push(format!(
            "state.db held {} row(s) no file backs: rebuilt it from the files ({} documents)",
            rows.len(),
            r.indexed
        ));
        return Ok(());
    }
    issues.extend(rows.into_iter().map(|(kind, id, why)| {
        finding(
            "index-stray-row",
            Severity::Warn,
            &format!("{kind} {id}"),
            Some(crate::store::layout::INDEX_FILE.to_string()),
            format!(
                "state.db holds {kind} {id:?}, which no file backs: {why}. Search leaves it \
                 out; `vouch doctor --fix` rebuilds the derived index from the files (if \
                 nothing of vouch's wrote it, something else writes state.db)"
            ),
        )
    }));
    Ok(())
}

/// Values outside the vocabularies (another writer's, e.g. vouch 1.x):
/// read, kept and listed, but named here, since nothing here gives them a
/// meaning (a claim with such a status is not served as current).
fn non_standard_findings(l: &Loaded) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut note = |dir: Dir, id: &str, field: &str, what: &str, value: &str| {
        let path = rel(KbFile::Object(dir, id.to_string()));
        out.push(finding(
            "non-standard-value",
            Severity::Warn,
            &format!("{path}:{field}"),
            Some(path.clone()),
            format!(
                "{field} {value:?} is not a {what} this vouch knows; it is kept as written{}",
                if field == "status" {
                    ", and the claim is not served as current knowledge"
                } else {
                    ""
                }
            ),
        ));
    };
    for c in &l.claims {
        if !c.claim_type.is_standard() {
            note(
                Dir::Claims,
                &c.id,
                "type",
                ClaimType::WHAT,
                c.claim_type.as_str(),
            );
        }
        if !c.status.is_standard() {
            note(
                Dir::Claims,
                &c.id,
                "status",
                ClaimStatus::WHAT,
                c.status.as_str(),
            );
        }
    }
    for p in &l.pages {
        if !p.page_type.is_standard() {
            note(
                Dir::Pages,
                &p.id,
                "type",
                PageType::WHAT,
                p.page_type.as_str(),
            );
        }
        if !p.status.is_standard() {
            note(
                Dir::Pages,
                &p.id,
                "status",
                PageStatus::WHAT,
                p.status.as_str(),
            );
        }
    }
    for e in &l.entities {
        if !e.entity_type.is_standard() {
            note(
                Dir::Entities,
                &e.id,
                "type",
                EntityType::WHAT,
                e.entity_type.as_str(),
            );
        }
    }
    for r in &l.relations {
        if !r.relation.is_standard() {
            note(
                Dir::Relations,
                &r.id,
                "relation",
                RelationType::WHAT,
                r.relation.as_str(),
            );
        }
    }
    out
}
