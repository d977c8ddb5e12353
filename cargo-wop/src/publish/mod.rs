//! `cargo wop publish --registry DIR`: a pack version as a contributor's pull request to
//! openwop/openwop-registry holds it, written into a checkout of that repository (or any folder
//! served the same way):
//!
//! ```text
//! packs/<name>/                                  the pack's source: exactly the v1 tarball's files
//! registry/v1/packs/<name>/-/<version>.{tgz,sig,json}     the registry's tree (see release.rs)
//! registry/v2/packs/<name>/-/<version>.{tgz,sig,json}, registry/v2/packs/<name>/index.json
//! registry/keys/<keyId>.pub, a `signingKeys` entry     only with --add-key (grant.rs)
//! ```
//!
//! then, in a checkout, what the registry's README asks of a contributor: its own
//! `registry/scripts/build-index.mjs` (the per-pack and registry-wide `index.json`, the version
//! manifests' `integrity`, the schema copies at their `$id` URLs, `index.html`) and
//! `registry/scripts/generate-sbom.mjs` (the CycloneDX SBOMs). In a folder without those scripts,
//! `publish` writes the pack's `index.json` and schema copies itself, in the same shape.
//!
//! Everything is written to a staging copy first (stage.rs); this tool's gates
//! ([`crate::check`]) and, in a checkout, the registry's own gate scripts run there, and the
//! registry folder is changed only when all pass. The build folder is never changed.

mod grant;
mod index;
mod release;
mod stage;

use crate::error::{Result, WopError, pretty, read};
use crate::folder::PackFolder;
use crate::sign::key_and_id;
use base64::Engine as _;
use release::{Form, Release};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use stage::Staging;
use std::path::PathBuf;

/// The origin of pack-internal schema `$id`s.
pub const SCHEMA_ORIGIN: &str = "https://packs.openwop.dev";

/// `cargo wop publish`'s options.
#[derive(Clone, Debug, clap::Args)]
pub struct PublishArgs {
    /// The registry folder (a checkout of openwop/openwop-registry, or an empty folder).
    #[arg(long, value_name = "DIR")]
    pub registry: PathBuf,
    /// The pack folder and the key, as `cargo wop sign` takes them.
    #[command(flatten)]
    pub sign: crate::sign::SignArgs,
    /// Write only the v1 tree, the registry's tree today (no `/v2/` form).
    #[arg(long)]
    pub v1_only: bool,
    /// Write the key's public half to `registry/keys/<keyId>.pub` and a `signingKeys` entry
    /// granting it the pack's owner namespace (`community.<owner>.*`), when the registry does not
    /// know the key: the registry's maintainers review that grant in your pull request.
    #[arg(long)]
    pub add_key: bool,
}

/// `https://packs.openwop.dev/<pack>/<version>/<file>`.
pub fn schema_id(name: &str, version: &str, file: &str) -> String {
    format!("{SCHEMA_ORIGIN}/{name}/{version}/{file}")
}

/// `sha256-<base64>` of `bytes` (the registry's and the installer's integrity).
pub fn integrity(bytes: &[u8]) -> String {
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes))
    )
}

/// Refuses to overwrite a published version with other bytes: a published version is immutable.
fn write_once(staging: &Staging, rel: &str, bytes: &[u8], version: &str) -> Result<()> {
    let path = staging.dir.join(rel);
    if path.is_file() && read(&path)? != bytes {
        return Err(WopError::failed(format!(
            "{}: version {version} is already published with other content; a published version is immutable: bump the pack's version",
            staging.root.join(rel).display()
        )));
    }
    staging.write(rel, bytes)
}

