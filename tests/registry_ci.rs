//! The OpenWOP registry's own CI, unmodified, on what `cargo wop publish` writes (issue 32): a
//! new pack is scaffolded, built and published with the real `cargo-wop` into a copy of a
//! checkout of openwop/openwop-registry, then the registry's scripts judge it:
//! `scripts/registry-check.sh` (all nine steps), each gate script it calls on its own, and the
//! Ajv 2020 validations of its `registry-publish.yml` workflow (the tarball's `pack.json` against
//! `schemas/node-pack-manifest.schema.json`, the version manifest against
//! `schemas/registry-version-manifest.schema.json`). The registry's `build-pack-tarball.mjs`
//! rebuilds the tarball from the staged `packs/<name>/` with the same key: the tar bytes and the
//! signature are ours. And a pack published the way `publish` did before (the v2 signing block in
//! the tarball) is refused by the same scripts, so a gate failure fails this test.
//!
//! The checkout is not in this repository (its files are the registry's, not ours) and CI has no
//! network: `WOP_REGISTRY_CHECKOUT` names it, with its npm packages installed (`.ci/run` prepares
//! one from the machine's mirror of the repository when there is one). Without it the tests say
//! so and pass; with `WOP_REGISTRY_REQUIRED=1` they fail instead.

use flate2::read::GzDecoder;
use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use wop_sdk_test_support::pack_author::{cargo_wop, new_pack, ok, publish, temp_world};

const PACK: &str = "community.alice.hello";

struct World {
    tmp: PathBuf,
    registry: PathBuf,
    key: PathBuf,
}

/// The checkout, or `None` (after saying why) when there is none.
fn checkout() -> Option<PathBuf> {
    let dir = std::env::var_os("WOP_REGISTRY_CHECKOUT").map(PathBuf::from);
    let required = std::env::var("WOP_REGISTRY_REQUIRED").is_ok_and(|v| v == "1");
    match dir {
        Some(d) if d.join("scripts/registry-check.sh").is_file() => {
            assert!(
                d.join("node_modules/ajv").is_dir(),
                "{}: run `npm install` there: the registry's gates import Ajv",
                d.display()
            );
            Some(d)
        }
        other => {
            assert!(
                !required,
                "WOP_REGISTRY_REQUIRED=1 but WOP_REGISTRY_CHECKOUT ({other:?}) is not a checkout of openwop-registry"
            );
            eprintln!(
                "skipped: no checkout of openwop/openwop-registry (set WOP_REGISTRY_CHECKOUT to one with `npm install` done)"
            );
            None
        }
    }
}

fn copy(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let done = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(done.success(), "cp -a {} {}", from.display(), to.display());
}

fn world() -> Option<&'static World> {
    static WORLD: OnceLock<Option<World>> = OnceLock::new();
    WORLD
        .get_or_init(|| {
            let checkout = checkout()?;
            let tmp = temp_world("wop-registry-ci-");
            let authored = new_pack(&tmp, PACK, "alice-1");
            let registry = tmp.join("openwop-registry");
            copy(&checkout, &registry);
            ok(
                publish(
                    &registry,
                    &authored.pack_dir,
                    &authored.key,
                    &["--add-key"],
                    &tmp,
                ),
                "cargo wop publish into the registry checkout",
            );
            Some(World {
                tmp,
                registry,
                key: authored.key,
            })
        })
        .as_ref()
}

/// `program ARGS` in the registry folder `dir`.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The registry's gate scripts, as `registry-check.sh` calls them.
const GATES: &[&[&str]] = &[
    &["registry/scripts/build-index.mjs", "--check"],
    &["scripts/check-pack-tarball-signatures.mjs"],
    &["scripts/check-registry-signer-consistency.mjs"],
    &["registry/scripts/verify-signatures.mjs"],
    &["scripts/check-pack-prompt-refs.mjs"],
    &["scripts/check-agent-tool-allowlist.mjs"],
    &["registry/scripts/generate-sbom.mjs", "--check"],
    &["registry/scripts/check-advisories.mjs"],
    &["registry/scripts/conformance-check.mjs"],
    &["scripts/check-pack-schema-ids.mjs"],
];

