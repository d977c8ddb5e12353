//! A minimal but whole ELF64 little-endian shared object, built from bytes: for tests that need a
//! library for another architecture than this machine's (there is no cross compiler here). Also
//! compiled into the tests' support crate (`tests/support`, by `#[path]`).
//!
//! Layout: the ELF header; three program headers (`PT_LOAD` R+X over the headers and the
//! sections up to `.text`, `PT_LOAD` R+W over `.dynamic`, on a page of its own, which the loader writes to, and
//! `PT_DYNAMIC`); `.hash`, `.dynsym` (the null symbol and a global function
//! `napi_register_module_v1` at the start of `.text`), `.dynstr`, `.text` (one return
//! instruction, then `text_len` bytes in all), `.dynamic` (`DT_HASH`, `DT_STRTAB`, `DT_SYMTAB`,
//! `DT_STRSZ`, `DT_SYMENT`, `DT_NULL`), `.shstrtab`; then seven section headers. Addresses are
//! file offsets (loaded at 0). `readelf -a` reads it without a warning, and the x86-64 one loads
//! with `dlopen` (Python's `ctypes.CDLL`).

/// ELF `e_machine` of AArch64.
pub const AARCH64: u16 = 183;
/// ELF `e_machine` of x86-64.
pub const X86_64: u16 = 62;

fn pad(b: &mut Vec<u8>, align: usize) {
    b.resize(b.len().div_ceil(align) * align, 0);
}

fn u16s(b: &mut Vec<u8>, v: &[u16]) {
    v.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
}

fn u32s(b: &mut Vec<u8>, v: &[u32]) {
    v.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
}

fn u64s(b: &mut Vec<u8>, v: &[u64]) {
    v.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
}

/// The shared object for `machine` ([`AARCH64`], [`X86_64`]) whose `.text` is `text_len` bytes
/// (at least 4): the size of the file, so a test can cut it where it likes.
pub fn shared_object(machine: u16, text_len: usize) -> Vec<u8> {
    let ret: &[u8] = if machine == AARCH64 {
        &[0xc0, 0x03, 0x5f, 0xd6]
    } else {
        &[0xc3]
    };
    let dynstr = b"\0napi_register_module_v1\0";
    let shstrtab = b"\0.hash\0.dynsym\0.dynstr\0.text\0.dynamic\0.shstrtab\0";
    // Offsets of the section names in .shstrtab.
    let names = [0_u32, 1, 7, 15, 23, 29, 38];
    let mut b = Vec::new();
    // The sections, after the ELF header (64) and three program headers (3 × 56).
    let hash_at = 64 + 3 * 56;
    b.resize(hash_at, 0);
    u32s(&mut b, &[1, 2, 1, 0, 0]); // nbucket, nchain, bucket[0] = 1, chain[0..2]
    pad(&mut b, 8);
    let dynsym_at = b.len();
    b.resize(dynsym_at + 24, 0);
    let text_at = (dynsym_at + 48 + dynstr.len()).div_ceil(16) * 16;
    u32s(&mut b, &[1]); // st_name
    b.extend_from_slice(&[0x12, 0]); // STB_GLOBAL | STT_FUNC, STV_DEFAULT
    u16s(&mut b, &[4]); // st_shndx: .text
    u64s(&mut b, &[text_at as u64, ret.len() as u64]);
    let dynstr_at = b.len();
    b.extend_from_slice(dynstr);
    b.resize(text_at, 0);
    b.extend_from_slice(ret);
    b.resize(text_at + text_len.max(ret.len()), 0);
    let text_end = b.len() as u64;
    pad(&mut b, 0x1000); // .dynamic on a page of its own: the loader maps it writable

    let dynamic_at = b.len();
    u64s(
        &mut b,
        &[
            4,
            hash_at as u64,
            5,
            dynstr_at as u64,
            6,
            dynsym_at as u64,
            10,
            dynstr.len() as u64,
            11,
            24,
            0,
            0,
        ],
    );
    let shstrtab_at = b.len();
    b.extend_from_slice(shstrtab);
    pad(&mut b, 8);
    let shdrs_at = b.len();
    // (type, flags, offset, size, link, info, align, entsize) of sections 1..=6.
    // Sections 1..=6: type, flags, offset, size, link, info, align, entsize.
    let sections: [[usize; 8]; 6] = [
        [5, 2, hash_at, 20, 2, 0, 8, 4],
        [11, 2, dynsym_at, 48, 3, 1, 8, 24],
        [3, 2, dynstr_at, dynstr.len(), 0, 0, 1, 0],
        [1, 6, text_at, text_len.max(ret.len()), 0, 0, 16, 0],
        [6, 3, dynamic_at, 96, 3, 0, 8, 16],
        [3, 0, shstrtab_at, shstrtab.len(), 0, 0, 1, 0],
    ];
    b.resize(shdrs_at + 64, 0); // the null section
    for (i, [kind, flags, offset, size, link, info, align, entsize]) in
        sections.into_iter().enumerate()
    {
        let addr = if flags & 2 != 0 { offset } else { 0 };
        u32s(&mut b, &[names[i + 1], kind as u32]);
        u64s(
            &mut b,
            &[flags as u64, addr as u64, offset as u64, size as u64],
        );
        u32s(&mut b, &[link as u32, info as u32]);
        u64s(&mut b, &[align as u64, entsize as u64]);
    }
    // The ELF header and the program headers.
    let mut h = b"\x7fELF\x02\x01\x01".to_vec();
    h.resize(16, 0);
    u16s(&mut h, &[3, machine]); // ET_DYN
    u32s(&mut h, &[1]);
    u64s(&mut h, &[0, 64, shdrs_at as u64]); // entry, phoff, shoff
    u32s(&mut h, &[0]);
    u16s(&mut h, &[64, 56, 3, 64, 7, 6]);
    // PT_LOAD, R+X, over [0, text_end); PT_LOAD, R+W, and PT_DYNAMIC over .dynamic.
    let at = dynamic_at as u64;
    u32s(&mut h, &[1, 5]);
    u64s(&mut h, &[0, 0, 0, text_end, text_end, 0x1_0000]);
    u32s(&mut h, &[1, 6]);
    u64s(&mut h, &[at, at, at, 96, 96, 0x1_0000]);
    u32s(&mut h, &[2, 6]);
    u64s(&mut h, &[at, at, at, 96, 96, 8]);
    b[..h.len()].copy_from_slice(&h);
    b
}
