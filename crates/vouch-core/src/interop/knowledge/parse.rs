//! Reading a knowledge folder without following links, and every rule of
//! the knowledge-file format (docs/knowledge.md).

use super::{CATEGORIES, MAX_FILE_BYTES, Problem};
use crate::error::{Error, Result};
use crate::kb::Kb;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One fact, wherever it was read, with where.
#[derive(Debug, Clone)]
pub struct Fact {
    /// Relative path of the file it was read from.
    pub file: String,
    /// 1-based line of its `- id:` entry; `None` for a fact of index.json.
    pub line: Option<usize>,
    /// The fact's fields as written (domain and category filled from the
    /// file's frontmatter when the entry has none).
    pub fields: serde_json::Map<String, Value>,
}

impl Fact {
    /// Its `id` field, when a string.
    pub fn id(&self) -> Option<&str> {
        self.fields.get("id").and_then(Value::as_str)
    }
    /// Its text (the `fact` field), when a string.
    pub fn text(&self) -> Option<&str> {
        self.fields.get("fact").and_then(Value::as_str)
    }
    /// Field `k`, when a string.
    pub fn str_field(&self, k: &str) -> Option<&str> {
        self.fields.get(k).and_then(Value::as_str)
    }
}

/// One YAML fact file.
#[derive(Debug, Clone)]
pub struct FactFile {
    pub path: String,
    pub bytes: Vec<u8>,
    pub frontmatter: Option<serde_json::Map<String, Value>>,
    pub facts: Vec<Fact>,
}

/// A knowledge folder as read.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeDir {
    /// The folder.
    pub root: PathBuf,
    /// index.json's bytes and, when they are JSON, their value; `None` when it
    /// is missing or unreadable.
    pub index: Option<(Vec<u8>, Option<Value>)>,
    /// The YAML fact files of `global/`, `repos/` and `agents/`, sorted by name
    /// within each.
    pub files: Vec<FactFile>,
    /// Problems met while reading (unreadable, links, too large, not YAML).
    pub read_problems: Vec<Problem>,
}

