//! `kb.knowledge_export`: current approved claims → `index.json` and the
//! seed's YAML files. Ids are stable: a claim imported from
//! `global:pitfall:007` keeps that id; a claim that came from nowhere gets
//! the next free sequence of its domain and category. Superseded, archived,
//! redacted and pending knowledge is never exported, nor a claim no
//! approval let in as it is now (written or edited by hand): the result
//! names each one left out. The same KB gives the same bytes.

use crate::error::{Error, Result};
use crate::kb::{Caller, Kb};
use crate::model::{Claim, ClaimType, Relation, RelationType};
use crate::store::Dir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Params of `kb.knowledge_export`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// The folder to write (inside the project, outside .vouch/); made if
    /// missing. An existing folder must be empty or an earlier export (its
    /// index.json as vouch writes it, its facts in its YAML files); the
    /// files vouch writes there are replaced — by an agent, only those the
    /// earlier export wrote.
    pub out: String,
}

/// What `kb.knowledge_export` returns.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExportResult {
    /// Always true: an export that fails is an error.
    pub ok: bool,
    /// The folder written, as given.
    pub out: String,
    /// Facts written: one per current approved claim.
    pub facts: usize,
    /// Relative paths written.
    pub files: Vec<String>,
    /// Current claims not exported, and why: a file no approval or import
    /// in the audit log let in as it is now (written or edited by hand;
    /// `vouch doctor` names each). An export with any is partial.
    pub left_out: Vec<LeftOut>,
}

/// A current claim an export left out.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LeftOut {
    /// The claim's id.
    pub id: String,
    /// Why it was left out, and what to do.
    pub reason: String,
}

/// A claim type back to a category (`tool-quirk` when so tagged).
fn category_of(c: &Claim) -> &'static str {
    match c.claim_type {
        ClaimType::Warning => "pitfall",
        ClaimType::Workflow => "pattern",
        ClaimType::Question => "question",
        ClaimType::Observation if c.tags.iter().any(|t| t == "tool-quirk") => "tool-quirk",
        _ => "fact",
    }
}

fn file_for(domain: &str, category: &str, came_from: Option<&str>) -> String {
    match came_from {
        Some(f) if f.starts_with("repos/") || f.starts_with("agents/") => f.to_string(),
        _ if domain == "global" => format!("global/{category}s.yaml"),
        _ => format!("repos/{domain}.yaml"),
    }
}

/// Where a person's export goes: inside the project as for agents, or any
/// folder they name (relative to the project) — `(parent, name)`, the
/// parent an existing folder; nothing beneath it is written through a link
/// (`ensure_dirs` from it).
fn outside_target(kb: &Kb, out: &str) -> Result<(PathBuf, PathBuf)> {
    if let Ok(inside) = crate::sources::resolve_for(kb, out, "") {
        return Ok(inside);
    }
    let given = std::path::Path::new(out);
    // Relative to the project, as every path of the kb.* methods is.
    let absolute = kb.layout().project_root().join(given);
    let name = absolute
        .file_name()
        .ok_or_else(|| Error::invalid(format!("out {out:?}: name the folder to write")))?;
    let parent = absolute
        .parent()
        .ok_or_else(|| Error::invalid(format!("out {out:?}: name the folder to write")))?;
    let parent = parent.canonicalize().map_err(|e| {
        Error::invalid(format!(
            "out {out:?}: its parent folder {} cannot be used ({e})",
            parent.display()
        ))
    })?;
    Ok((parent, PathBuf::from(name)))
}

