//! The rules, in our words: names, ids, times, error codes, closed objects.

use super::*;

/// A segment starts with a lowercase ASCII letter; then letters, digits, `_` or `-`; uppercase
/// letters only where `upper` allows them.
pub(crate) fn segment(s: &str, upper: bool) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_lowercase())
        && b.all(|c| {
            c.is_ascii_lowercase()
                || c.is_ascii_digit()
                || c == b'_'
                || c == b'-'
                || (upper && c.is_ascii_uppercase())
        })
}

/// A node type id: two or more dotted segments, at most 256 characters; after the first segment
/// camelCase is allowed (`core.ai.callPrompt`).
pub(crate) fn type_id_ok(id: &str) -> bool {
    let parts: Vec<&str> = id.split('.').collect();
    id.len() <= 256 && parts.len() >= 2 && parts.iter().enumerate().all(|(i, p)| segment(p, i > 0))
}

/// A pack name: `core|vendor|community|private`, an owner segment (no uppercase), then one or
/// more segments: `community.<author>.<pack>`.
pub(crate) fn pack_name_ok(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    name.len() <= 256
        && parts.len() >= 3
        && ["core", "vendor", "community", "private"].contains(&parts[0])
        && parts[1..]
            .iter()
            .enumerate()
            .all(|(i, p)| segment(p, i > 0))
}

pub(crate) fn id_chars(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
}

/// A run id: `<tenant>/<opaque>`, the opaque part 16 to 128 id characters.
pub(crate) fn run_id_ok(id: &str) -> bool {
    id.split_once('/').is_some_and(|(tenant, opaque)| {
        id_chars(tenant.strip_prefix("anon:").unwrap_or(tenant), 1, 128)
            && id_chars(opaque, 16, 128)
    })
}

/// An RFC 3339 UTC date-time: `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
pub(crate) fn timestamp_ok(t: &str) -> bool {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && t.ends_with('Z')
        && (b.len() == 20 || (b[19] == b'.' && digits(20..b.len() - 1)))
}

/// An error code of the v2 registry that this SDK may write.
pub(crate) const REGISTERED: &[&str] = &[
    "validation_error",
    "capability_not_provided",
    "envelope_invalid",
    "envelope_refusal",
    "envelope_truncation_unrecoverable",
    "idempotency_key_mismatch",
    "replay_source_missing",
];

/// A vendor error code: `<org>.<code>`; the org is lowercase words joined by single `-` (not
/// `openwop`), the code a lowercase letter then lowercase letters, digits or `_`.
pub(crate) fn vendor_code_ok(code: &str) -> bool {
    let Some((org, name)) = code.split_once('.') else {
        return false;
    };
    let org_ok = org != "openwop"
        && org.split('-').enumerate().all(|(i, w)| {
            let mut b = w.bytes();
            b.next()
                .is_some_and(|c| c.is_ascii_lowercase() || (i > 0 && c.is_ascii_digit()))
                && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    let mut n = name.bytes();
    org_ok
        && n.next().is_some_and(|c| c.is_ascii_lowercase())
        && n.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

pub(crate) fn code_ok(code: &str) -> bool {
    REGISTERED.contains(&code) || vendor_code_ok(code)
}

/// An extension key, the only extra key a closed v2 object carries.
pub(crate) fn extension(key: &str) -> bool {
    key.starts_with("x-") || key.starts_with("openwop-") || key.starts_with("vendor.")
}

pub(crate) fn closed(obj: &Map<String, Value>, at: &str, allowed: &[&str], out: &mut Vec<String>) {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) && !extension(k) {
            out.push(format!("{at}.{k}: not a key of this closed object"));
        }
    }
}
