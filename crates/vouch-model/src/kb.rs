//! A knowledge base's model: the one its config names, the folder
//! installed models live in, and giving an opened knowledge base its
//! embedder. One definition for the app (every command and server) and
//! the benchmarks, so a figure measured on a real KB uses the model a user
//! of that KB gets.

use crate::spec::{self, ModelSpec};
use crate::{ModelEmbedder, install};
use std::path::PathBuf;
use std::sync::Arc;
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

/// The model the KB's config names (default all-MiniLM-L6-v2).
pub fn configured(kb: Option<&Kb>) -> Result<&'static ModelSpec, Error> {
    let name = kb.and_then(|kb| kb.settings().retrieval.model.clone());
    match name {
        None => Ok(spec::DEFAULT_MODEL),
        Some(n) => spec::find(&n).ok_or_else(|| {
            Error::invalid(format!(
                "retrieval.model `{n}` is not a model this vouch knows; known: {}",
                known_names()
            ))
        }),
    }
}

/// The names of the models this build knows, comma-separated (for
/// messages that refuse an unknown one).
pub fn known_names() -> String {
    spec::MODELS
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Give `kb` its model when one is installed (nothing is read until the
/// first text is embedded); otherwise leave a warning or a hint on it that
/// says why semantic search is off.
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
        .unwrap_or_else(crate::embedder::default_threads);
    kb.set_embedder(Arc::new(ModelEmbedder::new(spec, &root, threads)));
}
