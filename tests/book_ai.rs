//! The Book AI demo, run as a library: its report must agree with what the provider itself
//! received and with the bundled script.

#[allow(dead_code)]
#[path = "../examples/book_ai/pack.rs"]
mod pack;

#[allow(dead_code)]
#[path = "../examples/book_ai/demo.rs"]
mod demo;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use wop_sdk::journal::{Journal, MemoryJournal};

fn journal() -> Arc<dyn Journal> {
    Arc::new(MemoryJournal::new())
}

async fn demo_report() -> (demo::BookReport, Vec<String>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let script = demo::bundled_script().expect("the bundled script parses");
    let report = demo::run_book(&demo::demo_brief(), script, journal(), move |l| {
        sink.lock().expect("lock").push(l.to_owned());
    })
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
        let node = request.node_id.clone();
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
        let seen = received.iter().filter(|r| &r.node_id == id).count();
        assert_eq!(
            n.requests() as usize,
            seen,
            "{id}: requests = provider's count"
        );
        assert_eq!(n.provider_requests, seen, "{id}");
        assert_eq!(n.output_tokens(), tokens[id], "{id}: tokens = script sums");
        assert_eq!(
            n.usage_complete(),
            !withheld.contains(id),
            "{id}: usageComplete"
        );
        assert!(n.estimate.fits, "{id}");
        assert!(
            n.requests() <= n.estimate.requests,
            "{id}: within the estimate"
        );
    }

    // The same figures, written out, so a change in the script or the host shows here.
    let figures: Vec<(&str, u32, u64, bool)> = report
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
            ("outline", 2, 40, false),
            ("draft-1", 4, 30 + 180 + 600 + 820, true),
            ("review-1", 1, 150, true),
        ]
    );
    assert_eq!(withheld, BTreeSet::from(["outline".to_owned()]));
}

#[tokio::test]
async fn the_over_budget_call_is_refused_before_dispatch() {
    let (report, _) = demo_report().await;
    let draft = report
        .nodes
        .iter()
        .find(|n| n.outcome.node_id == "draft-1")
        .expect("draft node");
    // Planned: 2 scenes x 3 = 6 = max_calls. Actual: scene 1 (2 requests) + its repair (2)
    // leave 2, and scene 2's worst case is 3.
    assert_eq!(draft.estimate.requests, 6);
    assert_eq!(draft.estimate.max_calls, Some(6));
    assert_eq!(draft.outcome.budget.used, 4);
    let statuses: Vec<&str> = draft
        .outcome
        .calls
        .iter()
        .map(|c| c.status.as_str())
        .collect();
    assert_eq!(
        statuses,
        ["invalid_output", "ok", "wop-sdk.budget_exhausted"]
    );
    let refused = &draft.outcome.calls[2];
    assert_eq!((refused.requests, refused.charged), (None, 0));
    assert_eq!(draft.refused_calls(), 1);
    // The provider never saw scene 2.
    let received = report.provider.requests_of(&report.run_id);
    assert!(
        received
            .iter()
            .filter(|r| r.node_id == "draft-1")
            .all(|r| !r.messages.iter().any(|m| m.content.contains("ferryman"))),
        "scene 2 must never reach the provider"
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
    // The run still completed, with scene 2 a marked placeholder.
    let chapter = &report.drafts[0];
    assert!(chapter.scenes[0].repaired && !chapter.scenes[0].placeholder);
    assert!(chapter.scenes[1].placeholder);
    assert!(chapter.scenes[1].text.contains("budget_exhausted"));
    assert_eq!(report.reviews[0].placeholders, 1);
}

#[tokio::test]
async fn charges_go_to_the_beneficiaries_and_progress_tells_the_story() {
    let (report, lines) = demo_report().await;
    assert_eq!(report.charges["author-1"], (6, 40 + 1630));
    assert_eq!(report.charges["editor-7"], (1, 150));
    for expected in [
        "outline: host retry, attempt 2 (schema-violation)",
        "draft-1: host retry, attempt 2 (parse-error)",
        "draft-1: reply truncated at 600 output tokens",
        "draft-1: host retry, attempt 2 (truncation)",
        "draft-1: provider request answered, 820 output tokens",
        "review-1: completed",
    ] {
        assert!(
            lines.iter().any(|l| l.trim() == expected),
            "missing `{expected}` in {lines:#?}"
        );
    }
}

#[tokio::test]
async fn a_node_that_cannot_fit_refuses_the_run() {
    let mut brief = demo::demo_brief();
    brief.scenes_per_chapter = 3;
    let script = demo::bundled_script().expect("script");
    let refused = demo::run_book(&brief, script, journal(), |_| {})
        .await
        .expect_err("3 scenes x 3 requests exceed max_calls 6");
    assert!(!refused.estimate.fits());
    assert_eq!(
        refused.to_string(),
        "refusing to start the run:\n  node `draft-1` (community.demo.bookai.draft-scene) may make 9 \
         provider requests, but its max_calls is 6"
    );
}

#[tokio::test]
async fn the_demo_reports_the_same_figures_on_a_sqlite_journal() {
    let dir = std::env::temp_dir().join(format!("book-ai-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sqlite: Arc<dyn Journal> = Arc::new(
        wop_sdk::journal::SqliteJournal::open(dir.join("book.db")).expect("sqlite journal"),
    );
    let script = demo::bundled_script().expect("script");
    let on_disk = demo::run_book(&demo::demo_brief(), script, Arc::clone(&sqlite), |_| {})
        .await
        .expect("fits");
    let (in_memory, _) = demo_report().await;
    let figures = |r: &demo::BookReport| -> Vec<(u32, u64, bool, u32)> {
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
    assert_eq!(usage, 7 - 1, "7 requests, one withheld its usage");
    let _ = std::fs::remove_dir_all(dir);
}
