//! `cargo wop sign`: the v2 signature. `pack.json` is rewritten as its RFC 8785 (JCS) bytes with
//! `signing: {keyId, scheme: "ed25519-canonical-json"}` (the manifest schema's `$defs/Signing`),
//! and the detached 64-byte Ed25519 signature over exactly those bytes is written to
//! `keys/pack.json.sig`. Because the file is its own canonical form, a verifier that checks the
//! raw `pack.json` bytes (openwop-app's installer, the registry's `verify-signatures.mjs`) and
//! one that re-canonicalizes (the v2 rule) check the same bytes.

use crate::error::{Result, WopError, json, write};
use crate::folder::PackFolder;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The one v2 signing scheme.
pub const SCHEME: &str = "ed25519-canonical-json";
/// Where the signature sits in the pack folder (and so in the tarball).
pub const SIGNATURE_FILE: &str = "keys/pack.json.sig";

/// `cargo wop sign`'s options.
#[derive(Clone, Debug, clap::Args)]
pub struct SignArgs {
    /// The pack folder (default: the one folder `cargo wop build` wrote under `target/wop/`).
    #[arg(long, value_name = "DIR")]
    pub pack_dir: Option<PathBuf>,
    /// The private key (PKCS#8 PEM, as `cargo wop keygen` writes it).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The key id (default: the key file's name without `.pem`).
    #[arg(long, value_name = "ID")]
    pub key_id: Option<String>,
}

/// The RFC 8785 (JCS) bytes of `v`.
pub fn canonical(v: &Value) -> Result<Vec<u8>> {
    serde_json_canonicalizer::to_vec(v)
        .map_err(|e| WopError::failed(format!("cannot write canonical JSON (RFC 8785): {e}")))
}

/// The key and its id from `--key` and `--key-id`.
pub fn key_and_id(key: &Path, key_id: Option<&str>) -> Result<(SigningKey, String)> {
    let id = match key_id {
        Some(id) => id.to_owned(),
        None => crate::keys::key_id_of(key).ok_or_else(|| {
            WopError::usage(format!(
                "--key {}: the key id is the file name without `.pem`; give --key-id",
                key.display()
            ))
        })?,
    };
    if let Some(rule) = crate::keys::key_id_problem(&id) {
        return Err(WopError::usage(format!("--key-id {id:?}: {rule}")));
    }
    Ok((crate::keys::load_signing_key(key)?, id))
}

/// Signs the pack folder: canonical `pack.json` with its `signing` block, and
/// `keys/pack.json.sig`. Answers the signed `pack.json` bytes.
pub fn sign_folder(folder: &PackFolder, key: &SigningKey, key_id: &str) -> Result<Vec<u8>> {
    let path = folder.dir.join("pack.json");
    let mut manifest = json(&path)?;
    let Some(object) = manifest.as_object_mut() else {
        return Err(WopError::failed(format!(
            "{}: not a JSON object",
            path.display()
        )));
    };
    object.insert("signing".into(), json!({"keyId": key_id, "scheme": SCHEME}));
    let bytes = canonical(&manifest)?;
    let signature = key.sign(&bytes);
    write(&path, &bytes)?;
    write(&folder.dir.join(SIGNATURE_FILE), &signature.to_bytes())?;
    Ok(bytes)
}

/// Whether `signature` (64 bytes) is `key`'s Ed25519 signature over `bytes`.
pub fn verifies(bytes: &[u8], signature: &[u8], key: &VerifyingKey) -> bool {
    <[u8; 64]>::try_from(signature)
        .map(|s| key.verify(bytes, &Signature::from_bytes(&s)).is_ok())
        .unwrap_or(false)
}

/// `cargo wop sign`.
pub fn run(args: &SignArgs) -> Result<PathBuf> {
    let folder = PackFolder::open(args.pack_dir.as_deref())?;
    let (key, id) = key_and_id(&args.key, args.key_id.as_deref())?;
    sign_folder(&folder, &key, &id)?;
    eprintln!(
        "sign: {}@{} signed with {id} ({SCHEME}); signature {}",
        folder.name,
        folder.version,
        folder.dir.join(SIGNATURE_FILE).display()
    );
    Ok(folder.dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_bytes_are_rfc_8785() {
        let v =
            json!({"b": [1.0, 1e21, 1e-7, "é\u{1f}"], "a": {"z": null, "\u{e9}": true, "A": 0}});
        let text = String::from_utf8(canonical(&v).expect("canonical")).expect("utf-8");
        assert_eq!(
            text,
            "{\"a\":{\"A\":0,\"z\":null,\"é\":true},\"b\":[1,1e+21,1e-7,\"é\\u001f\"]}"
        );
    }

    #[test]
    fn a_signature_verifies_only_over_the_signed_bytes() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let sig = key.sign(b"pack.json bytes").to_bytes();
        assert!(verifies(b"pack.json bytes", &sig, &key.verifying_key()));
        assert!(!verifies(b"pack.json bytes ", &sig, &key.verifying_key()));
        assert!(!verifies(
            b"pack.json bytes",
            &sig[..63],
            &key.verifying_key()
        ));
    }
}
