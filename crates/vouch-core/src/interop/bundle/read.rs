//! Reading an archive: the tar format, streamed once with limits, each member checked as it arrives.

use super::*;

/// The error a [`CountingReader`] raises at its limit.
#[derive(Debug)]
pub(crate) struct LimitExceeded(String);
impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for LimitExceeded {}

/// Stops decompression once `limit` bytes have come out of it.
pub(crate) struct CountingReader<R> {
    pub(crate) inner: R,
    pub(crate) count: u64,
    pub(crate) limit: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.count >= self.limit {
            return Err(io::Error::other(LimitExceeded(format!(
                "the archive expands to more than {} bytes (bundles.max_total_bytes plus tar \
                 headers); refusing it as a decompression bomb",
                self.limit
            ))));
        }
        let room = (self.limit - self.count).min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room])?;
        self.count += n as u64;
        Ok(n)
    }
}

pub(crate) fn archive_error(e: &io::Error) -> String {
    if let Some(l) = e.get_ref().and_then(|i| i.downcast_ref::<LimitExceeded>()) {
        return l.to_string();
    }
    format!("the archive is truncated or corrupt ({e}); copy or export it again")
}

/// A parsed bundle file.
#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    Config(Box<Settings>),
    Claim(Box<Claim>),
    Page(Box<Page>),
    Entity(Entity),
    Relation(Relation),
    Evidence(Evidence),
    Session,
    Decided(Box<Proposal>),
    Source(Box<Source>),
    Content,
}

pub(crate) struct Member {
    pub(crate) file: KbFile,
    pub(crate) sha256: String,
    /// Kept only when the caller asked (import_apply), or to parse it.
    pub(crate) content: Option<Vec<u8>>,
    pub(crate) parsed: Parsed,
}

/// What one pass over an archive found.
#[derive(Default)]
pub(crate) struct Scan {
    /// By bundle path, manifest.json excluded.
    pub(crate) members: BTreeMap<String, Member>,
    pub(crate) problems: Vec<BundleProblem>,
    pub(crate) manifest_files: usize,
    /// `review.require_citations` of the bundle's own config.yaml.
    pub(crate) bundle_requires_citations: Option<bool>,
    /// Members the manifest lists as `unreviewed` ([`super::UNREVIEWED_KEY`]).
    pub(crate) unreviewed: HashSet<String>,
    /// Evidence members whose quote was checked against source content
    /// that came later in the archive (an export puts evidence/ before
    /// sources/).
    pub(crate) quotes_checked: HashSet<String>,
    /// Who approved each claim, page, entity and relation, by bundle path,
    /// as the bundle's own `decided/` record that wrote it says
    /// (`decided_by`), and who they are here (filled when importing).
    pub(crate) approved_by: HashMap<String, (String, ApproverStanding)>,
}

impl Scan {
    pub(crate) fn problem(&mut self, path: &str, reason: impl Into<String>) {
        self.problems.push(BundleProblem {
            path: path.to_string(),
            reason: reason.into(),
        });
    }
}

pub(crate) fn parse_member(
    file: &KbFile,
    path: &Path,
    bytes: &[u8],
) -> std::result::Result<Parsed, String> {
    if matches!(file, KbFile::SourceContent(_)) {
        return Ok(Parsed::Content);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())?;
    let msg = |e: Error| format!("does not parse: {}", e.message);
    let check_id = |have: &str, want: &str| {
        if have == want {
            Ok(())
        } else {
            Err(format!(
                "the file says id {have:?} but is named {want:?}; ids and file names must agree"
            ))
        }
    };
    Ok(match file {
        KbFile::Config => Parsed::Config(Box::new(Settings::parse(path, text).map_err(msg)?)),
        KbFile::SourceMeta(sha) => {
            let s: Source = crate::store::yaml::from_yaml(path, text).map_err(msg)?;
            check_id(&s.id, sha)?;
            Parsed::Source(Box::new(s))
        }
        KbFile::SourceContent(_) => Parsed::Content,
        KbFile::Object(dir, id) => {
            fn dec<T: Stored>(path: &Path, text: &str, id: &str) -> std::result::Result<T, String> {
                let v =
                    T::decode(path, text).map_err(|e| format!("does not parse: {}", e.message))?;
                if v.id() != id {
                    return Err(format!(
                        "the file says id {:?} but is named {id:?}; ids and file names must agree",
                        v.id()
                    ));
                }
                Ok(v)
            }
            match dir {
                Dir::Claims => Parsed::Claim(Box::new(dec(path, text, id)?)),
                Dir::Pages => Parsed::Page(Box::new(dec(path, text, id)?)),
                Dir::Entities => Parsed::Entity(dec(path, text, id)?),
                Dir::Relations => Parsed::Relation(dec(path, text, id)?),
                Dir::Evidence => Parsed::Evidence(dec(path, text, id)?),
                Dir::Sessions => {
                    dec::<Session>(path, text, id)?;
                    Parsed::Session
                }
                Dir::Decided | Dir::Proposed => {
                    let p: Proposal = crate::store::yaml::from_yaml(path, text).map_err(msg)?;
                    check_id(&p.id, id)?;
                    Parsed::Decided(Box::new(p))
                }
            }
        }
    })
}

