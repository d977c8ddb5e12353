//! The Book AI demo, run as a library: its report must agree with what the provider itself
//! received and with the bundled script.

use wop_sdk_test_support::picture;

use book_ai::demo;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use wop_sdk_host::journal::{Journal, MemoryJournal};

fn journal() -> Arc<dyn Journal> {
    Arc::new(MemoryJournal::new())
}

async fn demo_report() -> (demo::BookReport, Vec<String>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let script = demo::bundled_script().expect("the bundled script parses");
    let progress = wop_sdk_host::cli::Progress::sink(move |l| {
        sink.lock().expect("lock").push(l.to_owned());
    });
    let report = demo::run_book(&demo::demo_brief(), script, journal(), progress)
        .await
        .expect("the demo fits its budget");
    let lines = lines.lock().expect("lock").clone();
    (report, lines)
}

#[tokio::test]
async fn report_figures_equal_the_providers_own_count_and_the_scripts_sums() {
    let (report, _) = demo_report().await;
    assert!(report.completed(), "{report}");
    let received = report.provider.requests_of(&report.run_id);

    // Step i of the script answered provider request i; its tokens are clamped to that
    // request's maxTokens (the mock's rule), and `usage: false` withholds them.
    let script: Value = serde_json::from_str(demo::SCRIPT).expect("script JSON");
    let steps = script.as_array().expect("array");
    assert_eq!(
        steps.len(),
        received.len(),
        "every step served, nothing more"
    );
    let mut tokens: BTreeMap<String, u64> = BTreeMap::new();
    let mut withheld: BTreeSet<String> = BTreeSet::new();
    for (step, request) in steps.iter().zip(&received) {
        let node = request.node_id.to_string();
        match &step["usage"] {
            Value::Bool(false) => {
                withheld.insert(node.clone());
            }
            usage => {
                let out = usage["outputTokens"].as_u64().expect("outputTokens");
                *tokens.entry(node.clone()).or_default() += out.min(u64::from(request.max_tokens));
            }
        }
        tokens.entry(node).or_default();
    }

    assert_eq!(report.nodes.len(), 3);
    for n in &report.nodes {
        let id = &n.outcome.node_id;
        let seen = received.iter().filter(|r| *r.node_id == **id).count();
        assert_eq!(
            n.requests().map(|r| r as usize),
            Some(seen),
            "{id}: requests = provider's count"
        );
        assert_eq!(n.provider_requests, seen, "{id}");
        assert_eq!(
            n.output_tokens(),
            Some(tokens[id]),
            "{id}: tokens = script sums"
        );
        assert_eq!(
            n.usage_complete(),
            !withheld.contains(id),
            "{id}: usageComplete"
        );
        assert!(n.estimate.fits, "{id}");
        assert!(
            n.requests().is_some_and(|r| r <= n.estimate.requests),
            "{id}: within the estimate"
        );
    }

    // The same figures, written out, so a change in the script or the host shows here.
    let figures: Vec<(&str, Option<u32>, Option<u64>, bool)> = report
        .nodes
        .iter()
        .map(|n| {
            (
                n.outcome.node_id.as_str(),
                n.requests(),
                n.output_tokens(),
                n.usage_complete(),
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            ("outline", Some(2), Some(40), false),
            ("draft-1", Some(5), Some(30 + 180 + 600 + 820 + 410), true),
            ("review-1", Some(1), Some(150), true),
        ]
    );
    assert_eq!(withheld, BTreeSet::from(["outline".to_owned()]));
}

#[tokio::test]
async fn the_budget_covers_a_repair_per_scene_on_both_kinds_of_host() {
    let (report, _) = demo_report().await;
    let draft = report
        .nodes
        .iter()
        .find(|n| n.outcome.node_id == "draft-1")
        .expect("draft node");
    // Planned: 2 scenes x (a draft and one repair). On this host (RFC 0248) 4 calls x 3 = 12;
    // on a host without `callAccounting` 4 calls x (3 + the fallback) = 16 = max_calls.
    assert_eq!(draft.estimate.requests, 12);
    assert_eq!(draft.estimate.requests_without_accounting, 16);
    assert_eq!(draft.estimate.max_calls, Some(16));
    assert!(draft.estimate.fits && draft.estimate.fits_without_accounting);
    // Actual: scene 1 (2 requests) + its repair (2) + scene 2 (1).
    assert_eq!(draft.outcome.budget.used, 5);
    let statuses: Vec<&str> = draft.outcome.calls.iter().map(|c| c.status).collect();
    assert_eq!(statuses, ["invalid_output", "ok", "ok"]);
    assert_eq!(draft.refused_calls(), 0);
    let received = report.provider.requests_of(&report.run_id);
    assert!(
        received
            .iter()
            .any(|r| r.messages.iter().any(|m| m.content.contains("ferryman"))),
        "scene 2 reached the provider"
    );
    // The repair was a deliberate retry with the validation errors in its prompt.
    assert_eq!(
        draft.outcome.calls[1].retry_reason.as_deref(),
        Some("invalid_output")
    );
    let repair = received
        .iter()
        .find(|r| {
            r.messages
                .iter()
                .any(|m| m.content.contains("was rejected"))
        })
        .expect("a repair prompt");
    assert!(
        repair
            .messages
            .iter()
            .any(|m| m.content.contains("never names `Inspector Hale`"))
    );
    // Both scenes drafted, the first after its repair.
    let chapter = &report.drafts[0];
    assert!(chapter.scenes[0].repaired && !chapter.scenes[0].placeholder);
    assert!(!chapter.scenes[1].repaired && !chapter.scenes[1].placeholder);
    assert_eq!(report.reviews[0].placeholders, 0);
}

#[tokio::test]
async fn charges_go_to_the_beneficiaries_and_progress_tells_the_story() {
    let (report, lines) = demo_report().await;
    assert_eq!(report.charges["author-1"], (7, 40 + 1630 + 410));
    assert_eq!(report.charges["editor-7"], (1, 150));
    for expected in [
        "outline: host retry, request 2 (schema-violation)",
        "draft-1: host retry, request 2 (parse-error)",
        "draft-1: reply truncated at 600 output tokens",
        "draft-1: host retry, request 2 (truncation)",
        "draft-1: provider request answered, 820 output tokens",
        "review-1: completed",
        "outline: provider request answered, output tokens unknown (the reply withheld its usage)",
    ] {
        assert!(
            lines.iter().any(|l| l.trim() == expected),
            "missing `{expected}` in {lines:#?}"
        );
    }
}

#[tokio::test]
async fn every_answered_request_has_a_progress_line_in_order() {
    let (report, lines) = demo_report().await;
    let received = report.provider.requests_of(&report.run_id);
    let answered: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("provider request answered"))
        .map(|l| l.split(':').next().expect("node id"))
        .collect();
    // One line per request the provider received, each under its node, in the same order.
    let expected: Vec<&str> = received.iter().map(|r| &*r.node_id).collect();
    assert_eq!(answered, expected, "{lines:#?}");
    // The reply that withheld its usage says so, and no line invents a 0 for it.
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("answered, 0 output tokens")),
        "{lines:#?}"
    );
    let withheld = lines
        .iter()
        .filter(|l| l.contains("output tokens unknown"))
        .count();
    assert_eq!(withheld, 1, "{lines:#?}");
}

