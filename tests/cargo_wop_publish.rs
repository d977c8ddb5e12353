//! `cargo wop keygen`, `publish` and `check` as a pack author runs them (issue 25), with real
//! processes: the built `cargo-wop` scaffolds and builds a new pack in a temporary folder, makes a
//! key outside any repository, and publishes the single-file form to a temporary registry folder
//! (the registry's gates run on it: `cargo wop check`). The Node harness of openwop-app's
//! contract then installs it as openwop-app's installer does (`cargo-wop/harness/registry_install.mjs`:
//! the hash, the signature over the `pack.json` bytes, the five kept paths, the trust marker) and
//! runs its node. A tampered `index.mjs` or `pack.json` is refused, and so is an `index.mjs`
//! changed after the install. The scaffolded crate builds in this workspace's target folder with
//! the SDK's lockfile, so the dependencies already built for the workspace are reused.

use flate2::read::GzDecoder;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use wop_sdk_test_support::harness::run as harness;
use wop_sdk_test_support::pack_author::{cargo_wop, new_pack, ok, publish, temp_world};

const PACK: &str = "community.alice.hello";
const NODE: &str = "community.alice.hello.name-book";

/// The report's step of node `id`.
fn step<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["nodeId"] == id))
        .unwrap_or_else(|| panic!("no step {id} in {report:#}"))
}

/// What the tests share, made once: the temporary folder, the scaffolded crate, its two built
/// forms, the key and the registry it is published to.
struct World {
    tmp: PathBuf,
    dev: PathBuf,
    registry: PathBuf,
    pack_dir: PathBuf,
    key: PathBuf,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let tmp = temp_world("wop-cargo-wop-publish-");
        let authored = new_pack(&tmp, PACK, "alice-1");
        let registry = tmp.join("registry");
        // A fresh folder does not know the key: refused, naming --add-key, and nothing written.
        let refused = publish(&registry, &authored.pack_dir, &authored.key, &[], &tmp);
        assert_eq!(refused.status.code(), Some(2));
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            err.contains("--add-key") && err.contains("\"community.alice.*\""),
            "{err}"
        );
        assert!(!registry.exists(), "a refused publish writes nothing");
        let out = ok(
            publish(
                &registry,
                &authored.pack_dir,
                &authored.key,
                &["--add-key"],
                &tmp,
            ),
            "cargo wop publish --add-key",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the registry's maintainers review this grant"),
            "{err}"
        );
        World {
            tmp,
            dev: authored.dev,
            registry,
            pack_dir: authored.pack_dir,
            key: authored.key,
        }
    })
}

fn install_scenario(registry: &Path, extra: Value) -> Value {
    let mut s = json!({
        "registryInstall": {"registryDir": registry, "packs": [{"name": PACK, "version": "0.1.0"}]},
        "steps": [{"nodeId": "s", "typeId": NODE, "inputs": {"topic": "lighthouses"},
                   "script": [{"content": {"title": "The Lamp and the Ledger"}, "usage": {"outputTokens": 6}}]}],
    });
    if let (Some(s), Some(extra)) = (s["registryInstall"].as_object_mut(), extra.as_object()) {
        s.extend(extra.clone());
    }
    s
}

/// A copy of the registry folder to tamper with.
fn registry_copy(name: &str) -> PathBuf {
    let to = world().tmp.join(name);
    let _ = std::fs::remove_dir_all(&to);
    let copied = Command::new("cp")
        .arg("-R")
        .arg(&world().registry)
        .arg(&to)
        .status()
        .expect("cp runs");
    assert!(copied.success());
    to
}

/// The published tarball's files, one of them changed by `edit`, written back as a tarball.
fn rewrite_tarball(tgz: &Path, file: &str, edit: impl Fn(&mut Vec<u8>)) {
    let mut tar_bytes = Vec::new();
    GzDecoder::new(std::fs::read(tgz).expect("tgz").as_slice())
        .read_to_end(&mut tar_bytes)
        .expect("gzip");
    let mut archive = tar::Archive::new(tar_bytes.as_slice());
    let mut builder = tar::Builder::new(Vec::new());
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("entry");
        let mut header = entry.header().clone();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        if entry.path().expect("path").to_str() == Some(file) {
            edit(&mut bytes);
        }
        header.set_size(bytes.len() as u64);
        header.set_cksum();
        builder.append(&header, bytes.as_slice()).expect("append");
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&builder.into_inner().expect("tar"))
        .expect("gzip");
    std::fs::write(tgz, gz.finish().expect("gzip")).expect("written");
}

