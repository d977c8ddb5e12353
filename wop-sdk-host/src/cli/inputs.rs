//! What a command reads from the user: the node, its input, the journal, and the plan.

use super::args::InputArgs;
use super::error::CliError;
use crate::journal::{Journal, MemoryJournal};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use wop_sdk::manifest::Pack;
use wop_sdk::node::DynNode;

/// What a command does with its journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JournalUse {
    /// `run`: create the file when missing, record the run.
    Record,
    /// `events`: read an existing journal, never modify it.
    Read,
    /// `replay`: an existing journal, to which the replay fork is added.
    Replay,
}

/// The journal behind `--journal PATH`, durable: a log journal when the file is one (it starts
/// with the log's header) or is new and named `*.log`, SQLite otherwise; in memory without one.
pub(super) fn open_journal(
    path: Option<&Path>,
    usage: JournalUse,
) -> Result<Arc<dyn Journal>, CliError> {
    use crate::journal::LogJournal;
    let Some(path) = path else {
        return Ok(Arc::new(MemoryJournal::new()));
    };
    let origin = format!("--journal {}", path.display());
    if usage != JournalUse::Record && !path.exists() {
        return Err(CliError::usage(format!(
            "{origin}: no such journal file (record a run into it with `run --journal`)"
        )));
    }
    let failed = |e: crate::journal::JournalError| CliError::usage(format!("{origin}: {e}"));
    let log = if path.exists() {
        LogJournal::is_log(path)
    } else {
        path.extension().is_some_and(|e| e == "log")
    };
    if log {
        let opened = if usage == JournalUse::Read {
            LogJournal::open_read_only(path)
        } else {
            LogJournal::open(path)
        };
        return opened
            .map(|j| Arc::new(j) as Arc<dyn Journal>)
            .map_err(failed);
    }
    #[cfg(feature = "sqlite")]
    {
        use crate::journal::SqliteJournal;
        let opened = if usage == JournalUse::Read {
            SqliteJournal::open_read_only(path)
        } else {
            SqliteJournal::open(path)
        };
        opened
            .map(|j| Arc::new(j) as Arc<dyn Journal>)
            .map_err(failed)
    }
    #[cfg(not(feature = "sqlite"))]
    {
        Err(CliError::usage(format!(
            "{origin}: this build reads SQLite journals only with the `sqlite` feature of \
             wop-sdk-host; a log journal (`*.log`) needs no feature"
        )))
    }
}

pub(super) fn find<'p>(pack: &'p Pack, type_id: &str) -> Result<&'p dyn DynNode, CliError> {
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
pub(super) struct Input {
    pub(super) value: Value,
    pub(super) origin: String,
}

pub(super) fn read_input(args: &InputArgs) -> Result<Input, CliError> {
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

pub(super) fn parse_json(text: &str, origin: &str) -> Result<Value, CliError> {
    serde_json::from_str(text).map_err(|e| {
        CliError::usage(format!(
            "{origin}: not valid JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })
}

/// Checks `input` against `node`'s input type, naming the origin and the field.
pub(super) fn plan_of(
    node: &dyn DynNode,
    input: &Value,
    origin: &str,
    prefix: &str,
) -> Result<wop_sdk::budget::CallPlan, CliError> {
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
