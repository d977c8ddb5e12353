//! This test binary re-executed as a child process (`tests/redelivery.rs`, `tests/lease.rs`,
//! `tests/kill_anywhere.rs`): started to run one test function of its own, watched through
//! marker files in a fresh folder, and the durable journal in that folder (SQLite or the log:
//! [`Store`]) opened again by the parent as a new process would.
//! [`on_both_stores!`](crate::on_both_stores) runs each scenario on both stores; [`OneCall`] is
//! the node the scenarios run.

#![allow(dead_code)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};
use wop_sdk_host::journal::{Journal, LogJournal, SqliteJournal};
use wop_sdk_host::local::{LocalHost, ScriptedProvider};

/// What the scenarios' node asks for.
#[derive(Deserialize, Serialize, JsonSchema)]
pub struct Title {
    /// The title.
    pub title: String,
}

/// The scenarios' node's input ([`input`]).
#[derive(Deserialize, JsonSchema)]
pub struct In {
    /// What the title is about.
    pub topic: String,
}

/// One structured call, charged to `ana`: the node a child runs and its parent redelivers.
#[wop_node(type_id = "community.test.one-call", version = "1.0.0")]
pub async fn one_call(ctx: &NodeCtx<'_>, input: In) -> Result<Title, NodeError> {
    let c = ctx
        .call_ai(AiRequest::<Title>::prompt(input.topic).beneficiaries(["ana"]))
        .await?;
    c.into_output().map_err(|e| NodeError::new(e.to_string()))
}

/// The node's input, the same in the child and in the parent (a redelivery must match it).
pub fn input() -> serde_json::Value {
    json!({"topic": "lighthouses"})
}

/// The durable journal a scenario runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// [`SqliteJournal`], `journal.sqlite`.
    Sqlite,
    /// [`LogJournal`], `journal.log`.
    Log,
}

impl Store {
    /// Its name, as the child reads it from `WOP_STORE`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Log => "log",
        }
    }

    /// The store the parent named in `WOP_STORE` (a child's side).
    pub fn from_env() -> Self {
        match std::env::var("WOP_STORE").as_deref() {
            Ok("log") => Self::Log,
            _ => Self::Sqlite,
        }
    }

    /// The journal's file in `dir`.
    pub fn file(self, dir: &Path) -> PathBuf {
        dir.join(match self {
            Self::Sqlite => "journal.sqlite",
            Self::Log => "journal.log",
        })
    }

    /// Opens the journal in `dir`, with `window` as its flush window when given.
    pub fn open(self, dir: &Path, window: Option<Duration>) -> Arc<dyn Journal> {
        let file = self.file(dir);
        match self {
            Self::Sqlite => {
                let j = SqliteJournal::open(file).expect("open the SQLite journal");
                if let Some(w) = window {
                    j.set_flush_window(w);
                }
                Arc::new(j)
            }
            Self::Log => {
                let j = LogJournal::open(file).expect("open the log journal");
                if let Some(w) = window {
                    j.set_flush_window(w);
                }
                Arc::new(j)
            }
        }
    }
}

/// Two test modules, `sqlite` and `log`, each with a `#[tokio::test]` per scenario named: the
/// scenario is an `async fn name(store: Store)` beside the macro's call.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::child::Store::Sqlite).await;
                }
            )*
        }
        mod log {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::child::Store::Log).await;
                }
            )*
        }
    };
}

/// An empty folder `<temp>/<name>-<pid>`, whatever an earlier run left there (a scenario run on
/// both stores names its folder after its store).
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Starts this test binary again, running only the test fn `test` with `env` set.
pub fn spawn_self(test: &str, env: &[(&str, &Path)]) -> Child {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("spawn the child")
}

/// Waits until `file` exists: the child reached `point`. Panics if the child ends first, or
/// after two minutes.
pub fn wait_for(child: &mut Child, file: &Path, point: &str) {
    wait_until(child, point, || file.exists());
}

/// Waits until `reached()` says the child reached `point`, looking every 2 ms. Panics if the
/// child ends first, or after two minutes.
pub fn wait_until(child: &mut Child, point: &str, mut reached: impl FnMut() -> bool) {
    let start = Instant::now();
    while !reached() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the child ended before {point}: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the child never reached {point}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A local host on the `store` journal in `dir`, as a new process would open it.
pub fn host_on_journal(dir: &Path, provider: &ScriptedProvider, store: Store) -> LocalHost {
    LocalHost::rfc0248()
        .provider(provider.clone())
        .journal(store.open(dir, None))
        .build()
}

/// The child's runtime: one thread, timers and I/O on.
pub fn child_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}
