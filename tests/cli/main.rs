//! Every subcommand of the pack command line, through the real `book_ai` example binary (built
//! by the same cargo: `tests/support/book_ai_example.rs`).

mod agreement;
mod run_output;
mod subcommands;
mod terminal;

use wop_sdk_test_support::picture;

use wop_sdk_test_support::book_ai_example;

use book_ai_example::book_ai_binary;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};

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

/// A journal path in the temp folder with no journal there yet, as text for `--journal`.
fn fresh_journal(name: &str) -> String {
    let journal = std::env::temp_dir()
        .join(format!("book-ai-cli-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_file(&journal);
    journal.to_str().expect("utf-8").to_owned()
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
    let mut c = Command::new(book_ai_binary());
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
