//! Book AI: an OpenWOP node pack that plans, drafts and reviews a book through `ctx.callAI`.
//!
//! ```text
//! cargo run --example book_ai                      # the demo: estimate, progress, report
//! cargo run --example book_ai -- --report docs/report.svg   # the demo, and its picture
//! cargo run --example book_ai -- run --provider openai --base-url http://127.0.0.1:8080/v1 --model M
//!                                                  # the same demo, written by a real model
//! cargo run --example book_ai -- manifest          # pack.json
//! cargo run --example book_ai -- estimate --input-json '{"community.demo.bookai.plan-outline": {...}}'
//! cargo run --example book_ai -- run --node community.demo.bookai.plan-outline --input brief.json --script s.json
//! ```
//!
//! `pack/` holds the nodes (copy from it); `demo.rs` (and `demo/`) the demo run and its report;
//! `script.json` the scripted provider's replies.

use book_ai::{demo, pack};
use std::process::ExitCode;

/// Whether `args` are only the demo's flags: `--json`, `-v`/`-vv`/`--verbose`, `--report FILE`.
fn demo_flags_only(args: &[String]) -> bool {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" | "--verbose" => {}
            "--report" => {
                if it.next().is_none() {
                    return false;
                }
            }
            v if v.starts_with("--report=") => {}
            v if v.len() > 1 && v.starts_with('-') && !v.starts_with("--") => {
                if !v[1..].chars().all(|c| c == 'v') {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // No arguments, or only the demo's flags (`--json`, `-v`, `--report FILE.svg`): the demo;
    // `run` without `--node`: the demo with the provider flags of `run` (and the demo's flags).
    // Any other arguments: this binary is the pack's command line.
    let tail: &[String] = args.get(1..).unwrap_or_default();
    let demo_run = args.get(1).map(String::as_str) == Some("run")
        && !args
            .iter()
            .any(|a| a == "--node" || a.starts_with("--node=") || a == "--help" || a == "-h");
    // The demo's own flags alone (`--json`, `-v`, `--report FILE`): the demo, as `run` takes them.
    let demo_flags = !tail.is_empty() && demo_flags_only(tail);
    let mut options = demo::Options::default();
    let flags: Vec<String> = match tail {
        [] => Vec::new(),
        [flag, path] if flag == "--report" => {
            options.report = Some(path.into());
            Vec::new()
        }
        rest if demo_flags || demo_run => {
            let rest = if demo_run { &rest[1..] } else { rest };
            // `--report`, `--json` and `-v` are the demo's, as they are `run`'s; the rest are
            // the provider flags of `run`.
            let mut flags = Vec::new();
            let mut it = rest.iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--json" => options.json = true,
                    "--verbose" => options.verbose += 1,
                    v if v.len() > 1
                        && v.starts_with('-')
                        && !v.starts_with("--")
                        && v[1..].chars().all(|c| c == 'v') =>
                    {
                        options.verbose += u8::try_from(v.len() - 1).unwrap_or(u8::MAX);
                    }
                    _ => match a.strip_prefix("--report") {
                        Some("") => options.report = it.next().map(std::path::PathBuf::from),
                        Some(v) if v.starts_with('=') => options.report = Some(v[1..].into()),
                        _ => flags.push(a.clone()),
                    },
                }
            }
            flags
        }
        _ => return wop_sdk_host::cli::main(pack::pack()),
    };
    let provider = if demo_run {
        let flags = std::iter::once(args[0].clone()).chain(flags);
        let parsed = wop_sdk_host::cli::ProviderArgs::parse_from(flags).and_then(|p| {
            Ok(p.openai_provider()?
                .map(|o| (o, p.native_structured_output())))
        });
        match parsed {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(e.exit);
            }
        }
    } else {
        None
    };
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(demo::main(options, provider)),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}