/// Writes one form's tree: tarball, signature, version manifest (its `publishedAt` kept from an
/// earlier publish of the same bytes) and, unless the registry's own script writes it, the
/// pack's `index.json`.
fn write_form(staging: &Staging, release: &Release, form: &Form, own_index: bool) -> Result<()> {
    let (name, version, tree) = (&release.name, &release.version, form.tree);
    let base = format!("registry/{tree}/packs/{name}");
    write_once(
        staging,
        &format!("{base}/-/{version}.tgz"),
        &form.tgz,
        version,
    )?;
    staging.write(&format!("{base}/-/{version}.sig"), &form.signature)?;
    let vm_rel = format!("{base}/-/{version}.json");
    let published_at = std::fs::read(staging.dir.join(&vm_rel))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.get("publishedAt").cloned())
        .unwrap_or_else(|| json!(index::now_rfc3339()));
    let mut vm = form.version_manifest.clone();
    vm["publishedAt"] = published_at;
    staging.write(&vm_rel, &pretty(&vm))?;
    if own_index {
        let path = staging.dir.join(format!("{base}/index.json"));
        let doc = index::pack_index(&path, &vm, tree)?;
        staging.write(&format!("{base}/index.json"), &pretty(&doc))?;
    }
    Ok(())
}

/// `cargo wop publish`: answers the path of the v1 version manifest (the registry's tree).
pub fn run(args: &PublishArgs) -> Result<PathBuf> {
    let folder = PackFolder::open(args.sign.pack_dir.as_deref())?;
    if folder.is_folder_form()? {
        return Err(WopError::usage(format!(
            "{}: the folder form (the addon beside index.mjs) cannot be published: a registry install keeps only pack.json, index.mjs, schemas/, keys/ and prompts/; build the single-file form (`cargo wop build` without --folder)",
            folder.dir.display()
        )));
    }
    let (key, key_id) = key_and_id(&args.sign.key, args.sign.key_id.as_deref())?;
    let release = Release::of(&folder, &key, &key_id)?;
    let (name, version) = (release.name.clone(), release.version.clone());
    eprintln!(
        "publish: {name}@{version}: {} schema $id(s) set to {}<file> (the build folder is not changed)",
        release.ids_set,
        release.schema_base()
    );
    if !release.left_out.is_empty() {
        eprintln!(
            "publish: not in the tarball (the registry carries only pack.json, index.mjs, README.md, LICENSE, schemas/, keys/, prompts/): {}",
            release.left_out.join(", ")
        );
    }
    for dropped in &release.v1_dropped {
        eprintln!("publish: the v1 form leaves out {dropped}");
    }
    for form in [&release.v1, &release.v2] {
        eprintln!(
            "publish: {} tarball of {} files, {} bytes, {}, pack.json signed with {key_id} ({})",
            form.tree,
            form.entries.len(),
            form.tgz.len(),
            form.integrity,
            form.version_manifest["signing"]
        );
    }
    let staging = Staging::new(&args.registry)?;
    for line in grant::ensure(&staging, &key.verifying_key(), &key_id, &name, args.add_key)? {
        eprintln!("publish: {line}");
    }
    let checkout = crate::check::is_checkout(&staging.dir);
    let source = format!("packs/{name}");
    staging.remove_dir(&source)?;
    for e in &release.v1.entries {
        staging.write(&format!("{source}/{}", e.path), &e.bytes)?;
    }
    write_form(&staging, &release, &release.v1, !checkout)?;
    if !args.v1_only {
        write_form(&staging, &release, &release.v2, true)?;
    }
    if checkout {
        for script in [
            "registry/scripts/build-index.mjs",
            "registry/scripts/generate-sbom.mjs",
        ] {
            eprintln!("publish: running the registry's `node {script}`");
            staging.run_script(script, &[])?;
        }
    } else {
        eprintln!(
            "publish: {} is not a checkout of openwop-registry (no registry/scripts/build-index.mjs): the pack's index.json and schema copies are this tool's, and there is no registry-wide index or SBOM",
            staging.root.display()
        );
        for e in release
            .v1
            .entries
            .iter()
            .filter(|e| e.path.starts_with("schemas/"))
        {
            let file = &e.path["schemas/".len()..];
            staging.write(&format!("registry/{name}/{version}/{file}"), &e.bytes)?;
        }
    }
    eprintln!(
        "publish: staged; running the gates before anything is written to the registry folder"
    );
    crate::check::check_version(&staging.dir, &name, &version)?;
    if checkout {
        crate::check::registry_gates(&staging.dir)?;
    }
    let root = staging.root.clone();
    let changed = staging.commit(&[source])?;
    eprintln!(
        "publish: {} file(s) written to {}; commit them and open a pull request",
        changed.len(),
        root.display()
    );
    Ok(root.join(format!("registry/v1/packs/{name}/-/{version}.json")))
}
