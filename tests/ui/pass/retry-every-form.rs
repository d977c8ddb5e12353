use wop_sdk::{RetryPolicy, retry};

const STRICT: RetryPolicy = retry!(max_attempts = 2, grow_max_tokens = false);
const ONE: RetryPolicy = retry!(max_attempts = 1);
const MOST: RetryPolicy = retry!(max_attempts = 16, grow_max_tokens = true,);
const FLAT: RetryPolicy = retry!(grow_max_tokens = false);
const HOST: RetryPolicy = retry!();

fn main() {
    assert_eq!(STRICT.max_attempts(), Some(2));
    assert!(!STRICT.grows_max_tokens());
    assert_eq!(ONE, RetryPolicy::NO_RETRIES);
    assert_eq!(MOST.max_attempts(), Some(16));
    assert_eq!(FLAT.max_attempts(), None);
    assert!(!FLAT.grows_max_tokens());
    assert_eq!(HOST, RetryPolicy::HOST_DEFAULT);
    let at_runtime = retry!(grow_max_tokens = true, max_attempts = 3);
    assert_eq!(at_runtime.max_attempts(), Some(3));
}
