#![allow(dead_code)]
use std::marker::PhantomData;
use wop_sdk::AttemptId;


fn forge() -> AttemptId<'static> {
    AttemptId { id: "att-1".to_owned(), _brand: PhantomData }
}

fn main() {}
