//! The embedding model, as the app wires it: `vouch model import | list |
//! verify | remove` (a server's index keeper embeds what is new). Where models
//! are installed (the user's cache folder, or `.vouch/models/` when
//! `retrieval.model_dir` says so) and giving an opened knowledge base its
//! model are `vouch_model::kb`'s, which the benchmarks share.

use serde_json::Value;
use vouch_core::{Error, Kb};

#[cfg(feature = "embeddings")]
mod enabled {
    use super::*;
    use serde_json::json;
    use vouch_model::kb::{configured, known_names, models_root};
    use vouch_model::{ModelSpec, install, spec};

    /// Give `kb` its installed model, and show how far long embedding
    /// steps are on stderr.
    pub(crate) fn attach(kb: &mut Kb) {
        vouch_model::kb::attach(kb);
        if kb.embedder().is_some() {
            kb.set_progress(std::sync::Arc::new(super::progress::Progress::default()));
        }
    }

    fn spec_named(name: Option<&str>, kb: Option<&Kb>) -> Result<&'static ModelSpec, Error> {
        match name {
            None => configured(kb),
            Some(n) => spec::find(n).ok_or_else(|| {
                Error::invalid(format!("no model named {n:?}; known: {}", known_names()))
            }),
        }
    }

    pub(crate) fn import(
        kb: Option<&Kb>,
        srcs: &[std::path::PathBuf],
        name: Option<&str>,
    ) -> Result<Value, Error> {
        // The model the files are, unless the user named one.
        let spec = match (name, install::detect(srcs, spec::MODELS)) {
            (None, Some(found)) => found,
            _ => spec_named(name, kb)?,
        };
        let root = models_root(kb)?;
        let got = install::import(srcs, &root, spec)?;
        Ok(json!({"ok": true, "installed": got}))
    }

    pub(crate) fn list(kb: Option<&Kb>) -> Result<Value, Error> {
        let root = models_root(kb)?;
        let configured = configured(kb).ok().map(|s| s.name);
        let known: Vec<Value> = spec::MODELS
            .iter()
            .map(|m| {
                json!({
                    "name": m.name,
                    "package": m.package_label(),
                    "dimensions": m.dimensions,
                    "installed": install::is_installed(&root, m),
                    "configured": Some(m.name) == configured,
                    "get_it": m.download_hint(),
                })
            })
            .collect();
        Ok(json!({"root": root.display().to_string(), "models": known}))
    }

    pub(crate) fn verify(kb: Option<&Kb>, name: Option<&str>) -> Result<Value, Error> {
        let spec = spec_named(name, kb)?;
        let root = models_root(kb)?;
        if !install::is_installed(&root, spec)
            && std::fs::symlink_metadata(install::model_dir(&root, spec)).is_err()
        {
            return Err(Error::not_found(format!(
                "model {} is not installed under {}; get it with: {}",
                spec.name,
                root.display(),
                spec.download_hint()
            )));
        }
        let got = install::check(&root, spec);
        Ok(json!({"ok": got.problems.is_empty(), "model": got}))
    }

    pub(crate) fn remove(kb: Option<&Kb>, name: &str) -> Result<Value, Error> {
        let spec = spec_named(Some(name), kb)?;
        let root = models_root(kb)?;
        let removed = install::remove(&root, spec)?;
        Ok(json!({"ok": true, "removed": removed, "name": spec.name}))
    }
}

#[cfg(feature = "embeddings")]
pub(crate) use enabled::*;

#[cfg(not(feature = "embeddings"))]
mod disabled {
    use super::*;

    fn off() -> Error {
        Error::invalid(
            "this build of vouch has no embedding support (built without the `embeddings` \
             feature); searches use fts5",
        )
    }
    pub(crate) fn attach(_kb: &mut Kb) {}
    pub(crate) fn import(
        _: Option<&Kb>,
        _: &[std::path::PathBuf],
        _: Option<&str>,
    ) -> Result<Value, Error> {
        Err(off())
    }
    pub(crate) fn list(_: Option<&Kb>) -> Result<Value, Error> {
        Err(off())
    }
    pub(crate) fn verify(_: Option<&Kb>, _: Option<&str>) -> Result<Value, Error> {
        Err(off())
    }
    pub(crate) fn remove(_: Option<&Kb>, _: &str) -> Result<Value, Error> {
        Err(off())
    }
}

#[cfg(not(feature = "embeddings"))]
pub(crate) use disabled::*;

/// How far a long embedding step is, on stderr (only with a model).
#[cfg(feature = "embeddings")]
mod progress {
    /// A line on stderr every [`PROGRESS_EVERY`] while a step embeds (a step
    /// that ends sooner says nothing): how many, how fast, how long is left.
    #[derive(Default)]
    pub(crate) struct Progress {
        /// The step under way: when it began, its last line, its total and
        /// how far it was (a new total, or fewer done, is a new step).
        step: std::sync::Mutex<Option<Step>>,
    }

    struct Step {
        began: std::time::Instant,
        last: std::time::Instant,
        total: usize,
        done: usize,
    }

    const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

    impl vouch_core::services::Progress for Progress {
        fn embedded(&self, done: usize, total: usize) {
            let now = std::time::Instant::now();
            let mut step = self.step.lock().unwrap_or_else(|e| e.into_inner());
            let s = match step.as_mut() {
                Some(s) if s.total == total && s.done <= done => s,
                _ => step.insert(Step {
                    began: now,
                    last: now,
                    total,
                    done,
                }),
            };
            s.done = done;
            if done >= total || now.duration_since(s.last) < PROGRESS_EVERY {
                return;
            }
            s.last = now;
            eprintln!(
                "vouch: {}",
                progress_line(done, total, now.duration_since(s.began))
            );
        }
    }

    /// `embedding: 12,367 of 1,127,000 documents (49/s, about 6 h 20 min left)`.
    fn progress_line(done: usize, total: usize, took: std::time::Duration) -> String {
        let rate = done as f64 / took.as_secs_f64().max(0.001);
        let left = if rate > 0.0 {
            let secs = ((total - done) as f64 / rate) as u64;
            match (secs / 3600, secs % 3600 / 60) {
                (0, 0) => "under a minute left".to_string(),
                (0, m) => format!("about {m} min left"),
                (h, m) => format!("about {h} h {m} min left"),
            }
        } else {
            "time left unknown".to_string()
        };
        format!(
            "embedding: {} of {} documents ({rate:.0}/s, {left}; a search meanwhile says \
             what is pending, and what is stored is kept if this stops)",
            grouped(done),
            grouped(total)
        )
    }

    /// 1127000 → "1,127,000".
    fn grouped(n: usize) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn a_progress_line_says_how_many_how_fast_and_how_long() {
            let line = super::progress_line(12_367, 1_127_000, std::time::Duration::from_secs(250));
            assert!(
                line.starts_with(
                    "embedding: 12,367 of 1,127,000 documents (49/s, about 6 h 15 min left;"
                ),
                "{line}"
            );
            let soon = super::progress_line(90, 100, std::time::Duration::from_secs(9));
            assert!(soon.contains("(10/s, under a minute left;"), "{soon}");
        }
    }
}
