//! Argument and input-file errors: each names the file, the field and the rule.

use super::args::InputArgs;
use super::*;
use clap::Parser;
use std::path::PathBuf;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("pack").chain(args.iter().copied()))
}

fn args(file: Option<&str>, json: Option<&str>) -> InputArgs {
    InputArgs {
        input: file.map(PathBuf::from),
        input_json: json.map(str::to_owned),
    }
}

#[test]
fn usage_errors_exit_2() {
    for bad in [
        &["run"][..],
        &["run", "--node", "x"],
        &["run", "--node", "x", "--input", "a", "--input-json", "{}"],
        &["events", "r1"],
        &["replay"],
        &["estimate"],
        &["frobnicate"],
    ] {
        let e = parse(bad).expect_err("must be refused");
        assert_eq!(e.exit_code(), 2, "{bad:?}");
    }
    assert!(parse(&["manifest"]).is_ok());
    assert!(parse(&["events", "r1", "--journal", "j.db", "--json"]).is_ok());
}

#[test]
fn a_missing_input_file_is_named() {
    let e = read_input(&args(Some("/nonexistent/brief.json"), None)).expect_err("missing");
    assert_eq!(e.exit, 2);
    assert!(
        e.message
            .starts_with("--input /nonexistent/brief.json: cannot read the file:"),
        "{}",
        e.message
    );
}

#[test]
fn invalid_json_names_the_file_and_the_position() {
    let dir = std::env::temp_dir().join(format!("wop-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bad.json");
    std::fs::write(&path, "{\n  \"premise\": oops\n}").expect("write");
    let e = read_input(&args(path.to_str(), None)).expect_err("not JSON");
    assert_eq!(e.exit, 2);
    assert!(
        e.message
            .contains("bad.json: not valid JSON at line 2 column"),
        "{}",
        e.message
    );
    let e = read_input(&args(None, Some("[1,"))).expect_err("not JSON");
    assert!(
        e.message
            .starts_with("--input-json: not valid JSON at line 1"),
        "{}",
        e.message
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn estimate_input_must_map_type_ids() {
    let pack = Pack::new("community.demo.test", "0.1.0");
    let e = estimate_pack(&pack, &json!([1]), "--input plan.json").expect_err("array");
    assert_eq!(e.exit, 2);
    assert!(
        e.message
            .starts_with("--input plan.json: must be an object mapping node type ids")
    );
    let e = estimate_pack(&pack, &json!({"community.test.nope": {}}), "--input-json")
        .expect_err("unknown node");
    assert!(
        e.message
            .starts_with("--input-json: field `community.test.nope`: no such node in the pack"),
        "{}",
        e.message
    );
    let e = estimate_pack(&pack, &json!({}), "--input-json").expect_err("empty");
    assert!(e.message.contains("names no node"), "{}", e.message);
}

#[test]
fn a_journal_that_does_not_exist_is_named_not_created() {
    let path = std::env::temp_dir().join(format!("wop-cli-missing-{}.db", std::process::id()));
    for usage in [JournalUse::Read, JournalUse::Replay] {
        let e = open_journal(Some(&path), usage).err().expect("refused");
        assert_eq!(e.exit, 2);
        assert!(
            e.message
                .starts_with(&format!("--journal {}:", path.display())),
            "{}",
            e.message
        );
        assert!(!path.exists(), "reading must not create the journal");
    }
    assert!(open_journal(None, JournalUse::Record).is_ok());
}

#[test]
fn unknown_node_lists_the_pack() {
    let pack = Pack::new("community.demo.test", "0.1.0");
    let e = find(&pack, "x.y").err().expect("unknown");
    assert_eq!(e.exit, 2);
    assert_eq!(
        e.message,
        "--node x.y: no such node in the pack `community.demo.test` (its nodes: )"
    );
}

#[test]
fn fits_names_the_node_and_the_rule() {
    let caps = Capabilities::negotiate(LocalHost::rfc0248().build().capabilities());
    let mut e = Estimate::new(&caps);
    let plan = wop_sdk::budget::CallPlan::new([wop_sdk::budget::PlannedCall::structured(
        100,
        wop_sdk::policy::RetryPolicy::HOST_DEFAULT,
    )
    .times(3)]);
    e.add_node(&caps, None, "draft", "community.test.draft", Some(6), &plan);
    let err = fits(&e).expect_err("9 > 6");
    assert_eq!(err.exit, 1);
    assert_eq!(
        err.message,
        "the run would not fit its budget: node `draft` may make 9 provider requests, but its max_calls is 6"
    );
}
