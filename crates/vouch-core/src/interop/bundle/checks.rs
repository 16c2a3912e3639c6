//! Checking content as knowledge: citations, references and supersession, in the bundle or in this KB.

use super::*;
use crate::rules::Lookup;

/// Does an object exist in the bundle or (when importing) in this KB?
pub(crate) struct Refs<'a> {
    pub(crate) scan: &'a Scan,
    pub(crate) kb: Option<&'a Kb>,
}

impl crate::rules::Lookup for Refs<'_> {
    fn has(&self, dir: Dir, id: &str) -> bool {
        crate::ids::check_id("id", id).is_ok()
            && (self
                .scan
                .members
                .contains_key(&KbFile::Object(dir, id.to_string()).relative())
                || self.kb.is_some_and(|kb| kb.exists(dir, id)))
    }
    fn has_source(&self, id: &str) -> bool {
        is_source_id(id)
            && (self
                .scan
                .members
                .contains_key(&KbFile::SourceMeta(id.to_string()).relative())
                || self.kb.is_some_and(|kb| kb.source_exists(id)))
    }
    fn evidence_source(&self, id: &str) -> Option<String> {
        let staged = self
            .scan
            .members
            .get(&KbFile::Object(Dir::Evidence, id.to_string()).relative());
        match staged.map(|m| &m.parsed) {
            Some(Parsed::Evidence(ev)) => Some(ev.source_id.clone()),
            _ => self
                .kb
                .and_then(|kb| crate::rules::Lookup::evidence_source(kb, id)),
        }
    }
    fn place(&self) -> &'static str {
        if self.kb.is_some() {
            " (neither in the bundle nor in this KB)"
        } else {
            " (not in the bundle)"
        }
    }
}

impl Refs<'_> {
    /// Why a claim's or relation's citation does not resolve.
    pub(crate) fn citation(&self, id: &str) -> Option<String> {
        crate::rules::citation_problem(self, id).map(|why| format!("cites {why}"))
    }
}

pub(crate) fn where_(kb: Option<&Kb>) -> &'static str {
    if kb.is_some() {
        "in the bundle or in this KB"
    } else {
        "in the bundle"
    }
}

