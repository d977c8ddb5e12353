use wop_sdk::{RetryPolicy, retry};

const POLICY: RetryPolicy = retry!(grow_max_tokens = 0);

fn main() {
    let _ = POLICY;
}
