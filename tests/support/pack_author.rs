//! A pack author's session with the real `cargo-wop` binary: `cargo wop new` in a temporary
//! folder ([`scaffold`]), `cargo wop build` (single-file form), `cargo wop keygen` outside any
//! repository, `cargo wop dev` started as a child process ([`cargo_wop_command`]). The
//! scaffolded crate builds in this workspace's target folder with the SDK's lockfile, so the
//! dependencies already built for the workspace are reused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The workspace's target folder (the running test binary's `<target>/<profile>/deps/..`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.ancestors().nth(3).expect("<target>").to_path_buf()
}

/// `out`, asserted successful (`what` and its standard error otherwise).
pub fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `cargo-wop` as cargo built it in the workspace's target folder (see [`build_cargo_wop`]).
pub fn cargo_wop_bin() -> PathBuf {
    target_dir()
        .join("debug")
        .join(format!("cargo-wop{}", std::env::consts::EXE_SUFFIX))
}

/// `cargo wop ARGS` in `dir`, as cargo runs the built `cargo-wop`, not started: the scaffolded
/// crate builds in the workspace's target folder.
pub fn cargo_wop_command(args: &[&str], dir: &Path) -> Command {
    let mut cmd = Command::new(cargo_wop_bin());
    cmd.arg("wop")
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir());
    cmd
}

/// `cargo wop ARGS` run in `dir`, as cargo runs the built `cargo-wop`.
pub fn cargo_wop(args: &[&str], dir: &Path) -> Output {
    cargo_wop_command(args, dir)
        .output()
        .expect("cargo-wop runs")
}

/// `cargo build -p cargo-wop` by the same cargo, once in this test process.
pub fn build_cargo_wop() {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        ok(
            Command::new(&cargo)
                .args(["build", "--quiet", "-p", "cargo-wop"])
                .current_dir(ROOT)
                .output()
                .expect("cargo runs"),
            "cargo build -p cargo-wop",
        );
    });
}

/// `cargo wop new NAME --sdk-path <this checkout>` in `tmp` (`cargo-wop` built first): the new
/// crate's folder, its pack `community.local.NAME`.
pub fn scaffold(tmp: &Path, name: &str) -> PathBuf {
    build_cargo_wop();
    ok(
        cargo_wop(&["new", name, "--sdk-path", ROOT], tmp),
        "cargo wop new",
    );
    tmp.join(name)
}

/// What [`new_pack`] made.
pub struct Authored {
    /// The temporary folder of this test process.
    pub tmp: PathBuf,
    /// The single-file pack folder `cargo wop build` wrote.
    pub pack_dir: PathBuf,
    /// The folder form's output folder (`--folder`), when asked for.
    pub dev: PathBuf,
    /// The private key (`<keys>/<key id>.pem`).
    pub key: PathBuf,
}

/// A temporary folder `<prefix><pid>` for this test process; those of processes that are gone
/// are removed (a static world outlives every test and is never dropped).
pub fn temp_world(prefix: &str) -> PathBuf {
    for entry in std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix(prefix)
            && pid.parse::<u32>().is_ok()
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let tmp = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("temp dir");
    tmp
}

/// `cargo wop new` of the pack `pack` in `tmp`, both forms built (`--provider mock --model
/// mock-1`), and a key `key_id` made for it.
pub fn new_pack(tmp: &Path, pack: &str, key_id: &str) -> Authored {
    build_cargo_wop();
    let krate = tmp.join("hello-pack");
    ok(
        cargo_wop(
            &["new", "hello-pack", "--pack", pack, "--sdk-path", ROOT],
            tmp,
        ),
        "cargo wop new",
    );
    let (dist, dev) = (tmp.join("dist"), tmp.join("dev"));
    for (out, folder) in [(&dist, false), (&dev, true)] {
        let mut args = vec!["build", "--provider", "mock", "--model", "mock-1", "--out"];
        args.push(out.to_str().expect("utf-8 path"));
        if folder {
            args.push("--folder");
        }
        ok(cargo_wop(&args, &krate), "cargo wop build");
    }
    let keys = tmp.join("keys");
    ok(
        cargo_wop(
            &[
                "keygen",
                "--key-id",
                key_id,
                "--pack",
                pack,
                "--out",
                keys.to_str().expect("utf-8"),
            ],
            tmp,
        ),
        "cargo wop keygen",
    );
    Authored {
        tmp: tmp.to_path_buf(),
        pack_dir: dist.join(pack),
        dev,
        key: keys.join(format!("{key_id}.pem")),
    }
}

/// `cargo wop publish --registry REGISTRY --pack-dir PACK_DIR --key KEY EXTRA…`, run in `dir`.
pub fn publish(registry: &Path, pack_dir: &Path, key: &Path, extra: &[&str], dir: &Path) -> Output {
    let mut args = vec![
        "publish",
        "--registry",
        registry.to_str().expect("utf-8"),
        "--pack-dir",
        pack_dir.to_str().expect("utf-8"),
        "--key",
        key.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    cargo_wop(&args, dir)
}
