//! The addons a pack folder carries: the one built here, for here, and in the single-file form
//! builds for other platforms made on other machines (`--addon-for PLATFORM-ARCH=FILE`). Each is
//! checked to be a native library for the platform and architecture it is given for, so a file
//! given for the wrong machine is refused when the pack is written, not when a host loads it.

use super::error::PackError;
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

fn u16_at(b: &[u8], at: usize, little: bool) -> Option<u16> {
    let two: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(if little {
        u16::from_le_bytes(two)
    } else {
        u16::from_be_bytes(two)
    })
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The object format and Node architecture of a native library, from its header: ELF
/// (`e_machine`), Mach-O (`cputype`) or PE (`Machine`). `None` when it is none of them.
fn native_kind(b: &[u8]) -> Option<(&'static str, &'static str)> {
    if b.starts_with(b"\x7fELF") {
        let little = b.get(5) == Some(&1);
        let arch = match u16_at(b, 18, little)? {
            3 => "ia32",
            8 => "mips",
            20 | 21 => "ppc64",
            22 => "s390x",
            40 => "arm",
            62 => "x64",
            183 => "arm64",
            243 => "riscv64",
            258 => "loong64",
            _ => "unknown",
        };
        return Some(("ELF", arch));
    }
    if b.starts_with(&[0xcf, 0xfa, 0xed, 0xfe]) {
        let arch = match u32_at(b, 4)? {
            0x0100_0007 => "x64",
            0x0100_000c => "arm64",
            _ => "unknown",
        };
        return Some(("Mach-O", arch));
    }
    if b.starts_with(b"MZ") {
        let pe = u32_at(b, 0x3c)? as usize;
        if b.get(pe..pe + 4)? != b"PE\0\0" {
            return None;
        }
        let arch = match u16_at(b, pe + 4, true)? {
            0x8664 => "x64",
            0xaa64 => "arm64",
            0x014c => "ia32",
            _ => "unknown",
        };
        return Some(("PE", arch));
    }
    None
}

/// The object format a platform loads.
fn format_of(platform: &str) -> &'static str {
    match platform {
        "darwin" => "Mach-O",
        "win32" => "PE",
        _ => "ELF",
    }
}

/// Reads `other`'s addon and checks that it is a native library for its platform and
/// architecture, and not for this machine's (whose addon is the one built here).
fn read_other(other: &PlatformAddon) -> Result<Vec<u8>, PackError> {
    let flag = format!(
        "--addon-for {}-{}={}",
        other.platform,
        other.arch,
        other.file.display()
    );
    if (other.platform.as_str(), other.arch.as_str()) == node_platform() {
        return Err(PackError::usage(format!(
            "{flag}: this machine's platform: its addon is the one built here (`--addon`)"
        )));
    }
    let bytes = std::fs::read(&other.file)
        .map_err(|e| PackError::usage(format!("{flag}: cannot read the addon: {e}")))?;
    let want = format_of(&other.platform);
    match native_kind(&bytes) {
        None => Err(PackError::usage(format!(
            "{flag}: not a native library (no ELF, Mach-O or PE header)"
        ))),
        Some((format, arch)) if format != want || arch != other.arch => {
            Err(PackError::usage(format!(
                "{flag}: the file is {format} for {arch}; {}-{} loads {want} for {}",
                other.platform, other.arch, other.arch
            )))
        }
        Some(_) => Ok(bytes),
    }
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

/// Every addon the pack carries: this machine's (`here`, first), then each of `others`, read and
/// checked ([`read_other`]); one given twice for a platform is refused.
pub(super) fn carried<'a>(
    here: &'a [u8],
    others: &'a [PlatformAddon],
) -> Result<Vec<Carried<'a>>, PackError> {
    let sha = |b: &[u8]| wop_sdk::hex::of_bytes(&Sha256::digest(b));
    let (platform, arch) = node_platform();
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
        let bytes = read_other(other)?;
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
/// The first bytes of an ELF shared object for `machine`.
pub(super) fn elf(machine: u16) -> Vec<u8> {
    let mut b = b"\x7fELF\x02\x01\x01".to_vec();
    b.resize(18, 0);
    b.extend_from_slice(&machine.to_le_bytes());
    b.resize(64, 0);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn headers_name_their_format_and_architecture() {
        assert_eq!(native_kind(&elf(183)), Some(("ELF", "arm64")));
        assert_eq!(native_kind(&elf(62)), Some(("ELF", "x64")));
        let mut macho = vec![0xcf, 0xfa, 0xed, 0xfe];
        macho.extend_from_slice(&0x0100_000c_u32.to_le_bytes());
        assert_eq!(native_kind(&macho), Some(("Mach-O", "arm64")));
        let mut pe = b"MZ".to_vec();
        pe.resize(0x3c, 0);
        pe.extend_from_slice(&0x40_u32.to_le_bytes());
        pe.extend_from_slice(b"PE\0\0");
        pe.extend_from_slice(&0x8664_u16.to_le_bytes());
        assert_eq!(native_kind(&pe), Some(("PE", "x64")));
        assert_eq!(native_kind(b"#!/bin/sh"), None);
        assert_eq!(
            native_kind(b"\x7fEL"),
            None,
            "a short file is not read past its end"
        );
    }

    #[test]
    fn an_addon_for_the_wrong_machine_or_this_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("wop-pack-addon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("arm64.so");
        std::fs::write(&file, elf(183)).expect("write");
        let given = |target: &str| PlatformAddon {
            file: file.clone(),
            ..format!("{target}=x").parse().expect("parses")
        };
        let e = read_other(&given("linux-riscv64")).expect_err("wrong arch");
        assert!(
            e.message
                .contains("the file is ELF for arm64; linux-riscv64 loads ELF for riscv64"),
            "{}",
            e.message
        );
        let e = read_other(&given("darwin-arm64")).expect_err("wrong format");
        assert!(
            e.message.contains("darwin-arm64 loads Mach-O for arm64"),
            "{}",
            e.message
        );
        let (p, a) = node_platform();
        if (p, a) != ("linux", "arm64") {
            assert_eq!(read_other(&given("linux-arm64")).expect("fits"), elf(183));
        }
        let e = read_other(&given(&format!("{p}-{a}"))).expect_err("this machine");
        assert!(
            e.message.contains("this machine's platform"),
            "{}",
            e.message
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
