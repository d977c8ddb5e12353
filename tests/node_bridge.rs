//! The Node bridge on a harness of openwop-app's contract (`cargo-wop/harness/openwop_host.mjs`), on
//! both kinds of host: without `aiProviders.callAccounting` (openwop-app's public snapshot) and
//! with it (RFC 0248).
//!
//! Each test builds the addons (`cargo build -p book-ai-addon -p wop-sdk-quickstart-addon`,
//! debug), writes the pack folders with `pack` (Book AI through its command line, the quickstart
//! through `wop_sdk_host::pack::write_pack`), and runs nodes through the harness in a real
//! Node process.

#[allow(dead_code)]
#[path = "quickstart.rs"]
mod quickstart;

/// The single-file form's addon folder: pruned by a new addon, an addon's use marked.
#[path = "node_bridge/addon_dir.rs"]
mod addon_dir;
/// Malformed host answers: a coded node failure each, and the Node process lives on.
#[path = "node_bridge/malformed.rs"]
mod malformed;
/// The requests that reach `ctx.callAI`: exactly what they were before the bridge's ABI 2.
#[path = "node_bridge/requests.rs"]
mod requests;
/// Addons that must never be loaded in the host's process: every node fails, the process lives.
#[path = "node_bridge/unloadable.rs"]
mod unloadable;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use wop_sdk::wire::ErrorCode;
use wop_sdk_host::pack::{DEFAULT_TIMEOUT_MS, PackOptions, write_pack};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(ROOT).join("target"), PathBuf::from)
}

fn addon_path(krate: &str) -> PathBuf {
    target_dir().join("debug").join(format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        krate.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    c.current_dir(ROOT);
    c
}

/// The pack folders, written once per test process: `dir/community.demo.bookai/` (sibling addon),
/// `dir/community.mybook.quickstart/`, and `single/community.demo.bookai/` (the single-file form).
struct Packs {
    dir: PathBuf,
    single: PathBuf,
}

fn packs() -> &'static Packs {
    static PACKS: OnceLock<Packs> = OnceLock::new();
    PACKS.get_or_init(|| {
        let built = cargo()
            .args([
                "build",
                "--quiet",
                "-p",
                "book-ai-addon",
                "-p",
                "wop-sdk-quickstart-addon",
            ])
            .status()
            .expect("cargo runs");
        assert!(built.success(), "the addons build");
        let root = std::env::temp_dir().join(format!("wop-node-bridge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (dir, single) = (root.join("packs"), root.join("single"));
        for (out, single_file) in [(&dir, false), (&single, true)] {
            let mut args = vec![
                "run",
                "--quiet",
                "--example",
                "book_ai",
                "--",
                "pack",
                "--out",
            ];
            let out = out.to_str().expect("utf-8 path");
            let addon = addon_path("book-ai-addon");
            let addon = addon.to_str().expect("utf-8 path");
            args.extend([
                out,
                "--addon",
                addon,
                "--provider",
                "mock",
                "--model",
                "mock-1",
            ]);
            if single_file {
                args.push("--single-file");
            }
            let packed = cargo().args(&args).output().expect("cargo runs");
            assert!(
                packed.status.success(),
                "pack: {}",
                String::from_utf8_lossy(&packed.stderr)
            );
        }
        let options = PackOptions {
            out: dir.clone(),
            addon: addon_path("wop-sdk-quickstart-addon"),
            single_file: false,
            provider: Some("mock".into()),
            model: Some("mock-1".into()),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            other_addons: Vec::new(),
            addon_built: false,
        };
        write_pack(&quickstart::pack(), &options).expect("the quickstart's pack folder");
        Packs { dir, single }
    })
}

/// Runs a scenario through the harness in a fresh Node process; answers its report.
fn harness(scenario: &Value) -> Value {
    wop_sdk_test_support::harness::run(scenario)
}

const PREFIXES: [&str; 2] = ["community.demo.", "community.mybook."];

fn scenario(rfc0248: bool, steps: Value) -> Value {
    json!({
        "packsDir": packs().dir,
        "prefixes": PREFIXES,
        "rfc0248": rfc0248,
        "steps": steps,
    })
}

fn step<'a>(report: &'a Value, node: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["nodeId"] == node))
        .unwrap_or_else(|| panic!("no step {node} in {report:#}"))
}

