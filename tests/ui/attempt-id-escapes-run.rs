#![allow(dead_code)]
use wop_sdk::{AttemptId, Completion, Text};


fn keep<'run>(completion: &Completion<'run, Text>) -> &'static AttemptId<'static> {
    completion.attempt_id()
}

fn main() {}
