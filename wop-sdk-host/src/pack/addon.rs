//! The addons a pack folder carries: the one built here, for here, and in the single-file form
//! builds for other platforms made on other machines (`--addon-for PLATFORM-ARCH=FILE`). Each is
//! checked to be a native library for the platform and architecture it is given for, so a file
//! given for the wrong machine is refused when the pack is written, not when a host loads it.

use super::error::PackError;
use super::native;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::str::FromStr;

/// Node's `process.platform` values.
const PLATFORMS: &[&str] = &[
    "aix", "android", "darwin", "freebsd", "linux", "openbsd", "sunos", "win32",
];
/// Node's `process.arch` values.
const ARCHS: &[&str] = &[
    "arm", "arm64", "ia32", "loong64", "mips", "mipsel", "ppc64", "riscv64", "s390x", "x64",
];

/// An addon built on another machine, for the single-file form: `PLATFORM-ARCH=FILE`, the
/// platform and architecture as Node names them (`linux-arm64`, `darwin-arm64`, `win32-x64`),
/// the file the `cdylib` that machine built (`cargo wop build --folder` writes it as
/// `<pack>.node`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformAddon {
    /// `process.platform`.
    pub platform: String,
    /// `process.arch`.
    pub arch: String,
    /// The addon file.
    pub file: PathBuf,
}

impl FromStr for PlatformAddon {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (target, file) = s.split_once('=').ok_or_else(|| {
            format!("`{s}`: the form is PLATFORM-ARCH=FILE, e.g. linux-arm64=lib.so")
        })?;
        let (platform, arch) = target
            .split_once('-')
            .ok_or_else(|| format!("`{target}`: the form is PLATFORM-ARCH, e.g. linux-arm64"))?;
        if !PLATFORMS.contains(&platform) {
            return Err(format!(
                "`{platform}`: not a Node platform (process.platform: {})",
                PLATFORMS.join(", ")
            ));
        }
        if !ARCHS.contains(&arch) {
            return Err(format!(
                "`{arch}`: not a Node architecture (process.arch: {})",
                ARCHS.join(", ")
            ));
        }
        if file.is_empty() {
            return Err(format!("`{s}`: the file is empty"));
        }
        Ok(Self {
            platform: platform.to_owned(),
            arch: arch.to_owned(),
            file: PathBuf::from(file),
        })
    }
}

/// This machine's platform and architecture as Node names them (`process.platform`,
/// `process.arch`): the addon was built here, for here.
pub(super) fn node_platform() -> (&'static str, &'static str) {
    let platform = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    };
    (platform, arch)
}

/// Reads `other`'s addon and checks that it is a whole native library for its platform and
/// architecture ([`native::check`]), and not for this machine's, whose addon is `here`.
fn read_other(other: &PlatformAddon, here: &str) -> Result<Vec<u8>, PackError> {
    let target = format!("{}-{}", other.platform, other.arch);
    let flag = format!("--addon-for {target}={}", other.file.display());
    if (other.platform.as_str(), other.arch.as_str()) == node_platform() {
        return Err(PackError::usage(format!(
            "{flag}: {target} is this machine's platform: its addon is {here}, not one given with --addon-for"
        )));
    }
    let bytes = std::fs::read(&other.file)
        .map_err(|e| PackError::usage(format!("{flag}: cannot read the addon: {e}")))?;
    native::check(&bytes, &other.platform, &other.arch)
        .map_err(|rule| PackError::usage(format!("{flag}: {rule}")))?;
    Ok(bytes)
}

/// An addon the pack carries: for which platform, its SHA-256 (hex) and its bytes.
pub(super) struct Carried<'a> {
    pub(super) platform: &'a str,
    pub(super) arch: &'a str,
    pub(super) sha256: String,
    pub(super) bytes: std::borrow::Cow<'a, [u8]>,
}

impl Carried<'_> {
    /// `PLATFORM-ARCH`.
    pub(super) fn target(&self) -> String {
        format!("{}-{}", self.platform, self.arch)
    }
}