#[tokio::test]
async fn unknown_stays_unknown_and_no_call_is_held_back() {
    let (report, lines) = demo_report().await;
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("held back by the node's budget")),
        "{lines:#?}"
    );
    let text = report.to_string();
    assert!(!text.contains("[PLACEHOLDER]"), "{text}");
    // Unknown stays unknown in the report: the outline's tokens are a floor, not a total.
    assert!(text.contains("at least 40"), "{text}");
}

#[tokio::test]
async fn the_picture_has_a_bar_pair_per_node_and_metric() {
    let (report, _) = demo_report().await;
    let svg = report.chart().to_svg();
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    let bars: Vec<(String, String, String)> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("bar ")))
        .map(|n| {
            let attr = |k: &str| n.attribute(k).unwrap_or_default().to_owned();
            (attr("class"), attr("data-node"), attr("data-value"))
        })
        .collect();
    let value = |class: &str, node: &str| -> Vec<String> {
        bars.iter()
            .filter(|(c, n, _)| c == class && n == node)
            .map(|(_, _, v)| v.clone())
            .collect()
    };
    // Requests then output tokens: estimate and actual, per node.
    assert_eq!(value("bar estimate", "draft-1"), ["12", "16800"]);
    assert_eq!(value("bar actual", "draft-1"), ["5", "2040"]);
    assert_eq!(value("bar actual", "outline"), ["2", "40"]);
    assert_eq!(value("bar max-calls", "draft-1"), ["16"]);
    assert_eq!(value("bar used", "draft-1"), ["5"]);
    assert_eq!(value("bar used", "review-1"), ["1"]);
    let texts = picture::labels(&doc);
    for label in [
        "outline",
        "draft-1",
        "review-1",
        "5 of 16",
        "at least 40 (usage withheld)",
    ] {
        assert!(
            texts.contains(&label),
            "missing label `{label}` in {texts:?}"
        );
    }
}

