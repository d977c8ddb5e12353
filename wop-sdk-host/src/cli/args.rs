//! The command line's arguments: what clap parses, and the help texts.

use super::provider::ProviderArgs;
use clap::{Args, CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use wop_sdk::manifest::Pack;

/// The provider script's format, shown by `run --help`.
pub(super) const SCRIPT_HELP: &str = "\
Provider script (--script FILE, or the input's `script` field): a JSON array of steps, served
in order, one per provider request:

  [ {\"content\": {\"title\": \"The Ledger\"}, \"usage\": {\"inputTokens\": 210, \"outputTokens\": 40}},
    {\"content\": \"Sure! Here is\", \"usage\": false},
    {\"content\": {\"text\": \"...\"}, \"usage\": {\"outputTokens\": 900}},
    {\"finishReason\": \"content-filter\", \"content\": \"I can't help with that.\"},
    {\"error\": \"503 from upstream\"} ]

  content       a string, sent as is, or any other JSON value, sent as its JSON text
  usage         {inputTokens?, outputTokens?}, or false for a reply that reports none
  finishReason  stop (default), length, content-filter
  mode          native or prompt: the structured-output mode the reply declares
  error         the provider answers with this error; nothing is generated
  hang          true: the reply never comes (the host's timeout ends the call)

Each reported outputTokens is clamped to the request's maxTokens; a reply declaring more is
served truncated (finishReason length), which makes the host's budget growth visible.

Output: progress on standard error (elapsed time per line; a live indicator on a terminal;
colours only on a terminal and never with NO_COLOR set), the result on standard output.
A figure the host did not report is written `unknown` (`null` in --json), never 0.";

pub(super) const EXIT_HELP: &str = "\
Exit codes: 0 success; 1 a run that failed or would not fit its budget, or a conformance leg
that did not pass; 2 a usage error. A closed standard output (`| head`) ends the command quietly.";

#[derive(Debug, Parser)]
#[command(disable_help_subcommand = true, after_help = EXIT_HELP)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
    /// More tracing on standard error (-v info, -vv debug, -vvv trace); `RUST_LOG` wins.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(super) verbose: u8,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(super) struct InputArgs {
    /// A JSON file with the input.
    #[arg(long, value_name = "FILE")]
    pub(super) input: Option<PathBuf>,
    /// The input as JSON text.
    #[arg(long, value_name = "JSON")]
    pub(super) input_json: Option<String>,
}

/// The arguments of `run`.
#[derive(Debug, Args)]
pub(super) struct RunArgs {
    /// The node's type id.
    #[arg(long, value_name = "TYPE_ID")]
    pub(super) node: String,
    #[command(flatten)]
    pub(super) input: InputArgs,
    /// The provider script (JSON, format below); otherwise the input's `script` field.
    #[arg(long, value_name = "FILE")]
    pub(super) script: Option<PathBuf>,
    /// Record the run in this SQLite journal (created when missing), for `events` and
    /// `replay`; in memory otherwise.
    #[arg(long, value_name = "PATH")]
    pub(super) journal: Option<PathBuf>,
    /// Also draw estimate against actual (requests, output tokens, budget) as an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub(super) report: Option<PathBuf>,
    /// Print one JSON object instead of text (no progress).
    #[arg(long)]
    pub(super) json: bool,
    #[command(flatten)]
    pub(super) provider: ProviderArgs,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Print pack.json.
    Manifest,
    /// Worst-case provider requests and output tokens per node (input: `{typeId: input, ...}`).
    Estimate {
        #[command(flatten)]
        input: InputArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one node on the local host, with a scripted provider or an OpenAI-compatible server.
    #[command(after_long_help = SCRIPT_HELP)]
    Run(RunArgs),
    /// Print a recorded run's events.
    Events {
        /// The run.
        run_id: String,
        /// The journal the run was recorded in.
        #[arg(long, value_name = "PATH")]
        journal: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the eight RFC 0248 conformance legs against the embedded local host.
    Conformance {
        /// Record the legs' runs in this SQLite journal (created when missing); in memory otherwise.
        #[arg(long, value_name = "PATH")]
        journal: Option<PathBuf>,
        /// Advertise neither `callAccounting` flag: every leg is then skipped, as RFC 0248 §C
        /// wants of such a host. That is the expected answer: `result` is `skipped-by-design`
        /// and the exit code 0, while `allPassed` stays false (no leg was judged, so none
        /// passed). Any leg that is not skipped then fails the command (exit 1).
        #[arg(long)]
        older_host: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the folder a host that loads JavaScript packs (openwop-app) mounts.
    Pack(crate::pack::PackOptions),
    /// Replay a recorded run: every call served from its recorded outcome.
    Replay {
        /// The run.
        run_id: String,
        /// The journal the run was recorded in.
        #[arg(long, value_name = "PATH")]
        journal: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The argument parser, named after `pack` (`--version` prints the pack's name and version).
pub(super) fn command_for(pack: &Pack) -> clap::Command {
    Cli::command()
        .about(format!(
            "{} {}: an OpenWOP node pack's command line",
            pack.name(),
            pack.version()
        ))
        .name(pack.name().to_owned())
        .version(format!(
            "{} (wop-sdk {})",
            pack.version(),
            env!("CARGO_PKG_VERSION")
        ))
}
