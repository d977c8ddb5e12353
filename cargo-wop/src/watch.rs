//! `cargo wop dev --watch`: the crate's sources watched through the platform's file notifications
//! (the `notify` crate: inotify, FSEvents, ReadDirectoryChangesW), changes gathered for
//! [`DEBOUNCE`] after the first one, then one rebuild for all of them.
//!
//! Watched: the crate's folder itself (not recursively), for `Cargo.toml`, `build.rs` and
//! `budget-inputs.json` (also when they appear later), and every top-level folder of the crate
//! except `target` and the hidden ones, recursively (one made later is watched from then on).
//! Never `target/`, where the build writes (no rebuild loop), nor `Cargo.lock`, which cargo may
//! write itself. Within the folders, hidden files and editors' backups (`name~`) are no change;
//! a file only read (opened, closed without writing) is none either.

use crate::{Failure, progress};
use notify::event::EventKind;
use notify::{Event, RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long changes are gathered after the first before the rebuild: an editor's save is often
/// several events, a checkout many.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(300);

/// The top-level files of the crate whose change is a change of the pack.
const TOP_FILES: &[&str] = &["Cargo.toml", "build.rs", crate::budget::INPUTS_FILE];

/// Whether `name`, a top-level folder of the crate, is watched.
fn watched_folder(name: &str) -> bool {
    name != "target" && !name.starts_with('.')
}

/// The change `path` (under `root`) is, as a path relative to the crate with `/`: `None` when it
/// is not one of the sources (see the module's documentation).
fn relevant(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let (first, last) = (parts.first()?, parts.last()?);
    if parts.iter().any(|p| p.starts_with('.')) || last.ends_with('~') {
        return None;
    }
    let source = if parts.len() == 1 {
        TOP_FILES.contains(first) || (root.join(first).is_dir() && watched_folder(first))
    } else {
        watched_folder(first)
    };
    source.then(|| parts.join("/"))
}

/// A change's kind: a file made, written, renamed or removed (its metadata too); not a read.
fn is_change(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Any | EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
    )
}

/// What a batch of events changed, and the new top-level folders to watch.
#[derive(Debug, Default)]
struct Batch {
    changed: BTreeSet<String>,
    /// Made during the batch: one gone again by its end was an editor's temporary file (`sed -i`
    /// writes one and renames it over the file), no change.
    created: BTreeSet<String>,
    new_folders: BTreeSet<PathBuf>,
}

impl Batch {
    fn add(&mut self, root: &Path, event: notify::Result<Event>) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                progress(&format!("warning: watching {}: {e}", root.display()));
                return;
            }
        };
        if event.need_rescan() {
            self.changed
                .insert("(the system dropped some events: building again)".to_owned());
        }
        if !is_change(&event.kind) {
            return;
        }
        for path in &event.paths {
            if let Some(rel) = relevant(root, path) {
                if !rel.contains('/') && path.is_dir() {
                    self.new_folders.insert(path.clone());
                }
                if matches!(event.kind, EventKind::Create(_)) {
                    self.created.insert(rel.clone());
                }
                self.changed.insert(rel);
            }
        }
    }

    /// The changes, sorted: a file gone at the end is `(removed)`, unless the batch made it.
    fn changes(self, root: &Path) -> Vec<String> {
        let created = self.created;
        self.changed
            .into_iter()
            .filter_map(|rel| {
                if rel.starts_with('(') || root.join(&rel).exists() {
                    Some(rel)
                } else if created.contains(&rel) {
                    None
                } else {
                    Some(format!("{rel} (removed)"))
                }
            })
            .collect()
    }
}

fn watch_error(path: &Path, e: &notify::Error) -> Failure {
    Failure::failed(format!("--watch: cannot watch {}: {e}", path.display()))
}

