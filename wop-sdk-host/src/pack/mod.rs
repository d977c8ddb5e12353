//! `pack`: the folder a host that loads JavaScript packs (openwop-app) mounts as it is.
//!
//! ```text
//! PACK pack --out DIR --addon FILE [--single-file] [--provider P] [--model M] [--timeout-ms N]
//! ```
//!
//! writes `DIR/<pack name>/`:
//!
//! - `pack.json`: the v2 manifest, `runtime: {language: "javascript", entry: "index.mjs"}`, each
//!   node's schemas as files under `schemas/` referenced by `inputSchemaRef`/`outputSchemaRef`,
//!   and no extension key (valid against the registry's own manifest schema too; see
//!   `portable.rs`);
//! - `schemas/<typeId>.input.json`, `schemas/<typeId>.output.json`;
//! - `index.mjs`: generated; exports `nodes` and adapts the host's `ctx` to the addon (see the
//!   `wop-sdk-node` crate for the host kind, the node configuration and the errors), and
//!   `wopSdk`: the bridge ABI, the addon's digest and platforms, and each node's `x-maxCalls` and
//!   `x-retry` (the keys the manifest of `Pack::manifest` carries and `pack.json` does not);
//! - `<pack name>.node`: the addon (`--addon`, the `cdylib` built from the pack with
//!   `wop_sdk_node::addon!`), or, with `--single-file`, nothing: the addon is inside `index.mjs`
//!   (base64, with its SHA-256) and written at import to a private file named by its hash. A
//!   registry install keeps only `pack.json`, `index.mjs`, `schemas/`, `keys/` and `prompts/`,
//!   so the single-file form is the one to publish.
//!
//! The folder's name is the pack's name: openwop-app dev-mounts every folder of
//! `OPENWOP_LOCAL_PACKS_DIR` whose name starts with one of `OPENWOP_LOCAL_PACK_PREFIXES`. A
//! folder written again is replaced whole: written beside it under a hidden name, then renamed
//! into place, so a host never sees half a pack and an addon it loaded is never written over.

use base64::Engine as _;
use serde_json::{Value, json};
use std::path::PathBuf;
use wop_sdk::manifest::{Pack, validate_manifest};

mod addon;
mod error;
mod native;
mod portable;
mod staging;
#[cfg(test)]
mod test_elf;
pub use addon::PlatformAddon;
pub use error::PackError;
pub use portable::WOP_SDK_LINE;

/// The version of the addon contract the generated `index.mjs` speaks (`wop_sdk_node::ABI_VERSION`).
pub const BRIDGE_ABI: u32 = 3;

/// The node timeout `index.mjs` uses when neither the node's configuration (`timeoutMs`) nor
/// `--timeout-ms` gives one: 5 minutes.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;

const INDEX_TEMPLATE: &str = include_str!("index.mjs");

/// What `pack` writes, and from what.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PackOptions {
    /// The folder to write the pack folder into (`OPENWOP_LOCAL_PACKS_DIR` for a dev mount).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub out: PathBuf,
    /// The addon: the `cdylib` built from the pack with `wop_sdk_node::addon!`
    /// (`target/debug/lib<crate>.so`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub addon: PathBuf,
    /// Put the addon inside `index.mjs` (the form a registry install keeps).
    #[cfg_attr(feature = "cli", arg(long))]
    pub single_file: bool,
    /// The provider of calls that name none, when the node's configuration names none.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PROVIDER"))]
    pub provider: Option<String>,
    /// The model of calls that name none, when the node's configuration names none.
    #[cfg_attr(feature = "cli", arg(long, value_name = "MODEL"))]
    pub model: Option<String>,
    /// The node timeout when the node's configuration has no `timeoutMs`.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", default_value_t = DEFAULT_TIMEOUT_MS,
          value_parser = clap::value_parser!(u64).range(1..)))]
    pub timeout_ms: u64,
    /// Addons built on other machines, carried beside this machine's in the single-file form
    /// (`PLATFORM-ARCH=FILE`, e.g. `linux-arm64=lib.so`; repeatable): `index.mjs` loads the one
    /// for the platform and architecture it runs on.
    #[cfg_attr(
        feature = "cli",
        arg(long = "addon-for", value_name = "PLATFORM-ARCH=FILE")
    )]
    pub other_addons: Vec<PlatformAddon>,
    /// `addon` is the one the caller built (`cargo wop build`), not a file given with `--addon`:
    /// errors name it as such.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub addon_built: bool,
}