fn v1(registry: &Path, ext: &str) -> PathBuf {
    registry.join(format!("registry/v1/packs/{PACK}/-/0.1.0.{ext}"))
}

#[test]
fn a_new_pack_is_published_installed_as_openwop_app_does_and_runs() {
    let w = world();
    let report = harness(&install_scenario(&w.registry, json!({})));
    let install = &report["installs"][0];
    assert_eq!(install["installed"], true, "{report:#}");
    assert_eq!(
        install["files"],
        json!([
            ".openwop-installed.json",
            "index.mjs",
            "keys",
            "pack.json",
            "schemas"
        ]),
        "only the kept paths"
    );
    let s = step(&report, "s");
    assert_eq!(s["outcome"]["status"], "success", "{s:#}");
    assert_eq!(s["outcome"]["outputs"]["title"], "The Lamp and the Ledger");
    assert_eq!(s["requests"], 1);
    // The registry's gates, run again on what was published.
    ok(
        cargo_wop(
            &["check", "--registry", w.registry.to_str().expect("utf-8")],
            &w.tmp,
        ),
        "cargo wop check",
    );
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(
            w.registry
                .join(format!("registry/v2/packs/{PACK}/-/0.1.0.json")),
        )
        .expect("v2 manifest"),
    )
    .expect("JSON");
    assert_eq!(
        manifest["signing"],
        json!({"keyId": "alice-1", "scheme": "ed25519-canonical-json"})
    );
    assert_eq!(manifest["engines"]["openwop"], ">=1.0.0 <3.0.0");
    let v1m: Value =
        serde_json::from_slice(&std::fs::read(v1(&w.registry, "json")).expect("v1")).expect("JSON");
    assert_eq!(
        v1m["signing"],
        json!({"method": "manual", "publicKeyRef": "alice-1", "signatureRef": "keys/pack.json.sig"})
    );
    assert!(v1m.get("peerDependenciesMeta").is_none());
}

#[test]
fn publish_leaves_the_build_folder_as_it_was_and_a_second_publish_changes_nothing() {
    let w = world();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(w.pack_dir.join("pack.json")).expect("pack.json"))
            .expect("JSON");
    assert!(
        manifest.get("signing").is_none(),
        "the build folder is not signed in place"
    );
    assert!(!w.pack_dir.join("keys").exists());
    let registry = registry_copy("second-publish");
    let out = ok(
        publish(&registry, &w.pack_dir, &w.key, &[], &w.tmp),
        "the same version again",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 schema $id(s) set"), "{err}");
    assert!(err.contains("publish: 0 file(s) written"), "{err}");
}

#[test]
fn check_refuses_a_source_folder_that_is_not_the_tarball() {
    let registry = registry_copy("edited-source");
    let index = registry.join(format!("packs/{PACK}/index.mjs"));
    let mut text = std::fs::read_to_string(&index).expect("index.mjs");
    text.push_str("\nglobalThis.stolen = true;\n");
    std::fs::write(&index, text).expect("written");
    let out = cargo_wop(
        &["check", "--registry", registry.to_str().expect("utf-8")],
        &world().tmp,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "packs/{PACK}: [\"index.mjs\"] differ from the v1 tarball"
        )),
        "{err}"
    );
}

