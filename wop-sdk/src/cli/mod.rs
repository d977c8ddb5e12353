//! The pack command line: what any pack binary gets by calling [`main`] with its nodes.
//!
//! ```text
//! PACK manifest                                   pack.json
//! PACK estimate (--input FILE | --input-json JSON) [--json]
//!                                                 worst case per node; input maps type ids to inputs
//! PACK run --node TYPE_ID (--input FILE | --input-json JSON) [--script FILE] [--journal PATH] [--json]
//! PACK events RUN_ID --journal PATH [--json]
//! PACK replay RUN_ID --journal PATH [--json]
//! PACK conformance [--journal PATH] [--older-host] [--json]
//!                                                 the eight RFC 0248 legs against the local host
//! PACK pack --out DIR --addon FILE [--single-file] [--provider P] [--model M] [--timeout-ms N]
//!                                                 the folder a JavaScript host mounts (see [`pack`])
//! ```
//!
//! Exit codes: 0 success; 1 a run that failed or would not fit its budget; 2 a usage error (bad
//! argument, unreadable or invalid input file). Every error about a file names the file, the
//! field and the rule.
//!
//! `run` computes the node's estimate first and refuses to start (exit 1) when the node's worst
//! case does not fit its `max_calls`. It serves the node's calls from a scripted provider: the
//! `--script` file, or the input's own `script` field.
//!
//! `--journal PATH` is a SQLite journal (feature `sqlite`): `run` records into it, `events`
//! reads it without modifying it, `replay` adds the replay fork to it and serves every call from
//! the recorded outcomes, without a provider.
//!
//! ```rust,no_run
//! fn main() -> std::process::ExitCode {
//!     let pack = wop_sdk::manifest::Pack::new("community.demo.example", "0.1.0"); // .node(MyNode) … or `pack!`
//!     wop_sdk::cli::main(pack)
//! }
//! ```

pub mod pack;
mod render;
#[cfg(test)]
mod tests;

use crate::budget::Estimate;
use crate::caps::Capabilities;
use crate::host::RunId;
use crate::journal::{Journal, MemoryJournal};
use crate::local::{LocalHost, RunOptions, Script, ScriptedProvider};
use crate::manifest::Pack;
use crate::node::{DynNode, NodeOutcome};
use clap::{Args, Parser, Subcommand};
use render::render_outcome;
pub use render::{estimate_table, progress_line};
use serde_json::{Map, Value, json};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// A command-line failure: the message and the exit code (2 usage, 1 failed run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliError {
    /// 1 or 2.
    pub exit: u8,
    /// What went wrong, naming the file, the field and the rule.
    pub message: String,
}

