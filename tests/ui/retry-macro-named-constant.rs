use wop_sdk::{RetryPolicy, retry};

const GROW: bool = false;

const STRICT: RetryPolicy = retry!(max_attempts = 2, grow_max_tokens = GROW);

fn main() {}