/// Every addon the pack carries: this machine's (`here`, first, named `here_name` in errors: the
/// flag that gave it, or what built it), then each of `others`, read ([`read_other`]); each
/// checked whole ([`native::check`]); one given twice for a platform is refused.
pub(super) fn carried<'a>(
    here: &'a [u8],
    here_name: &str,
    others: &'a [PlatformAddon],
) -> Result<Vec<Carried<'a>>, PackError> {
    let sha = |b: &[u8]| wop_sdk::hex::of_bytes(&Sha256::digest(b));
    let (platform, arch) = node_platform();
    native::check(here, platform, arch).map_err(|rule| {
        PackError::usage(format!(
            "{here_name} (this machine's, {platform}-{arch}): {rule}"
        ))
    })?;
    let mut all = vec![Carried {
        platform,
        arch,
        sha256: sha(here),
        bytes: here.into(),
    }];
    for other in others {
        if all[1..]
            .iter()
            .any(|c| (c.platform, c.arch) == (other.platform.as_str(), other.arch.as_str()))
        {
            return Err(PackError::usage(format!(
                "--addon-for {}-{}: given twice",
                other.platform, other.arch
            )));
        }
        let bytes = read_other(other, here_name)?;
        all.push(Carried {
            platform: &other.platform,
            arch: &other.arch,
            sha256: sha(&bytes),
            bytes: bytes.into(),
        });
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::super::test_elf::{AARCH64, shared_object};
    use super::*;

    const HERE: &str = "the addon built here (lib.so)";

    #[test]
    fn platform_addons_parse_and_off_grammar_ones_name_the_rule() {
        let a: PlatformAddon = "linux-arm64=out/lib.so".parse().expect("parses");
        assert_eq!((a.platform.as_str(), a.arch.as_str()), ("linux", "arm64"));
        assert_eq!(a.file, PathBuf::from("out/lib.so"));
        for (bad, rule) in [
            ("linux-arm64", "PLATFORM-ARCH=FILE"),
            ("linuxarm64=x", "PLATFORM-ARCH"),
            ("macos-arm64=x", "not a Node platform"),
            ("linux-aarch64=x", "not a Node architecture"),
            ("linux-arm64=", "the file is empty"),
        ] {
            let e = bad.parse::<PlatformAddon>().expect_err(bad);
            assert!(e.contains(rule), "{bad}: {e}");
        }
    }

    #[test]
    fn an_addon_for_the_wrong_machine_or_this_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("wop-pack-addon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("arm64.so");
        let elf = shared_object(AARCH64, 64);
        std::fs::write(&file, &elf).expect("write");
        let given = |target: &str| PlatformAddon {
            file: file.clone(),
            ..format!("{target}=x").parse().expect("parses")
        };
        let e = read_other(&given("linux-riscv64"), HERE).expect_err("wrong arch");
        assert!(
            e.message
                .contains("the file is ELF for arm64; linux-riscv64 loads ELF for riscv64"),
            "{}",
            e.message
        );
        let e = read_other(&given("darwin-arm64"), HERE).expect_err("wrong format");
        assert!(
            e.message.contains("darwin-arm64 loads Mach-O for arm64"),
            "{}",
            e.message
        );
        let (p, a) = node_platform();
        if (p, a) != ("linux", "arm64") {
            assert_eq!(read_other(&given("linux-arm64"), HERE).expect("fits"), elf);
        }
        let e = read_other(&given(&format!("{p}-{a}")), HERE).expect_err("this machine");
        assert_eq!(
            e.message,
            format!(
                "--addon-for {p}-{a}={}: {p}-{a} is this machine's platform: its addon is {HERE}, not one given with --addon-for",
                file.display()
            )
        );
        // A header alone: the 20-byte file.
        std::fs::write(&file, &elf[..20]).expect("write");
        let e = read_other(&given("linux-arm64"), HERE).expect_err("a header");
        assert!(
            e.message.ends_with(
                ": the file is truncated: its ELF header needs 64 bytes but the file has 20"
            ),
            "{}",
            e.message
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
