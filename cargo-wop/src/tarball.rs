//! The registry's deterministic tarball: USTAR, regular files only (no directory entries),
//! sorted by path, each header with mode 0644, uid/gid 0, empty owner names and mtime 0, names
//! of at most 100 bytes (no prefix, no PAX or GNU long-name records, which the installers
//! refuse); then gzip at the best level with header mtime 0 and OS byte 255 (unknown), as
//! openwop-registry's `scripts/build-pack-tarball.mjs` writes them. Same files, same bytes.

use crate::error::{Result, WopError};
use flate2::Compression;
use flate2::read::GzDecoder;
use std::io::{Read, Write};

/// One file of a tarball.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its path inside the tarball (`pack.json`, `schemas/x.input.json`).
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The longest entry name: the USTAR `name` field, without the `prefix` field.
pub const MAX_NAME: usize = 100;

fn name_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() || path.len() > MAX_NAME {
        Some("an entry name is 1 to 100 bytes (the USTAR name field)")
    } else if !path.is_ascii() {
        Some("an entry name is ASCII")
    } else if path.starts_with('/')
        || path
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        Some("an entry name is a relative path without `.`, `..` or empty parts")
    } else {
        None
    }
}

/// The gzipped tarball of `entries`, sorted by path.
pub fn tgz(mut entries: Vec<Entry>) -> Result<Vec<u8>> {
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut tar = tar::Builder::new(Vec::new());
    for e in &entries {
        if let Some(rule) = name_problem(&e.path) {
            return Err(WopError::failed(format!(
                "tarball entry `{}`: {rule}",
                e.path
            )));
        }
        let mut h = tar::Header::new_ustar();
        h.set_path(&e.path)
            .map_err(|err| WopError::failed(format!("tarball entry `{}`: {err}", e.path)))?;
        h.set_size(e.bytes.len() as u64);
        h.set_mode(0o644);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        tar.append(&h, e.bytes.as_slice())
            .map_err(|err| WopError::failed(format!("tarball entry `{}`: {err}", e.path)))?;
    }
    let tar = tar
        .into_inner()
        .map_err(|e| WopError::failed(format!("tarball: {e}")))?;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::best());
    gz.write_all(&tar)
        .map_err(|e| WopError::failed(format!("tarball: gzip: {e}")))?;
    gz.finish()
        .map_err(|e| WopError::failed(format!("tarball: gzip: {e}")))
}

