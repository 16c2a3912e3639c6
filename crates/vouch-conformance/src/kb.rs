//! A fresh knowledge base in an empty temporary directory, per the kit's
//! contract: `--init` runs there, servers start there, `.vouch/` is the KB.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::Config;
use crate::check::Miss;
use crate::server::{Server, sh_quote, shell};

pub struct Kb {
    /// The project directory (cwd of every command); `.vouch/` is inside.
    dir: TempDir,
    /// Servers' stderr and the kit's scratch files (outside the project).
    scratch: TempDir,
    pub cfg: Config,
    started: usize,
}

impl Kb {
    pub fn new(cfg: &Config) -> Result<Kb, String> {
        let dir = tempfile::Builder::new()
            .prefix("vouch-conformance-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let scratch = tempfile::Builder::new()
            .prefix("vouch-conformance-scratch-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        if let Some(init) = &cfg.init {
            let out = shell(init, dir.path())
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("--init `{init}`: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "--init `{init}` failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(Kb {
            dir,
            scratch,
            cfg: cfg.clone(),
            started: 0,
        })
    }

    /// The project directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The `.vouch/` folder.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join(".vouch")
    }

    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// Start the JSONL server (the `--server` command) here.
    pub fn serve(&mut self) -> Result<Server, Miss> {
        let Some(cmd) = self.cfg.server.clone() else {
            return Err(Miss::Skip("no --server command given".into()));
        };
        self.start(&cmd)
    }

    /// Start `cmd` here with stdio piped.
    pub fn start(&mut self, cmd: &str) -> Result<Server, Miss> {
        self.started += 1;
        let err = self
            .scratch
            .path()
            .join(format!("stderr-{}.txt", self.started));
        Server::start(cmd, self.dir.path(), err, self.cfg.timeout).map_err(Miss::Fail)
    }

    /// Run a decision hook with `{id}` (and `{reason}`) substituted; `Ok`
    /// when it exits 0, `Err(stderr)` otherwise.
    fn hook(&self, template: &str, id: &str, reason: &str) -> Result<(), String> {
        let cmd = template
            .replace("{id}", &sh_quote(id))
            .replace("{reason}", &sh_quote(reason));
        let out = shell(&cmd, self.dir.path())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("`{cmd}`: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let out_s = String::from_utf8_lossy(&out.stdout);
            Err(format!(
                "exit {}: {} {}",
                out.status,
                err.trim(),
                out_s.trim()
            ))
        }
    }

    /// A person approves proposal `id` (the `--approve` hook). Without the
    /// hook, the check that needs it is skipped.
    pub fn approve(&self, id: &str) -> Result<Result<(), String>, Miss> {
        match &self.cfg.approve {
            Some(t) => Ok(self.hook(t, id, "approved by the conformance kit")),
            None => Err(Miss::Skip(
                "needs a person's approval: give --approve \"CMD {id}\"".into(),
            )),
        }
    }

    /// A person rejects proposal `id` (the `--reject` hook).
    pub fn reject(&self, id: &str, reason: &str) -> Result<Result<(), String>, Miss> {
        match &self.cfg.reject {
            Some(t) => Ok(self.hook(t, id, reason)),
            None => Err(Miss::Skip(
                "needs a person's rejection: give --reject \"CMD {id} {reason}\"".into(),
            )),
        }
    }

    /// The audit log's raw bytes (empty when absent).
    pub fn audit_bytes(&self) -> Vec<u8> {
        std::fs::read(self.root().join("audit.log.jsonl")).unwrap_or_default()
    }

    /// The audit log parsed line by line (unparsable lines are skipped).
    pub fn audit(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.audit_bytes())
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Events named `event` that list `object` in `object_ids`.
    pub fn events_naming(&self, event: &str, object: &str) -> usize {
        self.audit()
            .iter()
            .filter(|e| e.get("event").and_then(Value::as_str) == Some(event))
            .filter(|e| {
                e.get("object_ids")
                    .and_then(Value::as_array)
                    .is_some_and(|ids| ids.iter().any(|i| i.as_str() == Some(object)))
            })
            .count()
    }

    /// Every file under `.vouch/` (relative paths), sorted, with its bytes'
    /// length; the derived index and lock files are left out.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        walk(&self.root(), &self.root(), &mut out);
        out.retain(|(p, _)| !p.starts_with("state.db") && !p.ends_with(".lock"));
        out.sort();
        out
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.root().join(rel).exists()
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap_or_default()
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(md) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if md.is_dir() {
            walk(base, &p, out);
        } else {
            let rel = p
                .strip_prefix(base)
                .unwrap_or(&p)
                .to_string_lossy()
                .to_string();
            out.push((rel, md.len()));
        }
    }
}

/// Register `content` as a source; its id.
pub fn register(s: &mut Server, content: &str, locator: &str) -> Result<String, Miss> {
    let r = s.call(
        "kb.register_source",
        json!({"content": content, "locator": locator, "type": "file"}),
    )?;
    r.get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Miss::Fail(format!("register_source result has no id: {r}")))
}

/// Propose a claim; (proposal_id, claim_id). Fails unless valid.
pub fn propose_claim(
    s: &mut Server,
    text: &str,
    evidence: &[&str],
) -> Result<(String, String), Miss> {
    let r = s.call(
        "kb.propose_claim",
        json!({"text": text, "evidence": evidence}),
    )?;
    proposal_ids(&r, "claim_id")
}

/// The `proposal_id` and object id (`key`) of a valid proposal result.
pub fn proposal_ids(r: &Value, key: &str) -> Result<(String, String), Miss> {
    if r.get("valid") != Some(&Value::Bool(true)) {
        return Err(Miss::Fail(format!(
            "proposal not valid: {}",
            crate::check::brief(r)
        )));
    }
    let pid = r.get("proposal_id").and_then(Value::as_str).unwrap_or("");
    let oid = r.get(key).and_then(Value::as_str).unwrap_or("");
    if pid.is_empty() || oid.is_empty() {
        return Err(Miss::Fail(format!(
            "proposal result lacks proposal_id/{key}: {r}"
        )));
    }
    Ok((pid.to_string(), oid.to_string()))
}

/// Propose and have a person approve a claim; its claim id.
pub fn approved_claim(kb: &Kb, s: &mut Server, text: &str, ev: &[&str]) -> Result<String, Miss> {
    let (pid, cid) = propose_claim(s, text, ev)?;
    kb.approve(&pid)?
        .map_err(|e| Miss::Fail(format!("--approve hook refused {pid}: {e}")))?;
    Ok(cid)
}

/// The ids in an array result (objects' `id`).
pub fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The methods a server advertises in kb.capabilities.
pub fn methods(caps: &Value) -> Vec<String> {
    caps.get("methods")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
