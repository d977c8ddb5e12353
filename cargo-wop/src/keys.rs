//! `cargo wop keygen` and the keys the other commands read: an Ed25519 key pair, the private
//! key as PKCS#8 v1 PEM (RFC 8410's `OneAsymmetricKey` without the optional public key: the form
//! `openssl genpkey -algorithm ed25519` writes and the only one Node 20's OpenSSL 3.0 reads, so
//! the registry's `build-pack-tarball.mjs --key` takes the same file; mode 0600, outside any git
//! repository), the public key as SPKI PEM (the form of the registry's
//! `registry/keys/<keyId>.pub`, which Node's `createPublicKey` reads). Both PKCS#8 forms are read.

use crate::error::{Result, WopError, write};
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `cargo wop keygen`'s options.
#[derive(Clone, Debug, clap::Args)]
pub struct KeygenArgs {
    /// The key id: the registry's `signingKeys[].keyId` and the file name of the public key
    /// (`registry/keys/<keyId>.pub`). Lowercase letters, digits, `.`, `_` and `-`.
    #[arg(long, value_name = "ID")]
    pub key_id: String,
    /// A namespace the key may sign, as the registry writes it (`community.alice.*`); repeat
    /// for several. Default: the owner namespace of --pack.
    #[arg(long = "namespace", value_name = "PATTERN")]
    pub namespaces: Vec<String>,
    /// The pack the key signs: its owner namespace (`community.alice.*` for
    /// `community.alice.mypack`) is the default --namespace.
    #[arg(long, value_name = "NAME")]
    pub pack: Option<String>,
    /// Who operates the key (the entry's `operator`).
    #[arg(long, value_name = "TEXT")]
    pub operator: Option<String>,
    /// The folder of the key files. Default: `$XDG_CONFIG_HOME/wop/keys` (else
    /// `$HOME/.config/wop/keys`). Refused inside a git repository.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Whether `id` is a key id.
pub fn key_id_problem(id: &str) -> Option<&'static str> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c);
    if id.is_empty() || id.len() > 128 {
        Some("a key id is 1 to 128 characters")
    } else if !id.chars().all(ok_char) {
        Some("a key id holds lowercase letters, digits, `.`, `_` and `-`")
    } else if !id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        Some("a key id starts with a letter or a digit")
    } else {
        None
    }
}

/// Whether the registry's namespace `pattern` (`community.alice.*` or an exact name) covers
/// the pack `name`.
pub fn covers(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix(".*") {
        Some(prefix) => name.starts_with(prefix) && name[prefix.len()..].starts_with('.'),
        None => pattern == name,
    }
}

/// The owner namespace of a pack name: `community.alice.*` for `community.alice.mypack`.
pub fn owner_namespace(pack: &str) -> Option<String> {
    let mut parts = pack.split('.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(ns), Some(owner), Some(_)) if !ns.is_empty() && !owner.is_empty() => {
            Some(format!("{ns}.{owner}.*"))
        }
        _ => None,
    }
}

/// The default key folder.
pub fn default_key_dir() -> Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("wop/keys"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".config/wop/keys"))
        .ok_or_else(|| {
            WopError::usage(
                "neither XDG_CONFIG_HOME nor HOME is set: give the key folder with --out",
            )
        })
}

/// The git repository `dir` is inside, if any.
fn repository_of(dir: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(dir).ok()?;
    abs.ancestors()
        .find(|a| a.join(".git").exists())
        .map(Path::to_path_buf)
}

fn write_private(path: &Path, pem: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| {
        WopError::usage(format!(
            "{}: cannot create the private key: {e} (an existing key is never overwritten)",
            path.display()
        ))
    })?;
    std::io::Write::write_all(&mut file, pem.as_bytes())
        .map_err(|e| WopError::failed(format!("{}: cannot write: {e}", path.display())))
}