/// Our own Ajv 2020 validation, as the registry's workflow runs it (`--spec=draft2020
/// --strict=false -c ajv-formats`), with every schema of its `schemas/` folder loaded so that
/// references between them resolve. `node ajv-check.mjs SCHEMA FILE [--pack-json-of-tgz]`.
const AJV_CHECK: &str = r#"
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFileSync, readdirSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
const [schemaFile, dataFile, fromTgz] = process.argv.slice(2);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
for (const f of readdirSync('schemas').filter((f) => f.endsWith('.json'))) {
  ajv.addSchema(JSON.parse(readFileSync(`schemas/${f}`, 'utf8')));
}
let data;
if (fromTgz) {
  const tar = gunzipSync(readFileSync(dataFile));
  for (let off = 0; off + 512 <= tar.length;) {
    const name = tar.subarray(off, off + 100).toString('utf8').replace(/\0.*$/s, '');
    if (!name) break;
    const size = parseInt(tar.subarray(off + 124, off + 136).toString('ascii').replace(/\0/g, '').trim(), 8);
    if (name === 'pack.json') { data = JSON.parse(tar.subarray(off + 512, off + 512 + size).toString('utf8')); break; }
    off += 512 + Math.ceil(size / 512) * 512;
  }
  if (data === undefined) { console.error(`${dataFile}: no pack.json`); process.exit(1); }
} else {
  data = JSON.parse(readFileSync(dataFile, 'utf8'));
}
const id = JSON.parse(readFileSync(schemaFile, 'utf8')).$id;
const validate = ajv.getSchema(id);
if (validate(data)) { console.log(`valid against ${schemaFile}`); }
else { console.error(JSON.stringify(validate.errors, null, 1)); process.exit(1); }
"#;

fn ajv(registry: &Path, schema: &str, file: &Path, from_tgz: bool) -> Output {
    let script = registry.join("ajv-check.mjs");
    std::fs::write(&script, AJV_CHECK).expect("ajv-check.mjs");
    let mut args = vec!["ajv-check.mjs", schema, file.to_str().expect("utf-8")];
    if from_tgz {
        args.push("--pack-json-of-tgz");
    }
    let out = run_in(registry, "node", &args);
    let _ = std::fs::remove_file(script);
    out
}

fn v1(registry: &Path, ext: &str) -> PathBuf {
    registry.join(format!("registry/v1/packs/{PACK}/-/0.1.0.{ext}"))
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    GzDecoder::new(std::fs::read(path).expect("tgz").as_slice())
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

#[test]
fn registry_check_and_every_gate_script_pass_on_what_publish_wrote() {
    let Some(w) = world() else { return };
    let all = run_in(&w.registry, "bash", &["scripts/registry-check.sh"]);
    assert!(all.status.success(), "registry-check.sh:\n{}", text(&all));
    assert!(text(&all).contains("=== registry:check OK ==="));
    for gate in GATES {
        let out = run_in(&w.registry, "node", gate);
        assert!(
            out.status.success(),
            "node {}:\n{}",
            gate.join(" "),
            text(&out)
        );
    }
    // The pack is one of those the gates counted, not skipped.
    let signatures = run_in(
        &w.registry,
        "node",
        &["registry/scripts/verify-signatures.mjs"],
    );
    assert!(text(&signatures).contains(PACK), "{}", text(&signatures));
    let index: Value = serde_json::from_slice(
        &std::fs::read(w.registry.join("registry/v1/index.json")).expect("index"),
    )
    .expect("JSON");
    assert!(
        index["packs"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["name"] == PACK)),
        "the registry-wide index lists the pack"
    );
    assert!(
        v1(&w.registry, "sbom.json").is_file(),
        "the SBOM is written"
    );
}

