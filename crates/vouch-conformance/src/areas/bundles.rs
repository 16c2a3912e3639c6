//! Bundles (SPEC §8): the export's shape, and hostile imports.

use std::io::Read;

use serde_json::{Value, json};

use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, Res, brief, ensure, skip};
use crate::kb::{Kb, approved_claim, register, sha256_hex};

type Members = Vec<(String, Vec<u8>)>;

/// The regular-file members of a .tar.gz.
fn read_bundle(bytes: &[u8]) -> Result<Members, String> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = Vec::new();
    for e in ar.entries().map_err(|e| e.to_string())? {
        let mut e = e.map_err(|e| e.to_string())?;
        let path = String::from_utf8_lossy(&e.path_bytes()).to_string();
        if e.header().entry_type().is_dir() {
            continue;
        }
        let mut b = Vec::new();
        e.read_to_end(&mut b).map_err(|e| e.to_string())?;
        out.push((path, b));
    }
    Ok(out)
}

/// A raw member: any path bytes, regular file or symlink.
enum Raw<'a> {
    File(&'a str, &'a [u8]),
    Link(&'a str, &'a str),
}

fn write_bundle(members: &[Raw]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for m in members {
        let mut h = tar::Header::new_gnu();
        let (path, data, kind): (&str, &[u8], _) = match m {
            Raw::File(p, d) => (p, d, tar::EntryType::Regular),
            Raw::Link(p, target) => {
                let _ = h.set_link_name(target);
                (p, &[][..], tar::EntryType::Symlink)
            }
        };
        let name = &mut h.as_old_mut().name;
        let n = path.len().min(name.len());
        name[..n].copy_from_slice(&path.as_bytes()[..n]);
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_700_000_000);
        h.set_cksum();
        let _ = b.append(&h, data);
    }
    b.into_inner().and_then(|g| g.finish()).unwrap_or_default()
}

/// `base` with `extra` added to the archive and (if `listed`) the manifest.
fn tampered(base: &Members, extra: Raw, listed: Option<(&str, &[u8])>) -> Vec<u8> {
    let mut members: Members = base.clone();
    if let Some((path, bytes)) = listed
        && let Some((_, m)) = members.iter_mut().find(|(p, _)| p == "manifest.json")
        && let Ok(mut v) = serde_json::from_slice::<Value>(m)
    {
        if let Some(files) = v.get_mut("files").and_then(Value::as_array_mut) {
            files.push(json!({"path": path, "sha256": sha256_hex(bytes), "bytes": bytes.len()}));
        }
        *m = v.to_string().into_bytes();
    }
    let mut raws: Vec<Raw> = members.iter().map(|(p, d)| Raw::File(p, d)).collect();
    raws.push(extra);
    write_bundle(&raws)
}

/// Every file a bundle could have written: under `.vouch/` (minus the log
/// and the index) and the whole project directory, plus the scratch dir.
fn footprint(kb: &Kb) -> Vec<String> {
    let mut v: Vec<String> = kb
        .snapshot()
        .into_iter()
        .filter(|(p, _)| !p.starts_with("audit.log"))
        .map(|(p, n)| format!("{p}:{n}"))
        .collect();
    for d in [
        kb.dir().parent().map(|p| p.to_path_buf()),
        Some(kb.scratch().to_path_buf()),
    ]
    .into_iter()
    .flatten()
    {
        if let Ok(rd) = std::fs::read_dir(&d) {
            v.extend(
                rd.flatten()
                    .map(|e| e.path().to_string_lossy().to_string())
                    .filter(|p| p.contains("kit-evil")),
            );
        }
    }
    v
}

/// Importing `bundle` is refused: import_apply errors or imports nothing,
/// and no file appears anywhere.
fn refuses(kb: &Kb, s: &mut crate::server::Server, name: &str, bundle: &[u8]) -> Res {
    let path = kb.dir().join(format!("{name}.tar.gz"));
    std::fs::write(&path, bundle).map_err(|e| e.to_string())?;
    let before = footprint(kb);
    let check = s.call("kb.export_check", json!({"path": path}));
    let flagged = match &check {
        Ok(v) => v.get("ok") == Some(&json!(false)),
        Err(_) => true,
    };
    let r = s.call(
        "kb.import_apply",
        json!({"path": path, "on_conflict": "overwrite"}),
    );
    let after = footprint(kb);
    ensure(
        before == after,
        format!(
            "files changed: {:?}",
            after
                .iter()
                .filter(|f| !before.contains(f))
                .collect::<Vec<_>>()
        ),
    )?;
    let how = match r {
        Err(e) => format!("import_apply refused ({e})"),
        Ok(v) => {
            ensure(
                v.get("imported").and_then(Value::as_u64) == Some(0),
                format!("import_apply accepted it: {}", brief(&v)),
            )?;
            "import_apply imported 0".into()
        }
    };
    ensure(flagged, format!("export_check passed it: {check:?}"))?;
    Ok(format!("export_check flags it; {how}; nothing written"))
}