impl CliError {
    fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: 2,
            message: message.into(),
        }
    }

    fn failed(message: impl Into<String>) -> Self {
        Self {
            exit: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[derive(Debug, Parser)]
#[command(
    about = "An OpenWOP node pack's command line",
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct InputArgs {
    /// A JSON file with the input.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// The input as JSON text.
    #[arg(long, value_name = "JSON")]
    input_json: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    /// Run one node on the local host with a scripted provider.
    Run {
        /// The node's type id.
        #[arg(long, value_name = "TYPE_ID")]
        node: String,
        #[command(flatten)]
        input: InputArgs,
        /// The provider script (JSON); otherwise the input's `script` field.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// Record the run in this SQLite journal (created when missing), for `events` and
        /// `replay`; in memory otherwise.
        #[arg(long, value_name = "PATH")]
        journal: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
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
        /// Advertise neither `callAccounting` flag (every gated leg is then skipped).
        #[arg(long)]
        older_host: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the folder a host that loads JavaScript packs (openwop-app) mounts.
    Pack(pack::PackOptions),
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

/// Runs the command line on the process arguments; what a pack binary's `main` returns.
pub fn main(pack: Pack) -> ExitCode {
    let cli = match Cli::try_parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    match rt.block_on(dispatch(&pack, cli.command, &mut out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            eprintln!("error: {e}");
            ExitCode::from(e.exit)
        }
    }
}

async fn dispatch(pack: &Pack, command: Command, out: &mut dyn Write) -> Result<(), CliError> {
    let w = |r: std::io::Result<()>| r.map_err(|e| CliError::failed(format!("cannot write: {e}")));
    match command {
        Command::Manifest => w(print_json(out, &pack.manifest())),
        Command::Estimate { input, json } => {
            let input = read_input(&input)?;
            let estimate = estimate_pack(pack, &input.value, &input.origin)?;
            if json {
                w(print_json(out, &json!(estimate)))?;
            } else {
                w(writeln!(out, "{}", estimate_table(&estimate)))?;
            }
            fits(&estimate)
        }
        Command::Run {
            node,
            input,
            script,
            journal,
            json,
        } => {
            let node = find(pack, &node)?;
            let input = read_input(&input)?;
            let script = script
                .map(|p| {
                    Script::from_file(&p).map_err(|e| CliError::usage(format!("--script {e}")))
                })
                .transpose()?;
            let journal = open_journal(journal.as_deref(), JournalUse::Record)?;
            run(node, input, script, journal, json, out).await
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
        } => {
            let journal = open_journal(journal.as_deref(), JournalUse::Record)?;
            let mut builder = LocalHost::builder().journal(journal);
            if older_host {
                builder = builder.older_host();
            }
            let target = crate::conformance::LocalTarget::new(builder.build());
            let report = crate::conformance::run_conformance(&target).await;
            if json {
                w(print_json(out, &report.to_json()))?;
            } else {
                w(writeln!(out, "{report}"))?;
            }
            if report.all_passed() {
                Ok(())
            } else {
                Err(CliError::failed("not every RFC 0248 leg passed"))
            }
        }
        Command::Pack(options) => {
            let folder = pack::write_pack(pack, &options)?;
            w(writeln!(out, "{}", folder.display()))
        }
        Command::Replay {
            run_id,
            journal,
            json,
        } => {
            let journal = open_journal(Some(&journal), JournalUse::Replay)?;
            replay(pack, journal, &RunId::new(run_id), json, out).await
        }
    }
}

/// What a command does with its journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JournalUse {
    /// `run`: create the file when missing, record the run.
    Record,
    /// `events`: read an existing journal, never modify it.
    Read,
    /// `replay`: an existing journal, to which the replay fork is added.
    Replay,
}

/// The journal behind `--journal PATH` (SQLite, durable); in memory without one.
fn open_journal(path: Option<&Path>, usage: JournalUse) -> Result<Arc<dyn Journal>, CliError> {
    let Some(path) = path else {
        return Ok(Arc::new(MemoryJournal::new()));
    };
    let origin = format!("--journal {}", path.display());
    #[cfg(feature = "sqlite")]
    {
        use crate::journal::SqliteJournal;
        if usage != JournalUse::Record && !path.exists() {
            return Err(CliError::usage(format!(
                "{origin}: no such journal file (record a run into it with `run --journal`)"
            )));
        }
        let opened = if usage == JournalUse::Read {
            SqliteJournal::open_read_only(path)
        } else {
            SqliteJournal::open(path)
        };
        opened
            .map(|j| Arc::new(j) as Arc<dyn Journal>)
            .map_err(|e| CliError::usage(format!("{origin}: {e}")))
    }
    #[cfg(not(feature = "sqlite"))]
    {
        let _ = usage;
        Err(CliError::usage(format!(
            "{origin}: this build has no durable journal (enable the `sqlite` feature of wop-sdk)"
        )))
    }
}

fn find<'p>(pack: &'p Pack, type_id: &str) -> Result<&'p dyn DynNode, CliError> {
    pack.find(type_id).ok_or_else(|| {
        CliError::usage(format!(
            "--node {type_id}: no such node in the pack `{}` (its nodes: {})",
            pack.name(),
            pack.type_ids().join(", ")
        ))
    })
}

/// An input with where it came from, for error messages.
#[derive(Debug)]
struct Input {
    value: Value,
    origin: String,
}

fn read_input(args: &InputArgs) -> Result<Input, CliError> {
    match (&args.input, &args.input_json) {
        (Some(path), _) => {
            let origin = format!("--input {}", path.display());
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::usage(format!("{origin}: cannot read the file: {e}")))?;
            let value = parse_json(&text, &origin)?;
            Ok(Input { value, origin })
        }
        (None, Some(text)) => {
            let origin = "--input-json".to_owned();
            let value = parse_json(text, &origin)?;
            Ok(Input { value, origin })
        }
        (None, None) => Err(CliError::usage(
            "an input is required: --input FILE or --input-json JSON",
        )),
    }
}

