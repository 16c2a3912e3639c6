//! Export: a deterministic `.tar.gz` of the reviewed knowledge.

use super::*;

/// Every file a bundle of this KB carries, sorted by bundle path.
pub(crate) fn bundle_files(kb: &Kb, without_decided: bool) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    let layout = kb.layout();
    if crate::store::nofollow::is_file(&layout.config()) {
        files.push(KbFile::Config);
    }
    for dir in BUNDLE_DIRS {
        if without_decided && dir == Dir::Decided {
            continue;
        }
        for id in kb.ids(dir)? {
            files.push(KbFile::Object(dir, id));
        }
    }
    for id in kb.source_ids()? {
        files.push(KbFile::SourceMeta(id.clone()));
        files.push(KbFile::SourceContent(id));
    }
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let path = layout.path_of(&f)?;
        if !crate::store::nofollow::is_file(&path) {
            continue; // gone, or a link (never followed; doctor reports it)
        }
        // A redacted claim or page is not knowledge: it never leaves in a
        // bundle (its citations' tombstones do, so nothing dangles).
        if let KbFile::Object(dir @ (Dir::Claims | Dir::Pages), id) = &f
            && redacted(kb, *dir, id)
        {
            continue;
        }
        // Content that does not hash to its source id is never served.
        if let KbFile::SourceContent(id) = &f
            && let Err(e) = kb.source_content(id)
        {
            kb.warn(format!("export: left out {}: {e}", f.relative()));
            continue;
        }
        out.push((f.relative(), path));
    }
    out.sort();
    Ok(out)
}

/// Whether the claim or page `id` is redacted.
fn redacted(kb: &Kb, dir: Dir, id: &str) -> bool {
    match dir {
        Dir::Claims => kb
            .load::<crate::model::Claim>(id)
            .ok()
            .flatten()
            .is_some_and(|c| c.status == crate::model::ClaimStatus::Redacted),
        _ => kb
            .load::<crate::model::Page>(id)
            .ok()
            .flatten()
            .is_some_and(|p| p.status == crate::model::PageStatus::Redacted),
    }
}

/// The time of the KB's last change: the newest audit event that is not an
/// export or an index rebuild (neither changes knowledge).
pub(crate) fn last_change(kb: &Kb) -> Result<Timestamp> {
    let mut found = None;
    kb.audit_log().scan_back(|ev| {
        match ev.get("event").and_then(Value::as_str) {
            Some("bundle.export" | "index.rebuild") | None => return false,
            _ => {}
        }
        found = ev
            .get("created_at")
            .and_then(Value::as_str)
            .and_then(Timestamp::parse);
        found.is_some()
    })?;
    Ok(found.unwrap_or(Timestamp(chrono::DateTime::UNIX_EPOCH)))
}

pub(crate) fn tar_header(size: u64, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h
}

/// `kb.export`: write the reviewed knowledge as a deterministic `.tar.gz`
/// bundle at `out`.
pub fn export(kb: &Kb, caller: &Caller, p: ExportParams) -> Result<ExportResult> {
    let out = resolve(kb, caller, &p.out, true)?;
    let _lock = kb.lock()?;
    let files = bundle_files(kb, p.without_decided)?;
    // Knowledge no review let in (written or edited by hand) travels as
    // such: listed `unreviewed`, so an import does not turn it into
    // reviewed knowledge elsewhere.
    let trail = crate::audit::trail::Trail::read(kb.audit_log())?;
    let mut unreviewed = Vec::new();
    let mut entries = Vec::with_capacity(files.len());
    for (rel, path) in &files {
        let bytes = kb.read_file(path)?.unwrap_or_default();
        if crate::health::base::is_knowledge_path(rel) && !trail.reviewed(rel, &bytes) {
            unreviewed.push(rel.clone());
        }
        let (sha256, bytes) = (sha256_hex(&bytes), bytes.len() as u64);
        entries.push(ManifestFile {
            path: rel.clone(),
            sha256,
            bytes,
        });
    }
    let generated_at = last_change(kb)?;
    let mut extra = BTreeMap::new();
    if !unreviewed.is_empty() {
        kb.warn(format!(
            "export: {} object(s) that no review let in (written or edited by hand) are in the \
             bundle, listed as `unreviewed`: an import keeps them unaudited (`vouch doctor` \
             names them here)",
            unreviewed.len()
        ));
        extra.insert(UNREVIEWED_KEY.to_string(), json!(unreviewed));
    }
    let manifest = Manifest {
        version: json!(BUNDLE_VERSION),
        generated_at: generated_at.to_string(),
        files: entries,
        extra,
    };
    let mut manifest_bytes = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::internal(format!("manifest encoding: {e}")))?;
    manifest_bytes.push(b'\n');
    let mtime = generated_at.0.timestamp().max(0) as u64;
    let mut archive_sha = String::new();
    let mut archive_bytes = 0u64;
    atomic::write_with(&out, |file| {
        let io_err = |e: io::Error| Error::io(&out, e);
        let hw = HashingWriter {
            inner: BufWriter::new(file),
            hash: Sha256::new(),
            bytes: 0,
        };
        let gz = flate2::GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(hw, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mut h = tar_header(manifest_bytes.len() as u64, mtime);
        tar.append_data(&mut h, MANIFEST, &manifest_bytes[..])
            .map_err(io_err)?;
        for ((rel, path), entry) in files.iter().zip(&manifest.files) {
            let bytes = kb.read_file(path)?.unwrap_or_default();
            if sha256_hex(&bytes) != entry.sha256 {
                return Err(Error::conflict(format!(
                    "{} changed while it was being exported (edited outside vouch?); export again",
                    path.display()
                )));
            }
            let mut h = tar_header(bytes.len() as u64, mtime);
            tar.append_data(&mut h, rel, &bytes[..]).map_err(io_err)?;
        }
        let gz = tar.into_inner().map_err(io_err)?;
        let mut hw = gz.finish().map_err(io_err)?;
        hw.flush().map_err(io_err)?;
        archive_sha = crate::ids::hex(&hw.hash.finalize());
        archive_bytes = hw.bytes;
        Ok(())
    })?;
    let path = out.display().to_string();
    let mut ev = kb.event(
        "bundle.export",
        &caller.actor,
        vec![archive_sha.clone()],
        json!({"path": path, "files": files.len(), "bytes": archive_bytes,
               "generated_at": manifest.generated_at}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(ExportResult {
        path,
        files: files.len(),
        bytes: archive_bytes,
        sha256: archive_sha,
        generated_at: manifest.generated_at,
        unreviewed,
    })
}
