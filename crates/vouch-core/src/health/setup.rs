//! What `kb.doctor` checks in the files a clone brings beside the
//! knowledge: `config.yaml` (unknown and 1.x-only keys, a version this
//! vouch does not know), git's leftovers (conflict markers, merges the
//! audit log has not joined), the hosts' config and `.gitignore`.

use super::*;
use serde_json::Value;

pub(crate) fn config_findings(kb: &Kb) -> Vec<Finding> {
    let path = Some(crate::store::layout::CONFIG_FILE.to_string());
    let mut out = Vec::new();
    if let Some(err) = kb.config_error() {
        out.push(finding(
            "config-unparseable",
            Severity::Error,
            "config.yaml",
            path.clone(),
            format!("{err}; fix the file (every other command refuses to run until it parses)"),
        ));
        return out;
    }
    if std::fs::symlink_metadata(kb.layout().config()).is_err() {
        out.push(finding(
            "config-missing",
            Severity::Warn,
            "config.yaml",
            path,
            "config.yaml is missing, so defaults are in use; `vouch init` writes one without \
             touching anything else"
                .into(),
        ));
        return out;
    }
    let s = kb.settings();
    if !s.version_supported() {
        out.push(finding(
            "config-version",
            Severity::Error,
            "version",
            path.clone(),
            format!(
                "config.yaml has version {}; this vouch reads \"0.1\" (and vouch 1.x's 1); \
                 set version: \"0.1\" or use the vouch that wrote it",
                s.version
            ),
        ));
    }
    // Settings that would widen the gate count only from the person's own
    // config; a cloned repository's are named and ignored.
    for (key, held) in s.ignored_widenings() {
        out.push(finding(
            "gate-setting-ignored",
            Severity::Warn,
            key,
            path.clone(),
            format!(
                "{key}: {held} in the repository's config.yaml is ignored: who may approve, \
                 what may be approved and who acts are set only in your own config \
                 (~/.config/vouch/config.yaml), never by a repository. Remove it here, or move \
                 it to your config if you meant it"
            ),
        ));
    }
    let trust = kb.trust();
    if trust.trusted_agent {
        out.push(finding(
            "gate-relaxed",
            Severity::Warn,
            "review.approver_role",
            trust.source.clone(),
            "review.approver_role is trusted-agent in your own config: every agent may approve \
             other actors' proposals, and agents' imports and lifecycle changes are not gated"
                .to_string(),
        ));
    }
    for problem in s.problems() {
        out.push(finding(
            "config-invalid-value",
            Severity::Warn,
            &problem.key,
            path.clone(),
            format!(
                "config.yaml `{}` holds {} that cannot be used ({}); the default is used instead \
                 — fix or remove the key",
                problem.key,
                problem.held_shown(),
                problem.why_shown()
            ),
        ));
    }
    if let Some(why) = crate::retrieval::backend::RetrievalState::of(kb).degraded_reason {
        out.push(finding(
            "backend-unavailable",
            Severity::Warn,
            "retrieval.backend",
            path.clone(),
            why,
        ));
    }
    let sections = [
        ("", &s.extra),
        ("retrieval.", &s.retrieval.extra),
        ("review.", &s.review.extra),
        ("sources.", &s.sources.extra),
        ("bundles.", &s.bundles.extra),
        ("limits.", &s.limits.extra),
    ];
    for (prefix, extra) in sections {
        for key in extra.keys() {
            out.push(finding(
                "config-unknown-key",
                Severity::Warn,
                &format!("{prefix}{key}"),
                path.clone(),
                if V1_STARTER_KEYS.contains(&format!("{prefix}{key}").as_str()) {
                    format!(
                        "config.yaml key `{prefix}{key}` is vouch 1.x's and not used by this \
                         vouch (it is kept as is, so 1.x still reads it; this vouch's gate and \
                         search do not follow it)"
                    )
                } else {
                    format!(
                        "config.yaml key `{prefix}{key}` is not used by this version of vouch (it \
                         is kept as is); remove it if it is a typo"
                    )
                },
            ));
        }
    }
    out
}

