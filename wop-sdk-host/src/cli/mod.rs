//! The pack command line: what any pack binary gets by calling [`main`] with its nodes.
//!
//! ```text
//! PACK manifest                                   pack.json
//! PACK estimate (--input FILE | --input-json JSON) [--json]
//!                                                 worst case per node; input maps type ids to inputs
//! PACK run --node TYPE_ID (--input FILE | --input-json JSON) [--script FILE] [--journal PATH]
//!          [--report FILE.svg] [--json]
//! PACK events RUN_ID --journal PATH [--json]
//! PACK replay RUN_ID --journal PATH [--json]
//! PACK conformance [--journal PATH] [--older-host] [--json]
//!                                                 the eight RFC 0248 legs against the local host
//! PACK pack --out DIR --addon FILE [--single-file] [--provider P] [--model M] [--timeout-ms N]
//!                                                 the folder a JavaScript host mounts (see [`pack`])
//! PACK --version | --help
//! ```
//!
//! Exit codes: 0 success; 1 a run that failed or would not fit its budget, or a conformance leg
//! that did not pass (under `--older-host` every leg skipped is the expected answer: `result`
//! `skipped-by-design`, exit 0, `allPassed` false); 2 a usage error (bad argument, unreadable or invalid input file). Every
//! error about a file names the file, the field and the rule. A closed standard output (`| head`)
//! is not an error: the command finishes quietly.
//!
//! `run` computes the node's estimate first and refuses to start (exit 1) when the node's worst
//! case does not fit its `max_calls`. It serves the node's calls from a scripted provider: the
//! `--script` file, or the input's own `script` field (the format is in `run --help`). While it
//! runs, progress goes to standard error, one line per event with the time elapsed: under a live
//! indicator on a terminal, plain lines otherwise, coloured only on a terminal and never with
//! `NO_COLOR` set. The result goes to standard output: text, or with `--json` one JSON object
//! (`{"outcome": {"runId", "nodeId", "status", "output" | "error", "calls", "budget",
//! "provider"}, "estimate"}`), in which a figure the host did not report is `null`.
//! `--report FILE.svg` also draws estimate against actual ([`report::Chart`]).
//!
//! `--journal PATH` is a SQLite journal (feature `sqlite`): `run` records into it, `events`
//! reads it without modifying it, `replay` adds the replay fork to it and serves every call from
//! the recorded outcomes, without a provider.
//!
//! ```rust,no_run
//! fn main() -> std::process::ExitCode {
//!     let pack = wop_sdk::manifest::Pack::new("community.demo.example", "0.1.0"); // .node(MyNode) … or `pack!`
//!     wop_sdk_host::cli::main(pack)
//! }
//! ```

mod args;
mod conformance;
mod error;
mod estimate;
mod inputs;
mod output;
mod progress;
mod provider;
mod render;
mod reply;
pub mod report;
mod run;
#[cfg(test)]
mod tests;
mod trace;
mod watch;

use crate::journal::{Journal, RunMeta};
use crate::local::{LocalHost, Provider, RunOptions, Script, ScriptedProvider};
use args::{Cli, Command, RunArgs, command_for};
use clap::FromArgMatches;
use conformance::conformance;
pub use error::CliError;
use error::{cannot_write, note};
use estimate::{estimate_pack, fits};
use inputs::{Input, JournalUse, find, open_journal, plan_of, read_input};
use output::{NodeRunJson, QuietPipe, Sent, SentLog, print_json};
pub use progress::{Progress, colors_wanted, elapsed_column, progress_line};
pub use provider::{ProviderArgs, ProviderKind, StructuredOutput, TokenField};
pub use render::{call_summary, estimate_table};
use render::{render_events, render_outcome};
pub use reply::reply_line;
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
pub use watch::WatchedProvider;
use wop_sdk::budget::Estimate;
use wop_sdk::caps::Capabilities;
use wop_sdk::host::RunId;
use wop_sdk::manifest::Pack;
use wop_sdk::node::{DynNode, NodeOutcome};

/// Installs the command line's tracing subscriber, as `-v` does (0: errors only, 1: info, 2:
/// debug, 3: trace; `RUST_LOG` wins), for a pack's own demo that takes `-v`. A second call
/// leaves the first subscriber in place.
pub fn install_tracing(verbose: u8) {
    trace::install(verbose);
}

