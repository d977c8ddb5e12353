//! `conformance`: the eight RFC 0248 legs against the local host, as a table or JSON.

use super::error::{CliError, cannot_write, note};
use super::inputs::{JournalUse, open_journal};
use super::output::print_json;
use super::render::conformance_table;
use crate::local::LocalHost;
use serde_json::json;
use std::io::Write;
use std::path::Path;

/// Runs the legs (`--older-host`: a host that advertises no `callAccounting`).
pub(super) async fn conformance(
    journal: Option<&Path>,
    older_host: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let journal = open_journal(journal, JournalUse::Record)?;
    let mut builder = LocalHost::rfc0248().journal(journal);
    if older_host {
        builder = builder.older_host();
    }
    let target = crate::conformance::LocalTarget::new(builder.build());
    let report = crate::conformance::run_conformance(&target).await;
    let not_passed: Vec<&str> = report
        .legs
        .iter()
        .filter(|(_, v)| !v.is_pass())
        .map(|(id, _)| id.as_str())
        .collect();
    let skipped = |list: &[(String, crate::conformance::Verdict)]| {
        list.iter().all(|(_, v)| v.as_str() == "skipped")
    };
    let all_skipped = !report.legs.is_empty() && skipped(&report.legs) && skipped(&report.extra);
    // With --older-host nothing is advertised, so every leg is gated off (RFC 0248 §C): that is
    // the expected answer, not a failure, and not a pass either (`allPassed` stays false). The
    // document's `result` is what the exit code says: 0 unless it is `failed`.
    let result = if report.all_passed() {
        "passed"
    } else if older_host && all_skipped {
        "skipped-by-design"
    } else {
        "failed"
    };
    if json {
        let mut v = report.to_json();
        v["result"] = json!(result);
        print_json(out, &v).map_err(cannot_write)?;
    } else {
        writeln!(out, "{}", conformance_table(&report)).map_err(cannot_write)?;
        writeln!(out, "\nresult: {result}").map_err(cannot_write)?;
    }
    match result {
        "passed" => Ok(()),
        "skipped-by-design" => {
            note(
                "every leg was skipped, as --older-host intends: a host that advertises no \
                 `aiProviders.callAccounting` is not bound by RFC 0248 (§C), so there is nothing \
                 to judge",
            );
            Ok(())
        }
        _ => Err(CliError::failed(format!(
            "not every RFC 0248 leg passed: {}",
            not_passed.join(", ")
        ))),
    }
}
