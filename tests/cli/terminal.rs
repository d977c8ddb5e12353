//! On a terminal and in a pipe: pretty-printed events, a closed pipe, colours only on request.

use super::*;

#[test]
fn events_pretty_print_their_payloads() {
    let journal = fresh_journal("events.db");
    let script = temp(
        "events-script.json",
        r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
    );
    let review_node = node("review-chapter");
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}});
    let o = run(&[
        "run",
        "--node",
        &review_node,
        "--input-json",
        &review.to_string(),
        "--script",
        script.to_str().expect("utf-8"),
        "--journal",
        &journal,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let run_id = v["outcome"]["runId"].as_str().expect("runId").to_owned();
    let o = run(&["events", &run_id, "--journal", &journal]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    // The node's output is spread over indented lines, one field each.
    let notes = text
        .lines()
        .find(|l| l.contains("\"notes\": \"Tighten the ending.\""))
        .unwrap_or_else(|| panic!("no pretty output in\n{text}"));
    assert!(notes.starts_with("          "), "indented: `{notes}`");
    assert!(
        text.lines().any(|l| l.trim() == "\"placeholders\": 0"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains("provider.usage")), "{text}");
}

/// Runs the example with its standard output a pipe whose reader is already gone, as after
/// `| head` has read what it wanted.
fn run_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(book_ai_binary())
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the example runs")
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let script = temp(
        "pipe-script.json",
        r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
    );
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}})
    .to_string();
    let script = script.to_str().expect("utf-8");
    let review_node = node("review-chapter");
    for args in [
        &["manifest"][..],
        &["conformance"],
        &["conformance", "--json"],
        &["--help"],
        &["--version"],
        &[],
        &[
            "run",
            "--node",
            &review_node,
            "--input-json",
            &review,
            "--script",
            script,
            "--json",
        ],
    ] {
        let o = run_into_closed_pipe(args);
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // Progress lines may name a reason (`parse-error`); no line is an error.
        assert!(
            !err.lines().any(|l| l.starts_with("error")),
            "{args:?}: {err}"
        );
    }
    // A refused command still says why on standard error, with its own exit code.
    let mut bad = serde_json::Map::new();
    bad.insert(node("plan-outline"), json!({}));
    let o = run_into_closed_pipe(&["estimate", "--input-json", &Value::Object(bad).to_string()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!stderr(&o).contains("Broken pipe"), "{}", stderr(&o));
}

#[test]
fn colours_only_on_request_and_never_with_no_color() {
    let script = withheld_script();
    let outline = node("plan-outline");
    let args = [
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
    ];
    let esc = |o: &Output| stdout(o).contains('\u{1b}') || stderr(o).contains('\u{1b}');
    // Not a terminal: plain.
    let o = run_env(&args, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!esc(&o), "{}", stderr(&o));
    // Forced: coloured.
    let o = run_env(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(esc(&o), "CLICOLOR_FORCE colours: {}", stderr(&o));
    // NO_COLOR wins.
    let o = run_env(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!esc(&o), "NO_COLOR: {}", stderr(&o));
}
