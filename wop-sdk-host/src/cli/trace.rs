//! The command line's tracing subscriber (the library itself never installs one).
//!
//! `RUST_LOG` (an `EnvFilter`, e.g. `RUST_LOG=wop_sdk=debug`) wins; otherwise `-v` raises the level:
//! errors only by default, `-v` info (a line as each span closes, with its timing: `wop.node` per
//! node execution, `wop.call` per call with its outcome and `attempts.count`,
//! `wop.provider.request` per provider request with its `gen_ai.*` attributes), `-vv` debug,
//! `-vvv` trace. Lines go to standard error.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// Installs the subscriber for the process; a second call (or another subscriber already set)
/// leaves the first in place.
pub(super) fn install(verbose: u8) {
    let level = match verbose {
        0 => LevelFilter::ERROR,
        1 => LevelFilter::INFO,
        2 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    let filter = EnvFilter::builder()
        .with_default_directive(level.into())
        .from_env_lossy();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .try_init();
}
