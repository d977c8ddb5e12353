//! A registry folder changed all or nothing: `publish` copies it (without `.git`, `node_modules`
//! and `dist`) to a staging folder, writes the release there, runs the registry's own scripts and
//! the gates there, and only when every gate passes copies the files that changed back. A failed
//! publish, or one killed half-way, leaves the registry folder as it was.

use crate::error::{Result, WopError};
use std::path::{Path, PathBuf};

/// Folders of a registry checkout that are not copied: they are not the registry's content.
const SKIPPED: &[&str] = &[".git", "node_modules", "dist"];

/// The staging copy of a registry folder.
pub struct Staging {
    /// The registry folder.
    pub root: PathBuf,
    /// Its copy, where everything is written first.
    pub dir: PathBuf,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> WopError {
    WopError::failed(format!("{}: cannot {what}: {e}", path.display()))
}

/// Copies every file of `from` (but the skipped folders) to `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let mut all = Vec::new();
    files(from, Path::new(""), true, &mut all)?;
    std::fs::create_dir_all(to).map_err(|e| io(to, "create", e))?;
    for rel in all {
        let target = to.join(&rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, "create", e))?;
        }
        std::fs::copy(from.join(&rel), &target).map_err(|e| io(&from.join(&rel), "copy", e))?;
    }
    Ok(())
}

/// Every file under `dir`, as paths relative to it.
fn files(dir: &Path, rel: &Path, top: bool, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in read {
        let entry = entry.map_err(|e| io(dir, "list", e))?;
        let name = entry.file_name();
        if top && SKIPPED.iter().any(|s| name == *s) {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| io(&entry.path(), "stat", e))?;
        if kind.is_dir() {
            files(&entry.path(), &rel.join(&name), false, out)?;
        } else if kind.is_file() {
            out.push(rel.join(&name));
        }
    }
    Ok(())
}

impl Staging {
    /// A staging copy of `root` (empty when `root` does not exist yet: it is created only when
    /// the publish succeeds) in the system's temporary folder.
    pub fn new(root: &Path) -> Result<Self> {
        if root.exists() && !root.is_dir() {
            return Err(WopError::usage(format!(
                "--registry {}: not a folder",
                root.display()
            )));
        }
        let dir = std::env::temp_dir().join(format!("wop-publish-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        if root.is_dir() {
            copy_tree(root, &dir)?;
        } else {
            std::fs::create_dir_all(&dir).map_err(|e| io(&dir, "create", e))?;
        }
        // The registry's gate scripts import its npm packages (Ajv): linked, not copied.
        #[cfg(unix)]
        if root.join("node_modules").is_dir() {
            let modules = std::path::absolute(root.join("node_modules"))
                .map_err(|e| io(root, "resolve", e))?;
            std::os::unix::fs::symlink(modules, dir.join("node_modules"))
                .map_err(|e| io(&dir, "link node_modules into", e))?;
        }
        Ok(Self {
            root: root.to_path_buf(),
            dir,
        })
    }

    /// Writes `bytes` at `rel` in the staging copy.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        crate::error::write(&self.dir.join(rel), bytes)
    }

    /// Removes the folder `rel` of the staging copy, if there is one.
    pub fn remove_dir(&self, rel: &str) -> Result<()> {
        let path = self.dir.join(rel);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| io(&path, "remove", e))?;
        }
        Ok(())
    }

    /// Runs the registry's script `script` (a path relative to the folder) with Node in the
    /// staging copy, as its README's publish flow does.
    pub fn run_script(&self, script: &str, args: &[&str]) -> Result<String> {
        let mut argv = vec![script];
        argv.extend_from_slice(args);
        let (ok, text) = crate::check::run_in_registry(&self.dir, "node", &argv)?;
        if ok {
            Ok(text)
        } else {
            Err(WopError::failed(format!(
                "the registry's `node {}` failed:\n{}",
                argv.join(" "),
                text.trim_end()
            )))
        }
    }

    /// Copies every file that differs from the registry folder's back into it, and removes the
    /// files of `owned` folders (relative paths) that the staging copy no longer has; answers
    /// the changed paths.
    pub fn commit(self, owned: &[String]) -> Result<Vec<PathBuf>> {
        let mut staged = Vec::new();
        files(&self.dir, Path::new(""), true, &mut staged)?;
        let mut changed = Vec::new();
        for rel in &staged {
            let (from, to) = (self.dir.join(rel), self.root.join(rel));
            let bytes = std::fs::read(&from).map_err(|e| io(&from, "read", e))?;
            if std::fs::read(&to).ok().as_deref() == Some(bytes.as_slice()) {
                continue;
            }
            let tmp = to.with_extension("wop-publish-tmp");
            crate::error::write(&tmp, &bytes)?;
            std::fs::rename(&tmp, &to).map_err(|e| io(&to, "replace", e))?;
            changed.push(rel.clone());
        }
        for dir in owned {
            let mut present = Vec::new();
            files(&self.root.join(dir), Path::new(dir), false, &mut present)?;
            for rel in present.iter().filter(|p| !staged.contains(p)) {
                let path = self.root.join(rel);
                std::fs::remove_file(&path).map_err(|e| io(&path, "remove", e))?;
                changed.push(rel.clone());
            }
        }
        Ok(changed)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
