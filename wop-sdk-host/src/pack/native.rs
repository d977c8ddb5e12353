//! Whether a file is a whole native library for a Node platform and architecture: the object
//! format the platform loads (ELF, Mach-O, PE), the architecture, a shared library (not an
//! executable or a relocatable object), and every header, segment, section and load command
//! lying within the file. A header alone, or a library cut short, is refused here: loaded in a
//! host it can kill the process (SIGBUS on the first page past the end), where nothing is logged.
//!
//! Read with the `object` crate (gimli-rs); ELF's tables are also measured one by one first, so a
//! truncated file is told by the first thing that ends past its end.

use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::read::macho::{FatArch, MachOFatFile32, MachOFatFile64};
use object::{
    Architecture, Endianness, FileKind, Object, ObjectKind, ObjectSection, ObjectSegment,
};

/// The object format a platform loads.
pub(super) fn format_of(platform: &str) -> &'static str {
    match platform {
        "darwin" => "Mach-O",
        "win32" => "PE",
        _ => "ELF",
    }
}

/// Node's name (`process.arch`) for an architecture, or `None` for one Node does not run on.
fn node_arch(arch: Architecture, endian: Endianness) -> Option<&'static str> {
    Some(match arch {
        Architecture::X86_64 => "x64",
        Architecture::Aarch64 => "arm64",
        Architecture::I386 => "ia32",
        Architecture::Arm => "arm",
        Architecture::LoongArch64 => "loong64",
        Architecture::Mips if endian == Endianness::Little => "mipsel",
        Architecture::Mips => "mips",
        Architecture::PowerPc64 => "ppc64",
        Architecture::Riscv64 => "riscv64",
        Architecture::S390x => "s390x",
        _ => return None,
    })
}

/// `n` with its thousands apart: `1 204 352`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(d);
    }
    out
}

/// `what` of `size` bytes at `offset` within a file of `len` bytes, or the rule it breaks.
fn within(what: &str, offset: u64, size: u64, len: u64) -> Result<(), String> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        end => Err(format!(
            "the file is truncated: {what} ends at byte {} but the file has {} bytes",
            end.map_or_else(|| "past 2^64".to_owned(), count),
            count(len)
        )),
    }
}

/// ELF's tables, measured one by one: the program headers, each segment, the section headers,
/// each section (but `SHT_NOBITS`, which has no bytes in the file).
fn elf_tables<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<(), String> {
    let len = data.len() as u64;
    let header = Elf::parse(data).map_err(|_| {
        format!(
            "the file is truncated: its ELF header needs {} bytes but the file has {}",
            count(size_of::<Elf>() as u64),
            count(len)
        )
    })?;
    let endian = header
        .endian()
        .map_err(|e| format!("the ELF header is corrupt: {e}"))?;
    let phoff: u64 = header.e_phoff(endian).into();
    let phnum = header
        .phnum(endian, data)
        .map_err(|e| format!("the ELF header is corrupt: {e}"))?;
    let phsize = u64::from(phnum) * u64::from(header.e_phentsize(endian));
    within("the program header table", phoff, phsize, len)?;
    let segments = header
        .program_headers(endian, data)
        .map_err(|e| format!("the program headers are corrupt: {e}"))?;
    for (i, segment) in segments.iter().enumerate() {
        let (offset, size) = segment.file_range(endian);
        within(&format!("segment {i}"), offset, size, len)?;
    }
    let shoff: u64 = header.e_shoff(endian).into();
    let shnum = header
        .shnum(endian, data)
        .map_err(|e| format!("the ELF header is corrupt: {e}"))?;
    let shsize = u64::from(shnum) * u64::from(header.e_shentsize(endian));
    within("the section header table", shoff, shsize, len)?;
    let sections = header
        .section_headers(endian, data)
        .map_err(|e| format!("the section headers are corrupt: {e}"))?;
    for (i, section) in sections.iter().enumerate() {
        if let Some((offset, size)) = section.file_range(endian) {
            within(&format!("section {i}"), offset, size, len)?;
        }
    }
    Ok(())
}