#[test]
fn a_publish_whose_gate_fails_writes_nothing() {
    let w = world();
    let broken = w.tmp.join("broken").join(PACK);
    let _ = std::fs::remove_dir_all(w.tmp.join("broken"));
    std::fs::create_dir_all(w.tmp.join("broken")).expect("dir");
    let copied = Command::new("cp")
        .arg("-R")
        .arg(&w.pack_dir)
        .arg(&broken)
        .status()
        .expect("cp runs");
    assert!(copied.success());
    let index = std::fs::read_to_string(broken.join("index.mjs")).expect("index.mjs");
    let from = format!("const TYPE_IDS = [\"{NODE}\"];");
    assert!(index.contains(&from), "{from}");
    std::fs::write(
        broken.join("index.mjs"),
        index.replace(&from, "const TYPE_IDS = [];"),
    )
    .expect("written");
    let registry = w.tmp.join("registry-of-a-broken-pack");
    let out = publish(&registry, &broken, &w.key, &["--add-key"], &w.tmp);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`nodes` does not export"), "{err}");
    assert!(!registry.exists(), "nothing of a failed publish is left");
}

#[test]
fn a_tampered_index_mjs_is_refused_by_its_hash() {
    let registry = registry_copy("tampered-index");
    rewrite_tarball(&v1(&registry, "tgz"), "index.mjs", |b| {
        b.extend_from_slice(b"\nglobalThis.stolen = true;\n")
    });
    let report = harness(&install_scenario(&registry, json!({})));
    let error = report["installs"][0]["error"].as_str().unwrap_or("");
    assert!(error.starts_with("pack_integrity_mismatch"), "{report:#}");
    assert_eq!(report["mounted"], json!([]));
    assert_eq!(
        step(&report, "s")["outcome"]["error"]["code"],
        "node_type_unknown"
    );
    // And after a verified install, an index.mjs changed on disk is refused before it loads.
    let report = harness(&install_scenario(
        &world().registry,
        json!({"modifyAfterInstall": {"name": PACK, "file": "index.mjs", "append": "\n// changed\n"}}),
    ));
    assert_eq!(
        report["installs"][0]["error"],
        "pack_install_unverified: content_modified:index.mjs"
    );
}

#[test]
fn a_tampered_pack_json_is_refused_by_its_signature() {
    let registry = registry_copy("tampered-pack-json");
    rewrite_tarball(&v1(&registry, "tgz"), "pack.json", |b| {
        let text = String::from_utf8(b.clone()).expect("utf-8");
        *b = text
            .replace(
                "\"version\":\"0.1.0\"",
                "\"version\":\"0.1.0\",\"x-evil\":true",
            )
            .into_bytes();
    });
    // The attacker also rewrites the integrity: only the signature stands in the way.
    let tgz = std::fs::read(v1(&registry, "tgz")).expect("tgz");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(v1(&registry, "json")).expect("json")).expect("JSON");
    manifest["integrity"] = json!(format!("sha256-{}", base64_sha256(&tgz)));
    std::fs::write(v1(&registry, "json"), manifest.to_string()).expect("written");
    let report = harness(&install_scenario(&registry, json!({})));
    assert_eq!(
        report["installs"][0]["error"], "pack_signature_invalid",
        "{report:#}"
    );
    assert_eq!(
        step(&report, "s")["outcome"]["error"]["code"],
        "node_type_unknown"
    );
}

fn base64_sha256(bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(bytes))
}

#[test]
fn cargo_wop_check_refuses_what_the_registry_refuses() {
    let registry = registry_copy("check-refuses");
    let path = registry.join(format!("registry/v2/packs/{PACK}/-/0.1.0.json"));
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("json")).expect("JSON");
    manifest["engines"]["openwop"] = json!(">=1.0.0 <2.0.0");
    manifest["signing"]["method"] = json!("manual");
    std::fs::write(&path, manifest.to_string()).expect("written");
    rewrite_tarball(
        &registry.join(format!("registry/v2/packs/{PACK}/-/0.1.0.tgz")),
        "index.mjs",
        |b| b.push(b'\n'),
    );
    let out = cargo_wop(
        &["check", "--registry", registry.to_str().expect("utf-8")],
        &world().tmp,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for rule in [
        "`engines.openwop`",
        "`signing`",
        "`integrity`",
        "differ from the v1 tarball's",
    ] {
        assert!(err.contains(rule), "{rule} not in: {err}");
    }
}

