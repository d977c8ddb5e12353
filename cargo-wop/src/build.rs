//! `cargo wop build`: the pack crate's library built as a Node addon (`cargo rustc --crate-type
//! cdylib --features addon`: no second crate, no build.rs), its packs read off the addon itself
//! with their budget check (`wopPackFiles()` and `wopBudgetCheck`, in one Node process: which also
//! proves the addon loads; [`crate::budget`]), and each pack's folder written; then what it used
//! (`--provider`, `--model`, `--timeout-ms`) recorded for `cargo wop dev` ([`crate::last_build`]).

use crate::budget::BudgetCheck;
use crate::last_build::LastBuild;
use crate::{Failure, crate_dir, progress};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use wop_sdk_host::pack::{DEFAULT_TIMEOUT_MS, PackFiles, PackOptions, write_pack_files};

#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// Build the addon with the release profile.
    #[arg(long)]
    release: bool,
    /// The folder form (the addon beside index.mjs), for a dev mount; by default the addon is
    /// inside index.mjs (the single-file form, the one a registry install keeps).
    #[arg(long)]
    folder: bool,
    /// Where the pack folders go (default `target/wop` of the crate).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The provider of calls that name none, when the node's configuration names none.
    #[arg(long, value_name = "PROVIDER")]
    provider: Option<String>,
    /// The model of calls that name none, when the node's configuration names none.
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// The node timeout when the node's configuration has no `timeoutMs`.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TIMEOUT_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// An addon built on another machine, carried beside this one's in the single-file form:
    /// `PLATFORM-ARCH=FILE` (Node's names, e.g. `linux-arm64=lib.so`, `darwin-arm64=…`);
    /// repeatable. On that machine `cargo wop build --folder` writes it as `<pack>.node`.
    #[arg(long = "addon-for", value_name = "PLATFORM-ARCH=FILE")]
    addon_for: Vec<wop_sdk_host::pack::PlatformAddon>,
    /// The inputs the budget check plans each node with, `{typeId: input, ...}` (default: the
    /// crate's `budget-inputs.json`, when there is one).
    #[arg(long, value_name = "FILE")]
    budget_inputs: Option<PathBuf>,
    /// Fail when a node's `max_calls` cannot fit its planned calls on a host without
    /// `aiProviders.callAccounting` (by default it is a warning).
    #[arg(long)]
    deny_budget_warnings: bool,
    /// The pack crate's Cargo.toml (default: the current folder's).
    #[arg(long, value_name = "FILE")]
    manifest_path: Option<PathBuf>,
}

impl BuildArgs {
    /// The folder form into `out`, with the pack defaults of `used`: what `cargo wop dev` builds.
    pub(crate) fn folder_into(
        out: PathBuf,
        manifest_path: Option<PathBuf>,
        used: LastBuild,
    ) -> Self {
        Self {
            release: false,
            folder: true,
            out: Some(out),
            provider: used.provider,
            model: used.model,
            timeout_ms: used.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
            addon_for: Vec::new(),
            budget_inputs: None,
            deny_budget_warnings: false,
            manifest_path,
        }
    }
}

/// The cdylib `cargo rustc` built, from its JSON messages.
fn built_addon(stdout: &str) -> Option<PathBuf> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "cdylib"))
        })
        .filter_map(|m| m["filenames"].as_array().cloned())
        .flatten()
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .find(|f| {
            f.extension()
                .is_some_and(|e| e == "so" || e == "dylib" || e == "dll")
        })
}

fn cargo_rustc(dir: &Path, release: bool) -> Result<PathBuf, Failure> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir).args([
        "rustc",
        "--lib",
        "--crate-type",
        "cdylib",
        "--features",
        "addon",
        "--message-format=json-render-diagnostics",
    ]);
    if release {
        cmd.arg("--release");
    }
    // A Node addon on macOS leaves Node's symbols to be found when it is loaded.
    if cfg!(target_os = "macos") {
        cmd.args([
            "--",
            "-C",
            "link-arg=-undefined",
            "-C",
            "link-arg=dynamic_lookup",
        ]);
    }
    progress("building the addon (cargo rustc --crate-type cdylib --features addon)");
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::failed(format!("cannot run cargo: {e}")))?;
    if !out.status.success() {
        return Err(Failure::failed(
            "the addon did not build (cargo's errors above); a pack crate needs the feature `addon` \
             with `wop_sdk_node::addon!(pack())` under it (see `cargo wop new`)",
        ));
    }
    built_addon(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| {
        Failure::failed(
            "cargo built no cdylib: the crate needs a [lib] target (see `cargo wop new`)",
        )
    })
}