#[tokio::test]
async fn a_node_that_cannot_fit_refuses_the_run() {
    let mut brief = demo::demo_brief();
    brief.scenes_per_chapter = 3;
    let script = demo::bundled_script().expect("script");
    let refused = demo::run_book(
        &brief,
        script,
        journal(),
        wop_sdk_host::cli::Progress::hidden(),
    )
    .await
    .expect_err("3 scenes x 2 calls x 3 requests exceed max_calls 16");
    assert!(!refused.estimate.fits());
    assert_eq!(
        refused.to_string(),
        "refusing to start the run:\n  node `draft-1` (community.demo.bookai.draft-scene) may make 18 \
         provider requests, but its max_calls is 16"
    );
}

#[tokio::test]
async fn the_demo_reports_the_same_figures_on_a_sqlite_journal() {
    let dir = std::env::temp_dir().join(format!("book-ai-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sqlite: Arc<dyn Journal> = Arc::new(
        wop_sdk_host::journal::SqliteJournal::open(dir.join("book.db")).expect("sqlite journal"),
    );
    let script = demo::bundled_script().expect("script");
    let on_disk = demo::run_book(
        &demo::demo_brief(),
        script,
        Arc::clone(&sqlite),
        wop_sdk_host::cli::Progress::hidden(),
    )
    .await
    .expect("fits");
    let (in_memory, _) = demo_report().await;
    let figures = |r: &demo::BookReport| -> Vec<(Option<u32>, Option<u64>, bool, u32)> {
        r.nodes
            .iter()
            .map(|n| {
                (
                    n.requests(),
                    n.output_tokens(),
                    n.usage_complete(),
                    n.outcome.budget.used,
                )
            })
            .collect()
    };
    assert_eq!(figures(&on_disk), figures(&in_memory));
    assert_eq!(on_disk.charges, in_memory.charges);
    // The run is in the journal, with one `provider.usage` per request that reported usage.
    let events = sqlite.events(&on_disk.run_id).await.expect("events");
    let usage = events
        .iter()
        .filter(|e| e.kind() == "provider.usage")
        .count();
    assert_eq!(usage, 8 - 1, "8 requests, one withheld its usage");
    let _ = std::fs::remove_dir_all(dir);
}

/// The bars and labels of an SVG document, the title left out (it names the run).
fn picture_facts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    doc.descendants()
        .filter_map(|n| {
            let class = n.attribute("class")?;
            if class.starts_with("bar ") {
                Some(format!(
                    "{class} {} {}",
                    n.attribute("data-node")?,
                    n.attribute("data-value")?
                ))
            } else if class == "value" || class == "node-label" {
                Some(format!("{class} {}", n.text()?.trim()))
            } else {
                None
            }
        })
        .collect()
}

#[tokio::test]
async fn the_readmes_picture_is_the_demos_current_output() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.svg");
    let committed = std::fs::read_to_string(&path).expect("docs/report.svg is committed");
    let (report, _) = demo_report().await;
    assert_eq!(
        picture_facts(&committed),
        picture_facts(&report.chart().to_svg()),
        "regenerate it: cargo run --example book_ai -- --report docs/report.svg"
    );
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .expect("README");
    assert!(readme.contains("](docs/report.svg)"), "the README shows it");
}

