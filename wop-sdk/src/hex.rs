//! Lowercase hex written straight into a string, without `format!`: run, attempt and event ids
//! and digests are made on every call.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` as lowercase hex, two digits a byte.
pub fn push_bytes(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
}

/// Writes `bytes` as lowercase hex ASCII into `out` (two digits a byte, as far as `out` goes).
pub fn fill(out: &mut [u8], bytes: &[u8]) {
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
}

/// `bytes` as lowercase hex.
pub fn of_bytes(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_bytes(&mut s, bytes);
    s
}

/// Appends `n` in lowercase hex, zero-padded to at least `min_digits` (at most 16) digits: what
/// `format!("{n:0width$x}")` writes.
pub fn push_u64(out: &mut String, n: u64, min_digits: u32) {
    let digits = (64 - n.leading_zeros())
        .div_ceil(4)
        .clamp(min_digits.clamp(1, 16), 16);
    for shift in (0..digits).rev() {
        out.push(char::from(DIGITS[((n >> (shift * 4)) & 0xf) as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_digits_as_format() {
        for n in [0u64, 1, 0xa, 0xff, 0x1234_5678, 0xffff_ffff_ffff, u64::MAX] {
            for width in [0u32, 1, 6, 16] {
                let mut s = String::new();
                push_u64(&mut s, n, width);
                assert_eq!(s, format!("{n:0w$x}", w = width as usize), "{n:#x} {width}");
            }
        }
        let bytes = [0x00, 0x0f, 0xa0, 0xff];
        let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(of_bytes(&bytes), expected);
    }
}