/// A knowledge file git left with conflict markers: the same object
/// decided differently on two branches (approved with other content, two
/// successors of one claim, archived on one side and superseded on the
/// other). It is served by neither side until a person settles it; say
/// which events stand behind each side, and how to settle.
pub(crate) fn merge_conflict_finding(
    kb: &Kb,
    path: &str,
    events: &mut Option<Vec<Value>>,
) -> Result<Option<Finding>> {
    // `path` is one of our own listing's (relative to the KB root).
    let full = kb.layout().root().join(path);
    let Some(bytes) = kb.read_file(&full).ok().flatten() else {
        return Ok(None);
    };
    let marked = bytes
        .split(|b| *b == b'\n')
        .any(|l| l.starts_with(b"<<<<<<< ") || l == b"<<<<<<<");
    if !marked {
        return Ok(None);
    }
    let id = std::path::Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if events.is_none() {
        *events = Some(kb.audit_log().read_parsed()?);
    }
    let behind: Vec<String> = events
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|e| {
            e.get("object_ids")
                .and_then(Value::as_array)
                .is_some_and(|ids| ids.iter().any(|x| x.as_str() == Some(id.as_str())))
        })
        .map(|e| {
            format!(
                "{} {} by {} at {}",
                e.get("id").and_then(Value::as_str).unwrap_or("?"),
                e.get("event").and_then(Value::as_str).unwrap_or("?"),
                e.get("actor").and_then(Value::as_str).unwrap_or("?"),
                e.get("created_at").and_then(Value::as_str).unwrap_or("?"),
            )
        })
        .collect();
    Ok(Some(finding(
        "merge-conflict",
        Severity::Error,
        path,
        Some(path.to_string()),
        format!(
            "{path} holds git conflict markers: two branches decided {id} differently, so \
             neither side is served. The events behind it: {}. Settle it as a person: keep \
             one side (`git checkout --ours {path}` or `--theirs`, run from .vouch/) or edit \
             the file to what was decided, then `git add` it; if the other side's decision \
             should not stand, `vouch revert` its lifecycle event or propose a correction",
            if behind.is_empty() {
                "none in the log".to_string()
            } else {
                behind.join("; ")
            }
        ),
    )))
}

/// The project's own agent-host configs (a cloned repository's files) that
/// start vouch as a reviewer the person named, under a name only the host
/// decides, or with its config home moved: a host started from such a file
/// would decide proposals as that reviewer. The person's config names
/// reviewers; the repository must not pick which process acts as one.
/// The files are parsed, not searched as text ([`super::hosts`]).
pub(crate) fn host_config_findings(kb: &Kb) -> Vec<Finding> {
    let Some(project) = kb.layout().root().parent() else {
        return Vec::new();
    };
    let reviewers = &kb.trust().reviewers;
    let mut out = Vec::new();
    for file in super::hosts::HOST_FILES {
        let Ok(bytes) = crate::store::nofollow::read(project, &project.join(file)) else {
            continue;
        };
        match super::hosts::concerns(&String::from_utf8_lossy(&bytes), reviewers) {
            Ok(why) if why.is_empty() => {}
            Ok(why) => out.push(finding(
                "host-config-reviewer",
                Severity::Error,
                file,
                Some(format!("../{file}")),
                format!(
                    "{file} in this project {}: a host started from it would decide proposals \
                     without you. Give agents names that are not reviewers (`vouch install-mcp \
                     HOST --agent NAME`) and remove the variable",
                    why.join("; ")
                ),
            )),
            Err(e) => out.push(finding(
                "host-config-unreadable",
                Severity::Warn,
                file,
                Some(format!("../{file}")),
                format!(
                    "{file} in this project does not parse as JSON ({e}), so doctor cannot tell \
                     whether a host started from it would run vouch as a reviewer; fix the file"
                ),
            )),
        }
    }
    out
}