/// Problems of one bundle member as knowledge: citations, references.
pub(crate) fn member_problems(
    refs: &Refs,
    name: &str,
    m: &Member,
    require_citations: bool,
) -> Vec<String> {
    let w = where_(refs.kb);
    let mut out = Vec::new();
    let missing = |out: &mut Vec<String>, what: &str, dir: Dir, ids: &[String]| {
        for id in ids {
            if let Some(why) = crate::rules::reference_problem(refs, dir, id) {
                out.push(format!("{what}: {why}"));
            }
        }
    };
    // Text a reviewer is shown may not hide or steer what they read.
    let shown: Vec<(&str, &str)> = match &m.parsed {
        Parsed::Claim(c) => vec![("text", c.text.as_str())],
        Parsed::Page(pg) => vec![("title", pg.title.as_str())],
        Parsed::Entity(e) => vec![("name", e.name.as_str())],
        Parsed::Evidence(ev) => vec![("locator", ev.locator.as_str())],
        Parsed::Source(s) => {
            let mut v = vec![("locator", s.locator.as_str())];
            v.extend(s.title.as_deref().map(|t| ("title", t)));
            v
        }
        _ => Vec::new(),
    };
    out.extend(
        shown
            .into_iter()
            .filter_map(|(field, text)| crate::ids::hidden_char_problem(field, text)),
    );
    if let Some(kb) = refs.kb
        && let Some(why) = brings_back_redacted(kb, m)
    {
        out.push(why);
    }
    match &m.parsed {
        Parsed::Claim(c) => {
            if c.evidence.is_empty() && c.status.needs_citation(require_citations) {
                out.push(
                    "claim cites no source or evidence; every claim needs a citation (protocol §3)"
                        .into(),
                );
            }
            out.extend(c.evidence.iter().filter_map(|e| refs.citation(e)));
            missing(&mut out, "entity", Dir::Entities, &c.entities);
            missing(&mut out, "superseded claim", Dir::Claims, &c.supersedes);
            missing(&mut out, "contradicting claim", Dir::Claims, &c.contradicts);
            if let Some(by) = &c.superseded_by {
                missing(
                    &mut out,
                    "superseding claim",
                    Dir::Claims,
                    std::slice::from_ref(by),
                );
            }
        }
        Parsed::Page(pg) => {
            missing(&mut out, "claim", Dir::Claims, &pg.claims);
            missing(&mut out, "entity", Dir::Entities, &pg.entities);
            for s in pg.sources.iter().filter(|s| !refs.has_source(s)) {
                out.push(format!("source {s} does not exist {w}"));
            }
        }
        Parsed::Relation(r) => {
            for (end, id) in [("source", &r.source), ("target", &r.target)] {
                if let Some(why) = crate::rules::endpoint_problem(refs, id) {
                    out.push(format!("relation {end}: {why}"));
                }
            }
            out.extend(r.evidence.iter().filter_map(|e| refs.citation(e)));
        }
        Parsed::Evidence(ev) if !refs.has_source(&ev.source_id) => out.push(format!(
            "evidence points into source {} which does not exist {w}",
            ev.source_id
        )),
        Parsed::Evidence(ev) if ev.quote.is_some() && !refs.scan.quotes_checked.contains(name) => {
            // Not checked in the archive's stream: check against this KB's
            // copy of the source, if it has one.
            let local = refs
                .kb
                .and_then(|kb| kb.source_content(&ev.source_id).ok().flatten());
            match local {
                Some(bytes) => {
                    if let Some(why) = crate::sources::evidence_mismatch(ev, &bytes) {
                        out.push(why);
                    }
                }
                None => out.push(format!(
                    "its quote cannot be checked: the content of source {} is neither after \
                     it in the archive nor {}",
                    ev.source_id,
                    if refs.kb.is_some() {
                        "in this KB"
                    } else {
                        "anywhere else"
                    }
                )),
            }
        }
        Parsed::Content => {
            if let KbFile::SourceContent(id) = &m.file
                && !refs.has_source(id)
            {
                out.push(format!("source content without sources/{id}/meta.yaml {w}"));
            }
        }
        Parsed::Decided(p) => {
            if let Some(kb) = refs.kb {
                // A queue that cannot be read refuses too: a decision is
                // let in only when it is known to decide nothing pending.
                match kb.pending_exists(&p.id) {
                    Ok(false) => {}
                    Ok(true) => out.push(format!(
                        "proposal {} is pending review in this KB; importing its decision \
                         would decide it without review",
                        p.id
                    )),
                    Err(e) => out.push(format!(
                        "whether proposal {} is pending review in this KB cannot be checked \
                         ({}); importing its decision could decide it without review",
                        p.id, e.message
                    )),
                }
            }
        }
        _ => {}
    }
    out
}

/// Why importing member `m` would bring back bytes a person redacted in
/// `kb` (`vouch redact`), if it would: a tombstone's content, a redacted
/// claim's text or page's body, a redacted quote, or the words of a masked
/// decided record — whatever `on_conflict` says, such a bundle is refused.
fn brings_back_redacted(kb: &Kb, m: &Member) -> Option<String> {
    use crate::review::gate::redact::REDACTED_KEY;
    let marked = |extra: &crate::model::Extra| extra.contains_key(REDACTED_KEY);
    let what = match (&m.parsed, &m.file) {
        (Parsed::Content, KbFile::SourceContent(id)) => kb
            .load_source(id)
            .ok()
            .flatten()
            .filter(|s| marked(&s.extra))
            .map(|_| format!("the content of source {id}")),
        (Parsed::Claim(c), _) if c.status != crate::model::ClaimStatus::Redacted => kb
            .load::<crate::model::Claim>(&c.id)
            .ok()
            .flatten()
            .filter(|here| marked(&here.extra))
            .map(|_| format!("the text of claim {}", c.id)),
        (Parsed::Page(pg), _) if pg.status != crate::model::PageStatus::Redacted => kb
            .load::<crate::model::Page>(&pg.id)
            .ok()
            .flatten()
            .filter(|here| marked(&here.extra))
            .map(|_| format!("the body of page {}", pg.id)),
        (Parsed::Evidence(ev), _) if ev.quote.is_some() => kb
            .load::<crate::model::Evidence>(&ev.id)
            .ok()
            .flatten()
            .filter(|here| marked(&here.extra))
            .map(|_| format!("the quote of evidence {}", ev.id)),
        (Parsed::Decided(p), _) if !marked(&p.extra) => kb
            .load_proposal(Dir::Decided, &p.id)
            .ok()
            .flatten()
            .filter(|here| marked(&here.extra))
            .map(|_| format!("the words of decided record {}", p.id)),
        _ => None,
    }?;
    Some(format!(
        "{what}: redacted in this KB (`vouch redact`), and importing this would bring the \
         redacted bytes back; export the bundle again from a KB that redacted them too"
    ))
}

