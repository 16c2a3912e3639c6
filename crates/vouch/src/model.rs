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

    pub(crate) use vouch_model::kb::attach;

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
