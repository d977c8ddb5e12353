//! `cargo wop` as a pack author meets it, with real processes: a new pack crate scaffolded in a
//! temporary folder, its own test run, its addon built and its pack folder written, then its node
//! run by the harness of openwop-app's contract in Node: the folder form mounted, the single-file
//! form through a registry install (only the allow-listed files kept).
//!
//! The scaffolded crate builds in this workspace's target folder, with the SDK's lockfile, so the
//! dependencies already built for the workspace are reused.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use wop_sdk_test_support::{harness, test_elf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The `cargo-wop` binary, built once by the same cargo.
fn cargo_wop() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "cargo-wop"])
            .current_dir(ROOT)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "`cargo build -p cargo-wop` failed");
        let exe = std::env::current_exe().expect("current exe");
        let bin = exe
            .parent()
            .and_then(Path::parent)
            .expect("<target>/<profile>/deps/<test>")
            .join(format!("cargo-wop{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.exists(), "{} is missing", bin.display());
        bin
    })
}

/// The workspace's target folder (this test binary's `<target>/<profile>/deps/..`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.ancestors().nth(3).expect("<target>").to_path_buf()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("the command runs");
    assert!(
        out.status.success(),
        "{cmd:?} ended with {}:\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wop-cargo-wop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn scenario(packs: &Path, install: bool) -> Value {
    json!({
        "packsDir": packs,
        "prefixes": ["community.local."],
        "install": install,
        "steps": [{
            "nodeId": "title", "typeId": "community.local.my-pack.name-book",
            "inputs": {"topic": "lighthouses"},
            "script": [{"content": {"title": "The Lamp and the Ledger"}, "usage": {"outputTokens": 7}}],
        }],
    })
}

/// `cargo wop new` inside another workspace (as in the SDK's own checkout) gives a crate cargo
/// reads as a workspace of its own, not one that "believes it's in a workspace when it's not".
#[test]
fn a_new_pack_inside_another_workspace_is_a_workspace_of_its_own() {
    let dir = fresh_dir("new-inside");
    std::fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\nmembers = []\nresolver = \"3\"\n",
    )
    .expect("an outer workspace");
    run(Command::new(cargo_wop())
        .args(["wop", "new", "inner", "--sdk-path"])
        .arg(ROOT)
        .current_dir(&dir));
    let metadata = run(Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(dir.join("inner")));
    let metadata: Value = serde_json::from_slice(&metadata.stdout).expect("cargo metadata's JSON");
    assert_eq!(
        Path::new(metadata["workspace_root"].as_str().expect("a root")),
        dir.join("inner")
            .canonicalize()
            .expect("the crate's folder"),
    );
}

