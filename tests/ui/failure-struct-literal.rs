#![allow(dead_code)]
use wop_sdk::AiFailure;


fn forge() -> AiFailure<'static> {
    AiFailure { local: 1 }
}

fn main() {}