/// Watches the crate in `crate_dir` and calls `rebuild` with the changed paths (relative to the
/// crate, sorted) after each batch of changes. Runs until the process is ended (Ctrl-C).
pub(crate) fn run(crate_dir: &Path, mut rebuild: impl FnMut(&[String])) -> Result<(), Failure> {
    let root = crate_dir
        .canonicalize()
        .map_err(|e| Failure::failed(format!("--watch: {}: {e}", crate_dir.display())))?;
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    })
    .map_err(|e| watch_error(&root, &e))?;
    watcher
        .watch(&root, RecursiveMode::NonRecursive)
        .map_err(|e| watch_error(&root, &e))?;
    let mut watched: Vec<String> = TOP_FILES
        .iter()
        .filter(|f| root.join(f).is_file())
        .map(|f| (*f).to_owned())
        .collect();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(|e| Failure::failed(format!("--watch: {}: cannot list: {e}", root.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(watched_folder)
        })
        .collect();
    folders.sort();
    for folder in &folders {
        watcher
            .watch(folder, RecursiveMode::Recursive)
            .map_err(|e| watch_error(folder, &e))?;
        if let Some(name) = folder.file_name() {
            watched.push(format!("{}/", name.to_string_lossy()));
        }
    }
    progress(&format!(
        "watching {} ({}; not target/) for changes: each one builds and mounts again; Ctrl-C ends",
        root.display(),
        watched.join(", ")
    ));
    loop {
        let first = rx.recv().map_err(|_| {
            Failure::failed(format!("--watch: the watch of {} ended", root.display()))
        })?;
        let mut batch = Batch::default();
        batch.add(&root, first);
        if batch.changed.is_empty() {
            continue;
        }
        let until = Instant::now() + DEBOUNCE;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(event) => batch.add(&root, event),
                Err(_) => break,
            }
        }
        for folder in &batch.new_folders {
            if let Err(e) = watcher.watch(folder, RecursiveMode::Recursive) {
                progress(&format!("warning: {}", watch_error(folder, &e).message));
            }
        }
        let changed = batch.changes(&root);
        if !changed.is_empty() {
            rebuild(&changed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_crates_sources_are_changes() {
        let root = std::env::temp_dir().join(format!("cargo-wop-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["src", "target/wop", ".git", "tests"] {
            std::fs::create_dir_all(root.join(dir)).expect("dir");
        }
        let at = |p: &str| relevant(&root, &root.join(p));
        assert_eq!(at("src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(at("src/deep/mod.rs").as_deref(), Some("src/deep/mod.rs"));
        assert_eq!(at("Cargo.toml").as_deref(), Some("Cargo.toml"));
        assert_eq!(
            at("budget-inputs.json").as_deref(),
            Some("budget-inputs.json")
        );
        assert_eq!(at("build.rs").as_deref(), Some("build.rs"));
        assert_eq!(
            at("tests").as_deref(),
            Some("tests"),
            "a folder made or removed"
        );
        for ignored in [
            "target",
            "target/wop/last-build.json",
            "target/debug/libx.so",
            "Cargo.lock",
            "README.md",
            ".git/index",
            ".gitignore",
            "src/.lib.rs.swp",
            "src/lib.rs~",
        ] {
            assert_eq!(at(ignored), None, "{ignored}");
        }
        assert_eq!(relevant(&root, Path::new("/elsewhere/src/lib.rs")), None);
        std::fs::write(root.join("src/lib.rs"), "").expect("a source");
        let event = |kind, path: &str| Ok(Event::new(kind).add_path(root.join(path)));
        let mut batch = Batch::default();
        let created = EventKind::Create(notify::event::CreateKind::File);
        let modified = EventKind::Modify(notify::event::ModifyKind::Any);
        batch.add(&root, event(created, "src/sedX1"));
        batch.add(&root, event(modified, "src/lib.rs"));
        batch.add(&root, event(modified, "src/gone.rs"));
        batch.add(&root, event(modified, "target/debug/x"));
        assert_eq!(
            batch.changes(&root),
            ["src/gone.rs (removed)", "src/lib.rs"]
        );
        assert!(!is_change(&EventKind::Access(
            notify::event::AccessKind::Any
        )));
        let _ = std::fs::remove_dir_all(&root);
    }
}