/// Parse and check `manifest.json`; `Err` is fatal.
pub(crate) fn read_manifest(
    scan: &mut Scan,
    bytes: &[u8],
    limits: &BundleSettings,
) -> std::result::Result<BTreeMap<String, ManifestFile>, String> {
    let m: Manifest = serde_json::from_slice(bytes).map_err(|e| {
        format!("manifest.json is not a valid manifest ({e}); expected {{version, generated_at, files: [{{path, sha256, bytes}}]}}")
    })?;
    if !m.supported() {
        return Err(format!(
            "manifest.json has bundle version {} (spec {}); this vouch reads version \
             {BUNDLE_VERSION}, the spec's \"0.1\" and vouch 1.x's vouch-bundle-0.1",
            m.version,
            m.extra.get("spec").unwrap_or(&Value::Null)
        ));
    }
    if m.files.len() as u64 > limits.max_members {
        return Err(format!(
            "manifest.json lists {} files, over the limit of {} (bundles.max_members in config.yaml)",
            m.files.len(),
            limits.max_members
        ));
    }
    let declared: u64 = m.files.iter().map(|f| f.bytes).fold(0, u64::saturating_add);
    if declared > limits.max_total_bytes {
        return Err(format!(
            "manifest.json declares {declared} bytes in total, over the limit of {} \
             (bundles.max_total_bytes in config.yaml)",
            limits.max_total_bytes
        ));
    }
    // vouch 1.x's `safety` flags: a bundle that says it carries pending
    // proposals, an index or an audit log is refused (the members are
    // refused on their own too; the flag is the bundle's own admission).
    match m.extra.get("safety") {
        None | Some(Value::Null) => {}
        Some(Value::Object(flags)) => {
            for (flag, what) in [
                ("has_proposed", "pending proposals (proposed/)"),
                ("has_state_db", "an index (state.db)"),
                ("has_audit_log", "an audit log"),
            ] {
                if flags.get(flag) == Some(&Value::Bool(true)) {
                    scan.problem(
                        "manifest.json",
                        format!(
                            "safety flag {flag} is true: the bundle says it carries {what}, \
                             which no bundle may import"
                        ),
                    );
                }
            }
        }
        Some(other) => scan.problem(
            "manifest.json",
            format!("`safety` must be an object of flags, not {other}"),
        ),
    }
    scan.manifest_files = m.files.len();
    match m.extra.get(super::UNREVIEWED_KEY) {
        None => {}
        Some(Value::Array(paths)) if paths.iter().all(Value::is_string) => scan
            .unreviewed
            .extend(paths.iter().filter_map(Value::as_str).map(str::to_string)),
        Some(other) => scan.problem(
            "manifest.json",
            format!("`unreviewed` must be a list of bundle paths, not {other}"),
        ),
    }
    let mut out = BTreeMap::new();
    for f in m.files {
        if let Err(reason) = KbFile::parse_relative(&f.path) {
            scan.problem(&f.path, format!("listed in manifest.json: {reason}"));
            continue;
        }
        if !is_source_id(&f.sha256) {
            scan.problem(
                &f.path,
                format!(
                    "manifest.json gives sha256 {:?}, not 64 lowercase hex",
                    f.sha256
                ),
            );
        }
        if out.contains_key(&f.path) {
            scan.problem(&f.path, "listed twice in manifest.json");
            continue;
        }
        out.insert(f.path.clone(), f);
    }
    Ok(out)
}

/// Read a member (it has passed the size checks), hashing it; the bytes
/// are returned only when `keep`.
pub(crate) fn read_member(r: &mut impl Read, keep: bool) -> io::Result<(String, Option<Vec<u8>>)> {
    let mut out = keep.then(Vec::new);
    let (sha, _) = hash_stream(r, out.as_mut())?;
    Ok((sha, out))
}

