use wop_sdk::{RetryPolicy, retry};

const POLICY: RetryPolicy = retry!(grow_max_tokens = false, grow_max_tokens = true);

fn main() {
    let _ = POLICY;
}