/// Knowledge-level checks of every member.
pub(crate) fn check_content(scan: &mut Scan, kb: Option<&Kb>, require_citations: bool) {
    let found: Vec<(String, String)> = {
        let refs = Refs { scan, kb };
        scan.members
            .iter()
            .flat_map(|(path, m)| {
                member_problems(&refs, path, m, require_citations)
                    .into_iter()
                    .map(move |r| (path.clone(), r))
            })
            .collect()
    };
    for (path, reason) in found {
        scan.problem(&path, reason);
    }
    for (path, reason) in supersession_cycles(scan) {
        scan.problem(&path, reason);
    }
}

/// Supersession must not loop (protocol §3): a claim superseding itself, or a
/// chain of the bundle's claims that comes back to where it started.
pub(crate) fn supersession_cycles(scan: &Scan) -> Vec<(String, String)> {
    let mut next: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut path_of: HashMap<&str, &str> = HashMap::new();
    for (path, m) in &scan.members {
        if let Parsed::Claim(c) = &m.parsed {
            path_of.insert(&c.id, path);
            let edges = next.entry(&c.id).or_default();
            edges.extend(c.supersedes.iter().cloned());
            if let Some(by) = &c.superseded_by {
                // "by supersedes c", seen from c's side.
                next.entry(by.as_str()).or_default().push(c.id.clone());
            }
        }
    }
    let roots: Vec<String> = next.keys().map(|k| k.to_string()).collect();
    crate::rules::supersession_loops(roots, |id| next.get(id).cloned().unwrap_or_default())
        .into_iter()
        .filter_map(|ring| {
            let file = path_of.get(ring.last()?.as_str())?;
            Some((
                file.to_string(),
                format!(
                    "supersession loops ({}); a claim cannot be superseded by itself or by a \
                     claim it supersedes",
                    ring.join(" → ")
                ),
            ))
        })
        .collect()
}

/// Scan a bundle and check it; for import, against this KB.
pub(crate) fn check_bundle(
    kb: &Kb,
    path: &Path,
    importing: bool,
    keep: &dyn Fn(&KbFile) -> bool,
) -> Result<Scan> {
    let mut s = scan(path, &kb.settings().bundles, keep)?;
    let fatal = s.problems.iter().any(|p| p.path.is_empty());
    if !fatal {
        let require = if importing {
            kb.require_citations()
        } else {
            s.bundle_requires_citations.unwrap_or(true)
        };
        check_content(&mut s, importing.then_some(kb), require);
        if importing {
            let deciders = Deciders::of(kb)?;
            let (unapproved, approved_by) = unapproved(&s, &|by| deciders.counts(by));
            s.unreviewed.extend(unapproved);
            s.approved_by = approved_by
                .into_iter()
                .map(|(path, by)| {
                    let standing = deciders.standing(&by);
                    (path, (by, standing))
                })
                .collect();
        }
    }
    Ok(s)
}

/// Who the importing KB takes a bundle's approval from: read from its own
/// audit log ([`Actors`]) and the person's own config. A bundle's
/// `decided/` record names its approver as it likes; only this KB knows
/// who of those names is an agent here.
///
/// [`Actors`]: crate::audit::trail::Actors
pub(crate) struct Deciders {
    actors: crate::audit::trail::Actors,
    reviewers: Vec<String>,
}