/// The records of a pax extended header: `LEN key=value\n`, each `LEN`
/// bytes long including itself.
fn pax_records(body: &[u8]) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
    let bad = || "a pax header that is not `LEN key=value` records".to_string();
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() && rest.iter().any(|b| *b != 0) {
        let sp = rest.iter().position(|b| *b == b' ').ok_or_else(bad)?;
        let len: usize = std::str::from_utf8(&rest[..sp])
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        if len <= sp + 1 || len > rest.len() {
            return Err(bad());
        }
        let record = rest[sp + 1..len].strip_suffix(b"\n").ok_or_else(bad)?;
        let eq = record.iter().position(|b| *b == b'=').ok_or_else(bad)?;
        out.push((
            String::from_utf8_lossy(&record[..eq]).into_owned(),
            record[eq + 1..].to_vec(),
        ));
        rest = &rest[len..];
    }
    Ok(out)
}

pub(crate) fn member_kind(t: tar::EntryType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_hard_link() {
        "a hard link"
    } else if t.is_character_special() || t.is_block_special() {
        "a device file"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_gnu_longlink() {
        "a GNU long link name"
    } else if t.is_gnu_sparse() {
        "a sparse file"
    } else {
        "an unsupported member type"
    }
}

/// One streaming pass over a bundle. `keep` says whether a member's bytes
/// are kept (beyond what parsing needs). A problem that makes the rest of
/// the archive unreadable stops the pass; every other problem is collected.
/// One bundle scan at a time per process: each may hold up to
/// `bundles.max_objects_bytes` of parsed objects, and a server must not
/// multiply that by however many callers ask at once.
pub(crate) static SCANNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn scan(
    path: &Path,
    limits: &BundleSettings,
    keep: &dyn Fn(&KbFile) -> bool,
) -> Result<Scan> {
    let _one_at_a_time = SCANNING.lock().unwrap_or_else(|e| e.into_inner());
    let mut scan = Scan::default();
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut magic = [0u8; 2];
    let got = file.read(&mut magic).map_err(|e| Error::io(path, e))?;
    if got < 2 || magic != [0x1f, 0x8b] {
        scan.problem(
            "",
            "not a gzip file (it does not start with the gzip magic bytes 1f 8b); a bundle is \
             the .tar.gz that `vouch export` writes",
        );
        return Ok(scan);
    }
    let mut archive = open_archive(path, limits)?;
    let mut fatal = scan_entries(&mut archive, &mut scan, limits, keep, None);
    if let Err(reason) = &fatal
        && reason.starts_with(NO_MANIFEST_FIRST)
    {
        // vouch 1.x writes manifest.json last: find it in a first pass
        // (headers and that one member read; the rest only skipped, within
        // the same limits), then check every member against it as usual.
        if let Some(bytes) = find_manifest(path, limits)? {
            scan = Scan::default();
            archive = open_archive(path, limits)?;
            fatal = scan_entries(&mut archive, &mut scan, limits, keep, Some(bytes));
        }
    }
    match fatal {
        Err(reason) => scan.problem("", reason),
        Ok(()) => {
            // Read to the end of the gzip stream: this verifies its CRC and
            // length, so a truncated or altered archive is caught here too.
            let mut rest = archive.into_inner().take(TRAILER_LIMIT + 1);
            match io::copy(&mut rest, &mut io::sink()) {
                Ok(n) if n > TRAILER_LIMIT => {
                    scan.problem("", "unexpected data after the end of the tar archive")
                }
                Ok(_) => check_quotes_before(path, limits, &mut scan)?,
                Err(e) => scan.problem("", archive_error(&e)),
            }
        }
    }
    Ok(scan)
}

/// Check the quotes of evidence that came *after* its source's content in
/// the archive (vouch 1.x exports sources/ before evidence/): one more pass
/// that reads only those sources' content, one at a time, so the memory
/// bound of the streaming scan holds.
fn check_quotes_before(path: &Path, limits: &BundleSettings, scan: &mut Scan) -> Result<()> {
    let mut waiting: HashMap<String, Vec<String>> = HashMap::new();
    for (name, m) in &scan.members {
        if let Parsed::Evidence(ev) = &m.parsed
            && ev.quote.is_some()
            && !scan.quotes_checked.contains(name)
            && !scan.problems.iter().any(|p| &p.path == name)
            && scan
                .members
                .contains_key(&format!("sources/{}/content", ev.source_id))
        {
            waiting
                .entry(ev.source_id.clone())
                .or_default()
                .push(name.clone());
        }
    }
    if waiting.is_empty() {
        return Ok(());
    }
    let mut archive = open_archive(path, limits)?;
    let entries = archive
        .entries()
        .map_err(|e| Error::invalid(archive_error(&e)))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| Error::invalid(archive_error(&e)))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(id) = name
            .strip_prefix("sources/")
            .and_then(|r| r.strip_suffix("/content"))
        else {
            continue;
        };
        let Some(quoters) = waiting.remove(id) else {
            continue;
        };
        let (sha, content) =
            read_member(&mut entry, true).map_err(|e| Error::invalid(archive_error(&e)))?;
        let content = content.unwrap_or_default();
        for quoter in quoters {
            let Some(Member {
                parsed: Parsed::Evidence(ev),
                ..
            }) = scan.members.get(&quoter)
            else {
                continue;
            };
            // The first pass checked this member against the manifest and
            // its folder name; an archive that changed since is refused.
            let why = if sha != id {
                Some(format!(
                    "the archive changed while it was read: source {id}'s content now hashes \
                     to {sha}"
                ))
            } else {
                crate::sources::evidence_mismatch(ev, &content)
            };
            match why {
                Some(why) => scan.problem(&quoter, why),
                None => {
                    scan.quotes_checked.insert(quoter);
                }
            }
        }
        if waiting.is_empty() {
            break;
        }
    }
    Ok(())
}