/// The registry's `signingKeys` entry for a key.
pub fn signing_keys_entry(key_id: &str, namespaces: &[String], operator: Option<&str>) -> Value {
    json!({
        "keyId": key_id,
        "algorithm": "ed25519",
        "publicKeyUrl": format!("/keys/{key_id}.pub"),
        "permittedNamespaces": namespaces,
        "operator": operator.unwrap_or("the pack's author"),
        "status": "active",
    })
}

/// `cargo wop keygen`: writes `<dir>/<keyId>.pem` (private) and `<dir>/<keyId>.pub` (public);
/// answers the `signingKeys` entry (printed on stdout by the caller).
pub fn keygen(args: &KeygenArgs) -> Result<Value> {
    if let Some(rule) = key_id_problem(&args.key_id) {
        return Err(WopError::usage(format!(
            "--key-id {:?}: {rule}",
            args.key_id
        )));
    }
    let mut namespaces = args.namespaces.clone();
    if namespaces.is_empty() {
        let pack = args.pack.as_deref().ok_or_else(|| {
            WopError::usage("give --namespace PATTERN (e.g. community.alice.*) or --pack NAME: the namespaces the key may sign")
        })?;
        namespaces.push(owner_namespace(pack).ok_or_else(|| {
            WopError::usage(format!(
                "--pack {pack:?}: a pack name is namespace.owner.pack"
            ))
        })?);
    }
    for ns in &namespaces {
        let bare = ns.strip_suffix(".*").unwrap_or(ns);
        if bare.split('.').count() < 2 || bare.split('.').any(str::is_empty) {
            return Err(WopError::usage(format!(
                "--namespace {ns:?}: a namespace is `namespace.owner.*` or a pack name"
            )));
        }
    }
    if let Some(pack) = &args.pack
        && !namespaces.iter().any(|ns| covers(ns, pack))
    {
        return Err(WopError::usage(format!(
            "--namespace: none of {namespaces:?} covers the pack {pack}"
        )));
    }
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => default_key_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| WopError::usage(format!("{}: cannot create: {e}", dir.display())))?;
    if let Some(repo) = repository_of(&dir) {
        return Err(WopError::usage(format!(
            "{}: inside the git repository {}: a private key lives outside any repository (the default is $XDG_CONFIG_HOME/wop/keys)",
            dir.display(),
            repo.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    let mut seed = [0u8; 32];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut seed);
    let key = SigningKey::from_bytes(&seed);
    let private = private_pem(&key)?;
    let public = public_pem(&key.verifying_key())?;
    let private_path = dir.join(format!("{}.pem", args.key_id));
    let public_path = dir.join(format!("{}.pub", args.key_id));
    if public_path.exists() {
        return Err(WopError::usage(format!(
            "{}: exists; an existing key is never overwritten (choose another --key-id)",
            public_path.display()
        )));
    }
    write_private(&private_path, &private)?;
    write(&public_path, public.as_bytes())?;
    eprintln!(
        "keygen: private key {} (mode 0600: keep it secret, back it up)",
        private_path.display()
    );
    eprintln!(
        "keygen: public key  {} (the registry's registry/keys/{}.pub)",
        public_path.display(),
        args.key_id
    );
    eprintln!(
        "keygen: add this entry to the registry's .well-known/openwop-registry.json `signingKeys`:"
    );
    Ok(signing_keys_entry(
        &args.key_id,
        &namespaces,
        args.operator.as_deref(),
    ))
}

/// The PKCS#8 v1 PEM of a private key: the seed alone, without the public key that PKCS#8 v2
/// adds (Node 20 / OpenSSL 3.0 refuse that form: `DECODER routines::unsupported`).
pub fn private_pem(key: &SigningKey) -> Result<String> {
    let bytes = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    };
    bytes
        .to_pkcs8_pem(LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|e| WopError::failed(format!("cannot encode the private key: {e}")))
}

/// The SPKI PEM of a public key.
pub fn public_pem(key: &VerifyingKey) -> Result<String> {
    key.to_public_key_pem(LineEnding::LF)
        .map_err(|e| WopError::failed(format!("cannot encode the public key: {e}")))
}

/// The private key in `path` (PKCS#8 PEM, as `keygen` writes it).
pub fn load_signing_key(path: &Path) -> Result<SigningKey> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| WopError::usage(format!("--key {}: cannot read: {e}", path.display())))?;
    SigningKey::from_pkcs8_pem(&text).map_err(|e| {
        WopError::usage(format!(
            "--key {}: not an Ed25519 private key in PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`): {e}",
            path.display()
        ))
    })
}

