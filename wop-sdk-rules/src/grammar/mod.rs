//! The grammars of OpenWOP v2 names. Each check returns `None` for a valid value, or the reason
//! it is refused, written to follow "`x` breaks ...: " in an error message.

use crate::sets::{PACK_NAMESPACES, quoted};

/// The longest type id or pack name.
pub const MAX_NAME_LEN: usize = 256;

/// Which characters may follow the first letter of a segment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// `a-z`, `0-9`, `_`, `-`.
    Lower,
    /// `a-z`, `A-Z`, `0-9`, `_`, `-` (camelCase allowed: `core.ai.callPrompt`).
    Mixed,
}

fn segment_problem(segment: &str, tail: Tail) -> Option<String> {
    let mut bytes = segment.bytes();
    match bytes.next() {
        None => return Some("a segment is empty (two dots in a row, or a dot at an end)".into()),
        Some(b'a'..=b'z') => {}
        Some(_) => {
            return Some(format!(
                "segment `{segment}` must start with a lowercase letter `a-z`"
            ));
        }
    }
    let ok = |b: u8| match tail {
        Tail::Lower => matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'),
        Tail::Mixed => b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'),
    };
    if bytes.all(ok) {
        None
    } else if tail == Tail::Lower {
        Some(format!(
            "segment `{segment}` may hold only lowercase letters, digits, `_` and `-`"
        ))
    } else {
        Some(format!(
            "segment `{segment}` may hold only letters, digits, `_` and `-`"
        ))
    }
}

fn length_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        Some("it is empty".into())
    } else if s.len() > MAX_NAME_LEN {
        Some(format!(
            "it is {} characters long, the limit is {MAX_NAME_LEN}",
            s.len()
        ))
    } else {
        None
    }
}

/// Why `id` is not a node type id, if it is not: at least two dotted segments, each starting
/// with a lowercase letter; the first holds lowercase letters, digits, `_` and `-`, the others
/// may also hold uppercase letters (`core.ai.callPrompt`, `vendor.acme.my_tools.echo`).
pub fn type_id_problem(id: &str) -> Option<String> {
    if let Some(p) = length_problem(id) {
        return Some(p);
    }
    let segments: Vec<&str> = id.split('.').collect();
    if segments.len() < 2 {
        return Some(format!(
            "it needs at least two dotted segments, got {}",
            segments.len()
        ));
    }
    segments
        .iter()
        .enumerate()
        .find_map(|(i, s)| segment_problem(s, if i == 0 { Tail::Lower } else { Tail::Mixed }))
}

/// Why `name` is not a pack name, if it is not: a namespace (`core`, `vendor`, `community`,
/// `private`), then the owner (lowercase letters, digits, `_`, `-`), then at least one more
/// segment: `community.<author>.<pack>`.
pub fn pack_name_problem(name: &str) -> Option<String> {
    if let Some(p) = length_problem(name) {
        return Some(p);
    }
    let segments: Vec<&str> = name.split('.').collect();
    if !PACK_NAMESPACES.contains(&segments[0]) {
        return Some(format!(
            "the first segment must be one of {}, got `{}`",
            quoted(PACK_NAMESPACES.iter().copied()),
            segments[0]
        ));
    }
    if segments.len() < 3 {
        return Some(format!(
            "it needs at least three dotted segments (namespace.owner.pack), got {}",
            segments.len()
        ));
    }
    segments
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(i, s)| segment_problem(s, if i == 1 { Tail::Lower } else { Tail::Mixed }))
}

