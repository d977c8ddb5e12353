#![allow(dead_code)]
use wop_sdk::AttemptId;


fn forge() -> AttemptId<'static> {
    AttemptId::from("att-1")
}

fn main() {}
