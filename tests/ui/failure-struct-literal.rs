#![allow(dead_code)]
use wop_sdk::AiFailure;


fn forge() -> AiFailure<'static> {
    AiFailure { id: 1 }
}

fn main() {}
