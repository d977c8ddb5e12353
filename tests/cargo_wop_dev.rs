//! `cargo wop dev` as a pack author's dev loop, with real processes: a crate scaffolded by the
//! real `cargo-wop`, `cargo wop dev --watch` running as a child process, and the node run by the
//! harness of openwop-app's contract in Node with no node configuration (openwop-app requires a
//! provider and a model on every call: here they come from the pack's defaults, which dev
//! bakes in). An edit of `src/lib.rs` is rebuilt and re-mounted; a broken one leaves the mount
//! as it was. Without flags, dev takes the last `cargo wop build`'s defaults.
//!
//! The crates build in this workspace's target folder, with the SDK's lockfile, so the
//! dependencies already built are reused. Nothing waits a fixed time: each step waits for the
//! line the dev loop prints (10 minutes at most, failing with all it printed).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wop_sdk_test_support::harness;
use wop_sdk_test_support::pack_author::{cargo_wop, cargo_wop_command, ok, scaffold, temp_world};

/// How long one step of the dev loop may take: the first build may build the addon's
/// dependencies on a loaded machine.
const WAIT: Duration = Duration::from_secs(600);

/// The prompt the scaffold's node sends for the topic `lighthouses`.
const PROMPT: &str = "A title for a book about lighthouses.";

/// `cargo wop dev` running as a child process, its standard output and error read line by line
/// on threads of their own. Dropped (a failing test too), it is killed and waited for.
struct DevLoop {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

fn forward(stream: impl Read + Send + 'static, tx: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
}

impl DevLoop {
    fn start(krate: &Path, args: &[&str]) -> Self {
        let mut child = cargo_wop_command(args, krate)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cargo wop dev starts");
        let (tx, lines) = mpsc::channel();
        forward(child.stdout.take().expect("piped"), tx.clone());
        forward(child.stderr.take().expect("piped"), tx);
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until all the loop printed satisfies `done`, and answers the last one; the
    /// test fails, with everything the loop printed, when that takes more than [`WAIT`] or the
    /// loop ends first.
    fn wait(&mut self, what: &str, done: impl Fn(&[String]) -> bool) -> String {
        let until = Instant::now() + WAIT;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if done(&self.seen) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "waiting for {what}: {e:?} (exit: {:?}); the dev loop printed:\n{}",
                    self.child.try_wait(),
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// The first line from now on that `wanted` accepts.
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let from = self.seen.len();
        self.wait(what, |seen| {
            seen.len() > from && seen.last().is_some_and(|l| wanted(l))
        })
    }

    /// Waits until `line` has been printed `times` times in all. Standard output and error are
    /// read apart, so a line of one may come before or after a line of the other printed first.
    fn wait_count(&mut self, line: &str, times: usize) {
        let count = |seen: &[String]| seen.iter().filter(|l| l.contains(line)).count();
        if count(&self.seen) < times {
            self.wait(&format!("{line:?} {times} times"), |seen| {
                count(seen) >= times
            });
        }
    }

    /// What the loop printed so far.
    fn output(&self) -> String {
        self.seen.join("\n")
    }
}

impl Drop for DevLoop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scenario(packs: &Path, pack: &str) -> Value {
    json!({
        "packsDir": packs,
        "prefixes": [pack],
        "steps": [{
            "nodeId": "title", "typeId": format!("{pack}.name-book"),
            "inputs": {"topic": "lighthouses"},
            "script": [{"content": {"title": "The Lamp and the Ledger"}, "usage": {"outputTokens": 7}}],
        }],
    })
}

/// Runs the node of `pack` mounted from `packs` with no node configuration, asserts it succeeded
/// through one call to the harness's mock with the pack's default provider and model, and
/// answers the prompt that call carried.
fn run_node(packs: &Path, pack: &str) -> String {
    let report = harness::run(&scenario(packs, pack));
    assert_eq!(report["mounted"], json!([pack]), "{report}");
    let step = &report["steps"][0];
    assert_eq!(step["outcome"]["status"], "success", "{report}");
    assert_eq!(
        step["outcome"]["outputs"]["title"], "The Lamp and the Ledger",
        "{report}"
    );
    assert_eq!(step["requests"], 1, "{report}");
    let call: Value = step["callAI"][0]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_else(|| panic!("the call as ctx.callAI received it: {report}"));
    assert_eq!(call["provider"], "mock", "{call}");
    assert_eq!(call["model"], "mock-1", "{call}");
    step["messages"][0][0]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("the call's prompt: {report}"))
        .to_owned()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("listed")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn dev_watch_mounts_with_the_flags_defaults_and_remounts_each_change() {
    let tmp = temp_world("wop-cargo-wop-dev-watch-");
    let krate = scaffold(&tmp, "watch-pack");
    let pack = "community.local.watch-pack";
    let host = tmp.join("host");
    let host_arg = host.to_str().expect("utf-8 path");
    let mut dev = DevLoop::start(
        &krate,
        &[
            "dev",
            "--watch",
            "--provider",
            "mock",
            "--model",
            "mock-1",
            "--host-dir",
            host_arg,
        ],
    );
    let mount_line = format!("OPENWOP_LOCAL_PACK_PREFIXES={pack} npm run dev");
    dev.wait_for("the watch to start", |l| l.starts_with("watching "));
    dev.wait_count(&mount_line, 1);
    let out = dev.output();
    for said in [
        "dev: provider `mock` (from --provider)",
        "dev: model `mock-1` (from --model)",
        "dev: timeout 300000 ms, the default (no --timeout-ms",
    ] {
        assert!(out.contains(said), "{said:?} in:\n{out}");
    }
    assert!(!out.contains("warning: no --provider"), "{out}");
    assert_eq!(run_node(&host, pack), PROMPT);

    // A change that does not build: cargo's errors, and the mount stays as it was.
    let lib = krate.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).expect("lib.rs");
    assert!(
        source.contains("A title for a book about {}."),
        "the scaffold's prompt"
    );
    std::fs::write(
        &lib,
        format!("{source}\nfn broken() -> u32 {{ \"not a number\" }}\n"),
    )
    .expect("write");
    let line = dev.wait_for("the broken rebuild", |l| {
        l.contains("the rebuild failed") || l.contains("re-mounted")
    });
    assert!(
        line.contains("the rebuild failed (changed: src/lib.rs)"),
        "{line}\n{}",
        dev.output()
    );
    assert!(dev.output().contains("error[E0308]"), "{}", dev.output());
    assert_eq!(run_node(&host, pack), PROMPT, "the previous mount stays");

