//! What the pack says about itself and about a run: `--version` and `--help`, a failed call, a
//! reply that withheld its usage, the report's picture.

use super::*;

#[test]
fn version_and_help_describe_the_pack_and_the_script_format() {
    let o = run(&["--version"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let version = stdout(&o);
    assert!(
        version.starts_with(&format!("{} 0.1.0 (wop-sdk ", pack_name())),
        "{version}"
    );
    assert!(version.ends_with('\n'));

    let o = run(&["--help"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("Exit codes: 0 success"),
        "{}",
        stdout(&o)
    );

    let o = run(&["run", "--help"]);
    assert_eq!(code(&o), 0);
    let help = stdout(&o);
    for expected in [
        "Provider script (--script FILE, or the input's `script` field)",
        "usage         {inputTokens?, outputTokens?}, or false for a reply that reports none",
        "finishReason  stop (default), length, content-filter",
        "--report <FILE.svg>",
        "NO_COLOR",
    ] {
        assert!(help.contains(expected), "missing `{expected}` in\n{help}");
    }
}

#[test]
fn a_failed_call_shows_what_was_reserved_and_what_was_sent_never_a_made_up_zero() {
    let script = truncated_script();
    let script = script.to_str().expect("utf-8");
    let outline = node("plan-outline");
    let args = [
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script,
    ];
    let o = run(&[&args[..], &["--json"]].concat());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    let outcome = &v["outcome"];
    assert_eq!(outcome["status"], "failed");
    assert_eq!(
        outcome["error"]["error"],
        "envelope_truncation_unrecoverable"
    );
    assert!(outcome.get("output").is_none());
    // The node is told no attempts for a failed call: unknown, written null, never 0.
    let call = &outcome["calls"][0];
    assert_eq!(call["requests"], Value::Null, "{outcome:#}");
    assert_eq!(call["outputTokens"], Value::Null, "{outcome:#}");
    assert_eq!(call["usageComplete"], Value::Null, "{outcome:#}");
    // Reserved and charged: the worst case. Really sent: what the provider received.
    assert_eq!(call["charged"], 3);
    assert_eq!(outcome["budget"]["charged"], 3);
    assert_eq!(outcome["budget"]["chargedWorstCase"], 3);
    assert_eq!(outcome["budget"]["remaining"], 1, "max_calls 4, 3 charged");
    assert_eq!(outcome["provider"]["requests"], 3);
    // 800, then 1600 (the budget grown x2), then 2000 as declared (under 3200).
    assert_eq!(outcome["provider"]["outputTokens"], 800 + 1600 + 2000);
    assert_eq!(outcome["provider"]["usageComplete"], true);

    let o = run(&args);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    assert!(
        text.contains(
            "budget charge 3 (a failed call keeps its worst case reserved in the node's budget"
        ),
        "{text}"
    );
    assert!(
        text.contains("requests and output tokens unknown to the node"),
        "{text}"
    );
    assert!(
        text.contains("sent to the provider: 3 requests (3 answered), 4400 output tokens"),
        "{text}"
    );
    assert!(!text.contains(" 0 output tokens"), "{text}");
    assert!(stderr(&o).contains("host retries exhausted after 3 provider requests"));
}

#[test]
fn a_reply_that_withheld_usage_is_a_floor_and_has_its_progress_line() {
    let script = withheld_script();
    let outline = node("plan-outline");
    let o = run(&[
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("provider request answered"))
        .collect();
    assert_eq!(progress.len(), 2, "one line per request: {err}");
    assert!(progress[1].ends_with("output tokens unknown (the reply withheld its usage)"));
    // Every progress line starts with the elapsed time: `   0.01s  main: ...`.
    for l in err.lines().filter(|l| l.contains("main: ")) {
        let (time, _) = l.trim_start().split_once("s  main: ").expect("time column");
        assert!(time.parse::<f64>().is_ok(), "{l}");
    }
    assert!(
        stdout(&o).contains("at least 40 output tokens (usage withheld)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn run_report_draws_estimate_against_actual() {
    let script = withheld_script();
    let svg_path = temp("report.svg", "");
    let outline = node("plan-outline");
    let o = run(&[
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
        "--report",
        svg_path.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg_path).expect("the report was written");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let bar = |class: &str| -> Vec<(String, f64)> {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .map(|n| {
                assert_eq!(n.attribute("data-node"), Some("main"));
                let w: f64 = n
                    .attribute("width")
                    .expect("width")
                    .parse()
                    .expect("number");
                (n.attribute("data-value").expect("value").to_owned(), w)
            })
            .collect()
    };
    let estimate = bar("bar estimate");
    let actual = bar("bar actual");
    // Requests then output tokens.
    assert_eq!(
        estimate.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
        ["3", "5600"]
    );
    assert_eq!(
        actual.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
        ["2", "40"]
    );
    // Bars are drawn to scale: 2 of 3 requests is two thirds of the estimate's bar.
    let ratio = actual[0].1 / estimate[0].1;
    assert!((ratio - 2.0 / 3.0).abs() < 0.01, "{ratio}");
    assert_eq!(bar("bar max-calls")[0].0, "4");
    assert_eq!(bar("bar used")[0].0, "2");
    let texts = picture::labels(&doc);
    for label in [
        "Provider requests",
        "Output tokens",
        "Budget used of max_calls",
        "main",
        "2 of 4",
        "at least 40 (usage withheld)",
    ] {
        assert!(texts.contains(&label), "missing `{label}` in {texts:?}");
    }

    let o = run(&[
        "run",
        "--node",
        &outline,
        "--input-json",
        BRIEF,
        "--script",
        script.to_str().expect("utf-8"),
        "--report",
        "/nonexistent-dir/report.svg",
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("--report /nonexistent-dir/report.svg: cannot write"),
        "{}",
        stderr(&o)
    );
}
