//! A built pack folder (what `cargo wop build` writes): its manifest, and the files a registry
//! tarball carries.

use crate::error::{Result, WopError, json, str_field};
use crate::tarball::Entry;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The top-level files a registry tarball carries (openwop-registry's
/// `build-pack-tarball.mjs`); openwop-app's installer keeps `pack.json` and `index.mjs` of them.
pub const TOP_FILES: &[&str] = &["LICENSE", "README.md", "index.mjs", "pack.json"];
/// The folders a registry tarball carries, and the file endings in each (the registry's
/// `ALLOWED_DIR_EXTS`: the same walk gives the same tarball).
pub const DIRS: &[(&str, &[&str])] = &[
    ("keys", &[".pem", ".sig"]),
    ("prompts", &[".md", ".txt"]),
    ("schemas", &[".json"]),
];

/// A pack folder.
#[derive(Clone, Debug)]
pub struct PackFolder {
    /// The folder.
    pub dir: PathBuf,
    /// `pack.json` `name`.
    pub name: String,
    /// `pack.json` `version`.
    pub version: String,
    /// `pack.json`.
    pub manifest: Value,
}

/// Where `cargo wop build` writes pack folders: `target/wop/` of the crate in the current folder.
pub fn build_root() -> PathBuf {
    PathBuf::from("target/wop")
}

impl PackFolder {
    /// The pack folder at `dir`, or, without one, the one folder `cargo wop build` wrote.
    pub fn open(dir: Option<&Path>) -> Result<Self> {
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => default_dir()?,
        };
        let path = dir.join("pack.json");
        if !path.is_file() {
            return Err(WopError::usage(format!(
                "{}: no pack.json; --pack-dir names a folder `cargo wop build` wrote",
                dir.display()
            )));
        }
        let manifest = json(&path)?;
        let name = str_field(&manifest, "name", &path)?.to_owned();
        let version = str_field(&manifest, "version", &path)?.to_owned();
        Ok(Self {
            dir,
            name,
            version,
            manifest,
        })
    }

    /// What `index.mjs` says of the SDK (its `export const wopSdk = {…};` line): the bridge ABI,
    /// the addon, each node's budget and retry policy.
    pub fn wop_sdk(&self) -> Result<Value> {
        let path = self.dir.join("index.mjs");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| WopError::usage(format!("{}: cannot read: {e}", path.display())))?;
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(wop_sdk_host::pack::WOP_SDK_LINE))
            .and_then(|l| l.strip_suffix(';'))
            .ok_or_else(|| {
                WopError::usage(format!(
                    "{}: no `{}…;` line: not a module `cargo wop build` wrote (or one written before wop-sdk 0.1's registry form); build the pack again",
                    path.display(),
                    wop_sdk_host::pack::WOP_SDK_LINE
                ))
            })?;
        serde_json::from_str(line).map_err(|e| {
            WopError::failed(format!(
                "{}: the `wopSdk` line: not JSON: {e}",
                path.display()
            ))
        })
    }

    /// Whether the addon sits beside `index.mjs` (the folder form, for a dev mount): a registry
    /// install drops it.
    pub fn is_folder_form(&self) -> Result<bool> {
        Ok(self.wop_sdk()?.pointer("/addon/file").is_some())
    }

    /// The files a registry tarball carries, and the names of those it leaves out.
    pub fn tarball_entries(&self) -> Result<(Vec<Entry>, Vec<String>)> {
        let mut entries = Vec::new();
        let mut left_out = Vec::new();
        for item in list(&self.dir)? {
            let full = self.dir.join(&item);
            if full.is_dir() {
                let Some((_, endings)) = DIRS.iter().find(|(d, _)| *d == item) else {
                    left_out.push(format!("{item}/"));
                    continue;
                };
                for file in list(&full)? {
                    let path = format!("{item}/{file}");
                    if full.join(&file).is_file() && endings.iter().any(|e| file.ends_with(e)) {
                        entries.push(Entry {
                            bytes: crate::error::read(&full.join(&file))?,
                            path,
                        });
                    } else {
                        left_out.push(path);
                    }
                }
            } else if TOP_FILES.contains(&item.as_str()) {
                entries.push(Entry {
                    bytes: crate::error::read(&full)?,
                    path: item,
                });
            } else {
                left_out.push(item);
            }
        }
        Ok((entries, left_out))
    }
}

/// The names in `dir`, sorted.
pub fn list(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let read = std::fs::read_dir(dir)
        .map_err(|e| WopError::usage(format!("{}: cannot list: {e}", dir.display())))?;
    for entry in read {
        let entry = entry.map_err(|e| WopError::failed(format!("{}: {e}", dir.display())))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

fn default_dir() -> Result<PathBuf> {
    let root = build_root();
    let found: Vec<PathBuf> = list(&root)
        .map_err(|_| {
            WopError::usage(format!(
                "{}: no pack folder; run `cargo wop build` first or give --pack-dir",
                root.display()
            ))
        })?
        .into_iter()
        .map(|n| root.join(n))
        .filter(|p| p.join("pack.json").is_file())
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(WopError::usage(format!(
            "{}: no pack folder; run `cargo wop build` first or give --pack-dir",
            root.display()
        ))),
        many => Err(WopError::usage(format!(
            "{}: {} pack folders; choose one with --pack-dir",
            root.display(),
            many.len()
        ))),
    }
}