/// What the addon says of itself, read in one Node process (which also proves it loads): its
/// packs (`wopPackFiles()`) and their budget check for `inputs` (`wopBudgetCheck`).
fn read_addon(addon: &Path, inputs: &str) -> Result<(Vec<PackFiles>, BudgetCheck), Failure> {
    const READ: &str = "const m = { exports: {} }; process.dlopen(m, process.argv[1]); \
        for (const f of ['wopPackFiles', 'wopBudgetCheck']) { \
          if (typeof m.exports[f] !== 'function') { console.error(`no ${f} export (an addon of another wop-sdk-node)`); process.exit(3); } } \
        process.stdout.write(`{\"packs\": ${m.exports.wopPackFiles()}, \"budget\": ${m.exports.wopBudgetCheck(process.argv[2])}}`);";
    let out = Command::new("node")
        .args(["-e", READ])
        .arg(addon)
        .arg(inputs)
        .output()
        .map_err(|e| {
            Failure::failed(format!(
                "cannot run `node` ({e}): `cargo wop build` reads the pack off the addon in Node (>= 20)"
            ))
        })?;
    if !out.status.success() {
        return Err(Failure::failed(format!(
            "{}: Node could not load the addon or read its packs: {}",
            addon.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let answer: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        Failure::failed(format!(
            "{}: wopPackFiles() or wopBudgetCheck() is not JSON: {e}",
            addon.display()
        ))
    })?;
    let Some(packs) = answer["packs"].as_array() else {
        return Err(Failure::failed(format!(
            "{}: wopPackFiles() is not a JSON array",
            addon.display()
        )));
    };
    let packs = packs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let schemas = p["schemas"]
                .as_array()
                .map(|s| {
                    s.iter()
                        .filter_map(|e| Some((e[0].as_str()?.to_owned(), e[1].clone())))
                        .collect()
                })
                .ok_or_else(|| {
                    Failure::failed(format!(
                        "wopPackFiles()[{i}].schemas: must be an array of [path, schema]"
                    ))
                })?;
            Ok(PackFiles {
                manifest: p["manifest"].clone(),
                schemas,
            })
        })
        .collect::<Result<_, Failure>>()?;
    Ok((packs, crate::budget::parse(&answer["budget"], addon)?))
}

/// `cargo wop build`: [`packs`], then what it used recorded as the crate's last build
/// ([`crate::last_build`]), for `cargo wop dev`.
pub(crate) fn run(args: &BuildArgs) -> Result<Vec<PathBuf>, Failure> {
    let folders = packs(args)?;
    let dir = crate_dir(args.manifest_path.as_ref())?;
    crate::last_build::record(
        &dir,
        &LastBuild {
            provider: args.provider.clone(),
            model: args.model.clone(),
            timeout_ms: Some(args.timeout_ms),
        },
    );
    Ok(folders)
}

/// Builds and writes every pack of the crate; answers their folders.
pub(crate) fn packs(args: &BuildArgs) -> Result<Vec<PathBuf>, Failure> {
    let dir = crate_dir(args.manifest_path.as_ref())?;
    let missing: Vec<&str> = [("--provider", &args.provider), ("--model", &args.model)]
        .into_iter()
        .filter(|(_, v)| v.is_none())
        .map(|(flag, _)| flag)
        .collect();
    if !missing.is_empty() {
        progress(&format!(
            "warning: no {} for the pack: openwop-app requires a provider and a model on every call, so there each node's configuration must name them (`provider`, `model`), or a call without them fails `validation_error`; `cargo wop build --provider P --model M` sets the pack's default",
            missing.join(" or ")
        ));
    }
    let addon = cargo_rustc(&dir, args.release)?;
    let inputs = crate::budget::inputs_file(&dir, args.budget_inputs.as_ref());
    let (packs, check) = read_addon(&addon, &crate::budget::read_inputs(inputs.as_deref())?)?;
    crate::budget::report(&check, inputs.as_deref(), args.deny_budget_warnings)?;
    let out = args.out.clone().unwrap_or_else(|| dir.join("target/wop"));
    let mut folders = Vec::new();
    for files in &packs {
        let options = PackOptions {
            out: out.clone(),
            addon: addon.clone(),
            single_file: !args.folder,
            provider: args.provider.clone(),
            model: args.model.clone(),
            timeout_ms: args.timeout_ms,
            other_addons: args.addon_for.clone(),
            addon_built: true,
        };
        let folder = write_pack_files(files, &options).map_err(|e| Failure {
            exit: e.exit,
            message: e.message,
        })?;
        progress(&format!(
            "wrote {} ({} form)",
            folder.display(),
            if args.folder { "folder" } else { "single-file" }
        ));
        println!("{}", folder.display());
        folders.push(folder);
    }
    Ok(folders)
}
