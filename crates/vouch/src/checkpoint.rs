//! Keys for audit checkpoints, kept outside `.vouch/` so that whoever can
//! write the knowledge base cannot also forge its checkpoints.
//!
//! The key lives at `VOUCH_CHECKPOINT_KEY` (a path), else
//! `$XDG_CONFIG_HOME/vouch/checkpoint.key`, else
//! `~/.config/vouch/checkpoint.key`; the last checkpoint of each knowledge
//! base is kept beside it in `checkpoints/<id>.json`, so a log cut below it
//! is caught even when the checkpoint event itself was cut away.

use std::path::{Path, PathBuf};
use vouch_core::audit::checkpoints::Checkpoint;
use vouch_core::{Error, Kb};

/// Where the key is (it may not exist yet).
pub(crate) fn key_path(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("VOUCH_CHECKPOINT_KEY") {
        return Ok(PathBuf::from(p));
    }
    let dir = crate::personal::config_dir().ok_or_else(|| {
        Error::invalid("no HOME or XDG_CONFIG_HOME: name the key with --key-file")
    })?;
    Ok(dir.join("checkpoint.key"))
}

/// The key, creating one (32 random bytes, hex, mode 600) if `create` and
/// none exists. `Ok(None)`: no key and none created.
pub(crate) fn load_key(kb: &Kb, path: &Path, create: bool) -> Result<Option<Vec<u8>>, Error> {
    let shown = path.display();
    let found = std::fs::symlink_metadata(path);
    if matches!(&found, Err(e) if e.kind() == std::io::ErrorKind::NotFound) && !create {
        return Ok(None);
    }
    refuse_inside(kb, path)?;
    match found {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The key is its hex text, as read back below.
            let key = vouch_core::ids::hex(&random_key()?);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::invalid(format!("{shown}: {e}")))?;
            }
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts
                .open(path)
                .map_err(|e| Error::invalid(format!("{shown}: {e}")))?;
            std::io::Write::write_all(&mut f, format!("{key}\n").as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|e| Error::invalid(format!("{shown}: {e}")))?;
            Ok(Some(key.into_bytes()))
        }
        Err(e) => Err(Error::invalid(format!("{shown}: {e}"))),
        Ok(meta) => {
            if !meta.is_file() {
                return Err(Error::invalid(format!("{shown}: not a regular file")));
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(Error::invalid(format!(
                        "{shown}: group or others can access the checkpoint key (mode \
                         {mode:03o}); make it yours alone: chmod 600 {shown}"
                    )));
                }
            }
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::invalid(format!("{shown}: {e}")))?;
            let text = text.trim();
            if text.len() < 32 {
                return Err(Error::invalid(format!(
                    "{shown}: a checkpoint key needs at least 32 characters"
                )));
            }
            Ok(Some(text.as_bytes().to_vec()))
        }
    }
}

/// A key inside the knowledge base would travel with it (and with every
/// `git clone`): refuse it.
fn refuse_inside(kb: &Kb, path: &Path) -> Result<(), Error> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let project = canon(kb.layout().project_root());
    let dir = canon(path.parent().unwrap_or(Path::new(".")));
    if dir.starts_with(&project) {
        return Err(Error::invalid(format!(
            "{}: the checkpoint key must live outside the project ({}), or whoever can \
             change the knowledge base could forge checkpoints with it",
            path.display(),
            project.display()
        )));
    }
    Ok(())
}

/// 32 bytes from the operating system.
fn random_key() -> Result<[u8; 32], Error> {
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))
        .map_err(|e| Error::internal(format!("reading /dev/urandom: {e}")))?;
    Ok(key)
}

/// Where the last checkpoint of this knowledge base is kept.
fn kept_path(kb: &Kb, key_path: &Path) -> PathBuf {
    let root = std::fs::canonicalize(kb.layout().root())
        .unwrap_or_else(|_| kb.layout().root().to_path_buf());
    let id = &vouch_core::ids::sha256_hex(root.to_string_lossy().as_bytes())[..16];
    key_path
        .parent()
        .unwrap_or(Path::new("."))
        .join("checkpoints")
        .join(format!("{id}.json"))
}

pub(crate) fn read_kept(kb: &Kb, key_path: &Path) -> Option<Checkpoint> {
    let text = std::fs::read_to_string(kept_path(kb, key_path)).ok()?;
    serde_json::from_str(&text).ok()
}

pub(crate) fn write_kept(kb: &Kb, key_path: &Path, cp: &Checkpoint) -> Result<(), Error> {
    let path = kept_path(kb, key_path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::internal(format!("{}: {e}", dir.display())))?;
    }
    let text = serde_json::to_string_pretty(cp).map_err(|e| Error::internal(e.to_string()))?;
    vouch_core::store::atomic::write_with(&path, |f| {
        std::io::Write::write_all(f, text.as_bytes())
            .map_err(|e| Error::internal(format!("{}: {e}", path.display())))
    })
}
