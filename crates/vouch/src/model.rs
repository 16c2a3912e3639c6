//! The embedding model, as the app wires it: where models are installed
//! (the user's cache folder, or `.vouch/models/` when `retrieval.model_dir`
//! says so), giving an opened knowledge base its model, `vouch model
//! import | list | verify | remove`, and embedding everything after a
//! rebuild with progress on a terminal.

use serde_json::Value;
use std::path::PathBuf;
use vouch_core::settings::ModelDir;
use vouch_core::{Error, Kb};

/// The models folder: `.vouch/models/` when the KB's config asks for it,
/// else `$XDG_CACHE_HOME/vouch/models` (or `~/.cache/vouch/models`). A
/// link at `.vouch/models` (or above it) is refused, never followed: the
/// repository chose that path.
pub fn models_root(kb: Option<&Kb>) -> Result<PathBuf, Error> {
    if let Some(kb) = kb
        && kb.settings().retrieval.model_dir == Some(ModelDir::Repo)
    {
        let root = kb.layout().root().join("models");
        match vouch_core::store::nofollow::check_dirs(kb.layout().root(), &root) {
            Ok(()) => return Ok(root),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(root),
            Err(e) => {
                return Err(Error::invalid(format!(
                    "{}: {e}; vouch never follows links under .vouch/ (retrieval.model_dir: \
                     .vouch/models)",
                    root.display()
                )));
            }
        }
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    Ok(cache.join("vouch").join("models"))
}

#[cfg(feature = "embeddings")]
mod enabled {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;
    use vouch_model::{ModelEmbedder, ModelSpec, install, spec};

    /// The model the KB's config names (default all-MiniLM-L6-v2).
    pub fn configured(kb: Option<&Kb>) -> Result<&'static ModelSpec, Error> {
        let name = kb.and_then(|kb| kb.settings().retrieval.model.clone());
        match name {
            None => Ok(spec::DEFAULT_MODEL),
            Some(n) => spec::find(&n).ok_or_else(|| {
                Error::invalid(format!(
                    "retrieval.model `{n}` is not a model this vouch knows; known: {}",
                    names()
                ))
            }),
        }
    }

    fn names() -> String {
        spec::MODELS
            .iter()
            .map(|m| m.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Give `kb` its model when one is installed (nothing is read until
    /// the first text is embedded).
    pub fn attach(kb: &mut Kb) {
        let spec = match configured(Some(kb)) {
            Ok(s) => s,
            Err(e) => {
                kb.warn(format!("{}; semantic search is off", e.message));
                return;
            }
        };
        let root = match models_root(Some(kb)) {
            Ok(r) => r,
            Err(e) => {
                kb.warn(format!("{}; semantic search is off", e.message));
                return;
            }
        };
        if !install::is_installed(&root, spec) {
            kb.set_model_hint(format!(
                "retrieval.model is {}, which is not installed under {}; get it (nothing \
                 downloads at run time): {}",
                spec.name,
                root.display(),
                spec.download_hint()
            ));
            return;
        }
        let threads = kb
            .settings()
            .retrieval
            .embedding_threads
            .map(usize::from)
            .unwrap_or_else(vouch_model::embedder::default_threads);
        kb.set_embedder(Arc::new(ModelEmbedder::new(spec, &root, threads)));
    }

    fn spec_named(name: Option<&str>, kb: Option<&Kb>) -> Result<&'static ModelSpec, Error> {
        match name {
            None => configured(kb),
            Some(n) => spec::find(n)
                .ok_or_else(|| Error::invalid(format!("no model named {n:?}; known: {}", names()))),
        }
    }

    pub fn import(
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

    pub fn list(kb: Option<&Kb>) -> Result<Value, Error> {
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

    pub fn verify(kb: Option<&Kb>, name: Option<&str>) -> Result<Value, Error> {
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

    pub fn remove(kb: Option<&Kb>, name: &str) -> Result<Value, Error> {
        let spec = spec_named(Some(name), kb)?;
        let root = models_root(kb)?;
        let removed = install::remove(&root, spec)?;
        Ok(json!({"ok": true, "removed": removed, "name": spec.name}))
    }

    /// Servers: embed what is new in the background (approve never waits).
    pub fn refresh(kb: &Kb) -> Result<(), Error> {
        if let Some(embedder) = kb.embedder().cloned() {
            kb.index().embed(
                kb,
                &embedder,
                vouch_core::index::Budget::Unlimited,
                false,
                &mut |_, _| {},
            )?;
        }
        Ok(())
    }
}

#[cfg(feature = "embeddings")]
pub use enabled::*;

#[cfg(not(feature = "embeddings"))]
mod disabled {
    use super::*;

    fn off() -> Error {
        Error::invalid(
            "this build of vouch has no embedding support (built without the `embeddings` \
             feature); searches use fts5",
        )
    }
    pub fn attach(_kb: &mut Kb) {}
    pub fn import(
        _: Option<&Kb>,
        _: &[std::path::PathBuf],
        _: Option<&str>,
    ) -> Result<Value, Error> {
        Err(off())
    }
    pub fn list(_: Option<&Kb>) -> Result<Value, Error> {
        Err(off())
    }
    pub fn verify(_: Option<&Kb>, _: Option<&str>) -> Result<Value, Error> {
        Err(off())
    }
    pub fn remove(_: Option<&Kb>, _: &str) -> Result<Value, Error> {
        Err(off())
    }
    pub fn refresh(_: &Kb) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(not(feature = "embeddings"))]
pub use disabled::*;