/// The entries of a gzipped tarball, in order, refusing anything the registry's tarball does
/// not hold: a record other than a regular file, a name over 100 bytes or with `..`, a header
/// with another mode, owner or mtime, entries out of order. `what` names the file in errors.
pub fn read_tgz(bytes: &[u8], what: &str) -> Result<Vec<Entry>> {
    let fail = |rule: String| WopError::failed(format!("{what}: {rule}"));
    let mut tar_bytes = Vec::new();
    GzDecoder::new(bytes)
        .read_to_end(&mut tar_bytes)
        .map_err(|e| fail(format!("not a gzip stream: {e}")))?;
    let mut archive = tar::Archive::new(tar_bytes.as_slice());
    let mut out: Vec<Entry> = Vec::new();
    // Raw: a PAX or GNU long-name record is an entry here, and refused, as the installers do.
    for entry in archive
        .entries()
        .map_err(|e| fail(format!("not a tarball: {e}")))?
        .raw(true)
    {
        let mut entry = entry.map_err(|e| fail(format!("not a tarball: {e}")))?;
        let h = entry.header();
        let raw_name = &h.as_bytes()[..MAX_NAME];
        let name_len = raw_name.iter().position(|b| *b == 0).unwrap_or(MAX_NAME);
        let path = String::from_utf8_lossy(&raw_name[..name_len]).into_owned();
        if h.entry_type() != tar::EntryType::Regular {
            return Err(fail(format!(
                "entry `{path}`: type {:?}; the tarball holds regular files only",
                h.entry_type()
            )));
        }
        if let Some(rule) = name_problem(&path) {
            return Err(fail(format!("entry `{path}`: {rule}")));
        }
        let (mode, uid, gid, mtime) = (
            h.mode().unwrap_or(u32::MAX),
            h.uid().unwrap_or(u64::MAX),
            h.gid().unwrap_or(u64::MAX),
            h.mtime().unwrap_or(u64::MAX),
        );
        if (mode, uid, gid, mtime) != (0o644, 0, 0, 0) {
            return Err(fail(format!(
                "entry `{path}`: mode {mode:o}, uid {uid}, gid {gid}, mtime {mtime}; a deterministic tarball has 644, 0, 0, 0"
            )));
        }
        if out
            .last()
            .is_some_and(|last| last.path.as_bytes() >= path.as_bytes())
        {
            return Err(fail(format!(
                "entry `{path}`: out of order; entries are sorted by path, each once"
            )));
        }
        let mut content = Vec::new();
        entry
            .read_to_end(&mut content)
            .map_err(|e| fail(format!("entry `{path}`: {e}")))?;
        out.push(Entry {
            path,
            bytes: content,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, bytes: &[u8]) -> Entry {
        Entry {
            path: path.into(),
            bytes: bytes.to_vec(),
        }
    }

    fn ungzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(gz).read_to_end(&mut out).expect("gzip");
        out
    }

    #[test]
    fn headers_are_the_registrys_deterministic_ustar_headers() {
        let gz = tgz(vec![
            entry("schemas/a.json", b"{}"),
            entry("pack.json", b"{\"a\":1}"),
        ])
        .expect("tarball");
        // gzip header: magic, deflate, no flags, mtime 0, best-compression flag, OS unknown.
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
        let tar = ungzip(&gz);
        // Two files of one data block each, then two zero blocks.
        assert_eq!(tar.len(), 512 * 2 * 2 + 1024);
        let h = &tar[..512];
        assert_eq!(&h[..9], b"pack.json", "sorted: pack.json before schemas/");
        assert!(h[9..100].iter().all(|b| *b == 0));
        assert_eq!(&h[100..108], b"0000644\0", "mode");
        assert_eq!(&h[108..116], b"0000000\0", "uid");
        assert_eq!(&h[116..124], b"0000000\0", "gid");
        assert_eq!(&h[124..136], b"00000000007\0", "size");
        assert_eq!(&h[136..148], b"00000000000\0", "mtime");
        assert_eq!(h[156], b'0', "regular file");
        assert_eq!(&h[257..265], b"ustar\x0000", "magic and version");
        assert!(h[157..257].iter().all(|b| *b == 0), "no link name");
        assert!(
            h[265..512].iter().all(|b| *b == 0),
            "no owner names, devices or prefix"
        );
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if (148..156).contains(&i) {
                    0x20
                } else {
                    u32::from(*b)
                }
            })
            .sum();
        assert_eq!(&h[148..156], format!("{sum:07o}\0").as_bytes(), "checksum");
        assert_eq!(&tar[512..519], b"{\"a\":1}");
        assert_eq!(&tar[1024..1038], b"schemas/a.json");
        assert!(tar[2048..].iter().all(|b| *b == 0));
    }

    #[test]
    fn the_same_files_in_any_order_give_the_same_bytes_and_read_back() {
        let files = [
            entry("index.mjs", b"export const nodes = {};\n"),
            entry("pack.json", b"{}"),
        ];
        let a = tgz(files.to_vec()).expect("a");
        let b = tgz(files.iter().rev().cloned().collect()).expect("b");
        assert_eq!(a, b);
        assert_eq!(read_tgz(&a, "t.tgz").expect("read"), files.to_vec());
    }

    #[test]
    fn names_the_installers_refuse_are_refused() {
        for bad in ["", "../pack.json", "/abs", "a//b", &"x".repeat(101)] {
            let e = tgz(vec![entry(bad, b"")]).expect_err(bad);
            assert!(e.message.contains("entry name"), "{}", e.message);
        }
        let e = read_tgz(b"not gzip", "r.tgz").expect_err("not gzip");
        assert!(
            e.message.starts_with("r.tgz: not a gzip stream"),
            "{}",
            e.message
        );
    }
}