/// Is the folder `out_dir` (beneath `project`) an earlier knowledge
/// export? Its `index.json` must be what vouch writes — exactly `version`
/// 1, `last_updated`, `total_facts` and that many `facts`, each with an
/// id, its text, a category and a domain — and every fact it lists must be
/// in its YAML files with the same text. Answers the files the export
/// wrote (index.json, and each YAML file holding only facts of the index),
/// or `None` when the folder is something else.
fn earlier_export(
    project: &std::path::Path,
    out_dir: &std::path::Path,
    out: &str,
) -> Result<Option<std::collections::HashSet<String>>> {
    if !crate::store::nofollow::is_file(&out_dir.join("index.json")) {
        return Ok(None);
    }
    let dir = super::parse::read_at(project, out_dir, out)?;
    let Some((_, Some(Value::Object(index)))) = &dir.index else {
        return Ok(None);
    };
    let mut keys: Vec<&str> = index.keys().map(String::as_str).collect();
    keys.sort();
    let facts = index.get("facts").and_then(Value::as_array);
    let shaped = keys == ["facts", "last_updated", "total_facts", "version"]
        && index.get("version").and_then(Value::as_u64) == Some(1)
        && index.get("last_updated").is_some_and(Value::is_string)
        && facts.is_some_and(|f| {
            index.get("total_facts").and_then(Value::as_u64) == Some(f.len() as u64)
        });
    if !shaped {
        return Ok(None);
    }
    let index_facts = dir.index_facts();
    let listed: HashMap<&str, &str> = index_facts
        .iter()
        .filter(|f| {
            ["category", "domain"]
                .iter()
                .all(|k| f.str_field(k).is_some())
        })
        .filter_map(|f| Some((f.id()?, f.text()?)))
        .collect();
    if listed.len() != facts.map_or(0, Vec::len) {
        return Ok(None);
    }
    let in_files: HashMap<&str, &str> = dir
        .facts()
        .into_iter()
        .filter_map(|f| Some((f.id()?, f.text()?)))
        .collect();
    if listed
        .iter()
        .any(|(id, text)| in_files.get(id) != Some(text))
    {
        return Ok(None);
    }
    let mut ours: std::collections::HashSet<String> = dir
        .files
        .iter()
        .filter(|f| {
            f.frontmatter.is_some()
                && !f.facts.is_empty()
                && f.facts
                    .iter()
                    .all(|x| x.id().is_some_and(|id| listed.contains_key(id)))
        })
        .map(|f| f.path.clone())
        .collect();
    ours.insert("index.json".into());
    Ok(Some(ours))
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// `kb.knowledge_export`: write current approved claims as a knowledge folder
/// at `out`.
pub fn export(kb: &Kb, caller: &Caller, p: ExportParams) -> Result<ExportResult> {
    // A person exports where they say; an agent only inside the project.
    let (project, relative) = if caller.is_agent() {
        crate::sources::resolve_for(
            kb,
            &p.out,
            "an agent exports knowledge files only inside the project (a person may export \
             anywhere with `vouch knowledge export DIR`)",
        )?
    } else {
        outside_target(kb, &p.out)?
    };
    let out_dir: PathBuf = project.join(&relative);
    if out_dir.starts_with(kb.layout().root()) {
        return Err(Error::invalid(format!(
            "out {:?}: inside .vouch/; export to a folder of its own",
            p.out
        )));
    }
    // An existing folder is written into only when it is empty or an
    // earlier export, known by its own marks (any folder may hold an
    // index.json): nothing else is overwritten.
    let occupied = std::fs::read_dir(&out_dir).is_ok_and(|mut e| e.next().is_some());
    let earlier = if occupied {
        let Some(ours) = earlier_export(&project, &out_dir, &p.out)? else {
            return Err(Error::invalid(format!(
                "out {:?}: an existing folder that is not a knowledge export (no index.json \
                 that vouch wrote: version 1, last_updated, total_facts and the facts its \
                 YAML files hold); knowledge export writes into an empty folder or an \
                 earlier export. Choose a new folder",
                p.out
            )));
        };
        Some(ours)
    } else {
        None
    };
    let mut claims: Vec<Claim> = kb
        .load_all::<Claim>()?
        .into_iter()
        .filter(|c| c.status.is_current())
        .collect();
    claims.sort_by(|a, b| a.id.cmp(&b.id));
    // Only what a person approved: a claim (or relation) no approval let
    // in as it is now is left out, as `kb.synthesize` leaves it out, and
    // named in the result.
    let relations = kb.load_all::<Relation>()?;
    let objects: Vec<(Dir, &str)> = claims
        .iter()
        .map(|c| (Dir::Claims, c.id.as_str()))
        .chain(relations.iter().map(|r| (Dir::Relations, r.id.as_str())))
        .collect();
    let unreviewed = crate::retrieval::unaudited_strictly(kb, &objects);
    let (claims, held): (Vec<Claim>, Vec<Claim>) = claims
        .into_iter()
        .partition(|c| !unreviewed.contains(&(Dir::Claims, c.id.clone())));
    let left_out: Vec<LeftOut> = held
        .into_iter()
        .map(|c| LeftOut {
            id: c.id,
            reason: "no approval or import in the audit log let this claim in as its file \
                     is now (written or edited by hand; `vouch doctor` names it): propose \
                     the text for review to export it"
                .into(),
        })
        .collect();
    // Stable ids first; new ones take the next free sequence.
    let meta = |c: &Claim| -> serde_json::Map<String, Value> {
        c.extra
            .get("metadata")
            .and_then(|m| m.get("knowledge"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut used: HashMap<(String, String), u64> = HashMap::new();
    for c in &claims {
        if let Some(id) = meta(c).get("id").and_then(Value::as_str) {
            let parts: Vec<&str> = id.rsplitn(3, ':').collect();
            if let (3, Ok(n)) = (parts.len(), parts[0].parse::<u64>()) {
                let k = (parts[2].to_string(), parts[1].to_string());
                let slot = used.entry(k).or_default();
                *slot = (*slot).max(n);
            }
        }
    }
    let domain_of = |m: &serde_json::Map<String, Value>| {
        m.get("domain")
            .and_then(Value::as_str)
            .unwrap_or("global")
            .to_string()
    };
    // claim id → knowledge id.
    let mut knowledge_ids: HashMap<&str, String> = HashMap::new();
    for c in &claims {
        let m = meta(c);
        let id = match m.get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => {
                let (domain, category) = (domain_of(&m), category_of(c));
                let n = used.entry((domain.clone(), category.into())).or_default();
                *n += 1;
                format!("{domain}:{category}:{:03}", *n)
            }
        };
        knowledge_ids.insert(c.id.as_str(), id);
    }
    // `related`: the approved `references` relations between exported
    // claims, and what the imported fact listed that is still exported.
    let mut related: HashMap<&str, Vec<String>> = HashMap::new();
    for r in relations {
        if unreviewed.contains(&(Dir::Relations, r.id.clone())) {
            continue;
        }
        if !matches!(
            r.relation,
            RelationType::References | RelationType::RelatesTo
        ) {
            continue;
        }
        if let (Some((from, _)), Some(to)) = (
            knowledge_ids.get_key_value(r.source.as_str()),
            knowledge_ids.get(r.target.as_str()),
        ) {
            related.entry(*from).or_default().push(to.clone());
        }
    }
    let exported: std::collections::HashSet<&str> =
        knowledge_ids.values().map(String::as_str).collect();
    let mut facts: Vec<(String, String, Value)> = Vec::new(); // (file, id, fact)
    let mut last_updated = String::new();
    for c in &claims {
        let m = meta(c);
        let category = category_of(c);
        let domain = domain_of(&m);
        let id = knowledge_ids[c.id.as_str()].clone();
        let mut fact = serde_json::Map::new();
        fact.insert("id".into(), json!(id));
        fact.insert("fact".into(), json!(c.text));
        fact.insert("category".into(), json!(category));
        fact.insert("domain".into(), json!(domain));
        fact.insert("confidence".into(), json!(c.confidence));
        let tags: Vec<&String> = c
            .tags
            .iter()
            .filter(|t| **t != domain && t.as_str() != "tool-quirk")
            .collect();
        if !tags.is_empty() {
            fact.insert("tags".into(), json!(tags));
        }
        for k in ["source_count", "first_seen", "expires"] {
            if let Some(v) = m.get(k) {
                fact.insert(k.into(), v.clone());
            }
        }
        let mut listed = related.remove(c.id.as_str()).unwrap_or_default();
        listed.extend(
            crate::params::string_list(m.get("related"))
                .into_iter()
                .filter(|r| exported.contains(r.as_str()) && *r != id),
        );
        listed.sort();
        listed.dedup();
        if !listed.is_empty() {
            fact.insert("related".into(), json!(listed));
        }
        let confirmed = c
            .last_confirmed_at
            .as_ref()
            .map(|t| t.0.format("%Y-%m-%d").to_string())
            .or_else(|| {
                m.get("last_confirmed")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        if let Some(d) = confirmed {
            fact.insert("last_confirmed".into(), json!(d));
        }
        if !fact.contains_key("first_seen") {
            fact.insert(
                "first_seen".into(),
                json!(c.created_at.0.format("%Y-%m-%d").to_string()),
            );
        }
        let updated = c.updated_at.0.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        if updated > last_updated {
            last_updated = updated;
        }
        let file = file_for(&domain, category, m.get("file").and_then(Value::as_str));
        facts.push((file, id, Value::Object(fact)));
    }
    facts.sort_by(|a, b| a.1.cmp(&b.1));
    if last_updated.is_empty() {
        last_updated = "1970-01-01T00:00:00Z".into();
    }
    // index.json
    let index = json!({
        "version": 1,
        "last_updated": last_updated,
        "total_facts": facts.len(),
        "facts": facts.iter().map(|(_, _, f)| f.clone()).collect::<Vec<_>>(),
    });
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert(
        "index.json".into(),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&index).unwrap_or_default()
        )
        .into_bytes(),
    );
    let mut by_file: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for (file, _, f) in &facts {
        by_file.entry(file.as_str()).or_default().push(f);
    }
    for (file, list) in by_file {
        let domain = list[0]["domain"].as_str().unwrap_or("global");
        let category = list[0]["category"].as_str().unwrap_or("fact");
        let mut text = format!(
            "---\ndomain: {}\ncategory: {category}\nversion: 1\nlast_updated: \"{}\"\n---\n\n# {domain}\n\n## Facts\n\n",
            yaml_str(domain),
            &last_updated[..10]
        );
        for f in list {
            text.push_str(&format!(
                "- id: {}\n",
                yaml_str(f["id"].as_str().unwrap_or(""))
            ));
            text.push_str(&format!(
                "  fact: {}\n",
                yaml_str(f["fact"].as_str().unwrap_or(""))
            ));
            for k in [
                "category",
                "domain",
                "confidence",
                "tags",
                "source_count",
                "first_seen",
                "last_confirmed",
                "expires",
                "related",
            ] {
                if let Some(v) = f.get(k) {
                    text.push_str(&format!("  {k}: {v}\n"));
                }
            }
        }
        files.insert(file.to_string(), text.into_bytes());
    }
    // An agent replaces only what the earlier export wrote: never a file
    // someone put beside it, nor one edited since to hold other facts.
    if let Some(ours) = &earlier
        && caller.is_agent()
    {
        let theirs: Vec<&str> = files
            .keys()
            .filter(|rel| {
                std::fs::symlink_metadata(out_dir.join(rel)).is_ok() && !ours.contains(*rel)
            })
            .map(String::as_str)
            .collect();
        if !theirs.is_empty() {
            return Err(Error::invalid(format!(
                "out {:?}: {} not written by the earlier export there (or edited since to hold \
                 facts its index.json does not list); an agent does not replace them, and \
                 nothing was written. A person can export there with `vouch knowledge export`, \
                 or choose a new folder",
                p.out,
                theirs.join(", ")
            )));
        }
    }
    // Every file name (some come from claim metadata) is checked before
    // anything is created: none may leave the folder, nor name git's.
    for rel in files.keys() {
        let inside = std::path::Path::new(rel).components().all(|c| {
            matches!(c, std::path::Component::Normal(n)
                if !crate::sources::is_git_name(&n.to_string_lossy()))
        });
        if !inside || rel.is_empty() {
            return Err(Error::invalid(format!(
                "a fact's file {rel:?} (from a claim's domain or metadata.file) would leave {} \
                 or write into a .git folder; nothing was written",
                p.out
            )));
        }
    }
    for (rel, bytes) in &files {
        let path = out_dir.join(rel);
        if let Some(parent) = path.parent() {
            // Made one folder at a time from the project, never through a
            // link.
            crate::store::nofollow::ensure_dirs(&project, parent)
                .map_err(|e| Error::invalid(format!("{}: {e}", parent.display())))?;
        }
        crate::store::atomic::write(&out_dir, &path, bytes)?;
    }
    let _lock = kb.lock()?;
    let mut ev = kb.event(
        "knowledge.export",
        &caller.actor,
        Vec::new(),
        json!({"out": p.out, "facts": facts.len(), "files": files.len(),
               "left_out": left_out.iter().map(|l| l.id.as_str()).collect::<Vec<_>>()}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(ExportResult {
        ok: true,
        out: p.out,
        facts: facts.len(),
        files: files.keys().cloned().collect(),
        left_out,
    })
}