/// The public key in `path` (SPKI PEM).
pub fn load_public_key(path: &Path) -> Result<VerifyingKey> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| WopError::failed(format!("{}: cannot read: {e}", path.display())))?;
    VerifyingKey::from_public_key_pem(&text).map_err(|e| {
        WopError::failed(format!(
            "{}: not an Ed25519 public key in SPKI PEM (`-----BEGIN PUBLIC KEY-----`): {e}",
            path.display()
        ))
    })
}

/// The key id of a private key file: its name without `.pem`.
pub fn key_id_of(path: &Path) -> Option<String> {
    path.file_name()?
        .to_str()?
        .strip_suffix(".pem")
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_cover_by_prefix_or_exact_name() {
        assert!(covers("community.alice.*", "community.alice.pack"));
        assert!(!covers("community.alice.*", "community.alicex.pack"));
        assert!(!covers("community.alice.*", "community.alice"));
        assert!(covers("community.alice.pack", "community.alice.pack"));
        assert_eq!(
            owner_namespace("community.alice.pack").as_deref(),
            Some("community.alice.*")
        );
        assert_eq!(owner_namespace("community.alice"), None);
    }

    #[test]
    fn key_ids() {
        assert_eq!(key_id_problem("alice-1"), None);
        assert!(key_id_problem("Alice").is_some());
        assert!(key_id_problem("-a").is_some());
        assert!(key_id_problem("a/b").is_some());
    }

    #[test]
    fn keys_round_trip_through_pem_and_a_repository_is_refused() {
        let dir = std::env::temp_dir().join(format!("wop-keys-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args = KeygenArgs {
            key_id: "alice-1".into(),
            namespaces: vec![],
            pack: Some("community.alice.pack".into()),
            operator: None,
            out: Some(dir.clone()),
        };
        let entry = keygen(&args).expect("keygen");
        assert_eq!(entry["permittedNamespaces"], json!(["community.alice.*"]));
        let key = load_signing_key(&dir.join("alice-1.pem")).expect("private");
        // PKCS#8 v1: version 0, the algorithm, the 32-byte seed, and nothing after it (48 bytes).
        let pem = std::fs::read_to_string(dir.join("alice-1.pem")).expect("pem");
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        use base64::Engine as _;
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("base64");
        assert_eq!(der.len(), 48, "{der:02x?}");
        assert_eq!(
            &der[..16],
            &[
                0x30, 0x2e, 2, 1, 0, 0x30, 5, 6, 3, 0x2b, 0x65, 0x70, 4, 0x22, 4, 0x20
            ]
        );
        // A PKCS#8 v2 key (with its public key, as keygen wrote before) is still read.
        let v2 = key.to_pkcs8_pem(LineEnding::LF).expect("v2");
        assert_eq!(
            SigningKey::from_pkcs8_pem(&v2).expect("v2 read").to_bytes(),
            key.to_bytes()
        );
        let public = load_public_key(&dir.join("alice-1.pub")).expect("public");
        assert_eq!(key.verifying_key(), public);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("alice-1.pem"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = keygen(&args).expect_err("never overwritten");
        assert!(
            again.message.contains("never overwritten"),
            "{}",
            again.message
        );
        std::fs::create_dir_all(dir.join("repo/.git")).expect("repo");
        let inside = KeygenArgs {
            out: Some(dir.join("repo/keys")),
            ..args
        };
        let e = keygen(&inside).expect_err("inside a repository");
        assert!(e.message.contains("git repository"), "{}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
