//! `kb.lint`: knowledge that rots — uncited, stale, contradicted,
//! duplicated, orphaned.

use super::*;

pub(crate) fn lint_findings(
    kb: &Kb,
    l: &Loaded,
    known: &Known,
    p: &LintParams,
) -> Result<Vec<Finding>> {
    let stale_days = days(p.stale_days, DEFAULT_STALE_DAYS, "stale_days")?;
    let pending_days = days(p.pending_days, DEFAULT_PENDING_DAYS, "pending_days")?;
    let now = kb.now().0;
    let mut out = Vec::new();
    let require = kb.settings().review.require_citations;
    let mut contradiction_pairs: HashSet<(&str, &str)> = HashSet::new();
    let by_id: HashMap<&str, &Claim> = l.claims.iter().map(|c| (c.id.as_str(), c)).collect();
    for c in &l.claims {
        if c.evidence.is_empty() && c.status.needs_citation(require) {
            out.push(finding(
                "uncited-claim",
                Severity::Error,
                &c.id,
                claim_path(&c.id),
                format!(
                    "claim {} cites nothing; add a source or evidence with `vouch cite {} <source-id>`, \
                     or `vouch archive {}` if it cannot be supported",
                    c.id, c.id, c.id
                ),
            ));
        }
        for e in &c.evidence {
            if let Some(why) = known.citation(kb, e) {
                out.push(finding(
                    "dangling-citation",
                    Severity::Error,
                    &format!("{}:{e}", c.id),
                    claim_path(&c.id),
                    format!(
                        "claim {} {why}; register the source again (its id is the sha256 of its \
                         content) or cite another with `vouch cite`",
                        c.id
                    ),
                ));
            }
        }
        if c.status.is_current() {
            let seen = c.last_confirmed_at.unwrap_or(c.updated_at).0;
            let age = (now - seen).num_days();
            if age > stale_days {
                out.push(finding(
                    "stale-claim",
                    Severity::Warn,
                    &c.id,
                    claim_path(&c.id),
                    format!(
                        "claim {} was last confirmed {age} days ago (staleness window {stale_days} \
                         days); re-check it and run `vouch confirm {}`, or supersede or archive it",
                        c.id, c.id
                    ),
                ));
            }
        }
        // An `expires` date carried over from a knowledge file (docs/knowledge.md).
        if c.status.is_current()
            && let Some(expires) = c
                .extra
                .get("metadata")
                .and_then(|m| m.get("knowledge"))
                .and_then(|k| k.get("expires"))
                .and_then(serde_json::Value::as_str)
            && expires
                .get(..10)
                .is_some_and(|d| d < now.format("%Y-%m-%d").to_string().as_str())
        {
            out.push(finding(
                "expired-claim",
                Severity::Warn,
                &c.id,
                claim_path(&c.id),
                format!(
                    "claim {} expired on {expires} (its knowledge file said so); re-check it and \
                     supersede or archive it, or `vouch confirm {}` once the file's date moves",
                    c.id, c.id
                ),
            ));
        }
        // protocol §3: "A supersedes B" makes B superseded, with
        // B.superseded_by = A. A one-sided link (a hand edit, an import that
        // skipped B's file) leaves B current.
        for old in &c.supersedes {
            let Some(b) = by_id.get(old.as_str()) else {
                continue; // dangling: reported by doctor
            };
            if b.superseded_by.as_deref() != Some(c.id.as_str())
                || b.status != ClaimStatus::Superseded
            {
                out.push(finding(
                    "one-sided-supersession",
                    Severity::Warn,
                    &format!("{}:{old}", c.id),
                    claim_path(old),
                    format!(
                        "claim {} supersedes {old}, but {old} is not marked superseded by it \
                         (status {}); run `vouch supersede {old} {}`",
                        c.id, b.status, c.id
                    ),
                ));
            }
        }
        for other in &c.contradicts {
            let other_current = known.claims.get(other).is_some_and(|s| s.is_current());
            // Either side may hold the link (a one-sided edit or import);
            // report each pair once, under its smaller id.
            let (a, b) = if c.id < *other {
                (c.id.as_str(), other.as_str())
            } else {
                (other.as_str(), c.id.as_str())
            };
            if c.status.is_current() && other_current && contradiction_pairs.insert((a, b)) {
                out.push(finding(
                    "unresolved-contradiction",
                    Severity::Warn,
                    &format!("{a}:{b}"),
                    claim_path(a),
                    format!(
                        "claims {a} and {b} contradict each other and both are current; decide \
                         which holds and `vouch supersede` or `vouch archive` the other"
                    ),
                ));
            }
        }
    }
    for pg in &l.pages {
        if pg.status == PageStatus::Archived {
            continue;
        }
        for cid in &pg.claims {
            if let Some(st) = known.claims.get(cid)
                && !st.is_current()
            {
                let by = l
                    .claims
                    .iter()
                    .find(|c| &c.id == cid)
                    .and_then(|c| c.superseded_by.clone());
                let hint = match by {
                    Some(b) => format!("cite {b}, which supersedes it"),
                    None => "update or archive the page".to_string(),
                };
                out.push(finding(
                    "page-cites-retired-claim",
                    Severity::Warn,
                    &format!("{}:{cid}", pg.id),
                    Some(rel(KbFile::Object(Dir::Pages, pg.id.clone()))),
                    format!("page {} cites claim {cid}, which is {st}; {hint}", pg.id),
                ));
            }
        }
    }
    let mut referenced: HashSet<&str> = HashSet::new();
    for c in &l.claims {
        referenced.extend(c.entities.iter().map(String::as_str));
    }
    for pg in &l.pages {
        referenced.extend(pg.entities.iter().map(String::as_str));
    }
    let pages: HashSet<&str> = l.pages.iter().map(|p| p.id.as_str()).collect();
    let relations: HashSet<&str> = l.relations.iter().map(|r| r.id.as_str()).collect();
    for r in &l.relations {
        referenced.insert(&r.source);
        referenced.insert(&r.target);
        for (end, id) in [("source", &r.source), ("target", &r.target)] {
            // A relation connects any approved objects (protocol §10).
            let exists = known.entities.contains(id)
                || known.claims.contains_key(id)
                || known.evidence.contains(id)
                || known.sources.contains(id)
                || pages.contains(id.as_str())
                || relations.contains(id.as_str());
            if !exists {
                out.push(finding(
                    "relation-missing-end",
                    Severity::Error,
                    &format!("{}:{end}", r.id),
                    Some(rel(KbFile::Object(Dir::Relations, r.id.clone()))),
                    format!(
                        "relation {} has {end} {id:?}, which is no approved object; propose \
                         it, or remove the relation file",
                        r.id
                    ),
                ));
            }
        }
    }
    for e in &l.entities {
        if !referenced.contains(e.id.as_str()) {
            out.push(finding(
                "orphan-entity",
                Severity::Warn,
                &e.id,
                Some(rel(KbFile::Object(Dir::Entities, e.id.clone()))),
                format!(
                    "entity {} is referenced by no claim, page or relation; link it (e.g. propose a \
                     relation or a claim with --entity {}) or remove it if it is not needed",
                    e.id, e.id
                ),
            ));
        }
    }
    let mut by_text: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in l.claims.iter().filter(|c| c.status.is_current()) {
        by_text.entry(normalize(&c.text)).or_default().push(&c.id);
    }
    for ids in by_text.values().filter(|ids| ids.len() > 1) {
        let keep = ids[0];
        for dup in &ids[1..] {
            out.push(finding(
                "duplicate-claim",
                Severity::Warn,
                &format!("{keep}:{dup}"),
                claim_path(dup),
                format!(
                    "claims {keep} and {dup} say the same thing; keep one with \
                     `vouch supersede {dup} {keep}`"
                ),
            ));
        }
    }
    for pr in &l.pending {
        if l.decided_ids.contains(&pr.id) {
            continue;
        }
        let age = (now - pr.created_at.0).num_days();
        if age > pending_days {
            out.push(finding(
                "old-proposal",
                Severity::Warn,
                &pr.id,
                pending_file(kb, &pr.id),
                format!(
                    "proposal {} ({} {}) has waited {age} days for review (limit {pending_days}); \
                     `vouch approve {}` or `vouch reject {} --reason ...`",
                    pr.id, pr.kind, pr.object_id, pr.id, pr.id
                ),
            ));
        }
    }
    Ok(out)
}

/// `kb.lint`: approved knowledge that has rotted. Files that do not parse
/// are skipped with a warning (`kb.doctor` reports them). Changes nothing.
pub fn lint(kb: &Kb, p: LintParams) -> Result<HealthReport> {
    let l = load(kb)?;
    for (path, why) in &l.unreadable {
        kb.warn(format!(
            "lint skipped {path}: {why} (`vouch doctor` reports it)"
        ));
    }
    let known = Known::of(kb, &l)?;
    Ok(report(lint_findings(kb, &l, &known, &p)?, Vec::new()))
}