fn parse_json(text: &str, origin: &str) -> Result<Value, CliError> {
    serde_json::from_str(text).map_err(|e| {
        CliError::usage(format!(
            "{origin}: not valid JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })
}

/// Checks `input` against `node`'s input type, naming the origin and the field.
fn plan_of(
    node: &dyn DynNode,
    input: &Value,
    origin: &str,
    prefix: &str,
) -> Result<crate::budget::CallPlan, CliError> {
    node.plan_json(input).map_err(|e| {
        let field = e.field().unwrap_or("input").to_owned();
        let field = match field.strip_prefix("input") {
            Some(rest) if !prefix.is_empty() => format!("{prefix}{rest}"),
            _ if !prefix.is_empty() => format!("{prefix}.{field}"),
            _ => field,
        };
        CliError::usage(format!("{origin}: field `{field}`: {}", e.message))
    })
}

fn host_with(journal: Arc<dyn Journal>, provider: ScriptedProvider, progress: bool) -> LocalHost {
    let b = LocalHost::builder().provider(provider).journal(journal);
    if progress {
        b.observer(|e| {
            if let Some(line) = progress_line(e) {
                eprintln!("  {line}");
            }
        })
        .build()
    } else {
        b.build()
    }
}

/// The estimate of a pack for `{typeId: input, ...}`.
fn estimate_pack(pack: &Pack, input: &Value, origin: &str) -> Result<Estimate, CliError> {
    let Value::Object(map) = input else {
        return Err(CliError::usage(format!(
            "{origin}: must be an object mapping node type ids to their inputs, e.g. {{\"{}\": {{...}}}}",
            pack.type_ids().first().copied().unwrap_or("typeId")
        )));
    };
    if map.is_empty() {
        return Err(CliError::usage(format!(
            "{origin}: names no node; its keys must be node type ids ({})",
            pack.type_ids().join(", ")
        )));
    }
    let host = LocalHost::builder().build();
    let caps = Capabilities::negotiate(host.capabilities());
    let mut estimate = Estimate::new(&caps);
    if let Some(unknown) = map.keys().find(|k| pack.find(k).is_none()) {
        return Err(CliError::usage(format!(
            "{origin}: field `{unknown}`: no such node in the pack (its nodes: {})",
            pack.type_ids().join(", ")
        )));
    }
    // In the pack's order, whatever the order of the input's keys.
    for node in pack.nodes().iter().map(AsRef::as_ref) {
        let type_id = node.spec().type_id;
        let Some(node_input) = map.get(type_id) else {
            continue;
        };
        let plan = plan_of(node, node_input, origin, type_id)?;
        let s = node.spec();
        // The node's row is named by the last segment of its type id (`draft-scene`).
        let short = type_id.rsplit('.').next().unwrap_or(type_id);
        estimate.add_node(
            &caps,
            Some(host.config().provider_max_tokens),
            short,
            s.type_id,
            s.max_calls,
            &plan,
        );
    }
    Ok(estimate)
}

fn fits(estimate: &Estimate) -> Result<(), CliError> {
    let over: Vec<String> = estimate
        .nodes
        .iter()
        .filter(|n| !n.fits)
        .map(|n| {
            format!(
                "node `{}` may make {} provider requests, but its max_calls is {}",
                n.node_id,
                n.requests,
                n.max_calls.unwrap_or(0)
            )
        })
        .collect();
    if over.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "the run would not fit its budget: {}",
            over.join("; ")
        )))
    }
}

async fn run(
    node: &dyn DynNode,
    input: Input,
    script: Option<Script>,
    journal: Arc<dyn Journal>,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let plan = plan_of(node, &input.value, &input.origin, "")?;
    if script.is_none() && input.value.get("script").is_none() {
        return Err(CliError::usage(format!(
            "{}: no provider script: pass --script FILE (or a `script` field in the input, for a \
             node that takes one); the local host's provider serves only scripted replies",
            input.origin
        )));
    }
    let host = host_with(journal, ScriptedProvider::default(), !json);
    let caps = Capabilities::negotiate(host.capabilities());
    let mut estimate = Estimate::new(&caps);
    let s = node.spec();
    estimate.add_node(
        &caps,
        Some(host.config().provider_max_tokens),
        "main",
        s.type_id,
        s.max_calls,
        &plan,
    );
    if !json {
        eprintln!("{}", estimate_table(&estimate));
    }
    fits(&estimate).map_err(|e| CliError::failed(format!("refusing to start: {e}")))?;
    let options = RunOptions {
        node_id: Some("main".to_owned()),
        script,
        ..RunOptions::default()
    };
    let outcome = host.run_with(node, input.value, options).await;
    print_outcome(&outcome, Some(&estimate), json, out)
}

fn print_outcome(
    outcome: &NodeOutcome,
    estimate: Option<&Estimate>,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let written = if json {
        let mut v = json!({"outcome": outcome});
        if let Some(e) = estimate {
            v["estimate"] = json!(e);
        }
        print_json(out, &v)
    } else {
        render_outcome(outcome, out)
    };
    written.map_err(|e| CliError::failed(format!("cannot write: {e}")))?;
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
        print_json(out, &json!(events))
    } else {
        events
            .iter()
            .try_for_each(|e| writeln!(out, "{:>4} {:<32} {}", e.sequence, e.kind(), e.payload()))
    };
    written.map_err(|e| CliError::failed(format!("cannot write: {e}")))
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
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let record = known_run(&journal, run).await?;
    let meta = |k: &str| record.meta.get(k).cloned();
    let type_id = meta("typeId")
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| CliError::failed(format!("run {run}: the journal records no `typeId`")))?;
    let node_id = meta("nodeId")
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "main".to_owned());
    let input = meta("input").unwrap_or(Value::Object(Map::new()));
    let node = find(pack, &type_id)?;
    let host = host_with(journal, ScriptedProvider::default(), !json);
    let outcome = host.replay(run, &node_id, node, input).await;
    print_outcome(&outcome, None, json, out)
}

fn print_json(out: &mut dyn Write, v: &Value) -> std::io::Result<()> {
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    )
}