/// What teams need from git: `.vouch/.gitattributes` so branches that
/// each appended events merge on their own, and a log a merge left
/// repairable (conflict markers from a merge without it, an event present
/// twice, lines out of order) and its branches joined. With `fix`, each is
/// repaired — every event kept, none deleted.
pub(crate) fn merge_findings(kb: &Kb, caller: &Caller, r: &mut Repairs) -> Result<()> {
    let Repairs { fix, issues, fixed } = r;
    let fix = *fix;
    use crate::store::layout::{AUDIT_FILE, GITATTRIBUTES, GITATTRIBUTES_FILE};
    let path = kb.layout().gitattributes();
    let text = kb.read_text(&path).ok().flatten();
    let has_union = text.as_deref().is_some_and(|t| {
        t.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["audit.log.jsonl", "merge=union"])
    });
    if !has_union {
        if fix {
            let _lock = kb.lock()?;
            let mut body = text.clone().unwrap_or_default();
            if !body.is_empty() && !body.ends_with('\n') {
                body.push('\n');
            }
            body.push_str(GITATTRIBUTES);
            crate::store::atomic::write(kb.layout().root(), &path, body.as_bytes())?;
            fixed.push(format!(
                "{GITATTRIBUTES_FILE}: added `audit.log.jsonl merge=union`, so branches merge \
                 without a conflict in the audit log (commit it)"
            ));
        } else {
            issues.push(finding(
                "gitattributes-missing",
                Severity::Warn,
                GITATTRIBUTES_FILE,
                Some(GITATTRIBUTES_FILE.to_string()),
                "`.vouch/.gitattributes` does not say `audit.log.jsonl merge=union`, so two \
                 branches that each recorded a decision conflict in the audit log when merged; \
                 `vouch doctor --fix` adds it"
                    .to_string(),
            ));
        }
    }
    if !fix {
        return Ok(());
    }
    {
        let _lock = kb.lock()?;
        let log = kb.layout().audit_log();
        if let Some(bytes) = kb.read_file(&log)? {
            let (repaired, what) = crate::audit::graph::repair(&bytes);
            if what.reordered {
                crate::store::atomic::write(kb.layout().root(), &log, &repaired)?;
                fixed.push(format!(
                    "{AUDIT_FILE}: repaired a merge by hand: {} conflict marker line(s) dropped, \
                     {} repeated event(s) kept once, every event after its parent; no event \
                     removed",
                    what.markers, what.duplicates
                ));
            }
        }
    }
    if let Some(n) = kb.join_branches(&caller.actor)? {
        fixed.push(format!(
            "{AUDIT_FILE}: joined {n} branch(es) a git merge left with an audit.merge event"
        ));
    }
    Ok(())
}

/// protocol §4: drafts and the derived index stay out of git.
pub(crate) fn gitignore_findings(kb: &Kb) -> Vec<Finding> {
    let path = kb.layout().gitignore();
    let text = kb.read_text(&path).ok().flatten().unwrap_or_default();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    ["proposed/", "state.db"]
        .into_iter()
        .filter(|want| {
            !lines
                .iter()
                .any(|l| l.trim_end_matches('/') == want.trim_end_matches('/'))
        })
        .map(|want| {
            finding(
                "gitignore-missing",
                Severity::Error,
                want,
                Some(".gitignore".to_string()),
                format!(
                    ".vouch/.gitignore does not ignore {want}, so it could be committed and \
                     shared ({}); add the line `{want}` (`vouch init` restores a missing file \
                     without touching others)",
                    if want == "proposed/" {
                        "drafts nobody reviewed"
                    } else {
                        "a derived index"
                    }
                ),
            )
        })
        .collect()
}

/// The keys vouch 1.5's `init` writes into config.yaml that this vouch does
/// not use: named as 1.x's, not as typos.
const V1_STARTER_KEYS: &[&str] = &[
    "kb",
    "agents",
    "capture",
    "mcp",
    "page_kinds",
    "recall",
    "retrieval.default_limit",
    "retrieval.recency",
    "review.auto_approve_on_receipt",
    "review.expire_pending_after_days",
    "review.require_human_approval",
];

/// A team server's shared lock (`vouch-postgres`): whether its home can be
/// reached, and whether this tree's audit log holds the head the last
/// writer recorded there — else every write here is refused.
pub(crate) fn team_findings(kb: &Kb) -> Vec<Finding> {
    let Some(lock) = kb.shared_lock() else {
        return Vec::new();
    };
    let key = "shared-lock";
    match lock.peek_head() {
        Err(e) => vec![finding(
            "team-database-unreachable",
            Severity::Warn,
            key,
            None,
            format!(
                "{}: {}; writes here are refused until it answers, and the pending proposals it keeps \
                 are not listed (reads of knowledge go on)",
                lock.describe(),
                e.message
            ),
        )],
        Ok(Some(head)) if !kb.audit_log().holds(&head).unwrap_or(false) => vec![finding(
            "team-head-missing",
            Severity::Error,
            key,
            Some(crate::store::layout::AUDIT_FILE.to_string()),
            format!(
                "the audit log lacks event {} (hash {}…), the last one written under the lock in \
                 {}: this tree is not the one the team's other writers share, or its history \
                 was rewound, so every write here is refused. Point this server at the shared \
                 tree; if this history is meant to be the team's, run `vouch team adopt`",
                head.id,
                &head.hash[..head.hash.len().min(12)],
                lock.describe()
            ),
        )],
        Ok(_) => Vec::new(),
    }
}
