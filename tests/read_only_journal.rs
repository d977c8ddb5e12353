//! A journal in a folder this user cannot write: a healthy one opens read-only and creates
//! nothing beside it; recording into it, and a damaged file, each get their own plain message.
//!
//! How writes are denied: the folder is `chmod 0555`. Root ignores permission bits, so when the
//! test runs as root (a container) it also sets the folder immutable with `chattr +i`, which
//! stops root from creating files in it too, and checks that a probe file really cannot be
//! created before it judges anything; it undoes both when it ends, even on a failure. Where
//! neither denies writes (root without `chattr`), the test says so and judges nothing.

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use wop_sdk::RunId;
use wop_sdk::wire::Event;
use wop_sdk_host::journal::{Journal, JournalError, RunMeta, RunRecord, SqliteJournal};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "wop-ro-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Denies writes to a folder while it lives (see the file's doc).
struct ReadOnlyFolder {
    dir: PathBuf,
    immutable: bool,
}

impl ReadOnlyFolder {
    /// `None` when nothing available denies this user writes there.
    fn deny(dir: &Path) -> Option<Self> {
        let mut guard = Self {
            dir: dir.to_path_buf(),
            immutable: false,
        };
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        if !guard.writable() {
            return Some(guard);
        }
        // Root: permission bits do not bind it; an immutable folder does.
        guard.immutable = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        (!guard.writable()).then_some(guard)
    }

    fn writable(&self) -> bool {
        let probe = self.dir.join("probe");
        let created = std::fs::write(&probe, b"x").is_ok();
        let _ = std::fs::remove_file(&probe);
        created
    }
}

impl Drop for ReadOnlyFolder {
    fn drop(&mut self) {
        if self.immutable {
            let _ = Command::new("chattr").arg("-i").arg(&self.dir).status();
        }
        let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755));
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn record_a_run(path: &Path, run: &RunId) {
    let journal = SqliteJournal::open(path).expect("open to record");
    journal
        .begin_run(RunRecord {
            run_id: run.clone(),
            owner: "owner".into(),
            replay_of: None,
            meta: RunMeta::default(),
        })
        .await
        .expect("run");
    for n in 0..3 {
        journal
            .append_event(
                run,
                Event::from_parts(
                    "provider.usage",
                    &json!({"nodeId": "main", "provider": "mock", "model": "m", "inputTokens": 0, "outputTokens": n}),
                )
                .expect("a valid event"),
            )
            .await
            .expect("event");
    }
    // Dropped: closed cleanly, the WAL checkpointed and its side files removed.
}

#[tokio::test]
async fn a_healthy_journal_in_a_read_only_folder_opens_read_only_creating_nothing() {
    let dir = temp_dir("healthy");
    let path = dir.join("journal.sqlite");
    let run = RunId::new("local/ro");
    record_a_run(&path, &run).await;
    assert_eq!(listing(&dir), ["journal.sqlite"]);
    {
        let Some(_denied) = ReadOnlyFolder::deny(&dir) else {
            eprintln!(
                "nothing denies this user writes to {}: not judged",
                dir.display()
            );
            return;
        };
        let journal = SqliteJournal::open_read_only(&path).expect("a healthy journal opens");
        let events = journal.events(&run).await.expect("its events read");
        let ns: Vec<_> = events
            .iter()
            .map(|e| e.payload()["outputTokens"].clone())
            .collect();
        assert_eq!(ns, [json!(0), json!(1), json!(2)]);
        drop(journal);
        assert_eq!(
            listing(&dir),
            ["journal.sqlite"],
            "no side file was created"
        );

        // Recording needs the side files: refused, saying the folder is read-only.
        let e = SqliteJournal::open(&path).expect_err("cannot record here");
        let text = e.to_string();
        assert!(matches!(e, JournalError::Io(_)), "{e:?}");
        assert!(text.contains("is read-only for this user"), "{text}");
        assert!(!text.contains("damaged"), "{text}");
        assert_eq!(listing(&dir), ["journal.sqlite"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_damaged_file_and_an_unwritable_folder_get_different_messages() {
    let dir = temp_dir("damaged");
    let path = dir.join("journal.sqlite");
    record_a_run(&path, &RunId::new("local/d")).await;
    // Damage: cut the file in the middle of a page.
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 100]).expect("truncate");
    {
        let Some(_denied) = ReadOnlyFolder::deny(&dir) else {
            eprintln!(
                "nothing denies this user writes to {}: not judged",
                dir.display()
            );
            return;
        };
        for e in [
            SqliteJournal::open_read_only(&path).expect_err("damaged"),
            SqliteJournal::open(&path).expect_err("damaged"),
        ] {
            assert!(matches!(e, JournalError::Corrupt(_)), "{e:?}");
            let text = e.to_string();
            assert!(text.contains("damaged"), "{text}");
            assert!(!text.contains("read-only for this user"), "{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A WAL left behind (its writer still running) in a read-only folder: either readable (SQLite
/// can use the `-shm` that exists) or refused saying the folder is read-only, never "damaged".
#[tokio::test]
async fn a_journal_with_a_live_wal_in_a_read_only_folder_is_never_called_damaged() {
    let dir = temp_dir("wal");
    let path = dir.join("journal.sqlite");
    let run = RunId::new("local/wal");
    record_a_run(&path, &run).await;
    let writer = SqliteJournal::open(&path).expect("a live writer");
    writer
        .append_event(
            &run,
            Event::from_parts("node.completed", &json!({"nodeId": "main"})).expect("a valid event"),
        )
        .await
        .expect("event");
    assert!(listing(&dir).iter().any(|n| n.ends_with("-wal")));
    {
        let Some(_denied) = ReadOnlyFolder::deny(&dir) else {
            eprintln!(
                "nothing denies this user writes to {}: not judged",
                dir.display()
            );
            return;
        };
        match SqliteJournal::open_read_only(&path) {
            Ok(journal) => {
                let events = journal.events(&run).await.expect("events");
                assert_eq!(events.len(), 4, "the WAL's event is read too");
            }
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains("is read-only for this user"), "{text}");
                assert!(!text.contains("damaged"), "{text}");
            }
        }
        drop(writer);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
