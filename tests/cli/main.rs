//! Every subcommand of the pack command line, through the real `book_ai` example binary.
//!
//! Finding the binary: `CARGO_BIN_EXE_*` exists only for `[[bin]]` targets, so the test asks
//! cargo itself to build the example once (`cargo build --example book_ai`, the same cargo, the
//! same target dir and profile; a no-op when `cargo test` already built it) and runs it from
//! `<target>/<profile>/examples/`, a sibling of the `deps/` folder this test runs from. Cargo
//! releases its build lock before it runs tests, so the nested build does not wait; it also keeps
//! `cargo test --test cli` from ever running a stale binary.

mod run_output;
mod subcommands;
mod terminal;

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

fn binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "book_ai"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "`cargo build --example book_ai` failed");
            let exe = std::env::current_exe().expect("current exe");
            let profile_dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("<target>/<profile>/deps/<test>");
            let bin = profile_dir
                .join("examples")
                .join(format!("book_ai{}", std::env::consts::EXE_SUFFIX));
            assert!(bin.exists(), "{} is missing", bin.display());
            bin
        })
        .clone()
}

/// Runs the example, its colours left to its own judgement (no `NO_COLOR`, no `CLICOLOR_FORCE`
/// from the environment of the test).
fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("book-ai-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write temp file");
    path
}

const BRIEF: &str = r#"{"premise": "A lighthouse mystery.", "chapters": 1, "scenesPerChapter": 2}"#;

fn chapter(scenes: usize) -> Value {
    json!({
        "chapter": {"number": 1, "title": "The Dark Lamp", "characters": ["Mara Quill"],
                    "scenes": vec!["a beat"; scenes]},
        "minWords": 5
    })
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(binary());
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the example runs")
}

/// The pack's name as its own manifest says (it may change; the tests do not pin it).
fn pack_name() -> String {
    let o = run(&["manifest"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("pack.json");
    v["name"].as_str().expect("name").to_owned()
}

/// The type id of the pack's node whose id ends with `-suffix`, as its manifest says.
fn node(suffix: &str) -> String {
    let o = run(&["manifest"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("pack.json");
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["typeId"].as_str())
        .find(|id| id.ends_with(&format!(".{suffix}")))
        .unwrap_or_else(|| panic!("no node `{suffix}` in the manifest"))
        .to_owned()
}

/// Three replies, each truncated: the call fails after three requests.
fn truncated_script() -> PathBuf {
    temp(
        "truncated-script.json",
        &json!([
            {"content": {"title": "T"}, "usage": {"outputTokens": 2000}, "finishReason": "length"},
            {"content": {"title": "T"}, "usage": {"outputTokens": 2000}, "finishReason": "length"},
            {"content": {"title": "T"}, "usage": {"outputTokens": 2000}, "finishReason": "length"}
        ])
        .to_string(),
    )
}

/// A schema violation, then the outline in a reply that withholds its usage.
fn withheld_script() -> PathBuf {
    temp(
        "withheld-script.json",
        &json!([
            {"content": {"title": "T"}, "usage": {"outputTokens": 40}},
            {"content": {"title": "T", "chapters": [{"number": 1, "title": "C",
              "characters": ["Mara"], "scenes": ["a", "b"]}]}, "usage": false}
        ])
        .to_string(),
    )
}