fn quickstart_steps() -> Value {
    let fifty_words = vec!["word"; 50].join(" ");
    json!([{
        "nodeId": "draft", "typeId": "community.mybook.draft-scene",
        "inputs": {"premise": "a lighthouse"},
        "script": [
            {"content": "not json", "usage": {"outputTokens": 5}},
            {"content": {"text": "too short"}, "usage": {"outputTokens": 4}},
            {"content": {"text": fifty_words}, "usage": {"outputTokens": 60}},
        ],
    }])
}

#[test]
fn the_loader_mounts_only_configured_prefixes_and_finds_nodes_listed_in_pack_json() {
    let report = harness(&json!({
        "packsDir": packs().dir,
        "steps": [{"nodeId": "x", "typeId": "community.demo.bookai.review-chapter", "inputs": {}}],
    }));
    // The host's default prefixes exclude `community.`: nothing is mounted.
    assert_eq!(report["mounted"], json!([]));
    assert_eq!(
        step(&report, "x")["outcome"]["error"]["code"],
        "node_type_unknown"
    );
    let report = harness(&scenario(
        false,
        json!([{"nodeId": "x", "typeId": "community.demo.bookai.no-such-node", "inputs": {}}]),
    ));
    assert_eq!(
        report["mounted"],
        json!(["community.demo.bookai", "community.mybook.quickstart"])
    );
    assert_eq!(
        step(&report, "x")["outcome"]["error"]["code"],
        "node_type_unknown"
    );
}

#[test]
fn the_quickstart_repair_is_a_new_provider_request_on_a_host_without_call_accounting() {
    let report = harness(&scenario(false, quickstart_steps()));
    let draft = step(&report, "draft");
    assert_eq!(draft["outcome"]["status"], "success", "{draft:#}");
    assert_eq!(
        draft["outcome"]["outputs"]["text"]
            .as_str()
            .map(|t| t.split_whitespace().count()),
        Some(50)
    );
    // The host retried the unparsable reply itself (2 requests); the node's deliberate retry
    // was a third request, not a cache hit.
    assert_eq!(draft["requests"], 3);
    assert_eq!(report["cacheHits"], 0);
    let repair = draft["messages"][2].as_array().expect("messages");
    assert_eq!(
        repair.len(),
        3,
        "the prompt, the rejected reply, the errors: {repair:#?}"
    );
    assert_eq!(repair[1]["role"], "assistant");
    assert!(
        repair[1]["content"]
            .as_str()
            .is_some_and(|c| c.contains("too short"))
    );
    assert!(
        repair[2]["content"]
            .as_str()
            .is_some_and(|c| c.contains("`text` needs 50 words"))
    );
}

#[test]
fn the_quickstart_on_an_rfc_0248_host_sends_lineage_and_no_corrective_message() {
    let report = harness(&scenario(true, quickstart_steps()));
    let draft = step(&report, "draft");
    assert_eq!(draft["outcome"]["status"], "success", "{draft:#}");
    assert_eq!(draft["requests"], 3);
    // The host knows the lineage fields (its cache key has them): the retry is the same prompt.
    assert_eq!(draft["messages"][2].as_array().map(Vec::len), Some(1));
}

/// Book AI's three nodes, chained as the local demo chains them, with the bundled script split
/// per node (the harness serves each node its own script).
fn book_steps() -> Value {
    let script: Value = serde_json::from_str(include_str!("../examples/book_ai/script.json"))
        .expect("the bundled script");
    let s = script.as_array().expect("steps");
    json!([
        {"nodeId": "outline", "typeId": "community.demo.bookai.plan-outline",
         "inputs": {"premise": "A lighthouse keeper's daughter finds the keeper's ledger torn on the night the light goes out.",
                    "chapters": 1, "scenesPerChapter": 2},
         "script": s[0..2]},
        {"nodeId": "draft-1", "typeId": "community.demo.bookai.draft-scene",
         "inputs": {"chapter": {"$output": "outline", "pointer": "/chapters/0"}, "minWords": 60},
         "script": s[2..7]},
        {"nodeId": "review-1", "typeId": "community.demo.bookai.review-chapter",
         "inputs": {"draft": {"$output": "draft-1"}},
         "script": s[7..8]},
    ])
}

