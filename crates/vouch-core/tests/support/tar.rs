//! Bundles built by hand from raw tar bytes, including what the `tar`
//! crate refuses to write (links, devices, duplicate and escaping names),
//! and the problems a check of one reports: shared by the core's
//! table-driven hostile-bundle corpus and the app's end-to-end bundle tests
//! (`#[path]`-included by both).
#![allow(dead_code)]

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use vouch_core::ids::sha256_hex;

/// One tar member as written, byte for byte.
#[derive(Clone)]
pub struct M {
    pub name: Vec<u8>,
    pub data: Vec<u8>,
    /// Tar type flag: b'0' file, b'1' hard link, b'2' symlink, b'3' char device, ...
    pub kind: u8,
    pub link: Vec<u8>,
}

pub fn file(name: &str, data: &[u8]) -> M {
    M {
        name: name.as_bytes().to_vec(),
        data: data.to_vec(),
        kind: b'0',
        link: Vec::new(),
    }
}

pub fn octal(field: &mut [u8], v: u64) {
    let s = format!("{:0w$o}", v, w = field.len() - 1);
    field[..s.len()].copy_from_slice(s.as_bytes());
}

/// A ustar header; names over 100 bytes get a GNU long-name record first.
pub fn header(name: &[u8], size: u64, kind: u8, link: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut short = name;
    if name.len() > 100 {
        let mut long = name.to_vec();
        long.push(0);
        out.extend(header(b"././@LongLink", long.len() as u64, b'L', b""));
        out.extend(&long);
        out.resize(out.len().div_ceil(512) * 512, 0);
        short = &name[..100];
    }
    let mut h = [0u8; 512];
    h[..short.len()].copy_from_slice(short);
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0);
    h[148..156].copy_from_slice(b"        ");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u32 = h.iter().map(|b| *b as u32).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    out.extend_from_slice(&h);
    out
}

pub fn tar_bytes(members: &[M]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in members {
        out.extend(header(&m.name, m.data.len() as u64, m.kind, &m.link));
        out.extend(&m.data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend([0u8; 1024]);
    out
}

pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// manifest.json for the regular files among `members`.
pub fn manifest_for(members: &[M]) -> M {
    let files: Vec<Value> = members
        .iter()
        .filter(|m| m.kind == b'0')
        .map(|m| {
            json!({"path": String::from_utf8_lossy(&m.name), "sha256": sha256_hex(&m.data),
                   "bytes": m.data.len()})
        })
        .collect();
    let v = json!({"version": 1, "generated_at": "2026-01-01T00:00:00Z", "files": files});
    file(
        "manifest.json",
        serde_json::to_string_pretty(&v).unwrap().as_bytes(),
    )
}

/// Members with a freshly computed manifest in front.
pub fn bundle(members: Vec<M>) -> Vec<u8> {
    let mut all = vec![manifest_for(&members)];
    all.extend(members);
    gz(&tar_bytes(&all))
}

/// The members of a real export, manifest.json first.
pub fn unpack(path: &Path) -> Vec<M> {
    let bytes = std::fs::read(path).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            file(&name, &data)
        })
        .collect()
}

pub fn without_manifest(members: Vec<M>) -> Vec<M> {
    members
        .into_iter()
        .filter(|m| m.name != b"manifest.json")
        .collect()
}

/// A member that is not a regular file: a link (`b'1'` hard, `b'2'`
/// symbolic) to `link`, or a device or FIFO.
pub fn special(name: &str, kind: u8, link: &str) -> M {
    M {
        name: name.as_bytes().to_vec(),
        data: Vec::new(),
        kind,
        link: link.as_bytes().to_vec(),
    }
}

/// The (path, reason) of every problem an export or import check reported.
pub fn problems(v: &Value) -> Vec<(String, String)> {
    v["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("no problems list: {v}"))
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}