fn numeric_ok(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

fn identifiers_ok(s: &str, numeric_rule: bool) -> bool {
    s.split('.').all(|id| {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && (!numeric_rule || !id.bytes().all(|b| b.is_ascii_digit()) || numeric_ok(id))
    })
}

/// Why `v` is not a semantic version `MAJOR.MINOR.PATCH[-pre][+build]` (SemVer 2.0.0), if it is
/// not.
pub fn semver_problem(v: &str) -> Option<String> {
    let (rest, build) = match v.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 || !parts.iter().all(|p| numeric_ok(p)) {
        return Some(
            "the core must be three numbers `MAJOR.MINOR.PATCH` without leading zeros".to_owned(),
        );
    }
    if pre.is_some_and(|p| !identifiers_ok(p, true)) {
        return Some(
            "the pre-release after `-` must be dot-separated `[0-9A-Za-z-]+` identifiers"
                .to_owned(),
        );
    }
    if build.is_some_and(|b| !identifiers_ok(b, false)) {
        return Some(
            "the build metadata after `+` must be dot-separated `[0-9A-Za-z-]+` identifiers"
                .to_owned(),
        );
    }
    None
}

/// Why `v` is not a protocol version `<major>.<minor>` (`2.0`), if it is not.
pub fn minor_version_problem(v: &str) -> Option<String> {
    match v.split_once('.') {
        Some((major, minor)) if numeric_ok(major) && numeric_ok(minor) => None,
        _ => Some("it must be `<major>.<minor>`, two numbers without leading zeros".into()),
    }
}

/// Why `facet` cannot be named in `peerDependenciesMeta.<family>.facets`, if it cannot: it must
/// be a camelCase word and one of the family's `declared` facets.
pub fn facet_problem(facet: &str, declared: &[&str]) -> Option<String> {
    let mut bytes = facet.bytes();
    let word =
        matches!(bytes.next(), Some(b'a'..=b'z')) && bytes.all(|b| b.is_ascii_alphanumeric());
    if !word {
        Some("a facet is a camelCase word: a lowercase letter, then letters and digits".into())
    } else if !declared.contains(&facet) {
        Some(format!(
            "it is not a facet of the family; the declared ones are {}",
            quoted(declared.iter().copied())
        ))
    } else {
        None
    }
}

/// Whether `key` is an extension key (`x-…`, `openwop-…`, `vendor.…`), the only extra keys a
/// closed v2 object (a pack node, an event payload) carries.
pub fn is_extension_key(key: &str) -> bool {
    key.starts_with("x-") || key.starts_with("openwop-") || key.starts_with("vendor.")
}

/// Whether `s` is an org name: lowercase words of letters and digits joined by single `-`, the
/// first starting with a letter.
fn org_ok(s: &str) -> bool {
    s.split('-').enumerate().all(|(i, w)| {
        let mut b = w.bytes();
        match b.next() {
            Some(b'a'..=b'z') => {}
            Some(b'0'..=b'9') if i > 0 => {}
            _ => return false,
        }
        b.all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9'))
    })
}

/// Why `code` is not a vendor error code `<org>.<code>`, if it is not: an org (lowercase words
/// joined by `-`, not `openwop`), one dot, then a lowercase word of letters, digits and `_`.
pub fn vendor_code_problem(code: &str) -> Option<String> {
    let Some((org, name)) = code.split_once('.') else {
        return Some("a vendor code is `<org>.<code>`, with one dot".into());
    };
    if org == "openwop" {
        return Some("the `openwop` org is reserved for registered codes".into());
    }
    if !org_ok(org) {
        return Some(format!(
            "the org `{org}` must be lowercase words of letters and digits joined by `-`"
        ));
    }
    let mut b = name.bytes();
    let ok = matches!(b.next(), Some(b'a'..=b'z'))
        && b.all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_'));
    if ok {
        None
    } else {
        Some(format!(
            "the code `{name}` must start with a lowercase letter and hold only `a-z`, `0-9`, `_`"
        ))
    }
}

/// Why `reason` is neither one of `known` nor a host extension `x-host-<host>-<reason>`.
pub fn envelope_reason_problem(reason: &str, known: &[&str]) -> Option<String> {
    if known.contains(&reason) {
        return None;
    }
    let ext = reason.strip_prefix("x-host-").is_some_and(|rest| {
        let words: Vec<&str> = rest.split('-').collect();
        words.len() >= 2
            && words
                .iter()
                .all(|w| !w.is_empty() && w.bytes().all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9')))
            && words.iter().all(|w| w.as_bytes()[0].is_ascii_lowercase())
    });
    if ext {
        None
    } else {
        Some(format!(
            "it must be one of {} or a host extension `x-host-<host>-<reason>`",
            quoted(known.iter().copied())
        ))
    }
}

fn opaque_ok(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

/// Why `id` is not a host-minted opaque id (an event id): 16 to 128 characters of letters,
/// digits, `.`, `_`, `~`, `-`.
pub fn opaque_id_problem(id: &str) -> Option<String> {
    if opaque_ok(id, 16, 128) {
        None
    } else {
        Some("it must be 16 to 128 characters of letters, digits, `.`, `_`, `~` and `-`".into())
    }
}

/// Why `id` is not a run id `<tenant>/<opaque>`, if it is not: a tenant (optionally `anon:`,
/// then 1 to 128 id characters), a `/`, then a 16 to 128 character opaque part.
pub fn run_id_problem(id: &str) -> Option<String> {
    let Some((tenant, opaque)) = id.split_once('/') else {
        return Some("it must be `<tenant>/<opaque>`".into());
    };
    let tenant = tenant.strip_prefix("anon:").unwrap_or(tenant);
    if !opaque_ok(tenant, 1, 128) {
        return Some(
            "the tenant must be 1 to 128 characters of letters, digits, `.`, `_`, `~` and `-`"
                .into(),
        );
    }
    if !opaque_ok(opaque, 16, 128) {
        return Some(
            "the part after `/` must be 16 to 128 characters of letters, digits, `.`, `_`, `~` and `-`"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests;