/// Runs the command line on the process arguments; what a pack binary's `main` returns.
pub fn main(pack: Pack) -> ExitCode {
    let parsed = command_for(&pack)
        .try_get_matches_from(std::env::args_os())
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` land here too, with exit code 0.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    trace::install(cli.verbose);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            note(&format!("error: cannot start the async runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let color = colors_wanted(std::io::stdout().is_terminal());
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let result = rt.block_on(dispatch(&pack, cli.command, color, &mut out));
    let flushed = out.flush();
    match result.and_then(|()| flushed.map_err(cannot_write)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            note(&format!("error: {e}"));
            ExitCode::from(e.exit)
        }
    }
}

async fn dispatch(
    pack: &Pack,
    command: Command,
    color: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let w = |r: std::io::Result<()>| r.map_err(cannot_write);
    match command {
        Command::Manifest => w(print_json(out, &pack.manifest())),
        Command::Estimate { input, json } => {
            let input = read_input(&input)?;
            let estimate = estimate_pack(pack, &input.value, &input.origin)?;
            if json {
                w(print_json(out, &estimate))?;
            } else {
                w(writeln!(out, "{}", estimate_table(&estimate)))?;
            }
            fits(&estimate)
        }
        Command::Run(args) => {
            let node = find(pack, &args.node)?;
            let input = read_input(&args.input)?;
            let script = args
                .script
                .as_ref()
                .map(|p| Script::from_file(p).map_err(|e| CliError::usage(format!("--script {e}"))))
                .transpose()?;
            let journal = open_journal(args.journal.as_deref(), JournalUse::Record)?;
            run::run(node, input, script, journal, &args, color, out).await
        }
        Command::Events {
            run_id,
            journal,
            json,
        } => {
            let journal = open_journal(Some(&journal), JournalUse::Read)?;
            events(&journal, &RunId::new(run_id), json, out).await
        }
        Command::Conformance {
            journal,
            older_host,
            json,
        } => conformance(journal.as_deref(), older_host, json, out).await,
        Command::Pack(options) => {
            let folder = crate::pack::write_pack(pack, &options)?;
            w(writeln!(out, "{}", folder.display()))
        }
        Command::Replay {
            run_id,
            journal,
            json,
        } => {
            let journal = open_journal(Some(&journal), JournalUse::Replay)?;
            replay(pack, journal, &RunId::new(run_id), json, color, out).await
        }
    }
}

/// The scripted provider, for `replay` (a replay asks no provider) and `run --provider script`.
fn scripted() -> Chosen {
    let mock = ScriptedProvider::default();
    Chosen {
        provider: Arc::new(mock.clone()),
        scripts: Some(mock),
        configure: Box::new(|_| {}),
    }
}

/// The provider `run`'s flags choose: the one place it is chosen. Whatever it is, [`host_with`]
/// watches it.
fn provider(args: &ProviderArgs) -> Result<Chosen, CliError> {
    // Refuses flags that only an OpenAI-compatible server uses with the scripted provider.
    args.host_builder()?;
    #[cfg(feature = "openai")]
    if let Some(openai) = args.openai_provider()? {
        let fit = openai.clone();
        let native = args.native_structured_output();
        return Ok(Chosen {
            provider: Arc::new(openai),
            scripts: None,
            configure: Box::new(move |c| {
                fit.configure_host(c);
                c.native_structured_output = native;
            }),
        });
    }
    Ok(scripted())
}

/// The provider of a run, the scripted provider's handle when it is one (it serves `--script`
/// and the scripts of node inputs), and the host settings the provider needs.
struct Chosen {
    provider: Arc<dyn Provider>,
    scripts: Option<ScriptedProvider>,
    configure: Box<dyn FnOnce(&mut crate::local::LocalConfig)>,
}

/// A local host on `journal` whose provider is watched: what it receives goes to `sent`, and
/// every event and every answer without an event of its own to `progress`.
fn host_with(
    journal: Arc<dyn Journal>,
    chosen: Chosen,
    progress: &Progress,
    sent: &SentLog,
) -> LocalHost {
    let (on_reply, on_event, log) = (progress.clone(), progress.clone(), sent.clone());
    let mut builder = LocalHost::rfc0248()
        .config(chosen.configure)
        .journal(journal)
        .provider(WatchedProvider::new(
            chosen.provider,
            move |request, answer| {
                log.record(request, answer);
                on_reply.reply(request, answer);
            },
        ))
        .observer(move |e| on_event.event(e));
    if let Some(scripts) = chosen.scripts {
        builder = builder.scripts(scripts);
    }
    builder.build()
}

fn print_outcome(
    outcome: &NodeOutcome,
    sent: Sent,
    estimate: Option<&Estimate>,
    json: bool,
    color: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let shape = NodeRunJson::new(outcome, sent);
    let written = if json {
        let mut v = json!({"outcome": shape});
        if let Some(e) = estimate {
            v["estimate"] = json!(e);
        }
        print_json(out, &v)
    } else {
        render_outcome(&shape, color, out)
    };
    written.map_err(cannot_write)?;
    match &outcome.result {
        Ok(_) => Ok(()),
        Err(e) => Err(CliError::failed(format!(
            "run {} node {} failed: {e}",
            outcome.run_id, outcome.node_id
        ))),
    }
}

async fn events(
    journal: &Arc<dyn Journal>,
    run: &RunId,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    known_run(journal, run).await?;
    let events = journal
        .events(run)
        .await
        .map_err(|e| CliError::failed(format!("cannot read the journal: {e}")))?;
    let written = if json {
        print_json(out, &events)
    } else {
        render_events(&events, out)
    };
    written.map_err(cannot_write)
}

async fn known_run(
    journal: &Arc<dyn Journal>,
    run: &RunId,
) -> Result<crate::journal::RunRecord, CliError> {
    journal
        .run(run)
        .await
        .map_err(|e| CliError::failed(format!("cannot read the journal: {e}")))?
        .ok_or_else(|| CliError::usage(format!("RUN_ID {run}: no such run in the journal")))
}

async fn replay(
    pack: &Pack,
    journal: Arc<dyn Journal>,
    run: &RunId,
    json: bool,
    color: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let record = known_run(&journal, run).await?;
    let RunMeta {
        node_id,
        type_id,
        input,
    } = record.meta;
    if type_id.is_empty() {
        return Err(CliError::failed(format!(
            "run {run}: the journal records no `typeId`"
        )));
    }
    let node = find(pack, &type_id)?;
    let progress = if json {
        Progress::hidden()
    } else {
        Progress::stderr()
    };
    let sent = SentLog::default();
    let host = host_with(journal, scripted(), &progress, &sent);
    let outcome = host.replay(run, &node_id, node, input).await;
    progress.finish();
    print_outcome(&outcome, sent.of(&node_id), None, json, color, out)
}