pub fn bundles(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let made = (|| -> Result<String, Miss> {
        let src = register(&mut s, "Bundles carry reviewed knowledge.\n", "b.md")?;
        approved_claim(&kb, &mut s, "Bundles carry reviewed knowledge.", &[&src])
    })();
    if let Err(Miss::Fail(f)) = &made {
        return ctx.record("setup", Err(f.clone().into()));
    }
    crate::kb::propose_claim(&mut s, "A pending claim stays out of bundles.", &[]).ok();
    let out = kb.dir().join("kit-export.tar.gz");
    let exp = s.call("kb.export", json!({"out": out}));
    let bytes = std::fs::read(&out).unwrap_or_default();
    let members = read_bundle(&bytes);
    ctx.check("export-result-shape", || {
        let r = exp.as_ref().map_err(|e| Miss::Fail(e.to_string()))?;
        ensure(r.get("path").is_some_and(Value::is_string), "no path")?;
        ensure(
            r.get("files").is_some_and(Value::is_u64) && r.get("bytes").is_some_and(Value::is_u64),
            "files/bytes are not counts",
        )?;
        ensure(!bytes.is_empty(), "no file at out")?;
        Ok("{path, files, bytes}; the file exists".into())
    });
    let manifest = members
        .as_ref()
        .ok()
        .and_then(|m| m.iter().find(|(p, _)| p == "manifest.json"))
        .and_then(|(_, b)| serde_json::from_slice::<Value>(b).ok());
    ctx.check("manifest-shape", || {
        members.as_ref().map_err(|e| format!("not a tar.gz: {e}"))?;
        let m = manifest.as_ref().ok_or("no manifest.json")?;
        ensure(
            m.get("version").is_some() && m.get("generated_at").is_some_and(Value::is_string),
            "version/generated_at missing",
        )?;
        let files = m
            .get("files")
            .and_then(Value::as_array)
            .ok_or("no files array")?;
        for f in files {
            ensure(
                f.get("path").is_some_and(Value::is_string)
                    && f.get("sha256").is_some_and(Value::is_string)
                    && f.get("bytes").is_some_and(Value::is_u64),
                format!("entry {f}"),
            )?;
        }
        Ok(format!(
            "version, generated_at, {} files with path/sha256/bytes",
            files.len()
        ))
    });
    ctx.check("manifest-matches-members", || {
        let ms = members.as_ref().map_err(|e| e.clone())?;
        let m = manifest.as_ref().ok_or("no manifest")?;
        let files = m
            .get("files")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for f in &files {
            let p = f["path"].as_str().unwrap_or("");
            let (_, b) = ms
                .iter()
                .find(|(x, _)| x == p)
                .ok_or(format!("{p} listed but absent"))?;
            ensure(
                f["sha256"].as_str() == Some(&sha256_hex(b)),
                format!("{p}: sha256 differs"),
            )?;
            ensure(
                f["bytes"].as_u64() == Some(b.len() as u64),
                format!("{p}: bytes differ"),
            )?;
        }
        for (p, _) in ms.iter().filter(|(p, _)| p != "manifest.json") {
            ensure(
                files.iter().any(|f| f["path"].as_str() == Some(p)),
                format!("{p} in the archive, not in the manifest"),
            )?;
        }
        Ok("every member listed with its true sha256 and size".into())
    });
    ctx.check("excludes-proposed-index-log", || {
        let ms = members.as_ref().map_err(|e| e.clone())?;
        let bad: Vec<&String> = ms
            .iter()
            .map(|(p, _)| p)
            .filter(|p| {
                p.starts_with("proposed/") || p.starts_with("state.db") || p.contains("audit.log")
            })
            .collect();
        ensure(bad.is_empty(), format!("{bad:?}"))?;
        Ok("no proposed/, state.db or audit.log.jsonl".into())
    });
    ctx.check("includes-reviewed-knowledge", || {
        let cid = made
            .as_ref()
            .map_err(|_| Miss::Skip("needs --approve".into()))?;
        let ms = members.as_ref().map_err(|e| e.clone())?;
        for want in [format!("claims/{cid}.yaml"), "config.yaml".into()] {
            ensure(
                ms.iter().any(|(p, _)| p == &want),
                format!("{want} missing"),
            )?;
        }
        ensure(
            ms.iter()
                .any(|(p, _)| p.starts_with("sources/") && p.ends_with("/meta.yaml")),
            "no source meta",
        )?;
        ensure(
            ms.iter().any(|(p, _)| p.starts_with("decided/")),
            "no decided/",
        )?;
        Ok("claims/, sources/…/meta.yaml, decided/, config.yaml".into())
    });
    ctx.check("export-check-own-bundle", || {
        let r = s.call("kb.export_check", json!({"path": out}))?;
        ensure(r.get("ok") == Some(&json!(true)), brief(&r))?;
        Ok("ok: true".into())
    });
    let Ok(base) = members else {
        return ctx.record(
            "hostile-imports",
            skip("no readable export to build hostile bundles from"),
        );
    };
    // A fresh KB to import into: its server and import_check.
    let mut fresh = match Kb::new(cfg) {
        Ok(k) => k,
        Err(e) => return ctx.record("setup", Err(e.into())),
    };
    let mut t = match fresh.serve() {
        Ok(t) => t,
        Err(m) => return ctx.record("setup", Err(m)),
    };
    ctx.record("import-check-diff-writes-nothing", (|| {
        let p = fresh.dir().join("own.tar.gz");
        std::fs::write(&p, write_bundle(&base.iter().map(|(a, b)| Raw::File(a, b)).collect::<Vec<_>>())).map_err(|e| e.to_string())?;
        let before = fresh.snapshot();
        let r = t.call("kb.import_check", json!({"path": p}))?;
        ensure(fresh.snapshot() == before, "import_check wrote files")?;
        for k in ["new", "conflict", "identical"] {
            ensure(r.get(k).is_some_and(Value::is_array), format!("no `{k}` array: {}", brief(&r)))?;
        }
        ensure(r["new"].as_array().is_some_and(|a| !a.is_empty()), "nothing new in an empty KB")?;
        Ok("{new, conflict, identical}; the kit's repack of the export is accepted; nothing written".into())
    })());
    let evil = b"kit-evil payload\n";
    let abs = fresh.scratch().join("kit-evil-abs.txt");
    let abs = abs.to_string_lossy().to_string();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "traversal",
            tampered(
                &base,
                Raw::File("../kit-evil-traversal.txt", evil),
                Some(("../kit-evil-traversal.txt", evil)),
            ),
        ),
        (
            "absolute-path",
            tampered(&base, Raw::File(&abs, evil), Some((&abs, evil))),
        ),
        (
            "symlink",
            tampered(
                &base,
                Raw::Link("claims/kit-evil-link.yaml", "/etc/passwd"),
                Some(("claims/kit-evil-link.yaml", b"")),
            ),
        ),
        (
            "hash-mismatch",
            tampered(
                &base,
                Raw::File("claims/kit-evil-hash.yaml", evil),
                Some(("claims/kit-evil-hash.yaml", b"other bytes")),
            ),
        ),
        (
            "unlisted-member",
            tampered(
                &base,
                Raw::File("claims/kit-evil-unlisted.yaml", evil),
                None,
            ),
        ),
        (
            "excluded-audit-log",
            tampered(
                &base,
                Raw::File("audit.log.jsonl", evil),
                Some(("audit.log.jsonl", evil)),
            ),
        ),
    ];
    for (name, bundle) in cases {
        let d = (name != "hash-mismatch").then_some(
            "import refuses absolute paths, .., links, unlisted members and excluded paths",
        );
        let res = refuses(&fresh, &mut t, &format!("kit-evil-{name}"), &bundle);
        match d {
            Some(d) => ctx.record_d(&format!("hostile-{name}"), d, res),
            None => ctx.record(&format!("hostile-{name}"), res),
        }
    }
}