#[test]
fn the_manifests_are_valid_against_the_registrys_schemas() {
    let Some(w) = world() else { return };
    let pack_json = ajv(
        &w.registry,
        "schemas/node-pack-manifest.schema.json",
        &v1(&w.registry, "tgz"),
        true,
    );
    assert!(pack_json.status.success(), "{}", text(&pack_json));
    let version = ajv(
        &w.registry,
        "schemas/registry-version-manifest.schema.json",
        &v1(&w.registry, "json"),
        false,
    );
    assert!(version.status.success(), "{}", text(&version));
}

#[test]
fn build_pack_tarball_makes_the_same_tar_bytes_and_signature_with_the_key_keygen_wrote() {
    let Some(w) = world() else { return };
    let out_dir = w.tmp.join("build-pack-tarball");
    let built = run_in(
        &w.registry,
        "node",
        &[
            "scripts/build-pack-tarball.mjs",
            "--pack",
            PACK,
            "--signed",
            "--key",
            w.key.to_str().expect("utf-8"),
            "--key-id",
            "alice-1",
            "--out",
            out_dir.to_str().expect("utf-8"),
        ],
    );
    assert!(built.status.success(), "{}", text(&built));
    assert!(
        gunzip(&out_dir.join(format!("{PACK}-0.1.0.tgz"))) == gunzip(&v1(&w.registry, "tgz")),
        "the registry's script and publish write the same tar bytes"
    );
    let theirs =
        std::fs::read_to_string(out_dir.join(format!("{PACK}-0.1.0.sig.b64"))).expect("sig.b64");
    use base64::Engine as _;
    let ours = base64::engine::general_purpose::STANDARD
        .encode(std::fs::read(v1(&w.registry, "sig")).expect("sig"));
    assert_eq!(theirs.trim(), ours);
}

#[test]
fn the_registry_refuses_the_v2_signing_block_in_the_tarball() {
    let Some(w) = world() else { return };
    // As `publish` wrote it before: the tarball's pack.json signed with the v2 block only.
    let broken = w.tmp.join("openwop-registry-broken");
    copy(&w.registry, &broken);
    let tgz = v1(&broken, "tgz");
    let mut tar = tar::Archive::new(std::io::Cursor::new(gunzip(&tgz)));
    let mut builder = tar::Builder::new(Vec::new());
    for entry in tar.entries().expect("tar") {
        let mut entry = entry.expect("entry");
        let mut header = entry.header().clone();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        if entry.path().expect("path").to_str() == Some("pack.json") {
            let mut m: Value = serde_json::from_slice(&bytes).expect("JSON");
            m["signing"] = json!({"keyId": "alice-1", "scheme": "ed25519-canonical-json"});
            bytes = serde_json::to_vec(&m).expect("bytes");
        }
        header.set_size(bytes.len() as u64);
        header.set_cksum();
        builder.append(&header, bytes.as_slice()).expect("append");
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &builder.into_inner().expect("tar")).expect("gzip");
    std::fs::write(&tgz, gz.finish().expect("gzip")).expect("written");
    // The maintainer's step 4 run again, so that only the signature gate stands in the way.
    for script in [
        "registry/scripts/build-index.mjs",
        "registry/scripts/generate-sbom.mjs",
    ] {
        let out = run_in(&broken, "node", &[script]);
        assert!(out.status.success(), "{script}: {}", text(&out));
    }
    let all = run_in(&broken, "bash", &["scripts/registry-check.sh"]);
    assert!(
        !all.status.success(),
        "registry-check.sh passed a broken pack"
    );
    assert!(
        text(&all).contains(&format!(
            "{PACK}@0.1.0: in-tarball pack.json has no signing.publicKeyRef (unsigned manifest)"
        )),
        "{}",
        text(&all)
    );
    // And `cargo wop check` says so too, running the same scripts.
    let check = cargo_wop(
        &["check", "--registry", broken.to_str().expect("utf-8")],
        &w.tmp,
    );
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(
        text(&check).contains("registry-check.sh fails"),
        "{}",
        text(&check)
    );
}
