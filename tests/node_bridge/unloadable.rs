//! Addons that must never be loaded in the host's process (issue 32): a library cut to 64 KiB,
//! zeros of the same size, a whole library for another architecture. Inside a single-file pack
//! whose `index.mjs` carries each with its matching SHA-256, every node fails at once with
//! `wop-sdk.addon_unloadable` and the host's Node process lives on to run another pack's node;
//! the pack writer refuses each file (`--addon`, `--addon-for`) naming the flag and the rule.

use super::{PREFIXES, addon_path, packs, quickstart, quickstart_steps, step};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use wop_sdk::wire::ErrorCode;
use wop_sdk_host::pack::{DEFAULT_TIMEOUT_MS, PackOptions, write_pack};
use wop_sdk_test_support::harness::run_with_addon_dir;
use wop_sdk_test_support::test_elf::{AARCH64, X86_64, shared_object};

const KIB_64: usize = 64 * 1024;

/// The three files: (what, bytes).
fn bad_addons() -> Vec<(&'static str, Vec<u8>)> {
    let real = std::fs::read(addon_path("book-ai-addon")).expect("the built addon");
    assert!(
        real.len() > 4 * KIB_64,
        "a real addon is larger than 64 KiB"
    );
    let other = if cfg!(target_arch = "aarch64") {
        X86_64
    } else {
        AARCH64
    };
    vec![
        ("truncated", real[..KIB_64].to_vec()),
        ("zeros", vec![0; KIB_64]),
        ("other-arch", shared_object(other, KIB_64)),
    ]
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copied");
        }
    }
}

/// `text` with the string value after each `key: "` replaced by `value`.
fn replace_values(text: &str, key: &str, value: &str) -> String {
    let needle = format!("{key}: \"");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        let start = at + needle.len();
        let end = start + rest[start..].find('"').expect("the closing quote");
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A packs folder with Book AI's single-file pack carrying `bytes` as its addon (its SHA-256
/// made to match), and the quickstart's folder-form pack beside it.
fn packs_with(root: &Path, bytes: &[u8]) -> PathBuf {
    let dir = root.join("packs");
    let book = dir.join("community.demo.bookai");
    copy_dir(&packs().single.join("community.demo.bookai"), &book);
    copy_dir(
        &packs().dir.join("community.mybook.quickstart"),
        &dir.join("community.mybook.quickstart"),
    );
    let index = std::fs::read_to_string(book.join("index.mjs")).expect("index.mjs");
    assert_eq!(index.matches("base64: \"").count(), 1, "one embedded addon");
    let sha = wop_sdk::hex::of_bytes(&Sha256::digest(bytes));
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes);
    let index = replace_values(&replace_values(&index, "sha256", &sha), "base64", &b64);
    std::fs::write(book.join("index.mjs"), index).expect("written");
    dir
}

fn book_node(node: &str, type_id: &str, inputs: Value) -> Value {
    json!({"nodeId": node, "typeId": format!("community.demo.bookai.{type_id}"), "inputs": inputs,
           "script": [{"content": "Fine.", "usage": {"outputTokens": 2}}]})
}

#[test]
fn an_addon_that_cannot_load_fails_every_node_and_the_host_process_lives_on() {
    for (what, bytes) in bad_addons() {
        let root =
            std::env::temp_dir().join(format!("wop-unloadable-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let packs_dir = packs_with(&root, &bytes);
        let mut steps = vec![
            book_node(
                "review",
                "review-chapter",
                json!({"draft": {"number": 1, "scenes": []}}),
            ),
            book_node(
                "outline",
                "plan-outline",
                json!({"premise": "p", "chapters": 1}),
            ),
        ];
        // The same Node process then runs another pack's node (the quickstart's, folder form).
        steps.extend(quickstart_steps().as_array().cloned().unwrap_or_default());
        let addons = root.join("addons");
        let report = run_with_addon_dir(
            &json!({"packsDir": packs_dir, "prefixes": PREFIXES, "steps": steps}),
            &addons,
        );
        for node in ["review", "outline"] {
            let s = step(&report, node);
            let error = &s["outcome"]["error"];
            assert_eq!(s["outcome"]["status"], "failure", "{what}: {s:#}");
            assert_eq!(
                error["code"],
                ErrorCode::AddonUnloadable.as_str(),
                "{what}: {s:#}"
            );
            assert_eq!(s["requests"], 0, "{what}: no call was made");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("community.demo.bookai 0.1.0 could not load its addon: "),
                "{what}: {message}"
            );
            let why = match what {
                // Loaded, it kills the process that loads it (SIGBUS on the missing pages).
                "truncated" => "it killed a test process that loaded it first (SIGBUS)".to_owned(),
                // Node's dlopen refuses it: an exception, not a crash.
                "zeros" => "Node cannot load it: ".to_owned(),
                // Told before any process loads it (glibc's own message says "No such file").
                _ => format!(
                    "its embedded addon community.demo.bookai.{}-{}.node is an ELF library for {}, not for this host",
                    node_os(),
                    node_arch(),
                    if cfg!(target_arch = "aarch64") {
                        "x64"
                    } else {
                        "arm64"
                    }
                ),
            };
            assert!(message.contains(&why), "{what}: {message}");
        }
        let after = step(&report, "draft");
        assert_eq!(after["outcome"]["status"], "success", "{what}: {after:#}");
        // No proof was kept for the bad addon; the quickstart's was.
        let folder = std::fs::read_dir(&addons)
            .expect("the addon root")
            .filter_map(Result::ok)
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("wop-sdk-addons-")
            })
            .expect("the addon folder")
            .path();
        let bad = wop_sdk::hex::of_bytes(&Sha256::digest(&bytes));
        assert!(!folder.join(format!("{bad}.node.ok")).exists(), "{what}");
        let good = wop_sdk::hex::of_bytes(&Sha256::digest(
            std::fs::read(addon_path("wop-sdk-quickstart-addon")).expect("quickstart addon"),
        ));
        assert!(folder.join(format!("{good}.node.ok")).exists(), "{what}");
        let _ = std::fs::remove_dir_all(&root);
    }
}