impl Deciders {
    /// Who proposes and who decides in this KB's log, read in order.
    pub(crate) fn of(kb: &Kb) -> Result<Deciders> {
        use crate::audit::trail::{Admits, Logged};
        let mut actors = crate::audit::trail::Actors::default();
        let (bytes, _) = kb.audit_log().read_from(0)?;
        for line in bytes.split(|b| *b == b'\n') {
            if Admits::may_admit(line) {
                actors.take(&mut Logged::of_line(line), true);
            }
        }
        Ok(Deciders {
            actors,
            reviewers: kb.trust().reviewers.clone(),
        })
    }

    /// Who `actor` is here.
    pub(crate) fn standing(&self, actor: &str) -> ApproverStanding {
        if self.reviewers.iter().any(|r| r == actor) {
            ApproverStanding::Reviewer
        } else if self.actors.is_agent(actor) {
            ApproverStanding::Agent
        } else if self.actors.decided.contains(actor) {
            ApproverStanding::Decider
        } else {
            ApproverStanding::Unknown
        }
    }

    /// Does an approval by `actor` count as a person's? Not an agent's
    /// (one this KB's log shows proposing and never deciding), unless the
    /// person named them a reviewer.
    pub(crate) fn counts(&self, actor: &str) -> bool {
        self.standing(actor) != ApproverStanding::Agent
    }
}

