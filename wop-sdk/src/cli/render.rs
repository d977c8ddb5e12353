//! What the command line shows a person: progress lines, the estimate table, a run's outcome.

use crate::budget::Estimate;
use crate::node::NodeOutcome;
use crate::wire::{Event, RunEvent};
use std::io::Write;

pub(super) fn render_outcome(o: &NodeOutcome, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "run {} node {}", o.run_id, o.node_id)?;
    for c in &o.calls {
        writeln!(
            out,
            "  call {}: {}, {} output tokens, usage {}, {}{}",
            c.call_index,
            match c.requests {
                None => "requests unknown".to_owned(),
                Some(1) => "1 request".to_owned(),
                Some(n) => format!("{n} requests"),
            },
            c.output_tokens.unwrap_or(0),
            match c.usage_complete {
                Some(true) => "complete",
                Some(false) => "incomplete",
                None => "unknown",
            },
            c.status,
            c.retry_reason
                .as_ref()
                .map_or_else(String::new, |r| format!(" (deliberate retry: {r})"))
        )?;
    }
    let b = o.budget;
    writeln!(
        out,
        "  budget: {} used of {}",
        b.used,
        b.max_calls
            .map_or_else(|| "unlimited".to_owned(), |m| m.to_string())
    )?;
    match &o.result {
        Ok(v) => writeln!(
            out,
            "  output: {}",
            serde_json::to_string_pretty(v).unwrap_or_default()
        ),
        Err(e) => writeln!(out, "  failed: {e}"),
    }
}

/// One progress line for a run event, `None` for events not worth a line.
///
/// A provider request that reported no usage emits no `provider.usage`, so it has no line of
/// its own; the call's `attempts` still count it.
pub fn progress_line(e: &RunEvent) -> Option<String> {
    Some(match &e.event {
        Event::NodeStarted(s) => format!("{}: started ({})", s.node_id, s.type_id),
        Event::ProviderUsage(u) => format!(
            "{}: provider request answered, {} output tokens",
            u.node_id.as_deref().unwrap_or("?"),
            u.output_tokens
        ),
        Event::Truncated(t) => format!(
            "{}: reply truncated at {} output tokens",
            t.node_id,
            t.output_token_count.unwrap_or(0)
        ),
        Event::RetryAttempted(r) => format!(
            "{}: host retry, attempt {} ({})",
            r.node_id, r.attempt, r.reason
        ),
        Event::RetryExhausted(r) => format!(
            "{}: host retries exhausted after {} attempts ({})",
            r.node_id, r.total_attempts, r.final_reason
        ),
        Event::Refusal(r) => format!("{}: the provider refused", r.node_id),
        Event::NlToFormatEngaged(n) => format!("{}: natural-language fallback engaged", n.node_id),
        Event::NodeCompleted(c) => format!("{}: completed", c.node_id),
        Event::NodeFailed(f) => format!("{}: failed ({})", f.node_id, f.error.code),
        _ => return None,
    })
}

/// The estimate as a table: per node and in total, worst-case provider requests and output
/// tokens (under each call's policy, with and without budget growth), and whether it fits.
pub fn estimate_table(e: &Estimate) -> String {
    let mut s = format!(
        "Estimate (host ceiling {} requests per structured call, truncation budget x{})\n",
        e.ceiling, e.multiplier
    );
    s.push_str(&format!(
        "  {:<12} {:<32} {:>9} {:>9} {:>10} {:>11} {:>10}  {}\n",
        "node", "type", "max_calls", "requests", "out tok", "with grow", "no grow", "fits"
    ));
    for n in &e.nodes {
        s.push_str(&format!(
            "  {:<12} {:<32} {:>9} {:>9} {:>10} {:>11} {:>10}  {}\n",
            n.node_id,
            n.type_id,
            n.max_calls
                .map_or_else(|| "-".to_owned(), |m| m.to_string()),
            n.requests,
            n.output_tokens,
            n.output_tokens_with_growth,
            n.output_tokens_without_growth,
            if n.fits { "yes" } else { "NO" }
        ));
    }
    let sum = |f: fn(&crate::budget::NodeEstimate) -> u64| e.nodes.iter().map(f).sum::<u64>();
    s.push_str(&format!(
        "  {:<12} {:<32} {:>9} {:>9} {:>10} {:>11} {:>10}  {}",
        "total",
        "",
        "",
        e.total_requests(),
        e.total_output_tokens(),
        sum(|n| n.output_tokens_with_growth),
        sum(|n| n.output_tokens_without_growth),
        if e.fits() { "yes" } else { "NO" }
    ));
    s
}