fn figures(report: &Value) -> Vec<(String, u64, u64, bool)> {
    report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["nodeId"].as_str().unwrap_or("").to_owned(),
                s["requests"].as_u64().unwrap_or(0),
                s["outputTokens"].as_u64().unwrap_or(0),
                s["usageComplete"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[test]
fn book_ai_on_an_rfc_0248_host_has_the_local_hosts_figures() {
    let report = harness(&scenario(true, book_steps()));
    for node in ["outline", "draft-1", "review-1"] {
        assert_eq!(
            step(&report, node)["outcome"]["status"],
            "success",
            "{report:#}"
        );
    }
    // tests/book_ai.rs pins the local host's figures: the same here. The host reports
    // `attempts`, so the draft node is charged 2 + 2 + 1, both scenes drafted, as locally.
    let local = [
        ("outline", 2, 40, false),
        ("draft-1", 5, 30 + 180 + 600 + 820 + 410, true),
        ("review-1", 1, 150, true),
    ];
    let expected: Vec<_> = local
        .iter()
        .map(|(n, r, t, c)| ((*n).to_owned(), *r, *t, *c))
        .collect();
    assert_eq!(figures(&report), expected);
    let scenes = &step(&report, "draft-1")["outcome"]["outputs"]["scenes"];
    assert_eq!(scenes[0]["repaired"], true);
    assert_eq!(scenes[1]["placeholder"], false, "{scenes:#}");
}

/// Issue 25: Book AI on openwop-app's public snapshot (no `callAccounting`) drafts both scenes,
/// its budget still enforced. The host reports no attempts, so each structured call is charged
/// its worst case, 4 (3 requests and the natural-language fallback): scene 1 (4), its repair
/// (4) and scene 2 (4) make 12 of the node's 16, where a budget sized for an RFC 0248 host (6)
/// left both scenes placeholders.
#[test]
fn book_ai_on_openwop_apps_public_snapshot_drafts_both_scenes() {
    let report = harness(&scenario(false, book_steps()));
    for node in ["outline", "draft-1", "review-1"] {
        assert_eq!(
            step(&report, node)["outcome"]["status"],
            "success",
            "{report:#}"
        );
    }
    let f = figures(&report);
    // What the provider received is the same as on an RFC 0248 host; only the charge differs.
    assert_eq!(f[0], ("outline".to_owned(), 2, 40, false));
    assert_eq!(
        f[1],
        ("draft-1".to_owned(), 5, 30 + 180 + 600 + 820 + 410, true)
    );
    assert_eq!(f[2], ("review-1".to_owned(), 1, 150, true));
    let scenes = &step(&report, "draft-1")["outcome"]["outputs"]["scenes"];
    let scenes = scenes.as_array().expect("scenes");
    assert_eq!(scenes.len(), 2);
    for scene in scenes {
        assert_eq!(scene["placeholder"], false, "{scene:#}");
    }
    assert_eq!(scenes[0]["repaired"], true);
    assert_eq!(
        step(&report, "review-1")["outcome"]["outputs"]["placeholders"],
        0
    );
}

#[test]
fn the_single_file_form_survives_a_registry_install() {
    let report = harness(&json!({
        "packsDir": packs().single,
        "prefixes": PREFIXES,
        "install": true,
        "steps": [{"nodeId": "review-1", "typeId": "community.demo.bookai.review-chapter",
                   "inputs": {"draft": {"number": 1, "scenes": []}},
                   "script": [{"content": "Fine.", "usage": {"outputTokens": 2}}]}],
    }));
    let review = step(&report, "review-1");
    assert_eq!(review["outcome"]["status"], "success", "{review:#}");
    assert_eq!(review["outcome"]["outputs"]["notes"], "Fine.");
}

#[test]
fn a_provider_from_the_node_configuration_wins_and_the_host_may_refuse_it() {
    let report = harness(&json!({
        "packsDir": packs().dir,
        "prefixes": PREFIXES,
        "steps": [{"nodeId": "q", "typeId": "community.mybook.draft-scene",
                   "inputs": {"premise": "p"}, "config": {"provider": "other"},
                   "script": []}],
    }));
    // The node's configuration wins over the pack's default; the host refuses that provider.
    let outcome = &step(&report, "q")["outcome"];
    assert_eq!(
        outcome["error"]["code"],
        ErrorCode::CapabilityNotProvided.as_str(),
        "{outcome:#}"
    );
    assert_eq!(step(&report, "q")["requests"], 0);
}