/// A pack as files: its `pack.json` (v2: `runtime {language: "javascript", entry: "index.mjs"}`,
/// schemas by reference) and the schema files it names. Made from a [`Pack`] in this process, or
/// read from an addon (its `wopPackFiles()` export, what `cargo wop build` does).
#[derive(Clone, Debug, PartialEq)]
pub struct PackFiles {
    /// `pack.json`.
    pub manifest: Value,
    /// `(path in the pack folder, schema)`.
    pub schemas: Vec<(String, Value)>,
}

impl PackFiles {
    /// The files of `pack`.
    pub fn of(pack: &Pack) -> Self {
        Self {
            manifest: pack.manifest(),
            schemas: pack.schema_files(),
        }
    }

    fn name(&self) -> Result<&str, PackError> {
        self.manifest["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| PackError::failed("pack.json: `name` must be a non-empty string"))
    }

    fn version(&self) -> &str {
        self.manifest["version"].as_str().unwrap_or("")
    }

    fn type_ids(&self) -> Vec<&str> {
        self.manifest["nodes"]
            .as_array()
            .map(|nodes| nodes.iter().filter_map(|n| n["typeId"].as_str()).collect())
            .unwrap_or_default()
    }
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    text.push('\n');
    text.into_bytes()
}

fn js_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Writes the pack folder `options.out/<pack name>/` and answers its path.
///
/// Errors name the file and the rule: a missing addon, or one that is not a whole native library
/// for its platform and architecture (`--addon`, `--addon-for`), a manifest that breaks a v2
/// rule, a file that cannot be written.
pub fn write_pack(pack: &Pack, options: &PackOptions) -> Result<PathBuf, PackError> {
    write_pack_files(&PackFiles::of(pack), options)
}

/// Writes the pack folder of `files` (see [`write_pack`]).
pub fn write_pack_files(files: &PackFiles, options: &PackOptions) -> Result<PathBuf, PackError> {
    let here = if options.addon_built {
        format!("the addon built here ({})", options.addon.display())
    } else {
        format!("--addon {}", options.addon.display())
    };
    let addon = std::fs::read(&options.addon).map_err(|e| {
        PackError::usage(format!(
            "{here}: cannot read the addon: {e} (build it first, e.g. `cargo build -p <pack>-addon`)"
        ))
    })?;
    for (flag, value) in [
        ("--provider", &options.provider),
        ("--model", &options.model),
    ] {
        if value.as_deref().is_some_and(str::is_empty) {
            return Err(PackError::usage(format!("{flag}: must not be empty")));
        }
    }
    if !options.single_file && !options.other_addons.is_empty() {
        return Err(PackError::usage(
            "--addon-for: only the single-file form carries addons for other platforms (the folder form is a dev mount, on this machine)",
        ));
    }
    let carried = addon::carried(&addon, &here, &options.other_addons)?;
    let name = files.name()?;
    let (mut manifest, node_keys) = portable::split(files.manifest.clone());
    portable::declare_requires(&mut manifest);
    let schemas = &files.schemas;
    let addon_file = format!("{name}.node");
    let sha = &carried[0].sha256;
    let platforms: Vec<String> = carried.iter().map(addon::Carried::target).collect();
    let wop_sdk = json!({
        "bridgeAbi": BRIDGE_ABI,
        "addon": if options.single_file { json!({"embedded": true, "sha256": sha, "platforms": platforms}) }
                 else { json!({"file": addon_file, "sha256": sha}) },
        "nodes": node_keys,
    });
    validate_manifest(&manifest).map_err(|errors| {
        PackError::failed(format!(
            "pack.json of `{name}` breaks the manifest rules:\n  {}",
            errors.join("\n  ")
        ))
    })?;
    // Written beside the folder, then renamed into place (see `staging`).
    let staging = staging::Staging::new(&options.out, name).map_err(PackError::failed)?;
    staging
        .write("pack.json", &pretty(&manifest))
        .map_err(PackError::failed)?;
    for (path, schema) in schemas {
        staging
            .write(path, &pretty(schema))
            .map_err(PackError::failed)?;
    }
    let addon_js = if options.single_file {
        let entries: Vec<String> = carried
            .iter()
            .map(|c| {
                format!(
                    "{{ platform: {}, arch: {}, name: {}, sha256: {}, base64: {} }}",
                    js_string(c.platform),
                    js_string(c.arch),
                    js_string(&format!("{name}.{}.node", c.target())),
                    js_string(&c.sha256),
                    js_string(&base64::engine::general_purpose::STANDARD.encode(&c.bytes))
                )
            })
            .collect();
        format!("{{ embedded: [{}] }}", entries.join(", "))
    } else {
        staging
            .write(&addon_file, &addon)
            .map_err(PackError::failed)?;
        format!(
            "{{ file: {}, platform: {}, arch: {}, sha256: {} }}",
            js_string(&addon_file),
            js_string(carried[0].platform),
            js_string(carried[0].arch),
            js_string(sha)
        )
    };
    use wop_sdk::wire::ErrorCode::{AddonUnloadable, NodeCancelled, NodeFailed, NodeTimeout};
    let defaults = json!({
        "provider": options.provider,
        "model": options.model,
        "timeoutMs": options.timeout_ms,
    });
    let mut index = INDEX_TEMPLATE
        .replace("__PACK__", &format!("{name} {}", files.version()))
        .replace("__TYPE_IDS__", &json!(files.type_ids()).to_string())
        .replace("__DEFAULTS__", &defaults.to_string())
        .replace("__ABI__", &BRIDGE_ABI.to_string())
        .replace("__ADDON__", &addon_js)
        .replace("__WOP_SDK__", &wop_sdk.to_string());
    // The codes the module gives its own failures: `__NODE_FAILED__` is `wop-sdk.node_failed`.
    for code in [NodeFailed, AddonUnloadable, NodeTimeout, NodeCancelled] {
        let wire = code.as_str();
        let placeholder = wire.trim_start_matches("wop-sdk.").to_ascii_uppercase();
        index = index.replace(&format!("__{placeholder}__"), &js_string(wire));
    }
    staging
        .write("index.mjs", index.as_bytes())
        .map_err(PackError::failed)?;
    staging.replace().map_err(PackError::failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn options(dir: &Path, addon: &Path) -> PackOptions {
        PackOptions {
            out: dir.to_owned(),
            addon: addon.to_owned(),
            single_file: false,
            provider: Some("mock".into()),
            model: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            other_addons: Vec::new(),
            addon_built: false,
        }
    }

    #[test]
    fn the_manifest_loads_index_mjs_and_every_schema_ref_is_a_written_file() {
        let pack =
            Pack::new("community.example.empty", "0.1.0").node(crate::conformance::EchoAttempts);
        let PackFiles {
            manifest: m,
            schemas: files,
        } = PackFiles::of(&pack);
        assert_eq!(m["runtime"]["language"], "javascript");
        assert_eq!(m["runtime"]["entry"], "index.mjs", "the file `pack` writes");
        let node = &m["nodes"][0];
        assert!(node.get("inputSchema").is_none());
        let input_ref = node["inputSchemaRef"].as_str().unwrap_or("");
        assert!(files.iter().any(|(p, _)| p == input_ref), "{files:?}");
        assert!(node.as_object().is_some_and(|o| {
            o.keys()
                .all(|k| !["maxCalls", "retry"].contains(&k.as_str()))
        }));
    }

    #[test]
    fn a_missing_addon_is_a_usage_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("wop-pack-unit-{}", std::process::id()));
        let pack = Pack::new("community.example.empty", "0.1.0");
        let e = write_pack(&pack, &options(&dir, &dir.join("nope.so"))).expect_err("no addon");
        assert_eq!(e.exit, 2);
        assert!(e.message.contains("nope.so"), "{}", e.message);
    }

