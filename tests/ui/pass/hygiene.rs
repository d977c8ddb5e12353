//! The expansions use absolute paths only: shadowing prelude names changes nothing.
#![deny(warnings)]
#![no_implicit_prelude]

extern crate std;
extern crate wop_sdk;

#[allow(dead_code)]
struct Result;
#[allow(dead_code)]
struct Ok;
#[allow(dead_code)]
struct Err;
#[allow(dead_code)]
struct Option;
#[allow(dead_code)]
struct Some;
#[allow(dead_code)]
struct None;
#[allow(dead_code)]
struct Box;
#[allow(dead_code)]
struct String;
#[allow(dead_code)]
struct Vec;
#[allow(dead_code)]
mod core {}
#[allow(dead_code)]
trait Node {}
#[allow(dead_code)]
trait Send {}
#[allow(dead_code)]
fn pin() {}

#[wop_sdk::wop_node(
    type_id = "community.hygiene.echo",
    version = "1.0.0",
    label = "Echo",
    max_calls = 3,
    retry(max_attempts = 2, grow_max_tokens = false),
    requires(attempts),
    plan = plan
)]
async fn echo(
    _ctx: &wop_sdk::NodeCtx<'_>,
    input: ::std::string::String,
) -> ::std::result::Result<::std::string::String, wop_sdk::NodeError> {
    ::std::result::Result::Ok(input)
}

fn plan(_: &::std::string::String) -> wop_sdk::CallPlan {
    ::std::default::Default::default()
}

const POLICY: wop_sdk::RetryPolicy = wop_sdk::retry!(grow_max_tokens = false);

wop_sdk::pack! { name = "community.demo.hygiene", version = "1.0.0", nodes = [Echo] }

fn main() {
    let _ = POLICY;
    ::std::assert_eq!(pack().nodes().len(), 1);
}
