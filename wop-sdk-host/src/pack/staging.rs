//! A pack folder replaced whole. Its files are written into a hidden folder beside it
//! (`.<name>.writing-<pid>-<n>`), which is then renamed into place: the folder there before is
//! first renamed aside (`.<name>.replaced-<pid>-<n>`) and removed after. So a host listing the
//! packs folder never sees a half-written pack (it sees the old one or the new one; for the
//! instant between the two renames, none), a write that fails leaves the old pack as it was, and
//! no file is ever written over in place: an addon a host has loaded keeps its file (unlinked
//! with the old folder, its pages stay mapped), where writing over it would crash that host.
//!
//! A hidden name matches no `OPENWOP_LOCAL_PACK_PREFIXES` prefix (a pack name starts with a
//! letter), so openwop-app mounts neither folder.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The hidden folder a pack folder is written into, removed unless [`Staging::replace`] moved it
/// into place.
#[derive(Debug)]
pub(super) struct Staging {
    dir: PathBuf,
    out: PathBuf,
    name: String,
    placed: bool,
}

/// `out/.<name>.<what>-<pid>-<n>`: no other writer, in this process or another, has it.
fn hidden(out: &Path, name: &str, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    out.join(format!(
        ".{name}.{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

fn remove(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

impl Staging {
    /// A new hidden folder in `out` (created if missing) for the pack `name`. Folders an earlier
    /// replace of `name` left behind (a process killed between its renames, an addon a host still
    /// held on a system that keeps such files) are removed first.
    pub(super) fn new(out: &Path, name: &str) -> Result<Self, String> {
        let leftover = format!(".{name}.replaced-");
        for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&leftover) {
                remove(&entry.path());
            }
        }
        let dir = hidden(out, name, "writing");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        Ok(Self {
            dir,
            out: out.to_path_buf(),
            name: name.to_owned(),
            placed: false,
        })
    }

    /// Writes `bytes` to `file` (a path inside the pack folder, e.g. `schemas/x.json`) in the
    /// hidden folder; an error names the file as it will be in the pack folder.
    pub(super) fn write(&self, file: &str, bytes: &[u8]) -> Result<(), String> {
        let shown = self.out.join(&self.name).join(file);
        if !Path::new(file)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!(
                "{}: a pack file's path must be relative and stay inside the pack folder",
                shown.display()
            ));
        }
        let path = self.dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("{}: cannot create: {e}", shown.display()))?;
        }
        std::fs::write(&path, bytes).map_err(|e| format!("{}: cannot write: {e}", shown.display()))
    }

    /// Moves the written folder to `out/<name>` and answers that path; the folder there before is
    /// renamed aside first (put back if the move fails) and removed after.
    pub(super) fn replace(mut self) -> Result<PathBuf, String> {
        let target = self.out.join(&self.name);
        let old = match std::fs::symlink_metadata(&target) {
            Ok(_) => {
                let old = hidden(&self.out, &self.name, "replaced");
                std::fs::rename(&target, &old)
                    .map_err(|e| format!("{}: cannot replace: {e}", target.display()))?;
                Some(old)
            }
            Err(_) => None,
        };
        if let Err(e) = std::fs::rename(&self.dir, &target) {
            if let Some(old) = &old {
                let _ = std::fs::rename(old, &target);
            }
            return Err(format!(
                "{}: cannot move the new pack folder into place (from {}): {e}",
                target.display(),
                self.dir.display()
            ));
        }
        self.placed = true;
        if let Some(old) = old {
            remove(&old);
        }
        Ok(target)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DEFAULT_TIMEOUT_MS, PackFiles, PackOptions, test_elf, write_pack_files};
    use serde_json::json;
    use std::io::Read as _;
    use wop_sdk::manifest::Pack;

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("listed")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Rewriting a pack folder replaces it whole: the old addon's file keeps its bytes for whoever
    /// has it open (a host that loaded it), nothing hidden is left, and a write that fails leaves
    /// the old folder as it was.
    #[test]
    fn a_pack_folder_is_replaced_whole_and_a_failed_write_keeps_the_old_one() {
        let dir = std::env::temp_dir().join(format!("wop-pack-staging-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let machine = if cfg!(target_arch = "aarch64") {
            test_elf::AARCH64
        } else {
            test_elf::X86_64
        };
        let (first, second) = (
            test_elf::shared_object(machine, 64),
            test_elf::shared_object(machine, 128),
        );
        let addon = dir.join("addon.so");
        std::fs::write(&addon, &first).expect("addon");
        let out = dir.join("packs");
        let options = PackOptions {
            out: out.clone(),
            addon: addon.clone(),
            single_file: false,
            provider: Some("mock".into()),
            model: Some("mock-1".into()),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            other_addons: Vec::new(),
            addon_built: false,
        };
        let pack =
            Pack::new("community.example.echo", "0.1.0").node(crate::conformance::EchoAttempts);
        let folder = write_pack_files(&PackFiles::of(&pack), &options).expect("written");
        let node = folder.join("community.example.echo.node");
        let mut held = std::fs::File::open(&node).expect("the addon a host loaded");
        std::fs::write(&addon, &second).expect("a new addon");
        let again = write_pack_files(&PackFiles::of(&pack), &options).expect("written again");
        assert_eq!(again, folder);
        assert_eq!(std::fs::read(&node).expect("new"), second);
        let mut old = Vec::new();
        held.read_to_end(&mut old).expect("read");
        assert_eq!(old, first, "the loaded addon's file was not written over");
        assert_eq!(
            names(&out),
            ["community.example.echo"],
            "nothing hidden left"
        );

        // A schema path that cannot be written (under a file): the old folder stays whole.
        let mut broken = PackFiles::of(&pack);
        let (path, schema) = broken.schemas[0].clone();
        broken
            .schemas
            .push((format!("{path}/under-a-file.json"), schema));
        let e = write_pack_files(&broken, &options).expect_err("cannot write");
        assert!(e.message.contains("under-a-file.json"), "{}", e.message);
        assert_eq!(
            names(&out),
            ["community.example.echo"],
            "nothing hidden left"
        );
        assert_eq!(std::fs::read(&node).expect("kept"), second);
        assert!(folder.join("pack.json").is_file() && folder.join("index.mjs").is_file());
        let mut escaping = PackFiles::of(&pack);
        escaping
            .schemas
            .push(("../outside.json".to_owned(), json!({})));
        let e = write_pack_files(&escaping, &options).expect_err("outside the folder");
        assert!(
            e.message
                .contains("../outside.json: a pack file's path must be relative"),
            "{}",
            e.message
        );
        assert_eq!(
            names(&out),
            ["community.example.echo"],
            "nothing written outside"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