/// The start of the error for an archive whose first member is not the
/// manifest (the cue for [`find_manifest`]).
const NO_MANIFEST_FIRST: &str = "the archive does not start with";

/// The archive at `path`, decompressed through a reader that stops at the
/// total limit (tar headers and padding come on top of the members' bytes).
fn open_archive(
    path: &Path,
    limits: &BundleSettings,
) -> Result<tar::Archive<CountingReader<flate2::read::GzDecoder<BufReader<File>>>>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let overhead = limits
        .max_members
        .saturating_add(16)
        .saturating_mul(3 * 512)
        .saturating_add(TRAILER_LIMIT);
    Ok(tar::Archive::new(CountingReader {
        inner: flate2::read::GzDecoder::new(BufReader::new(file)),
        count: 0,
        limit: limits.max_total_bytes.saturating_add(overhead),
    }))
}

/// The bytes of a `manifest.json` member anywhere in the archive (within
/// the limits); `None` if there is none.
fn find_manifest(path: &Path, limits: &BundleSettings) -> Result<Option<Vec<u8>>> {
    let mut archive = open_archive(path, limits)?;
    let Ok(entries) = archive.entries() else {
        return Ok(None);
    };
    for (n, entry) in entries.enumerate() {
        if n as u64 > limits.max_members.saturating_mul(2) {
            return Ok(None);
        }
        let Ok(mut entry) = entry else {
            return Ok(None);
        };
        let is_manifest = entry.header().entry_type().is_file()
            && entry.path_bytes().as_ref() == MANIFEST.as_bytes()
            && entry.size() <= limits.max_file_bytes;
        if is_manifest {
            let mut bytes = Vec::new();
            if entry.read_to_end(&mut bytes).is_err() {
                return Ok(None);
            }
            return Ok(Some(bytes));
        }
    }
    Ok(None)
}

