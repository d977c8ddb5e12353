use wop_sdk::{RetryPolicy, retry};

const POLICY: RetryPolicy = retry!(max_tries = 2);

fn main() {
    let _ = POLICY;
}