/// The folder form's folder with its `index.mjs` edited (a pack built elsewhere or by another
/// bridge) or its addon replaced.
fn dev_variant(name: &str, edit: impl Fn(&Path)) -> PathBuf {
    let root = world().tmp.join(format!("variant-{name}"));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("dir");
    let copied = Command::new("cp")
        .arg("-R")
        .arg(world().dev.join(PACK))
        .arg(root.join(PACK))
        .status()
        .expect("cp runs");
    assert!(copied.success());
    edit(&root.join(PACK));
    root
}

fn run_all_nodes(packs_dir: &Path, install: bool) -> Value {
    harness(&json!({
        "packsDir": packs_dir, "prefixes": ["community.alice."], "install": install,
        "steps": [
            {"nodeId": "a", "typeId": NODE, "inputs": {"topic": "a"}, "script": [{"content": {"title": "A"}}]},
            {"nodeId": "b", "typeId": NODE, "inputs": {"topic": "b"}, "script": [{"content": {"title": "B"}}]},
        ],
    }))
}

fn assert_unavailable(report: &Value, says: &str) {
    for id in ["a", "b"] {
        let s = step(report, id);
        assert_eq!(
            s["outcome"]["error"]["code"], "wop-sdk.addon_unloadable",
            "{s:#}"
        );
        let message = s["outcome"]["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(says), "{says:?} not in {message}");
        assert_eq!(s["requests"], 0, "failed before any provider request");
    }
}

#[test]
fn an_addon_for_another_platform_bridge_or_node_fails_every_node_at_once_with_the_reason() {
    // Node's name for this machine's OS, as the folder form's `index.mjs` carries it.
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let edit_index = |from: String, to: String| {
        move |dir: &Path| {
            let index = std::fs::read_to_string(dir.join("index.mjs")).expect("index");
            assert!(index.contains(&from), "{from} in index.mjs");
            std::fs::write(dir.join("index.mjs"), index.replace(&from, &to)).expect("written");
        }
    };
    let other = dev_variant(
        "platform",
        edit_index(format!("platform: \"{os}\""), "platform: \"plan9\"".into()),
    );
    assert_unavailable(&run_all_nodes(&other, false), "not for this host");
    let abi = dev_variant(
        "abi",
        edit_index(
            format!("const ABI = {};", wop_sdk_host::pack::BRIDGE_ABI),
            "const ABI = 99;".into(),
        ),
    );
    assert_unavailable(&run_all_nodes(&abi, false), "another bridge ABI");
    let garbage = dev_variant("garbage", |dir| {
        std::fs::write(dir.join(format!("{PACK}.node")), b"not an addon").expect("written");
    });
    assert_unavailable(&run_all_nodes(&garbage, false), "could not load its addon");
}

#[test]
fn a_second_version_is_published_beside_the_first_and_both_check() {
    let w = world();
    let registry = registry_copy("second-version");
    let next = w.tmp.join("next").join(PACK);
    let _ = std::fs::remove_dir_all(w.tmp.join("next"));
    std::fs::create_dir_all(w.tmp.join("next")).expect("dir");
    let copied = Command::new("cp")
        .arg("-R")
        .arg(&w.pack_dir)
        .arg(&next)
        .status()
        .expect("cp runs");
    assert!(copied.success());
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(next.join("pack.json")).expect("pack.json"))
            .expect("JSON");
    manifest["version"] = json!("0.2.0");
    std::fs::write(next.join("pack.json"), manifest.to_string()).expect("written");
    ok(
        publish(&registry, &next, &w.key, &[], &w.tmp),
        "publish 0.2.0 beside 0.1.0",
    );
    let out = ok(
        cargo_wop(
            &["check", "--registry", registry.to_str().expect("utf-8")],
            &w.tmp,
        ),
        "both versions check",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("packs/{PACK}/ holds version 0.2.0, not this one")),
        "{err}"
    );
    let index: Value = serde_json::from_slice(
        &std::fs::read(registry.join(format!("registry/v1/packs/{PACK}/index.json")))
            .expect("index"),
    )
    .expect("JSON");
    let versions: Vec<&str> = index["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["0.1.0", "0.2.0"]);
    assert_eq!(index["latest"], "0.2.0");
}