impl KnowledgeDir {
    /// The bytes of one of its files (`index.json` or a YAML file), as read.
    pub fn bytes_of(&self, file: &str) -> Option<&[u8]> {
        if file == "index.json" {
            return self.index.as_ref().map(|(b, _)| b.as_slice());
        }
        self.files
            .iter()
            .find(|f| f.path == file)
            .map(|f| f.bytes.as_slice())
    }
    /// Facts of the YAML files, in file order.
    pub fn facts(&self) -> Vec<&Fact> {
        self.files.iter().flat_map(|f| f.facts.iter()).collect()
    }
    /// Facts of index.json.
    pub fn index_facts(&self) -> Vec<Fact> {
        let Some((_, Some(v))) = &self.index else {
            return Vec::new();
        };
        v.get("facts")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_object)
                    .map(|o| Fact {
                        file: "index.json".into(),
                        line: None,
                        fields: o.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Read a knowledge folder inside the project: `index.json` and every
/// `.yaml` file in `global/`, `repos/` and `agents/`. Links are never
/// followed; a file over 16 MiB is not read.
pub fn read(kb: &Kb, path: &str) -> Result<KnowledgeDir> {
    let (project, relative) = crate::sources::resolve_for(
        kb,
        path,
        "knowledge files are read from inside the project (outside a knowledge base, \
         `vouch knowledge validate DIR` checks any folder)",
    )?;
    read_at(&project, &project.join(&relative), path)
}

/// Read the knowledge folder `root` beneath `project` (no folder on the
/// way a link); `path` is how the person named it, for messages.
pub(crate) fn read_at(project: &Path, root: &Path, path: &str) -> Result<KnowledgeDir> {
    let root = root.to_path_buf();
    crate::store::nofollow::check_dirs(project, &root).map_err(|e| {
        Error::invalid(format!(
            "{path}: {e}; give the knowledge folder (the one holding index.json)"
        ))
    })?;
    let mut dir = KnowledgeDir {
        root: root.clone(),
        ..KnowledgeDir::default()
    };
    let has_index = crate::store::nofollow::is_file(&root.join("index.json"));
    let has_parts = ["global", "repos", "agents"]
        .iter()
        .any(|d| crate::store::nofollow::is_dir(&root.join(d)));
    if !has_index && !has_parts {
        return Err(Error::invalid(format!(
            "{path}: not a knowledge folder (no index.json, global/, repos/ or agents/)"
        )));
    }
    if has_index {
        match read_file(&root, "index.json") {
            Ok(bytes) => {
                let parsed = serde_json::from_slice::<Value>(&bytes);
                if let Err(e) = &parsed {
                    dir.read_problems.push(Problem::error(
                        "index.json",
                        Some(e.line()),
                        None,
                        format!("not JSON: {e}"),
                    ));
                }
                dir.index = Some((bytes, parsed.ok()));
            }
            Err(m) => dir
                .read_problems
                .push(Problem::error("index.json", None, None, m)),
        }
    } else {
        dir.read_problems.push(Problem::error(
            "index.json",
            None,
            None,
            "missing: a knowledge folder has an index.json (`vouch knowledge export` writes one)"
                .into(),
        ));
    }
    for sub in ["global", "repos", "agents"] {
        let Ok(entries) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{sub}/{name}");
            match read_file(&root, &rel) {
                Ok(bytes) => dir
                    .files
                    .push(parse_file(&rel, bytes, &mut dir.read_problems)),
                Err(m) => dir.read_problems.push(Problem::error(&rel, None, None, m)),
            }
        }
    }
    Ok(dir)
}

fn read_file(root: &Path, rel: &str) -> std::result::Result<Vec<u8>, String> {
    let path = root.join(rel);
    let file = crate::store::nofollow::open(root, &path).map_err(|e| {
        format!("cannot be read ({e}); knowledge files are read without following links")
    })?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_FILE_BYTES {
        return Err(format!(
            "{len} bytes is over the {MAX_FILE_BYTES}-byte limit for a knowledge file"
        ));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
        &mut bytes,
    )
    .map_err(|e| format!("cannot be read: {e}"))?;
    Ok(bytes)
}

/// Frontmatter between `---` lines, then markdown in which each fact is a
/// YAML list item starting `- id:` with its fields indented below it.
fn parse_file(rel: &str, bytes: Vec<u8>, problems: &mut Vec<Problem>) -> FactFile {
    let mut out = FactFile {
        path: rel.into(),
        bytes: Vec::new(),
        frontmatter: None,
        facts: Vec::new(),
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        problems.push(Problem::error(rel, None, None, "not UTF-8 text".into()));
        out.bytes = bytes;
        return out;
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut body_start = 0;
    if lines.first().map(|l| l.trim_end()) == Some("---") {
        match lines.iter().skip(1).position(|l| l.trim_end() == "---") {
            Some(end) => {
                let fm = lines[1..end + 1].join("\n");
                match crate::store::yaml::from_yaml::<Value>(Path::new(rel), &fm) {
                    Ok(Value::Object(m)) => out.frontmatter = Some(m),
                    Ok(_) => problems.push(Problem::error(
                        rel,
                        Some(1),
                        None,
                        "frontmatter is not a mapping of domain, category, version, last_updated"
                            .into(),
                    )),
                    Err(e) => problems.push(Problem::error(rel, Some(1), None, e.message)),
                }
                body_start = end + 2;
            }
            None => {
                problems.push(Problem::error(
                    rel,
                    Some(1),
                    None,
                    "frontmatter has no closing `---` line".into(),
                ));
                body_start = lines.len();
            }
        }
    } else {
        problems.push(Problem::error(
            rel,
            Some(1),
            None,
            "no frontmatter: the file starts with a `---` line, then domain, category, version, \
             last_updated, then `---`"
                .into(),
        ));
    }
    let mut i = body_start;
    while i < lines.len() {
        if !lines[i].starts_with("- id:") {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < lines.len()
            && (lines[i].starts_with(' ')
                || lines[i].starts_with('\t')
                || lines[i].trim().is_empty())
            && !lines[i].starts_with("- ")
        {
            i += 1;
        }
        let entry = lines[start..i].join("\n");
        match crate::store::yaml::from_yaml::<Value>(Path::new(rel), &entry) {
            Ok(Value::Array(items)) if items.len() == 1 && items[0].is_object() => {
                let mut fields = items[0].as_object().cloned().unwrap_or_default();
                if let Some(fm) = &out.frontmatter {
                    for k in ["domain", "category"] {
                        // A file of several categories (`category: mixed`,
                        // or none) gives none: each fact's id says its own.
                        let usable = k == "domain"
                            || fm
                                .get(k)
                                .and_then(Value::as_str)
                                .is_some_and(|c| CATEGORIES.contains(&c));
                        if !fields.contains_key(k)
                            && usable
                            && let Some(v) = fm.get(k)
                        {
                            fields.insert(k.into(), v.clone());
                        }
                    }
                }
                if !fields.contains_key("category")
                    && let Some(from_id) = fields
                        .get("id")
                        .and_then(Value::as_str)
                        .and_then(|id| id.rsplit(':').nth(1))
                        .filter(|c| CATEGORIES.contains(c))
                {
                    fields.insert("category".into(), Value::String(from_id.to_string()));
                }
                out.facts.push(Fact {
                    file: rel.into(),
                    line: Some(start + 1),
                    fields,
                });
            }
            Ok(_) => problems.push(Problem::error(
                rel,
                Some(start + 1),
                None,
                "a fact entry is not one mapping (`- id: ...` with its fields indented below)"
                    .into(),
            )),
            Err(e) => problems.push(Problem::error(
                rel,
                Some(start + 1),
                None,
                format!("fact entry: {}", e.message),
            )),
        }
    }
    out.bytes = bytes;
    out
}

fn is_date(s: &str) -> bool {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
        || chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

fn date_part(s: &str) -> &str {
    s.get(..10).unwrap_or(s)
}

/// Every rule of the format, over what [`read`] found.
pub(crate) fn check(dir: &KnowledgeDir, today: &str) -> Vec<Problem> {
    let mut out = dir.read_problems.clone();
    // index.json's shape.
    let index_facts = dir.index_facts();
    if let Some((_, Some(v))) = &dir.index {
        let e = |m: String| Problem::error("index.json", None, None, m);
        match v.as_object() {
            None => out.push(e(
                "not a JSON object with version, last_updated, total_facts, facts".into(),
            )),
            Some(o) => {
                if o.get("version").and_then(Value::as_i64) != Some(1) {
                    out.push(e("`version` must be 1".into()));
                }
                match o.get("last_updated").and_then(Value::as_str) {
                    Some(d) if is_date(d) => {}
                    _ => out.push(e(
                        "`last_updated` must be an ISO-8601 date or timestamp".into()
                    )),
                }
                match o.get("facts") {
                    Some(Value::Array(facts)) => {
                        if o.get("total_facts").and_then(Value::as_u64) != Some(facts.len() as u64)
                        {
                            out.push(e(format!(
                                "`total_facts` is {}, but `facts` holds {}; set it to {}",
                                o.get("total_facts")
                                    .map_or("missing".into(), |v| v.to_string()),
                                facts.len(),
                                facts.len()
                            )));
                        }
                        for (n, f) in facts.iter().enumerate() {
                            if !f.is_object() {
                                out.push(e(format!("facts[{n}] is not an object")));
                            }
                        }
                    }
                    _ => out.push(e("`facts` must be a list".into())),
                }
            }
        }
    }
    // Frontmatter of each YAML file.
    for f in &dir.files {
        let Some(fm) = &f.frontmatter else { continue };
        for k in ["domain", "version", "last_updated"] {
            if !fm.contains_key(k) {
                out.push(Problem::error(
                    &f.path,
                    Some(1),
                    None,
                    format!("frontmatter has no `{k}`"),
                ));
            }
        }
        // A file that holds facts of several categories (a repository's)
        // names none, or `mixed`: each fact's category comes from its id.
        match fm.get("category").and_then(Value::as_str) {
            Some(c) if CATEGORIES.contains(&c) => {}
            named => out.push(Problem::warn(
                &f.path,
                Some(1),
                None,
                format!(
                    "frontmatter {} no single category of {}: each fact's category is taken \
                     from its id",
                    match named {
                        Some(c) => format!("category {c:?} names"),
                        None => "names".to_string(),
                    },
                    CATEGORIES.join(", ")
                ),
            )),
        }
        if let Some(d) = fm.get("last_updated").and_then(Value::as_str)
            && !is_date(d)
        {
            out.push(Problem::error(
                &f.path,
                Some(1),
                None,
                format!("frontmatter last_updated {d:?} is not an ISO-8601 date"),
            ));
        }
    }
    // Every fact, in both places.
    let yaml_facts = dir.facts();
    let all_ids: HashSet<&str> = yaml_facts
        .iter()
        .filter_map(|f| f.id())
        .chain(index_facts.iter().filter_map(|f| f.id()))
        .collect();
    for facts in [yaml_facts.clone(), index_facts.iter().collect()] {
        let mut seen: HashMap<&str, (&str, Option<usize>)> = HashMap::new();
        for f in facts {
            check_fact(f, &all_ids, today, &mut out);
            if let Some(id) = f.id() {
                if let Some((file, line)) = seen.get(id) {
                    out.push(Problem::error(
                        &f.file,
                        f.line,
                        Some(id),
                        format!(
                            "duplicate id (also in {file}{}); give each fact its own sequence",
                            line.map_or(String::new(), |l| format!(" line {l}"))
                        ),
                    ));
                } else {
                    seen.insert(id, (&f.file, f.line));
                }
            }
        }
    }
    // The two sides agree.
    if dir.index.as_ref().is_some_and(|(_, v)| v.is_some()) && !dir.files.is_empty() {
        let in_index: BTreeMap<&str, &Fact> = index_facts
            .iter()
            .filter_map(|f| Some((f.id()?, f)))
            .collect();
        let in_yaml: BTreeMap<&str, &&Fact> = yaml_facts
            .iter()
            .filter_map(|f| Some((f.id()?, f)))
            .collect();
        for (id, f) in &in_yaml {
            match in_index.get(id) {
                None => out.push(Problem::error(
                    &f.file,
                    f.line,
                    Some(id),
                    "not in index.json; add it there (or run the harvester)".into(),
                )),
                Some(i) if i.text() != f.text() => out.push(Problem::error(
                    &f.file,
                    f.line,
                    Some(id),
                    format!(
                        "text differs from index.json ({:?} there); make them the same",
                        i.text().unwrap_or_default()
                    ),
                )),
                _ => {}
            }
        }
        for id in in_index.keys() {
            if !in_yaml.contains_key(id) {
                out.push(Problem::error(
                    "index.json",
                    None,
                    Some(id),
                    "in index.json but in no YAML file; add it to its domain's file".into(),
                ));
            }
        }
    }
    out
}

fn check_fact(f: &Fact, all_ids: &HashSet<&str>, today: &str, out: &mut Vec<Problem>) {
    let id = f.id();
    let err = |m: String| Problem::error(&f.file, f.line, id, m);
    let Some(id_s) = id else {
        out.push(err(
            "a fact has no `id` (string `{domain}:{category}:{sequence}`)".into(),
        ));
        return;
    };
    if id_s.contains(['/', '\\', '\0']) || id_s.contains("..") || id_s.len() > 200 {
        out.push(err("the id holds path characters or is too long".into()));
    }
    match f.text() {
        Some(t) if !t.trim().is_empty() => {}
        _ => out.push(err(
            "`fact` (the one-sentence text) is missing or empty".into()
        )),
    }
    let category = f.str_field("category");
    match category {
        Some(c) if CATEGORIES.contains(&c) => {}
        Some(c) => out.push(err(format!(
            "category {c:?} is not one of {}",
            CATEGORIES.join(", ")
        ))),
        None => out.push(err("`category` is missing".into())),
    }
    let domain = f.str_field("domain");
    if domain.is_none_or(|d| d.trim().is_empty()) {
        out.push(err("`domain` is missing".into()));
    }
    // {domain}:{category}:{sequence}; the domain may itself hold colons
    // only if it is the id's whole prefix.
    let parts: Vec<&str> = id_s.rsplitn(3, ':').collect();
    if parts.len() != 3 || parts[0].is_empty() || !parts[0].chars().all(|c| c.is_ascii_digit()) {
        out.push(err(format!(
            "id {id_s:?} is not `{{domain}}:{{category}}:{{sequence}}` with a numeric sequence"
        )));
    } else {
        if Some(parts[1]) != category {
            out.push(err(format!(
                "the id says category {:?} but the fact says {:?}",
                parts[1],
                category.unwrap_or("")
            )));
        }
        if Some(parts[2]) != domain {
            out.push(err(format!(
                "the id says domain {:?} but the fact says {:?}",
                parts[2],
                domain.unwrap_or("")
            )));
        }
    }
    match f.fields.get("confidence") {
        Some(Value::Number(n)) if n.as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)) => {}
        Some(v) => out.push(err(format!("confidence {v} must be a number in 0..1"))),
        None => out.push(err("`confidence` is missing (0.0–1.0)".into())),
    }
    if let Some(t) = f.fields.get("tags")
        && !t.as_array().is_some_and(|a| a.iter().all(Value::is_string))
    {
        out.push(err("`tags` must be a list of strings".into()));
    }
    if let Some(n) = f.fields.get("source_count")
        && !n.is_u64()
    {
        out.push(err("`source_count` must be a whole number".into()));
    }
    for k in ["first_seen", "last_confirmed", "expires"] {
        if let Some(v) = f.fields.get(k)
            && !v.as_str().is_some_and(is_date)
        {
            out.push(err(format!("`{k}` {v} is not an ISO-8601 date")));
        }
    }
    if let (Some(first), Some(expires)) = (f.str_field("first_seen"), f.str_field("expires"))
        && date_part(expires) <= date_part(first)
    {
        out.push(err(format!(
            "expires {expires} is not after first_seen {first}"
        )));
    }
    if let Some(expires) = f.str_field("expires")
        && is_date(expires)
        && date_part(expires) < today
    {
        out.push(Problem::warn(
            &f.file,
            f.line,
            id,
            format!("expired on {expires}: confirm it (and move `expires`) or remove it"),
        ));
    }
    match f.fields.get("related") {
        None => {}
        Some(Value::Array(list)) => {
            for r in list {
                match r.as_str() {
                    Some(r) if all_ids.contains(r) => {}
                    Some(r) => out.push(err(format!("related id {r:?} is no fact here"))),
                    None => out.push(err("`related` must list fact ids".into())),
                }
            }
        }
        Some(_) => out.push(err("`related` must be a list of fact ids".into())),
    }
}
