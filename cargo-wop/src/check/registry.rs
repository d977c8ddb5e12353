//! The registry's own gates, run as its CI runs them: in a checkout of openwop-registry,
//! `scripts/registry-check.sh` (every step, unmodified) when its npm packages are installed,
//! otherwise each of its gate scripts that needs only Node (all but the advisories check, which
//! imports Ajv: `npm install` in the checkout adds it).

use crate::error::{Result, WopError};
use std::path::Path;
use std::process::Command;

/// The scripts `registry-check.sh` runs, in its order, and whether each needs the registry's
/// npm packages.
const GATES: &[(&str, &[&str], bool)] = &[
    ("registry/scripts/build-index.mjs", &["--check"], false),
    ("scripts/check-pack-tarball-signatures.mjs", &[], false),
    ("scripts/check-registry-signer-consistency.mjs", &[], false),
    ("registry/scripts/verify-signatures.mjs", &[], false),
    ("scripts/check-pack-prompt-refs.mjs", &[], false),
    ("scripts/check-agent-tool-allowlist.mjs", &[], false),
    ("registry/scripts/generate-sbom.mjs", &["--check"], false),
    ("registry/scripts/check-advisories.mjs", &[], true),
    ("registry/scripts/conformance-check.mjs", &[], false),
    ("scripts/check-pack-schema-ids.mjs", &[], false),
];

/// Whether `root` is a checkout of openwop-registry with its gate script.
pub fn is_checkout(root: &Path) -> bool {
    root.join("scripts/registry-check.sh").is_file()
        && root.join("registry/scripts/build-index.mjs").is_file()
}

/// `program ARGS` run in the registry folder `root`: whether it succeeded, and what it printed
/// (standard output, then standard error).
pub fn run(root: &Path, program: &str, args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(program)
        .args(args)
        .current_dir(root)
        .output()
        .map_err(|e| {
            WopError::failed(format!(
                "`{program}` cannot run ({e}): the registry's gates need Node >= 20 (and bash)"
            ))
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// Runs the registry's gates in the checkout `root`; `Ok` when all pass, else the failing
/// gates' output.
pub fn registry_gates(root: &Path) -> Result<()> {
    if !is_checkout(root) {
        return Ok(());
    }
    if root.join("node_modules/ajv").is_dir() {
        eprintln!("check: running the registry's `bash scripts/registry-check.sh`");
        let (ok, text) = run(root, "bash", &["scripts/registry-check.sh"])?;
        return if ok {
            eprintln!("check: the registry's registry-check.sh passes (all 9 steps)");
            Ok(())
        } else {
            Err(WopError::failed(format!(
                "the registry's scripts/registry-check.sh fails:\n{}",
                tail(&text)
            )))
        };
    }
    let mut failed = Vec::new();
    for (script, args, needs_npm) in GATES {
        if *needs_npm {
            eprintln!(
                "check: skipped the registry's {script}: it imports Ajv; run `npm install` in {} to run it too",
                root.display()
            );
            continue;
        }
        let mut argv = vec![*script];
        argv.extend_from_slice(args);
        let (ok, text) = run(root, "node", &argv)?;
        if ok {
            eprintln!("check: the registry's {script} passes");
        } else {
            failed.push(format!(
                "the registry's `node {}` fails:\n{}",
                argv.join(" "),
                tail(&text)
            ));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(WopError::failed(failed.join("\n")))
    }
}

/// The last lines of a gate's output: its verdict and the failures it lists.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}
