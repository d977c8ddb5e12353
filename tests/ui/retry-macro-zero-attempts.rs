use wop_sdk::{RetryPolicy, retry};

const POLICY: RetryPolicy = retry!(max_attempts = 0);

fn main() {
    let _ = POLICY;
}