/// The claims, pages, entities and relations of a bundle that no approval
/// by a person (`person`, of its `decided_by`) among its own `decided/`
/// records wrote as they are: each must be what approving its proposal
/// writes (the payload its `proposal_sha256` fingerprints, plus what
/// approval adds — [`approved_object`]), changed since only in the fields
/// a lifecycle change sets. The manifest's `unreviewed` list only adds to
/// these: a bundle cannot declare its own knowledge reviewed by leaving it
/// off. Also who approved each member a record wrote, by bundle path (a
/// person, when one did).
///
/// [`approved_object`]: crate::review::gate::approved_object
pub(crate) fn unapproved(
    scan: &Scan,
    person: &dyn Fn(&str) -> bool,
) -> (Vec<String>, HashMap<String, String>) {
    let mut decisions: HashMap<String, Vec<Proposal>> = HashMap::new();
    for m in scan.members.values() {
        if let (KbFile::Object(Dir::Decided, _), Parsed::Decided(p)) = (&m.file, &m.parsed) {
            let mut p = (**p).clone();
            // vouch 1.x keeps the object's id in the payload.
            if p.object_id.is_empty()
                && let Some(id) = p.payload.get("id").and_then(Value::as_str)
            {
                p.object_id = id.to_string();
            }
            decisions.entry(p.object_id.clone()).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    let mut approved_by = HashMap::new();
    for (path, m) in scan
        .members
        .iter()
        .filter(|(_, m)| super::apply::is_gated(&m.file))
    {
        let KbFile::Object(_, id) = &m.file else {
            out.push(path.clone());
            continue;
        };
        let approvers: Vec<&str> = decisions
            .get(id.as_str())
            .into_iter()
            .flatten()
            .filter(|p| approval_wrote(p, &m.parsed))
            .filter_map(|p| p.decided_by.as_deref())
            .collect();
        let by_person = approvers.iter().find(|by| person(by));
        if let Some(by) = by_person.or(approvers.first()) {
            approved_by.insert(path.clone(), by.to_string());
        }
        if by_person.is_none() && !records_link(scan, &m.parsed) {
            out.push(path.clone());
        }
    }
    (out, approved_by)
}

/// Is `object` the relation vouch 1.x writes when a person supersedes a
/// claim or marks two contradicting (`A--supersedes--B`,
/// `A--contradicts--B`, no evidence), for a link the bundle's claims
/// record (B's `superseded_by` is A; A's or B's `contradicts` names the
/// other)? It says no more than the lifecycle fields it mirrors.
fn records_link(scan: &Scan, object: &Parsed) -> bool {
    let Parsed::Relation(r) = object else {
        return false;
    };
    let claim = |id: &str| -> Option<&Claim> {
        match scan
            .members
            .get(&KbFile::Object(Dir::Claims, id.to_string()).relative())
            .map(|m| &m.parsed)
        {
            Some(Parsed::Claim(c)) => Some(c),
            _ => None,
        }
    };
    let (Some(a), Some(b)) = (claim(&r.source), claim(&r.target)) else {
        return false;
    };
    let recorded = if r.relation == RelationType::Supersedes {
        b.superseded_by.as_deref() == Some(a.id.as_str())
    } else if r.relation == RelationType::Contradicts {
        a.contradicts.contains(&b.id) || b.contradicts.contains(&a.id)
    } else {
        false
    };
    recorded
        && r.evidence.is_empty()
        && r.id == format!("{}--{}--{}", r.source, r.relation, r.target)
}

/// Does approving `decided` write `object` (as a lifecycle change may have
/// left it since)? Every field must be what approval writes, but for the
/// lifecycle fields and the times (vouch 1.x stamps the object a moment
/// after the decision). A null, empty list or empty map counts as absent.
/// What vouch 1.x writes differently is allowed as it writes it: its own
/// bookkeeping (`proposed_by` the proposer, `auto_approved: false`), a
/// `scope` where approval writes none, and no `approved_by` or `scope`
/// (neither says anything an agent is served). A decision its own proposer
/// made approves nothing.
pub(crate) fn approval_wrote(decided: &Proposal, object: &Parsed) -> bool {
    use crate::model::Written;
    let (Some(by), Some(at)) = (decided.decided_by.as_deref(), decided.decided_at) else {
        return false;
    };
    if decided.status != ProposalStatus::Approved || by == decided.proposed_by {
        return false;
    }
    let Ok(approved) = crate::review::gate::approved_object(decided, at, by) else {
        return false;
    };
    let (lifecycle, have, want) = match (object, &approved) {
        (Parsed::Claim(c), Written::Claim(a)) => (
            Claim::LIFECYCLE_FIELDS,
            serde_json::to_value(c),
            serde_json::to_value(a),
        ),
        (Parsed::Page(pg), Written::Page(a)) if pg.body.trim_end() == a.body.trim_end() => (
            Page::LIFECYCLE_FIELDS,
            serde_json::to_value(pg),
            serde_json::to_value(a),
        ),
        (Parsed::Entity(e), Written::Entity(a)) => {
            (&[][..], serde_json::to_value(e), serde_json::to_value(a))
        }
        (Parsed::Relation(r), Written::Relation(a)) => {
            (&[][..], serde_json::to_value(r), serde_json::to_value(a))
        }
        _ => return false,
    };
    let fields = |v: std::result::Result<Value, serde_json::Error>| match v.map(compact) {
        Ok(Some(Value::Object(mut m))) => {
            for k in lifecycle.iter().chain(&["created_at", "updated_at"]) {
                m.remove(*k);
            }
            Some(m)
        }
        _ => None,
    };
    let (Some(have), Some(want)) = (fields(have), fields(want)) else {
        return false;
    };
    have.iter().all(|(k, v)| match k.as_str() {
        _ if want.contains_key(k) => want.get(k) == Some(v),
        "proposed_by" => v.as_str() == Some(&decided.proposed_by),
        "auto_approved" => *v == Value::Bool(false),
        "scope" => true,
        _ => false,
    }) && want.iter().all(|(k, v)| {
        have.get(k) == Some(v)
            || (matches!(k.as_str(), "approved_by" | "scope") && !have.contains_key(k))
    })
}

/// A value with every null, empty list and empty map left out (`None`
/// when nothing is left).
fn compact(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Object(m) => {
            let m: serde_json::Map<String, Value> = m
                .into_iter()
                .filter_map(|(k, v)| Some((k, compact(v)?)))
                .collect();
            (!m.is_empty()).then_some(Value::Object(m))
        }
        other => Some(other),
    }
}

pub(crate) fn issue_lines(problems: &[BundleProblem]) -> Vec<String> {
    problems
        .iter()
        .map(|p| {
            if p.path.is_empty() {
                p.reason.clone()
            } else {
                format!("{}: {}", p.path, p.reason)
            }
        })
        .collect()
}
