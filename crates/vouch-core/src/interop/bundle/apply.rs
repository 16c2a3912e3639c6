//! `export_check`, `import_check` and `import_apply`: the diff against this KB and the all-or-nothing apply.

use super::*;

/// `kb.export_check`: check a bundle on its own, every problem listed; writes
/// nothing.
pub fn export_check(kb: &Kb, caller: &Caller, p: BundlePathParams) -> Result<ExportCheckResult> {
    let path = resolve(kb, caller, &p.path, false)?;
    let s = check_bundle(kb, &path, false, &|_| false)?;
    Ok(ExportCheckResult {
        ok: s.problems.is_empty(),
        issues: issue_lines(&s.problems),
        problems: s.problems,
        files: s.manifest_files,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    New,
    Conflict,
    Identical,
    Ignored,
}

/// Whether the caller is an agent whose imports the review gate holds:
/// gated kinds become proposals, nothing is overwritten, and review records
/// (decided/) are not taken (protocol §10, imports over agent transports).
pub(crate) fn gate_holds(kb: &Kb, caller: &Caller) -> bool {
    kb.gated(caller)
}

pub(crate) fn status_of(kb: &Kb, m: &Member, gated: bool) -> Result<Status> {
    let local = kb.layout().path_of(&m.file)?;
    let exists = std::fs::symlink_metadata(&local).is_ok();
    if exists
        && kb
            .read_file(&local)?
            .is_some_and(|b| sha256_hex(&b) == m.sha256)
    {
        return Ok(Status::Identical);
    }
    // A bundle never changes this KB's settings, present or not; an agent
    // cannot bring decisions it did not make through review here.
    let never_taken =
        m.file == KbFile::Config || (gated && matches!(m.file, KbFile::Object(Dir::Decided, _)));
    Ok(if never_taken {
        Status::Ignored
    } else if exists {
        Status::Conflict
    } else {
        Status::New
    })
}

/// `kb.import_check`: diff a bundle against this KB (new, conflict, identical,
/// ignored) and list every problem; writes nothing.
pub fn import_check(kb: &Kb, caller: &Caller, p: BundlePathParams) -> Result<ImportCheckResult> {
    let path = resolve(kb, caller, &p.path, false)?;
    let s = check_bundle(kb, &path, true, &|_| false)?;
    let gated = gate_holds(kb, caller);
    let mut r = ImportCheckResult {
        ok: s.problems.is_empty(),
        new: Vec::new(),
        conflict: Vec::new(),
        identical: Vec::new(),
        ignored: Vec::new(),
        problems: Vec::new(),
        new_objects: Vec::new(),
        conflict_objects: Vec::new(),
        unreviewed: Vec::new(),
    };
    let object = |name: &str, m: &Member| -> Option<ObjectRef> {
        let (kind, id) = match &m.file {
            KbFile::Config => return None,
            KbFile::Object(dir, id) => (
                match dir {
                    Dir::Claims => "claim",
                    Dir::Pages => "page",
                    Dir::Entities => "entity",
                    Dir::Relations => "relation",
                    Dir::Evidence => "evidence",
                    Dir::Sessions => "session",
                    Dir::Proposed | Dir::Decided => "decided",
                },
                id,
            ),
            KbFile::SourceMeta(id) | KbFile::SourceContent(id) => ("source", id),
        };
        let approver = s.approved_by.get(name);
        Some(ObjectRef {
            kind: kind.to_string(),
            id: id.clone(),
            text: said(&m.parsed),
            unreviewed: is_gated(&m.file) && s.unreviewed.contains(name),
            approved_by: approver.map(|(by, _)| by.clone()),
            approver: approver.map(|(_, standing)| *standing),
        })
    };
    for (name, m) in &s.members {
        match status_of(kb, m, gated)? {
            Status::New => {
                r.new.push(name.clone());
                r.new_objects.extend(object(name, m));
            }
            Status::Conflict => {
                r.conflict.push(name.clone());
                r.conflict_objects.extend(object(name, m));
            }
            Status::Identical => r.identical.push(name.clone()),
            Status::Ignored => r.ignored.push(name.clone()),
        }
    }
    for list in [&mut r.new_objects, &mut r.conflict_objects] {
        list.sort();
        list.dedup();
    }
    r.unreviewed = s
        .members
        .keys()
        .filter(|name| s.unreviewed.contains(*name))
        .cloned()
        .collect();
    r.problems = s.problems;
    Ok(r)
}

/// What a claim, page, entity or relation says, for the person deciding
/// whether to import it.
fn said(parsed: &Parsed) -> Option<String> {
    Some(match parsed {
        Parsed::Claim(c) => c.text.clone(),
        Parsed::Page(pg) => format!("{}\n{}", pg.title, pg.body.trim_end()),
        Parsed::Entity(e) => e.name.clone(),
        Parsed::Relation(r) => format!("{} {} {}", r.source, r.relation, r.target),
        _ => return None,
    })
}

/// At most this many problems go into an error message.
pub(crate) const MESSAGE_PROBLEMS: usize = 50;

pub(crate) fn refused(path: &str, problems: &[BundleProblem]) -> Error {
    let lines = issue_lines(problems);
    let mut msg = format!(
        "bundle {path} refused; nothing was written ({} problem(s)):",
        lines.len()
    );
    for l in lines.iter().take(MESSAGE_PROBLEMS) {
        msg.push_str("\n  ");
        msg.push_str(l);
    }
    if lines.len() > MESSAGE_PROBLEMS {
        msg.push_str(&format!(
            "\n  ... and {} more; `vouch import-check` lists them all",
            lines.len() - MESSAGE_PROBLEMS
        ));
    }
    Error::invalid(msg)
}

pub(crate) fn is_gated(f: &KbFile) -> bool {
    matches!(
        f,
        KbFile::Object(Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations, _)
    )
}

/// `kb.import_apply`: import a bundle that passes `import_check`, all or
/// nothing; an agent's gated objects arrive as proposals.
pub fn import_apply(kb: &Kb, caller: &Caller, p: ImportApplyParams) -> Result<ImportApplyResult> {
    let path = resolve(kb, caller, &p.path, false)?;
    let on_conflict = p.on_conflict.unwrap_or_default();
    // On an agent transport without trusted-agent, gated kinds become
    // proposals (protocol §10, imports over agent transports).
    let gated = gate_holds(kb, caller);
    let _lock = kb.lock()?;
    let mut s = check_bundle(kb, &path, true, &|_| true)?;
    if !s.problems.is_empty() {
        return Err(refused(&p.path, &s.problems));
    }
    let mut plan: Vec<(String, Status)> = Vec::with_capacity(s.members.len());
    for (name, m) in &s.members {
        plan.push((name.clone(), status_of(kb, m, gated)?));
    }
    let conflicts: Vec<&str> = plan
        .iter()
        .filter(|(_, st)| *st == Status::Conflict)
        .map(|(n, _)| n.as_str())
        .collect();
    let listed = conflicts
        .iter()
        .take(MESSAGE_PROBLEMS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if on_conflict == OnConflict::Fail && !conflicts.is_empty() {
        return Err(Error::conflict(format!(
            "{} file(s) in the bundle differ from this KB and on_conflict is fail; nothing was \
             written. Re-run with skip or overwrite. Conflicts: {listed}",
            conflicts.len(),
        )));
    }
    // Evidence, sources, sessions and review records back reviewed
    // knowledge as much as claims do: an agent overwrites none of them.
    if gated && on_conflict == OnConflict::Overwrite && !conflicts.is_empty() {
        return Err(Error::denied(format!(
            "overwriting files of this KB from an agent transport is not allowed ({listed}); \
             nothing was written. A person can run `vouch import-apply --on-conflict \
             overwrite`, or import with on_conflict skip"
        )));
    }

    let mut result = ImportApplyResult {
        imported: 0,
        skipped: 0,
        overwritten: 0,
        identical: 0,
        proposed: 0,
        proposal_ids: Vec::new(),
        unreviewed: 0,
    };
    let mut batch = atomic::Batch::new(kb.layout().root());
    let mut events: Vec<AuditEvent> = Vec::new();
    let mut written: Vec<crate::model::Written> = Vec::new();
    let mut admitted: Vec<String> = Vec::new();
    // The sha256 of each durable file written, by its path (`data.written`).
    let mut shas = serde_json::Map::new();
    let mut taken = HashSet::new();
    let bundle_name = Path::new(&p.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.path.clone());
    // Content before meta (a meta.yaml always has its content beside it),
    // sources and evidence before what cites them.
    let rank = |f: &KbFile| match f {
        KbFile::SourceContent(_) => 0,
        KbFile::SourceMeta(_) => 1,
        KbFile::Object(Dir::Evidence, _) => 2,
        KbFile::Object(Dir::Entities, _) => 3,
        KbFile::Object(Dir::Claims, _) => 4,
        KbFile::Object(Dir::Relations, _) => 5,
        KbFile::Object(Dir::Pages, _) => 6,
        _ => 7,
    };
    plan.sort_by(|a, b| {
        rank(&s.members[&a.0].file)
            .cmp(&rank(&s.members[&b.0].file))
            .then(a.0.cmp(&b.0))
    });
    for (name, status) in plan {
        match status {
            Status::Identical => {
                result.identical += 1;
                continue;
            }
            Status::Ignored => continue,
            Status::Conflict if on_conflict == OnConflict::Skip => {
                result.skipped += 1;
                continue;
            }
            _ => {}
        }
        let m = s.members.get_mut(&name).expect("planned member");
        if gated && is_gated(&m.file) {
            let (draft, id) = match &m.parsed {
                Parsed::Claim(c) => (Draft::of_claim(c), &c.id),
                Parsed::Page(pg) => (Draft::of_page(pg), &pg.id),
                Parsed::Entity(e) => (Draft::of_entity(e), &e.id),
                Parsed::Relation(r) => (Draft::of_relation(r), &r.id),
                _ => unreachable!("gated files parse as gated kinds"),
            };
            let (proposal, ev) = imported_proposal(
                kb,
                caller,
                draft,
                id,
                format!("imported from bundle {bundle_name} ({name})"),
                &mut taken,
            )?;
            batch.write(
                kb.layout().file(Dir::Proposed, &proposal.id)?,
                crate::store::yaml::to_yaml(&proposal)?.into_bytes(),
            );
            events.push(ev);
            result.proposal_ids.push(proposal.id);
            result.proposed += 1;
            continue;
        }
        let target = kb.layout().path_of(&m.file)?;
        let content = m.content.take().unwrap_or_default();
        // Knowledge no review let into the KB it came from is written, but
        // not admitted: it stays unaudited here.
        let unreviewed = is_gated(&m.file) && s.unreviewed.contains(&name);
        if unreviewed {
            result.unreviewed += 1;
        }
        if let KbFile::Object(Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations, _) =
            &m.file
        {
            // An unreviewed member is recorded as bytes no file has: one
            // that replaces an object approved earlier leaves it unaudited
            // (never reviewed by the approval of what it replaced).
            let sha = if unreviewed {
                UNREVIEWED_KEY.to_string()
            } else {
                crate::ids::content_sha256(&content)
            };
            shas.insert(kb.layout().inside(&target), json!(sha));
        }
        // A tombstone or a quote a redaction took (in the KB the bundle
        // came from) is recorded as written, the tombstone's content as
        // removed: `doctor` and `source_verify` tell them from a tombstone
        // written by hand.
        let redacted = |extra: &crate::model::Extra| {
            extra.contains_key(crate::review::gate::redact::REDACTED_KEY)
        };
        match (&m.parsed, &m.file) {
            (Parsed::Source(src), KbFile::SourceMeta(id)) if redacted(&src.extra) => {
                shas.insert(
                    kb.layout().inside(&target),
                    json!(crate::ids::content_sha256(&content)),
                );
                let gone = kb.layout().source_content(id)?;
                shas.insert(
                    kb.layout().inside(&gone),
                    json!(crate::audit::trail::REMOVED),
                );
            }
            (Parsed::Evidence(ev), _) if ev.quote.is_none() && redacted(&ev.extra) => {
                shas.insert(
                    kb.layout().inside(&target),
                    json!(crate::ids::content_sha256(&content)),
                );
            }
            _ => {}
        }
        batch.write(target, content);
        // Durable knowledge and review records the import lets in are named
        // in its event, so `doctor` can tell them from hand-written files.
        if let KbFile::Object(
            Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations | Dir::Decided,
            id,
        ) = &m.file
            && !unreviewed
        {
            admitted.push(id.clone());
        }
        if status == Status::Conflict {
            result.overwritten += 1;
        } else {
            result.imported += 1;
        }
        match &m.parsed {
            Parsed::Claim(c) => written.push(crate::model::Written::Claim((**c).clone())),
            Parsed::Page(pg) => written.push(crate::model::Written::Page((**pg).clone())),
            Parsed::Entity(e) => written.push(crate::model::Written::Entity(e.clone())),
            Parsed::Relation(r) => written.push(crate::model::Written::Relation(r.clone())),
            Parsed::Source(src) => written.push(crate::model::Written::Source((**src).clone())),
            _ => {}
        }
    }
    let archive_sha = hash_file(&path)?.0;
    let mut import_ev = kb.event(
        "bundle.import",
        &caller.actor,
        vec![archive_sha],
        json!({"path": path.display().to_string(), "on_conflict": on_conflict,
               "imported": result.imported, "overwritten": result.overwritten,
               "skipped": result.skipped, "identical": result.identical,
               "proposed": result.proposed, "objects": admitted,
               (crate::audit::WRITTEN_KEY): shas}),
    );
    if batch.is_empty() {
        kb.append_audit(std::slice::from_mut(&mut import_ev))?;
        return Ok(result);
    }
    crate::store::nofollow::check_dirs(kb.layout().root(), &kb.layout().sources_dir())
        .map_err(|e| Error::io(&kb.layout().sources_dir(), e))?;
    // Every file is staged and the plan journaled before the event is
    // logged: a crash from here on is finished by the next command if the
    // event made it to the log, and discarded if not.
    let (staged, batch_sha) = batch.stage_journaled(&import_ev.id)?;
    import_ev.data["batch_sha256"] = json!(batch_sha);
    events.insert(0, import_ev);
    if let Err(e) = kb.append_audit(&mut events) {
        staged.abandon();
        return Err(e);
    }
    crate::fail::point("bundle.logged");
    if let Err(e) = staged.finish() {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "import failed while writing ({e}); it is logged, and the next command \
                 completes it"
            ),
        ));
    }
    // A process with the index open (a server) updates it here; a one-shot
    // command has none, so bring state.db in step now: the import is
    // searchable at once and `doctor` finds the index current.
    if kb.index().is_open() {
        kb.announce(&written);
    } else {
        if let Err(e) = kb.index().catch_up(kb) {
            kb.warn(format!(
                "index: not refreshed after the import ({e}); the next search will"
            ));
        }
    }
    Ok(result)
}