    // A change that builds: rebuilt, re-mounted, and the harness runs the new node.
    std::fs::write(
        &lib,
        source.replace(
            "A title for a book about {}.",
            "A short title for a book about {}.",
        ),
    )
    .expect("write");
    let line = dev.wait_for("the rebuild", |l| {
        l.contains("the rebuild failed") || l.contains("re-mounted")
    });
    assert!(
        line.starts_with("rebuilt and re-mounted community.local.watch-pack")
            && line.ends_with("(changed: src/lib.rs)"),
        "{line}\n{}",
        dev.output()
    );
    dev.wait_for("the restart note", |l| {
        l.starts_with("openwop-app imports a pack once")
    });
    dev.wait_count(&mount_line, 2); // printed again
    assert_eq!(
        run_node(&host, pack),
        "A short title for a book about lighthouses."
    );
    assert_eq!(
        names(&host),
        [pack],
        "the folder replaced whole, nothing left"
    );
    drop(dev);
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn dev_without_flags_takes_the_last_builds_defaults() {
    let tmp = temp_world("wop-cargo-wop-dev-defaults-");
    let krate = scaffold(&tmp, "defaults-pack");
    let pack = "community.local.defaults-pack";
    ok(
        cargo_wop(
            &[
                "build",
                "--provider",
                "mock",
                "--model",
                "mock-1",
                "--timeout-ms",
                "120000",
            ],
            &krate,
        ),
        "cargo wop build",
    );
    let recorded = krate.join("target/wop/last-build.json");
    let last: Value =
        serde_json::from_slice(&std::fs::read(&recorded).expect("last-build.json")).expect("JSON");
    assert_eq!(
        last,
        json!({"provider": "mock", "model": "mock-1", "timeoutMs": 120000})
    );
    let host = tmp.join("host");
    let out = ok(
        cargo_wop(
            &["dev", "--host-dir", host.to_str().expect("utf-8 path")],
            &krate,
        ),
        "cargo wop dev",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = recorded.display();
    for said in [
        format!("dev: provider `mock` (from the last build, {file})"),
        format!("dev: model `mock-1` (from the last build, {file})"),
        format!("dev: timeout 120000 ms (from the last build, {file})"),
    ] {
        assert!(stderr.contains(&said), "{said:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("warning: no --provider"), "{stderr}");
    assert_eq!(run_node(&host, pack), PROMPT);

    // A damaged record: a warning naming the file, then dev goes on as without one (build's own
    // warning: no provider or model for the pack).
    std::fs::write(&recorded, "{\"provider\": 7").expect("damage it");
    let out = ok(
        cargo_wop(
            &["dev", "--host-dir", host.to_str().expect("utf-8 path")],
            &krate,
        ),
        "cargo wop dev with a damaged record",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("warning: {file}: not JSON"))
            && stderr
                .contains("dev: provider none (no --provider, and no last build recorded one)")
            && stderr.contains("warning: no --provider or --model for the pack"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