#[test]
fn a_new_pack_tests_builds_and_runs_on_the_host_in_both_forms() {
    let dir = fresh_dir("new");
    let sdk = Path::new(ROOT);
    let wop = cargo_wop();
    run(Command::new(wop)
        .args(["wop", "new", "my-pack", "--sdk-path"])
        .arg(sdk)
        .current_dir(&dir));
    let krate = dir.join("my-pack");
    for file in ["Cargo.toml", "src/lib.rs", "tests/nodes.rs", "Cargo.lock"] {
        assert!(krate.join(file).is_file(), "{file} scaffolded");
    }
    assert!(!krate.join("build.rs").exists(), "no build.rs");
    // Its own test, on the local host.
    let tested = run(Command::new(env!("CARGO"))
        .args(["test", "--quiet"])
        .current_dir(&krate));
    assert!(
        String::from_utf8_lossy(&tested.stdout).contains("1 passed"),
        "{}",
        String::from_utf8_lossy(&tested.stdout)
    );

    // The folder form, mounted as a dev mount.
    let folder_out = dir.join("dev-packs");
    let built = run(Command::new(wop)
        .args([
            "wop",
            "build",
            "--folder",
            "--provider",
            "mock",
            "--model",
            "mock-1",
            "--out",
        ])
        .arg(&folder_out)
        .current_dir(&krate));
    // The scaffold's budget-inputs.json plans its node, and its budget fits both kinds of host.
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr
            .contains("budget: every checked node fits on a host with and without callAccounting")
            && !stderr.contains("not checked"),
        "{stderr}"
    );
    let pack = folder_out.join("community.local.my-pack");
    assert!(pack.join("community.local.my-pack.node").is_file());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(pack.join("pack.json")).expect("pack.json"))
            .expect("JSON");
    assert_eq!(
        manifest["nodes"][0]["typeId"],
        "community.local.my-pack.name-book"
    );
    let report = harness::run(&scenario(&folder_out, false));
    assert_eq!(
        report["mounted"],
        json!(["community.local.my-pack"]),
        "{report}"
    );
    let outcome = &report["steps"][0]["outcome"];
    assert_eq!(outcome["status"], "success", "{report}");
    assert_eq!(outcome["outputs"]["title"], "The Lamp and the Ledger");
    // The same folder form through a registry install loses its `.node` file: importing the pack
    // still succeeds, and every run fails at once with a coded error saying why and what to do.
    let mut installed = scenario(&folder_out, true);
    installed["steps"] = json!([
        {"nodeId": "a", "typeId": "community.local.my-pack.name-book", "inputs": {"topic": "x"}, "script": []},
        {"nodeId": "b", "typeId": "community.local.my-pack.name-book", "inputs": {"topic": "y"}, "script": []},
    ]);
    let report = harness::run(&installed);
    for step in report["steps"].as_array().expect("steps") {
        let error = &step["outcome"]["error"];
        assert_eq!(step["outcome"]["status"], "failure", "{report}");
        assert!(
            error["code"]
                .as_str()
                .is_some_and(|c| c.ends_with("addon_unloadable")),
            "{report}"
        );
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("missing") && message.contains("cargo wop build"),
            "{message}"
        );
        assert_eq!(step["requests"], 0);
    }

    // The single-file form (the default), through a registry install: only pack.json, index.mjs,
    // schemas/ are kept, and the node still runs.
    // It also carries an addon built elsewhere (here a whole shared object for the other
    // architecture, built from bytes): index.mjs still loads this machine's.
    let registry_out = dir.join("registry-packs");
    let (other, machine) = if cfg!(target_arch = "aarch64") {
        ("linux-x64", test_elf::X86_64)
    } else {
        ("linux-arm64", test_elf::AARCH64)
    };
    let library = test_elf::shared_object(machine, 4096);
    let other_file = dir.join("libmy_pack.other.so");
    std::fs::write(&other_file, &library).expect("write");
    run(Command::new(wop)
        .args([
            "wop",
            "build",
            "--provider",
            "mock",
            "--model",
            "mock-1",
            "--addon-for",
            &format!("{other}={}", other_file.display()),
            "--out",
        ])
        .arg(&registry_out)
        .current_dir(&krate));
    // A header alone (the 20-byte file), and this machine's platform, are refused, each
    // message naming the flag given and the rule.
    let header = dir.join("header.so");
    std::fs::write(&header, &library[..20]).expect("write");
    let this = format!(
        "linux-{}",
        if cfg!(target_arch = "aarch64") {
            "arm64"
        } else {
            "x64"
        }
    );
    for (given, rule) in [
        (
            format!("{other}={}", header.display()),
            "the file is truncated: its ELF header needs 64 bytes but the file has 20".to_owned(),
        ),
        (
            format!("{this}={}", other_file.display()),
            format!("{this} is this machine's platform: its addon is the addon built here ("),
        ),
    ] {
        let refused = Command::new(wop)
            .args(["wop", "build", "--addon-for", &given, "--out"])
            .arg(dir.join("refused"))
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", target_dir())
            .output()
            .expect("cargo wop runs");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("--addon-for {given}: {rule}")),
            "{stderr}"
        );
        assert!(
            !stderr.contains("--addon "),
            "no flag that was not given: {stderr}"
        );
    }
    let single = registry_out.join("community.local.my-pack");
    assert!(
        !single.join("community.local.my-pack.node").exists(),
        "the addon is inside index.mjs"
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(single.join("pack.json")).expect("pack.json"))
            .expect("JSON");
    assert!(
        manifest.get("x-wopSdk").is_none(),
        "pack.json has no extension key"
    );
    let index = std::fs::read_to_string(single.join("index.mjs")).expect("index.mjs");
    let meta: Value = index
        .lines()
        .find_map(|l| l.strip_prefix(wop_sdk_host::pack::WOP_SDK_LINE))
        .and_then(|l| serde_json::from_str(l.trim_end_matches(';')).ok())
        .expect("index.mjs's wopSdk line");
    assert_eq!(meta["addon"]["platforms"][1], other);
    let report = harness::run(&scenario(&registry_out, true));
    assert_eq!(
        report["steps"][0]["outcome"]["status"], "success",
        "{report}"
    );

    // A budget that fits an RFC 0248 host (2 requests) but not one without callAccounting (3
    // requests and the fallback): a warning naming the node and the fix, and with
    // --deny-budget-warnings a failed build.
    let lib = krate.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).expect("lib.rs");
    assert!(source.contains("max_calls = 4,"), "the scaffold's budget");
    std::fs::write(&lib, source.replace("max_calls = 4,", "max_calls = 2,")).expect("write");
    let denied = Command::new(wop)
        .args(["wop", "build", "--deny-budget-warnings", "--out"])
        .arg(dir.join("tight"))
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("cargo wop runs");
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert_eq!(denied.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "warning: budget: node `community.local.my-pack.name-book`: `max_calls = 2` cannot fit"
        ) && stderr.contains("raise `max_calls` to 4")
            && stderr.contains("--deny-budget-warnings"),
        "{stderr}"
    );
    // Built without a default provider and model: said, with the flag that sets them.
    assert!(
        stderr.contains("warning: no --provider or --model for the pack: openwop-app requires")
            && stderr.contains("`cargo wop build --provider P --model M`"),
        "{stderr}"
    );
    assert!(!dir.join("tight").exists(), "a denied build writes no pack");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn new_refuses_a_pack_name_off_the_grammar_and_a_folder_that_exists() {
    let dir = fresh_dir("refuse");
    let wop = cargo_wop();
    let out = Command::new(wop)
        .args(["wop", "new", "p", "--pack", "community.bookai"])
        .current_dir(&dir)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--pack `community.bookai`"), "{err}");
    // A pack author's namespace is community.* or vendor.*: core.* is the working group's.
    for (name, says) in [
        ("core.openwop.x", "`core.*` is reserved"),
        (
            "private.host.x",
            "`private.*` is for a host's internal packs",
        ),
    ] {
        let out = Command::new(wop)
            .args(["wop", "new", "p", "--pack", name])
            .current_dir(&dir)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(says) && err.contains("community.<owner>.<pack>"),
            "{err}"
        );
        assert!(!dir.join("p").exists(), "nothing written");
    }
    std::fs::create_dir_all(dir.join("taken")).expect("dir");
    let out = Command::new(wop)
        .args(["wop", "new", "taken"])
        .current_dir(&dir)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    let _ = std::fs::remove_dir_all(&dir);
}