#[tokio::test]
async fn the_streamed_scene_grows_in_the_progress_and_a_host_retry_discards_it() {
    let (report, lines) = demo_report().await;
    assert!(report.completed(), "{report}");
    let draft: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("draft-1: call 0"))
        .collect();
    // Attempt 1 (prose) grows, is discarded by the host's retry, attempt 2 grows to the end.
    assert_eq!(
        draft,
        [
            "draft-1: call 0, attempt 1: 13 chars so far ...Sure! Here is",
            "draft-1: call 0, attempt 1: 38 chars so far ...Sure! Here is the scene you asked for:",
            "draft-1: call 0: 38 chars of attempt 1 discarded",
            "draft-1: call 0, attempt 2: 55 chars so far ...Quill climbed the lighthouse stairs with",
            "draft-1: call 0, attempt 2: 94 chars so far ...h the ledger under her arm. The lamp was",
            "draft-1: call 0, attempt 2: 136 chars so far ...ark for the first time in forty years.\"}",
            "draft-1: call 0: stream complete, 136 chars (attempt 2)",
        ],
        "{lines:#?}"
    );
    // The repair's first attempt is truncated: its fragments are discarded, the second grows.
    let repair: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("draft-1: call 1"))
        .collect();
    let discarded = repair
        .iter()
        .position(|l| l.ends_with("of attempt 1 discarded"))
        .unwrap_or_else(|| panic!("no discard in {repair:#?}"));
    assert!(repair[..discarded].iter().all(|l| l.contains("attempt 1:")));
    assert!(
        repair[discarded + 1..]
            .iter()
            .take(6)
            .all(|l| l.contains("attempt 2:"))
    );
    assert_eq!(
        repair.last(),
        Some(&"draft-1: call 1: stream complete, 433 chars (attempt 2)")
    );
    // The scene is the stream's terminal result, not its fragments.
    let scene = &report.drafts[0].scenes[0];
    assert!(scene.text.ends_with("the night the light went out."));
}

#[tokio::test]
async fn a_scene_stream_cut_after_fragments_is_discarded_and_the_call_fails() {
    // The first scene's first reply is cut after two chunks.
    let mut script: Value = serde_json::from_str(demo::SCRIPT).expect("script");
    script[2] =
        serde_json::json!({"chunks": ["{\"text\": \"Mara Quill", " climbed the"], "cut": true});
    let script = wop_sdk_host::local::Script::from_json(&script).expect("script");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let progress = wop_sdk_host::cli::Progress::sink(move |l| {
        sink.lock().expect("lock").push(l.to_owned());
    });
    let report = demo::run_book(&demo::demo_brief(), script, journal(), progress)
        .await
        .expect("fits");
    let lines = lines.lock().expect("lock").clone();
    let call0: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("draft-1: call 0"))
        .collect();
    assert_eq!(
        call0,
        [
            "draft-1: call 0, attempt 1: 20 chars so far ...{\"text\": \"Mara Quill",
            "draft-1: call 0, attempt 1: 32 chars so far ...{\"text\": \"Mara Quill climbed the",
            "draft-1: call 0: the stream failed after 32 chars: fragments discarded, the call failed",
        ],
        "{lines:#?}"
    );
    // The call failed (an ambiguous dispatch: never repeated, never charged); the pack settled
    // it and wrote a placeholder, whatever the fragments said.
    let draft = report
        .nodes
        .iter()
        .find(|n| n.outcome.node_id == "draft-1")
        .expect("draft node");
    assert_eq!(
        draft.outcome.calls[0].status,
        wop_sdk::wire::ErrorCode::UpstreamUnavailable.as_str()
    );
    let scene = &report.drafts[0].scenes[0];
    assert!(scene.placeholder, "{scene:?}");
    assert!(scene.text.contains("upstream_unavailable"), "{scene:?}");
    assert!(!scene.text.contains("Mara Quill"), "{scene:?}");
}
