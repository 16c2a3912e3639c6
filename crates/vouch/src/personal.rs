//! The person's own config: `$XDG_CONFIG_HOME/vouch/config.yaml` (default
//! `~/.config/vouch/config.yaml`), beside `checkpoint.key`. The one place
//! that knows where it is and what in it widens the review gate.
//!
//! ```yaml
//! review:
//!   reviewers: [alice, bob]        # may decide proposals over MCP, JSONL, HTTP
//!   url: https://vouch.example.org # where the review pages are: proposals link there
//!   approver_role: trusted-agent   # optional: every agent may (not its own)
//!   require_citations: false       # optional: working claims may be uncited
//! synthesize:
//!   llm_command: [my-llm, --json]  # see llm.rs
//! server:                          # team.rs: for this one working tree
//!   database: postgresql://vouch:PASSWORD@db.example.org/vouch
//!   tree: /srv/vouch/repo
//! ```
//!
//! These decide who turns proposals into knowledge, so they are read only
//! here: never from a repository's `.vouch/config.yaml` (a clone writes
//! that) nor from variables (a project's `.mcp.json` sets a stdio server's
//! environment). A config file inside the knowledge base's project (a
//! `HOME` or `XDG_CONFIG_HOME` pointed into the repository) is refused for
//! the same reason, with a warning.

use serde_json::Value;
use std::path::{Path, PathBuf};
use vouch_core::Kb;
use vouch_core::settings::PersonalTrust;

/// The folder of the person's vouch files (`…/.config/vouch`).
pub(crate) fn config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("vouch"))
}

/// The person's `config.yaml`.
pub(crate) fn config_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("config.yaml"))
}

/// How the path is named in messages.
pub(crate) fn shown() -> String {
    config_path().map_or("~/.config/vouch/config.yaml".into(), |p| {
        p.display().to_string()
    })
}

/// The person's config as a tree, when there is one that may be used for
/// `kb` (warned about on `kb` otherwise). `None` when absent.
pub(crate) fn read(kb: &Kb) -> Option<(PathBuf, Value)> {
    let path = config_path()?;
    let text = std::fs::read_to_string(&path).ok()?;
    // Inside the project, or the git work tree holding it (a nested KB),
    // it is a file the repository supplied.
    let project = kb.layout().root().parent()?;
    let tree = work_tree(project).unwrap_or_else(|| project.to_path_buf());
    if inside(&path, project) || inside(&path, &tree) {
        kb.warn(format!(
            "{} is inside this knowledge base's project or git work tree ({}), so it is not \
             used: your own config must live outside any repository (check HOME and \
             XDG_CONFIG_HOME)",
            path.display(),
            tree.display()
        ));
        return None;
    }
    if let Err(why) = private_to_you(&path) {
        kb.warn(format!("{} is not used: {why}", path.display()));
        return None;
    }
    match vouch_core::store::yaml::from_yaml::<Value>(&path, &text) {
        Ok(v) => Some((path, v)),
        Err(e) => {
            kb.warn(format!("{}: {}; it is not used", path.display(), e.message));
            None
        }
    }
}

/// The git work tree `dir` is in (the folder holding `.git`), if any.
pub(crate) fn work_tree(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The person's config decides who may approve: it must be theirs and
/// writable by no one else (as a token file must).
#[cfg(unix)]
fn private_to_you(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let me = rustix::process::geteuid().as_raw();
    if m.uid() != me {
        return Err(format!("it belongs to uid {}, not to you", m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "others may write it (mode {:o}); `chmod go-w` it",
            m.mode() & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_to_you(_: &Path) -> Result<(), String> {
    Ok(())
}

fn inside(path: &Path, dir: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(path).starts_with(canon(dir))
}

/// What the tree allows; a value of the wrong shape is warned about and
/// ignored (the strict default holds).
pub(crate) fn trust_of(kb: &Kb, path: &Path, cfg: &Value) -> PersonalTrust {
    let review = &cfg["review"];
    let mut trust = PersonalTrust {
        source: Some(path.display().to_string()),
        ..PersonalTrust::default()
    };
    let bad = |key: &str, held: &Value, want: &str| {
        kb.warn(format!(
            "{}: review.{key}: {held} is not {want}; it is ignored",
            path.display()
        ))
    };
    match &review["reviewers"] {
        Value::Null => {}
        Value::Array(names) => {
            for n in names {
                match n.as_str().map(str::trim) {
                    Some(name) if vouch_core::ids::actor_name_problem(name).is_none() => {
                        trust.reviewers.push(name.to_string())
                    }
                    _ => bad("reviewers", n, "an actor name"),
                }
            }
        }
        other => bad("reviewers", other, "a list of actor names"),
    }
    match &review["approver_role"] {
        Value::Null => {}
        Value::String(s) if s == "trusted-agent" => trust.trusted_agent = true,
        Value::String(s) if s == "human" => {}
        other => bad("approver_role", other, "human or trusted-agent"),
    }
    match &review["require_citations"] {
        Value::Null | Value::Bool(true) => {}
        Value::Bool(false) => trust.citations_optional = true,
        other => bad("require_citations", other, "true or false"),
    }
    trust
}

/// Give `kb` what the person's own config allows, and where their review
/// pages are.
pub(crate) fn attach(kb: &mut Kb) {
    let found = read(kb);
    crate::team::attach(kb, found.as_ref().map(|(p, c)| (p.as_path(), c)));
    if let Some((path, cfg)) = found {
        let trust = trust_of(kb, &path, &cfg);
        kb.set_trust(trust);
        if let Some(url) = review_url(kb, &path, &cfg) {
            kb.set_review_pages(&url);
        }
    }
}

/// `review.url`: the address of the review pages a proposal's link points
/// at. Only from the person's own config: a link a cloned repository chose
/// could send the person to a look-alike page.
fn review_url(kb: &Kb, path: &Path, cfg: &Value) -> Option<String> {
    let held = &cfg["review"]["url"];
    if held.is_null() {
        return None;
    }
    let url = held.as_str().map(str::trim).unwrap_or_default();
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    let plain = url.len() <= 2048
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
        && !url.contains(['?', '#']);
    if scheme_ok && plain && url.split("://").nth(1).is_some_and(|rest| !rest.is_empty()) {
        return Some(url.to_string());
    }
    kb.warn(format!(
        "{}: review.url: {held} is not an http(s) address such as https://vouch.example.org; \
         proposals carry no review link",
        path.display()
    ));
    None
}
