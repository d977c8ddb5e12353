//! `cargo wop test` as a pack author runs it before publishing, with real processes: a new pack
//! crate, its own tests recorded on the local host playing openwop-app, the addon built, and each
//! recorded run replayed through the generated `index.mjs` under the harness of openwop-app's
//! contract. It passes when the two agree, and fails, naming the run and both answers, when the
//! addon answers otherwise.

use std::path::Path;
use std::process::Output;
use wop_sdk_test_support::pack_author::{ROOT, cargo_wop, ok, temp_world};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Tests of the scaffold's node through openwop-app's fallback (three prose replies, then the
/// JSON: 4 requests on openwop-app, where the fallback comes after its 3) and through two HTTP
/// 429s (resent below its loop: one attempt, 3 requests).
const FALLBACK_TEST: &str = r#"
#[tokio::test]
async fn names_a_book_after_the_fallback() {
    let prose = || Step::text("A fine title would be The Lamp.", 5);
    let provider = ScriptedProvider::new(
        [prose(), prose(), prose(), Step::json(&serde_json::json!({"title": "The Lamp"}), 4)]
            .into_iter()
            .collect(),
    );
    let host = HostProfile::OpenwopApp.builder().provider(provider.clone()).build();
    let title: Title = host
        .run_typed(&NameBook, Topic { topic: "lamps".into() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(title.title, "The Lamp");
    assert_eq!(provider.request_count(), 4);
}

#[tokio::test]
async fn names_a_book_after_two_rate_limits() {
    let limited = || Step::Error("HTTP 429 Too Many Requests".into());
    let provider = ScriptedProvider::new(
        [limited(), limited(), Step::json(&serde_json::json!({"title": "The Wait"}), 4)]
            .into_iter()
            .collect(),
    );
    let host = HostProfile::OpenwopApp.builder().provider(provider.clone()).build();
    let title: Title = host
        .run_typed(&NameBook, Topic { topic: "queues".into() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(title.title, "The Wait");
    assert_eq!(provider.request_count(), 3); // resent below the loop: one attempt
}
"#;

fn build_cargo_wop() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    ok(
        std::process::Command::new(cargo)
            .args(["build", "--quiet", "-p", "cargo-wop"])
            .current_dir(ROOT)
            .output()
            .expect("cargo runs"),
        "cargo build -p cargo-wop",
    );
}

#[test]
fn cargo_wop_test_agrees_on_a_new_pack_and_fails_when_the_addon_answers_otherwise() {
    build_cargo_wop();
    let tmp = temp_world("wop-cargo-wop-test-");
    ok(
        cargo_wop(&["new", "my-pack", "--sdk-path", ROOT], &tmp),
        "cargo wop new",
    );
    let krate = tmp.join("my-pack");
    let tests = krate.join("tests/nodes.rs");
    let mut source = std::fs::read_to_string(&tests).expect("tests/nodes.rs");
    source.push_str(FALLBACK_TEST);
    std::fs::write(&tests, source).expect("write");

    // The scaffold's test (on both hosts) and the fallback's: two runs on openwop-app, each the
    // same through the pack.
    let passed = ok(cargo_wop(&["test"], &krate), "cargo wop test");
    let said = stderr(&passed);
    assert!(
        said.contains("cargo wop test: 3 scripted run(s) give the same through the pack"),
        "{said}"
    );
    assert!(
        said.contains(r#"agrees: community.local.my-pack.name-book: {"outputs":{"title":"The Lamp"},"requests":4,"status":"success"}"#),
        "{said}"
    );
    assert!(
        said.contains(r#"agrees: community.local.my-pack.name-book: {"outputs":{"title":"The Wait"},"requests":3,"status":"success"}"#),
        "openwop-app resends a 429 below its loop: {said}"
    );
    assert!(
        records(&krate).len() == 3,
        "the RFC 0248 run is not recorded: the harness plays openwop-app"
    );

    // An addon that answers otherwise than the crate's tests saw (here its own build feature):
    // the command fails, naming the run and both answers.
    let lib = krate.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).expect("lib.rs");
    let body = "    Ok(completion.into_output()?)\n";
    assert!(source.contains(body), "the scaffold's node");
    let differs = "    let mut title: Title = completion.into_output()?;\n    \
                   if cfg!(feature = \"addon\") {\n        title.title.push('!');\n    }\n    Ok(title)\n";
    std::fs::write(&lib, source.replace(body, differs)).expect("write");
    let failed = cargo_wop(&["test"], &krate);
    let said = stderr(&failed);
    assert_eq!(failed.status.code(), Some(1), "{said}");
    assert!(
        said.contains("3 of 3 scripted run(s) differ between the local host and the pack"),
        "{said}"
    );
    assert!(
        said.contains(r#"local host:        {"outputs":{"title":"The Lamp"},"requests":4,"status":"success"}"#)
            && said.contains(r#"pack in the harness: {"outputs":{"title":"The Lamp!"},"requests":4,"status":"success"}"#),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

fn records(krate: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(krate.join("target/wop-test/records"))
        .expect("the records")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}
