//! The bounds of RFC 0248 §A's `attempts` record on a `ctx.callAI` result.

/// The smallest `attempts.count`: a result comes from at least one provider request (§A.1).
pub const MIN_COUNT: u32 = 1;

/// The rule on `attempts.count`, in the words every checker uses.
pub const COUNT_RULE: &str = "must be an integer ≥ 1 (the provider requests the call made, §A.1)";

/// The modes `attempts.structuredOutput` takes (§A.3), in wire spelling.
pub const STRUCTURED_OUTPUT_MODES: &[&str] = &["native", "prompt"];

/// Why `count` is not a valid `attempts.count`, if it is not.
pub fn count_problem(count: u64) -> Option<String> {
    (count < u64::from(MIN_COUNT)).then(|| format!("{COUNT_RULE}, got {count}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(count_problem(1), None);
        assert_eq!(count_problem(u64::MAX), None);
        assert!(count_problem(0).is_some_and(|p| p.contains("≥ 1") && p.ends_with("got 0")));
    }
}
