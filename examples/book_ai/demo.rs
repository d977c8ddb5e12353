//! The demo: estimate, run with progress lines, then report estimate against actual.
//!
//! The bundled script (`script.json`) is served one reply per provider request, in order:
//!
//! | # | node | reply | what it shows |
//! |---|---|---|---|
//! | 0 | outline | `{"title"}` only | a schema violation, retried by the host |
//! | 1 | outline | the outline, `usage: false` | usage withheld: `usageComplete: false` |
//! | 2 | draft-1 | prose instead of JSON | a parse error, retried by the host |
//! | 3 | draft-1 | a 22-word scene without Hale | closed-world failure: `invalid_output` |
//! | 4 | draft-1 | the repair, 900 tokens > `maxTokens` 600 | truncated; retried with 1200 |
//! | 5 | draft-1 | the repair again, 820 tokens | valid: the pack's deliberate retry worked |
//! | 6 | draft-1 | scene 2, 410 tokens | valid first time: 5 of 16 used |
//! | 7 | review-1 | a plain-text review | host retries off, one request |
//!
//! Both scene calls are streamed (`chunks` in the script): each fragment gets a progress line as
//! the scene grows, and a host retry (steps 2 and 4) says the fragments were discarded. A stream
//! that fails after some fragments says so too, and the call fails
//! (`tests/book_ai.rs` runs the demo with such a script).
//!
//! This file holds the demo's inputs (brief, script) and its entry point; `demo/run.rs` the
//! estimate and the run of the book's nodes on a local host; `demo/report.rs` the report
//! (estimate against actual) and its printing; `demo/streams.rs` the progress lines of a
//! streamed scene.

mod report;
mod run;
mod sent;
mod streams;

pub use report::BookReport;
pub use run::{run_book, run_book_with};

use crate::pack::BookBrief;
use serde_json::Value;
use std::sync::Arc;
use wop_sdk_host::cli::Progress;
use wop_sdk_host::journal::{Journal, MemoryJournal};
use wop_sdk_host::local::{LocalConfig, Script};

/// The bundled script, compiled into the binary.
pub const SCRIPT: &str = include_str!("script.json");
/// Who owns the demo run (charged for calls that name no beneficiary).
pub const OWNER: &str = "author-1";
/// The fewest words a scene may have.
pub const MIN_WORDS: u32 = 60;

/// The demo's brief: one chapter of two scenes.
pub fn demo_brief() -> BookBrief {
    BookBrief {
        premise: "A lighthouse keeper's daughter finds the keeper's ledger torn on the night \
                  the light goes out."
            .to_owned(),
        chapters: 1,
        scenes_per_chapter: 2,
    }
}

/// How the demo reports: as `run` does, `--report FILE.svg`, `--json` and `-v`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Also write the picture (an SVG file).
    pub report: Option<std::path::PathBuf>,
    /// The report as JSON on standard output ([`BookReport::to_json`]) instead of text; the
    /// estimate and progress go to standard error either way.
    pub json: bool,
    /// Tracing on standard error (`-v` info, `-vv` debug, `-vvv` trace; `RUST_LOG` wins).
    pub verbose: u8,
}

/// The bundled script, parsed.
pub fn bundled_script() -> Result<Script, String> {
    let v: Value =
        serde_json::from_str(SCRIPT).map_err(|e| format!("script.json: not JSON: {e}"))?;
    Script::from_json(&v).map_err(|e| format!("script.json: {e}"))
}

/// The demo: the estimate, the run with progress lines, the report (as JSON with `json`); with
/// `report`, the picture too (an SVG file). With `provider` (an OpenAI-compatible server, and whether to ask for native
/// structured output), the book is written by that model instead of the bundled script. Exit 0
/// when the book completed, 1 when a node failed or the run was refused.
pub async fn main(
    options: Options,
    provider: Option<(wop_sdk_host::provider::openai::OpenAiProvider, bool)>,
) -> std::process::ExitCode {
    let Options {
        report,
        json,
        verbose,
    } = options;
    wop_sdk_host::cli::install_tracing(verbose);
    let brief = demo_brief();
    let journal: Arc<dyn Journal> = Arc::new(MemoryJournal::new());
    // As `run`: the estimate and the progress on standard error, the report on standard output
    // (text, or with --json the report alone).
    let progress = Progress::stderr();
    let result = match provider {
        Some((p, native)) => {
            let fit = p.clone();
            let configure = move |c: &mut LocalConfig| {
                fit.configure_host(c);
                c.native_structured_output = native;
            };
            run_book_with(&brief, Arc::new(p), configure, journal, progress.clone()).await
        }
        None => match bundled_script() {
            Ok(script) => run_book(&brief, script, journal, progress.clone()).await,
            Err(e) => {
                eprintln!("error: {e}");
                return std::process::ExitCode::FAILURE;
            }
        },
    };
    progress.finish();
    match result {
        Err(refused) => {
            eprintln!("error: {refused}");
            std::process::ExitCode::FAILURE
        }
        Ok(book) => {
            if json {
                let text = serde_json::to_string_pretty(&book.to_json())
                    .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
                say(&text);
            } else {
                say(&format!("\n{book}"));
            }
            if let Some(path) = report {
                if let Err(e) = book.chart().save(&path) {
                    eprintln!("error: --report {}: cannot write: {e}", path.display());
                    return std::process::ExitCode::FAILURE;
                }
                let line = format!("The picture: {}", path.display());
                if json {
                    eprintln!("{line}");
                } else {
                    say(&line);
                }
            }
            if book.completed() {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
    }
}

/// Prints a line; a closed pipe (`book_ai | head`) is not worth a panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}
