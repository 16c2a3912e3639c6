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
            if let Some(kb) = refs.kb
                && kb.exists(Dir::Proposed, &p.id)
            {
                out.push(format!(
                    "proposal {} is pending review in this KB; importing its decision would \
                     decide it without review",
                    p.id
                ));
            }
        }
        _ => {}
    }
    out
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
    }
    Ok(s)
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