#[test]
fn the_pack_writer_refuses_each_such_file_naming_the_flag_and_the_rule() {
    let root = std::env::temp_dir().join(format!("wop-unloadable-writer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("dir");
    let options = |addon: PathBuf, other: Option<(&str, &Path)>| PackOptions {
        out: root.join("out"),
        addon,
        single_file: true,
        provider: None,
        model: None,
        timeout_ms: DEFAULT_TIMEOUT_MS,
        other_addons: other
            .map(|(t, f)| format!("{t}={}", f.display()).parse().expect("parses"))
            .into_iter()
            .collect(),
        addon_built: false,
    };
    let here = addon_path("wop-sdk-quickstart-addon");
    let this = format!("{}-{}", node_os(), node_arch());
    let other = if cfg!(target_arch = "aarch64") {
        "linux-x64"
    } else {
        "linux-arm64"
    };
    for (what, bytes) in bad_addons() {
        let file = root.join(format!("{what}.so"));
        std::fs::write(&file, &bytes).expect("written");
        // As this machine's addon (`--addon`).
        let e = write_pack(&quickstart::pack(), &options(file.clone(), None)).expect_err(what);
        let prefix = format!("--addon {} (this machine's, {this}): ", file.display());
        assert!(e.message.starts_with(&prefix), "{what}: {}", e.message);
        assert_eq!(e.exit, 2);
        // As another machine's (`--addon-for`): the truncated one cut from a library for that
        // machine, the other-architecture one given for a third (riscv64).
        let (target, file) = match what {
            "truncated" => {
                let arm = if cfg!(target_arch = "aarch64") {
                    X86_64
                } else {
                    AARCH64
                };
                let cut = root.join("other-truncated.so");
                std::fs::write(&cut, &shared_object(arm, 4 * KIB_64)[..KIB_64]).expect("w");
                (other, cut)
            }
            "zeros" => (other, file),
            _ => ("linux-riscv64", file),
        };
        let e = write_pack(
            &quickstart::pack(),
            &options(here.clone(), Some((target, &file))),
        )
        .expect_err(what);
        let prefix = format!("--addon-for {target}={}: ", file.display());
        assert!(e.message.starts_with(&prefix), "{what}: {}", e.message);
        let rule = match what {
            "truncated" => "the file is truncated: segment 0 ends at byte ",
            "zeros" => "not a native library (no ELF, Mach-O or PE header)",
            _ => "the file is ELF for ",
        };
        assert!(e.message.contains(rule), "{what}: {}", e.message);
    }
    // The real addon cut to 64 KiB: its segment past the end is named, with the figures.
    let cut = root.join("truncated.so");
    let e = write_pack(&quickstart::pack(), &options(cut.clone(), None)).expect_err("cut");
    assert!(
        e.message.contains(": the file is truncated: segment ")
            && e.message.ends_with(" but the file has 65 536 bytes"),
        "{}",
        e.message
    );
    // This machine's platform given with --addon-for names the flag that gives its addon.
    let whole = root.join("whole.so");
    std::fs::copy(&here, &whole).expect("copied");
    let e = write_pack(
        &quickstart::pack(),
        &options(here.clone(), Some((this.as_str(), &whole))),
    )
    .expect_err("this machine");
    assert!(
        e.message.contains(&format!(
            "{this} is this machine's platform: its addon is --addon {}",
            here.display()
        )),
        "{}",
        e.message
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn node_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

fn node_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    }
}