pub(crate) fn scan_entries<R: Read>(
    archive: &mut tar::Archive<R>,
    scan: &mut Scan,
    limits: &BundleSettings,
    keep: &dyn Fn(&KbFile) -> bool,
    manifest_found_later: Option<Vec<u8>>,
) -> std::result::Result<(), String> {
    let entries = archive.entries().map_err(|e| archive_error(&e))?.raw(true);
    let mut manifest: Option<BTreeMap<String, ManifestFile>> = None;
    // A manifest read ahead (it is the last member): checked when met.
    let mut pending_manifest: Option<Vec<u8>> = None;
    if let Some(bytes) = manifest_found_later {
        manifest = Some(read_manifest(scan, &bytes, limits)?);
        pending_manifest = Some(bytes);
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut long_name: Option<Vec<u8>> = None;
    let mut pax_size: Option<u64> = None;
    let mut members = 0u64;
    let mut total = 0u64;
    let mut objects_total = 0u64;
    // Source id → evidence members quoting it, awaiting its content.
    let mut quoting: HashMap<String, Vec<String>> = HashMap::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| archive_error(&e))?;
        members += 1;
        if members > limits.max_members.saturating_mul(2).saturating_add(1) {
            return Err(format!(
                "the archive has more than {} members (bundles.max_members in config.yaml)",
                limits.max_members
            ));
        }
        let size = entry.size();
        if size > limits.max_file_bytes {
            return Err(format!(
                "member {:?} is {size} bytes uncompressed, over the {}-byte limit per file \
                 (bundles.max_file_bytes in config.yaml); refusing it as a decompression bomb",
                String::from_utf8_lossy(&entry.path_bytes()),
                limits.max_file_bytes
            ));
        }
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(format!(
                "the archive's members add up to more than {} bytes uncompressed \
                 (bundles.max_total_bytes in config.yaml); refusing it as a decompression bomb",
                limits.max_total_bytes
            ));
        }
        let etype = entry.header().entry_type();
        // POSIX pax extended headers, as Python's `tarfile` (vouch 1.x)
        // writes for names over 100 bytes: read `path` (and check `size`)
        // for the next member, as tar readers do. A global header changes
        // nothing a bundle relies on and is skipped.
        if etype.is_pax_local_extensions() || etype.is_pax_global_extensions() {
            if size > LONG_NAME_LIMIT {
                return Err(format!("a pax header of {size} bytes is not a path record"));
            }
            let mut body = Vec::new();
            entry
                .read_to_end(&mut body)
                .map_err(|e| archive_error(&e))?;
            if etype.is_pax_global_extensions() {
                continue;
            }
            for (key, value) in pax_records(&body)? {
                match key.as_str() {
                    "path" => long_name = Some(value),
                    "size" => {
                        pax_size = Some(
                            std::str::from_utf8(&value)
                                .ok()
                                .and_then(|v| v.parse::<u64>().ok())
                                .ok_or("a pax `size` record is not a number")?,
                        )
                    }
                    // Times, owners, `linkpath` (links are refused anyway).
                    _ => {}
                }
            }
            continue;
        }
        if let Some(said) = pax_size.take()
            && said != size
        {
            return Err(format!(
                "a pax header gives {said} bytes for a member whose header says {size}"
            ));
        }
        if etype.is_gnu_longname() {
            if size > LONG_NAME_LIMIT {
                return Err(format!("a long-name record of {size} bytes is not a path"));
            }
            let mut name = Vec::new();
            entry
                .read_to_end(&mut name)
                .map_err(|e| archive_error(&e))?;
            while name.last() == Some(&0) {
                name.pop();
            }
            long_name = Some(name);
            continue;
        }
        let raw_name = long_name
            .take()
            .unwrap_or_else(|| entry.path_bytes().into_owned());
        let name = String::from_utf8_lossy(&raw_name).into_owned();
        if std::str::from_utf8(&raw_name).is_err() {
            scan.problem(&name, "member name is not UTF-8");
            continue;
        }
        if name == MANIFEST
            && etype.is_file()
            && let Some(expected) = pending_manifest.take()
        {
            let (_, bytes) = read_member(&mut entry, true).map_err(|e| archive_error(&e))?;
            if bytes.unwrap_or_default() != expected {
                scan.problem(&name, "appears more than once in the archive");
            }
            seen.insert(name);
            continue;
        }
        if manifest.is_none() {
            if name != MANIFEST || !etype.is_file() {
                return Err(format!(
                    "{NO_MANIFEST_FIRST} {MANIFEST} (it starts with {name:?}), and no \
                     {MANIFEST} follows; a bundle is the .tar.gz that `vouch export` writes"
                ));
            }
            let (_, bytes) = read_member(&mut entry, true).map_err(|e| archive_error(&e))?;
            manifest = Some(read_manifest(scan, &bytes.unwrap_or_default(), limits)?);
            seen.insert(name);
            continue;
        }
        if etype.is_dir() {
            if let Err(reason) = KbFile::parse_relative(name.trim_end_matches('/'))
                && (reason.contains("escape") || reason.contains("absolute"))
            {
                scan.problem(&name, reason);
            }
            continue;
        }
        if !etype.is_file() {
            let what = member_kind(etype);
            let target = entry
                .link_name_bytes()
                .map(|l| format!(" to {:?}", String::from_utf8_lossy(&l)))
                .unwrap_or_default();
            scan.problem(
                &name,
                format!("is {what}{target}; bundles carry regular files only"),
            );
            continue;
        }
        if name == MANIFEST {
            scan.problem(&name, "appears more than once in the archive");
            continue;
        }
        let file = match KbFile::parse_relative(&name) {
            Ok(f) => f,
            Err(reason) => {
                scan.problem(&name, reason);
                continue;
            }
        };
        if !seen.insert(name.clone()) {
            scan.problem(&name, "appears more than once in the archive");
            scan.members.remove(&name);
            continue;
        }
        let Some(listed) = manifest.as_ref().and_then(|m| m.get(&name)).cloned() else {
            scan.problem(&name, "is in the archive but not listed in manifest.json");
            continue;
        };
        if listed.bytes != size {
            scan.problem(
                &name,
                format!("is {size} bytes but manifest.json says {}", listed.bytes),
            );
        }
        let structured = !matches!(file, KbFile::SourceContent(_));
        if structured {
            // Every parsed object is kept until the checks across members
            // are done, so their sum is what a scan holds in memory.
            objects_total = objects_total.saturating_add(size);
            if objects_total > limits.max_objects_bytes {
                return Err(format!(
                    "the archive's knowledge files (YAML, markdown) add up to more than {} bytes \
                     (bundles.max_objects_bytes in config.yaml); refusing it: parsing them \
                     would hold that much in memory",
                    limits.max_objects_bytes
                ));
            }
        }
        if structured && size > MAX_OBJECT_BYTES {
            // Parsing is what costs memory (YAML trees are many times their
            // text), so objects are capped far below source content.
            scan.problem(
                &name,
                format!(
                    "is {size} bytes; knowledge files (YAML, markdown) are limited to \
                     {MAX_OBJECT_BYTES} bytes in a bundle"
                ),
            );
            continue;
        }
        let quoted = match &file {
            KbFile::SourceContent(id) => quoting.remove(id).unwrap_or_default(),
            _ => Vec::new(),
        };
        let (sha, content) =
            read_member(&mut entry, structured || keep(&file) || !quoted.is_empty())
                .map_err(|e| archive_error(&e))?;
        if sha != listed.sha256 {
            scan.problem(
                &name,
                format!(
                    "sha256 is {sha} but manifest.json says {}; the file was altered",
                    listed.sha256
                ),
            );
            continue;
        }
        if let KbFile::SourceContent(id) = &file
            && &sha != id
        {
            scan.problem(
                &name,
                format!("source content hashes to {sha}, not to its folder name {id}"),
            );
            continue;
        }
        let parsed = match parse_member(&file, Path::new(&name), content.as_deref().unwrap_or(&[]))
        {
            Ok(p) => p,
            Err(reason) => {
                scan.problem(&name, reason);
                continue;
            }
        };
        if let Parsed::Config(s) = &parsed {
            scan.bundle_requires_citations = Some(s.review.require_citations);
        }
        // A redacted record quotes nothing on purpose (`vouch redact`).
        if let Parsed::Evidence(ev) = &parsed
            && !(ev.quote.is_none()
                && ev
                    .extra
                    .contains_key(crate::review::gate::redact::REDACTED_KEY))
            && let Some(why) = crate::sources::evidence_id_mismatch(ev)
        {
            scan.problem(&name, why);
            continue;
        }
        if let Parsed::Evidence(ev) = &parsed
            && ev.quote.is_some()
        {
            quoting
                .entry(ev.source_id.clone())
                .or_default()
                .push(name.clone());
        }
        for quoter in quoted {
            if let Some(Member {
                parsed: Parsed::Evidence(ev),
                ..
            }) = scan.members.get(&quoter)
            {
                let mismatch =
                    crate::sources::evidence_mismatch(ev, content.as_deref().unwrap_or(&[]));
                match mismatch {
                    Some(why) => scan.problem(&quoter, why),
                    None => {
                        scan.quotes_checked.insert(quoter);
                    }
                }
            }
        }
        let content = if keep(&file) { content } else { None };
        scan.members.insert(
            name,
            Member {
                file,
                sha256: sha,
                content,
                parsed,
            },
        );
    }
    let Some(manifest) = manifest else {
        return Err(format!(
            "the archive is empty: no {MANIFEST}; a bundle is the .tar.gz that `vouch export` writes"
        ));
    };
    for path in manifest.keys() {
        if !seen.contains(path) {
            scan.problem(path, "listed in manifest.json but missing from the archive");
        }
    }
    Ok(())
}