    #[test]
    fn writes_the_folder_and_the_generated_module_names_every_node() {
        let dir = std::env::temp_dir().join(format!("wop-pack-unit-w-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let addon = dir.join("addon.so");
        let (x64, arm64) = (test_elf::X86_64, test_elf::AARCH64);
        let (here, machine) = if cfg!(target_arch = "aarch64") {
            (arm64, x64)
        } else {
            (x64, arm64)
        };
        let library = test_elf::shared_object(here, 64);
        std::fs::write(&addon, &library).expect("addon");
        let pack =
            Pack::new("community.example.echo", "0.1.0").node(crate::conformance::EchoAttempts);
        let folder = write_pack(&pack, &options(&dir, &addon)).expect("written");
        assert_eq!(folder, dir.join("community.example.echo"));
        let index = std::fs::read_to_string(folder.join("index.mjs")).expect("index");
        assert!(index.contains("\"conformance.callai.echo-attempts\""));
        assert!(index.contains("{ file: \"community.example.echo.node\", platform: "));
        // A placeholder is `__NAME__` (capitals); `__proto__` in the module is code.
        let unfilled = index.match_indices("__").find(|(i, _)| {
            let name: String = index[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            name.len() > 2 && name.ends_with("__")
        });
        assert_eq!(unfilled, None, "every placeholder filled");
        assert!(folder.join("community.example.echo.node").exists());
        let single = PackOptions {
            single_file: true,
            ..options(&dir, &addon)
        };
        let folder = write_pack(&pack, &single).expect("written");
        assert!(!folder.join("community.example.echo.node").exists());
        let index = std::fs::read_to_string(folder.join("index.mjs")).expect("index");
        let b64 = base64::engine::general_purpose::STANDARD.encode(&library);
        assert!(index.contains(&b64));
        // An addon for another platform rides beside this machine's; the folder form refuses it.
        let other = if machine == x64 {
            "linux-x64"
        } else {
            "linux-arm64"
        };
        let elf = test_elf::shared_object(machine, 64);
        std::fs::write(dir.join("other.so"), &elf).expect("other");
        let two = PackOptions {
            other_addons: vec![
                format!("{other}={}", dir.join("other.so").display())
                    .parse()
                    .expect("parses"),
            ],
            ..single.clone()
        };
        let folder = write_pack(&pack, &two).expect("written");
        let index = std::fs::read_to_string(folder.join("index.mjs")).expect("index");
        assert!(index.contains(&base64::engine::general_purpose::STANDARD.encode(&elf)));
        assert!(index.contains(&format!("name: \"community.example.echo.{other}.node\"")));
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(folder.join("pack.json")).expect("pack.json"))
                .expect("JSON");
        assert!(manifest.get("x-wopSdk").is_none());
        let line = index
            .lines()
            .find_map(|l| l.strip_prefix(WOP_SDK_LINE))
            .and_then(|l| l.strip_suffix(';'))
            .expect("the wopSdk line");
        let meta: Value = serde_json::from_str(line).expect("its JSON");
        assert_eq!(meta["addon"]["platforms"][1], other);
        assert_eq!(meta["bridgeAbi"], BRIDGE_ABI);
        let e = write_pack(
            &pack,
            &PackOptions {
                single_file: false,
                ..two.clone()
            },
        )
        .expect_err("folder form");
        assert!(
            e.message.contains("only the single-file form"),
            "{}",
            e.message
        );
        let mut twice = two.clone();
        twice.other_addons.push(twice.other_addons[0].clone());
        let e = write_pack(&pack, &twice).expect_err("twice");
        assert!(e.message.contains("given twice"), "{}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
