#![allow(dead_code, unreachable_code)]
use wop_sdk::AiFailure;


fn forge() -> AiFailure<'static> {
    AiFailure::new(1, std::sync::Arc::new(todo!()))
}

fn main() {}
