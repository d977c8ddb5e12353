//! The bounds of a per-call retry policy (RFC 0248 §B).

/// The smallest `maxAttempts` a host accepts.
pub const MIN_ATTEMPTS: u8 = 1;
/// The largest `maxAttempts` a host accepts.
pub const MAX_ATTEMPTS: u8 = 16;

/// A host's ceiling on provider requests per structured call when its capability document does
/// not advertise one (RFC 0032's default `maxRetryAttempts`). A call under the host's own policy
/// may make this many requests, so a node's `max_calls` below it cannot fit one structured call.
pub const DEFAULT_CEILING: u8 = 3;

/// The requests a host without `aiProviders.callAccounting` may add after its ceiling: its
/// natural-language-to-JSON fallback (openwop-app: 3 requests, then the fallback). A host with
/// `callAccounting` counts the fallback inside its ceiling (RFC 0248 §B.1), so adds none.
pub const FALLBACK_AFTER_CEILING: u8 = 1;

/// The rule, in the words both the macros and the runtime use.
pub const ATTEMPTS_RULE: &str = "must be an integer in 1..=16";

/// Why `n` is not a valid `maxAttempts`, if it is not.
pub fn attempts_problem(n: i128) -> Option<String> {
    if (i128::from(MIN_ATTEMPTS)..=i128::from(MAX_ATTEMPTS)).contains(&n) {
        None
    } else {
        Some(format!("{ATTEMPTS_RULE}, got {n}"))
    }
}

/// `n` as a valid `maxAttempts`.
pub fn attempts(n: i128) -> Option<u8> {
    match u8::try_from(n) {
        Ok(n) if (MIN_ATTEMPTS..=MAX_ATTEMPTS).contains(&n) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        for ok in [1, 2, 16] {
            assert_eq!(attempts(ok), u8::try_from(ok).ok());
            assert_eq!(attempts_problem(ok), None);
        }
        for bad in [0, -1, 17, 300, i128::MAX] {
            assert_eq!(attempts(bad), None);
            assert!(attempts_problem(bad).is_some_and(|p| p.contains("1..=16")));
        }
    }
}