/// The slice of a universal (fat) Mach-O for `arch`, or the rule it breaks.
fn fat_slice<'a, A: FatArch>(data: &'a [u8], arches: &[A], arch: &str) -> Result<&'a [u8], String> {
    let mut found = Vec::new();
    for a in arches {
        let name = node_arch(a.architecture(), Endianness::Little).unwrap_or("unknown");
        if name == arch {
            return a.data(data).map_err(|_| {
                format!("the file is truncated: its Mach-O slice for {arch} lies past its end")
            });
        }
        found.push(name);
    }
    Err(format!(
        "the file is a universal Mach-O for {}, not for {arch}",
        found.join(", ")
    ))
}

/// Checks that `bytes` is a whole native library that Node on `platform`-`arch` can load: the
/// rule it breaks otherwise, as a sentence to follow the file's name.
pub(super) fn check(bytes: &[u8], platform: &str, arch: &str) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("the file is empty".to_owned());
    }
    let want = format_of(platform);
    let kind = FileKind::parse(bytes)
        .map_err(|_| "not a native library (no ELF, Mach-O or PE header)".to_owned())?;
    let format = match kind {
        FileKind::Elf32 | FileKind::Elf64 => "ELF",
        FileKind::MachO32 | FileKind::MachO64 | FileKind::MachOFat32 | FileKind::MachOFat64 => {
            "Mach-O"
        }
        FileKind::Pe32 | FileKind::Pe64 => "PE",
        _ => {
            return Err(format!(
                "not a native library ({kind:?}): a shared library (a `cdylib`) is wanted"
            ));
        }
    };
    if format != want {
        return Err(format!(
            "the file is {format}; {platform}-{arch} loads {want} for {arch}"
        ));
    }
    let data = match kind {
        FileKind::MachOFat32 => MachOFatFile32::parse(bytes)
            .map_err(|e| format!("the universal Mach-O header is corrupt: {e}"))
            .and_then(|fat| fat_slice(bytes, fat.arches(), arch))?,
        FileKind::MachOFat64 => MachOFatFile64::parse(bytes)
            .map_err(|e| format!("the universal Mach-O header is corrupt: {e}"))
            .and_then(|fat| fat_slice(bytes, fat.arches(), arch))?,
        FileKind::Elf32 => {
            elf_tables::<object::elf::FileHeader32<Endianness>>(bytes).map(|()| bytes)?
        }
        FileKind::Elf64 => {
            elf_tables::<object::elf::FileHeader64<Endianness>>(bytes).map(|()| bytes)?
        }
        _ => bytes,
    };
    let file = object::File::parse(data)
        .map_err(|e| format!("the file is not a whole {format} library: {e}"))?;
    let found = node_arch(file.architecture(), file.endianness()).unwrap_or("unknown");
    if found != arch {
        return Err(format!(
            "the file is {format} for {found}; {platform}-{arch} loads {want} for {arch}"
        ));
    }
    if file.kind() != ObjectKind::Dynamic {
        return Err(format!(
            "the file is {} {format} file ({:?}), not a shared library (a `cdylib`)",
            if format == "ELF" { "an" } else { "a" },
            file.kind()
        ));
    }
    let len = data.len() as u64;
    let mut segments = 0;
    for (i, segment) in file.segments().enumerate() {
        let (offset, size) = segment.file_range();
        within(&format!("segment {i}"), offset, size, len)?;
        segments += 1;
    }
    if segments == 0 {
        return Err(format!("the {format} file has no segment to load"));
    }
    for (i, section) in file.sections().enumerate() {
        if let Some((offset, size)) = section.file_range() {
            within(&format!("section {i}"), offset, size, len)?;
        }
    }
    // A Node-API addon exports its entry point; ELF's dynamic symbols say so plainly (Mach-O's
    // and PE's export tables are not read: no such file can be tried here).
    if format == "ELF" {
        let mut exports = file
            .exports()
            .map_err(|e| format!("the dynamic symbols are corrupt: {e}"))?;
        if !exports.any(|e| {
            e.is_ok_and(|e| e.name() == object::NameOrOrdinal::Name(b"napi_register_module_v1"))
        }) {
            return Err(
                "the library exports no `napi_register_module_v1`: not a Node-API addon (a pack's addon is built with `wop_sdk_node::addon!`)"
                    .to_owned(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_elf::{AARCH64, X86_64, shared_object};
    use super::*;

    #[test]
    fn a_whole_shared_object_fits_its_platform_and_architecture_only() {
        let arm = shared_object(AARCH64, 4096);
        assert_eq!(check(&arm, "linux", "arm64"), Ok(()));
        assert_eq!(check(&arm, "freebsd", "arm64"), Ok(()));
        assert_eq!(check(&shared_object(X86_64, 64), "linux", "x64"), Ok(()));
        let e = check(&arm, "linux", "x64").expect_err("wrong arch");
        assert_eq!(e, "the file is ELF for arm64; linux-x64 loads ELF for x64");
        let e = check(&arm, "darwin", "arm64").expect_err("wrong format");
        assert_eq!(e, "the file is ELF; darwin-arm64 loads Mach-O for arm64");
    }

    #[test]
    fn a_twenty_byte_elf_header_is_refused_as_truncated() {
        let header = &shared_object(AARCH64, 64)[..20];
        let e = check(header, "linux", "arm64").expect_err("a header alone");
        assert_eq!(
            e,
            "the file is truncated: its ELF header needs 64 bytes but the file has 20"
        );
    }

    #[test]
    fn a_library_cut_short_names_what_ends_past_its_end() {
        let whole = shared_object(AARCH64, 128 * 1024);
        let e = check(&whole[..64 * 1024], "linux", "arm64").expect_err("truncated");
        assert!(
            e.starts_with("the file is truncated: segment 0 ends at byte 13"),
            "{e}"
        );
        assert!(e.ends_with("but the file has 65 536 bytes"), "{e}");
        // Cut inside the section headers (the last thing in the file).
        let e = check(&whole[..whole.len() - 8], "linux", "arm64").expect_err("truncated");
        assert!(
            e.starts_with("the file is truncated: the section header table ends at byte"),
            "{e}"
        );
        // The program headers cut.
        let e = check(&whole[..100], "linux", "arm64").expect_err("truncated");
        assert_eq!(
            e,
            "the file is truncated: the program header table ends at byte 232 but the file has 100 bytes"
        );
    }

    #[test]
    fn zeros_text_and_objects_that_are_no_shared_library_are_refused() {
        for (bytes, rule) in [
            (vec![0; 65_536], "not a native library"),
            (b"#!/bin/sh\n".to_vec(), "not a native library"),
            (Vec::new(), "the file is empty"),
            (b"!<arch>\n".to_vec(), "not a native library"),
        ] {
            let e = check(&bytes, "linux", "x64").expect_err(rule);
            assert!(e.contains(rule), "{rule}: {e}");
        }
        // An executable (ET_EXEC) is not a shared library.
        let mut exec = shared_object(X86_64, 64);
        exec[16] = 2;
        let e = check(&exec, "linux", "x64").expect_err("executable");
        assert!(e.contains("not a shared library"), "{e}");
        // A shared object without the Node-API entry point.
        let mut other = shared_object(X86_64, 64);
        let at = other
            .windows(7)
            .position(|w| w == b"napi_re")
            .expect("the name");
        other[at] = b'N';
        let e = check(&other, "linux", "x64").expect_err("no entry point");
        assert!(e.contains("exports no `napi_register_module_v1`"), "{e}");
    }

    #[test]
    fn counts_read_in_groups_of_three() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(65_536), "65 536");
        assert_eq!(count(1_204_352), "1 204 352");
    }
}
