//! Book AI: an OpenWOP node pack that plans, drafts and reviews a book through `ctx.callAI`.
//!
//! ```text
//! cargo run --example book_ai                      # the demo: estimate, progress, report
//! cargo run --example book_ai -- manifest          # pack.json
//! cargo run --example book_ai -- estimate --input-json '{"community.demo.bookai.plan-outline": {...}}'
//! cargo run --example book_ai -- run --node community.demo.bookai.plan-outline --input brief.json --script s.json
//! ```
//!
//! `pack.rs` holds the nodes (copy from it); `demo.rs` the demo run and its report;
//! `script.json` the scripted provider's replies.

mod demo;
mod pack;

use std::process::ExitCode;

fn main() -> ExitCode {
    // With arguments, this binary is the pack's command line.
    if std::env::args_os().len() > 1 {
        return wop_sdk::cli::main(pack::pack());
    }
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(demo::main()),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}
