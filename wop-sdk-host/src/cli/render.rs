//! What the command line shows a person: the estimate table, a run's outcome, events, the
//! conformance report. Tables go through comfy-table, so columns hold whatever their width.

use super::output::{NodeRunJson, Sent};
use crate::conformance::Report;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use serde_json::Value;
use std::io::Write;
use wop_sdk::budget::{Estimate, NodeEstimate};
use wop_sdk::node::CallReport;
use wop_sdk::wire::RunEvent;

/// A borderless table: a dashed line under the header, columns three spaces apart.
const PRESET: &str = "     -             ";

/// A table with `header`; the columns named in `right` are right-aligned (figures).
pub(super) fn table(header: &[&str], right: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_preset(PRESET)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(Cell::new));
    for &i in right {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The table as text: each line indented by two spaces, no trailing blanks.
pub(super) fn indented(t: &Table) -> String {
    t.lines()
        .map(|l| format!("  {}", l.trim()).trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The estimate as a table: per node and in total, worst-case provider requests (on this host,
/// and on a host without `callAccounting`, which charges each structured call its ceiling and
/// the natural-language fallback) and output tokens (under each call's policy, with and without
/// budget growth), and whether it fits on each kind of host.
pub fn estimate_table(e: &Estimate) -> String {
    let mut t = table(
        &[
            "node",
            "type",
            "max_calls",
            "requests",
            "w/o 0248",
            "out tok",
            "with grow",
            "no grow",
            "fits",
        ],
        &[2, 3, 4, 5, 6, 7],
    );
    for n in &e.nodes {
        t.add_row(vec![
            n.node_id.clone(),
            n.type_id.clone(),
            n.max_calls
                .map_or_else(|| "-".to_owned(), |m| m.to_string()),
            n.requests.to_string(),
            n.requests_without_accounting.to_string(),
            n.output_tokens.to_string(),
            n.output_tokens_with_growth.to_string(),
            n.output_tokens_without_growth.to_string(),
            fits(n.fits, n.fits_without_accounting).to_owned(),
        ]);
    }
    let sum = |f: fn(&NodeEstimate) -> u64| e.nodes.iter().map(f).sum::<u64>();
    t.add_row(vec![
        "total".to_owned(),
        String::new(),
        String::new(),
        e.total_requests().to_string(),
        e.total_requests_without_accounting().to_string(),
        e.total_output_tokens().to_string(),
        sum(|n| n.output_tokens_with_growth).to_string(),
        sum(|n| n.output_tokens_without_growth).to_string(),
        fits(e.fits(), e.over_without_accounting().next().is_none()).to_owned(),
    ]);
    format!(
        "Estimate (host ceiling {} requests per structured call, truncation budget x{}; \
         w/o 0248: a host without callAccounting, each structured call charged {} with its \
         natural-language fallback)\n{}",
        e.ceiling,
        e.multiplier,
        e.ceiling_without_accounting,
        indented(&t)
    )
}

/// `yes`, `NO`, or `NO w/o 0248` when it fits only a host with `callAccounting`.
fn fits(here: bool, without_accounting: bool) -> &'static str {
    match (here, without_accounting) {
        (true, true) => "yes",
        (true, false) => "NO w/o 0248",
        (false, _) => "NO",
    }
}

/// `n request(s)`.
pub(super) fn requests(n: u32) -> String {
    if n == 1 {
        "1 request".to_owned()
    } else {
        format!("{n} requests")
    }
}

/// What one call cost, in words; unknown figures are written `unknown`, never 0.
pub fn call_summary(c: &CallReport) -> String {
    let retry = c
        .retry_reason
        .as_ref()
        .map_or_else(String::new, |r| format!(" (deliberate retry: {r})"));
    if c.charged == 0 && c.requests.is_none() {
        // Refused before dispatch: nothing reserved stays charged, nothing was sent.
        let why = if c.status == wop_sdk::wire::ErrorCode::BudgetExhausted.as_str() {
            "its worst case did not fit what was left of the budget: the budget doing its job"
        } else {
            "refused before dispatch"
        };
        return format!(
            "{}: never sent, no budget charge, nothing billed ({why}){retry}",
            c.status
        );
    }
    match c.requests {
        Some(n) => {
            let tokens = match (c.output_tokens, c.usage_complete) {
                (Some(t), Some(false)) => format!("at least {t} output tokens (usage withheld)"),
                (Some(t), _) => format!("{t} output tokens"),
                (None, _) => "output tokens unknown".to_owned(),
            };
            format!(
                "{}, {tokens}, {}, budget charge {}{retry}",
                requests(n),
                c.status,
                c.charged
            )
        }
        None if c.status == "ok" || c.status == "invalid_output" => format!(
            "{}, requests and output tokens unknown (the host reports no attempts), budget \
             charge {} (the worst case){retry}",
            c.status, c.charged
        ),
        None => format!(
            "failed ({}): budget charge {} (a failed call keeps its worst case reserved in the \
             node's budget; what the user is billed is another figure); \
             requests and output tokens unknown to the node (a failed call carries no \
             attempts){retry}",
            c.status, c.charged
        ),
    }
}

/// A run's outcome as text: the calls, the budget, what the provider was really sent, and the
/// output (pretty JSON) or the error.
pub(super) fn render_outcome(
    o: &NodeRunJson<'_>,
    color: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let status = if o.status == "completed" {
        console::Style::new().green()
    } else {
        console::Style::new().red().bold()
    }
    .force_styling(color)
    .apply_to(o.status);
    writeln!(out, "run {} node {}: {status}", o.run_id, o.node_id)?;
    for c in o.calls {
        writeln!(out, "  call {}: {}", c.call_index, call_summary(c))?;
    }
    let b = &o.budget;
    let max = b
        .max_calls
        .map_or_else(|| "no limit".to_owned(), |m| m.to_string());
    writeln!(
        out,
        "  node budget: {} charged of max_calls {max}{}",
        b.charged,
        if b.charged_worst_case > 0 {
            format!(
                " ({} of it the worst case reserved for calls that failed)",
                b.charged_worst_case
            )
        } else {
            String::new()
        }
    )?;
    writeln!(out, "  {}", sent_summary(&o.provider))?;
    if let Some(v) = o.output {
        writeln!(out, "  output:")?;
        write_indented(out, v, "    ")?;
    }
    if let Some(e) = o.error {
        writeln!(out, "  error: {e}")?;
    }
    Ok(())
}

/// What the provider itself was sent, in words: requests sent, of which answered (received;
/// some with an error) and with no answer (the provider may have received them: nobody knows),
/// the output tokens (`unknown` when no reply reported them, `at least` when some did not), and
/// connections that never reached it (not received, not provider requests).
pub(super) fn sent_summary(s: &Sent) -> String {
    if s.sent == 0 && s.not_sent == 0 {
        return "sent to the provider: nothing".to_owned();
    }
    let mut text = format!("sent to the provider: {}", requests(s.sent));
    if s.sent > 0 {
        let mut parts = vec![format!("{} answered", s.requests)];
        if s.failed > 0 {
            parts.push(format!("{} with an error status", s.failed));
        }
        if s.no_answer > 0 {
            parts.push(format!(
                "{} with no answer (the provider may have received it)",
                s.no_answer
            ));
        }
        text.push_str(&format!(" ({})", parts.join(", ")));
        text.push_str(&match (s.output_tokens, s.usage_complete) {
            (Some(n), true) => format!(", {n} output tokens"),
            (Some(n), false) => format!(", at least {n} output tokens (usage unknown for some)"),
            (None, _) => ", output tokens unknown (no reply reported its usage)".to_owned(),
        });
    }
    if s.not_sent > 0 {
        let n = s.not_sent;
        text.push_str(&format!(
            "; never reached the provider: {n} connection{} (not received, not provider requests)",
            if n == 1 { "" } else { "s" }
        ));
    }
    text
}

fn write_indented(out: &mut dyn Write, v: &Value, indent: &str) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    for line in text.lines() {
        writeln!(out, "{indent}{line}")?;
    }
    Ok(())
}

/// A run's events: one header line each (sequence, type, node), then the other payload fields,
/// objects pretty-printed under their key.
pub(super) fn render_events(events: &[RunEvent], out: &mut dyn Write) -> std::io::Result<()> {
    for e in events {
        let node = e.str("nodeId").unwrap_or_default();
        writeln!(out, "{:>4}  {:<30} {node}", e.sequence, e.kind())?;
        if let Value::Object(map) = &e.payload() {
            for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "nodeId") {
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        writeln!(out, "        {k}:")?;
                        write_indented(out, v, "          ")?;
                    }
                    Value::Array(a) if !a.is_empty() => {
                        writeln!(out, "        {k}:")?;
                        write_indented(out, v, "          ")?;
                    }
                    Value::String(text) => writeln!(out, "        {k}: {text}")?,
                    _ => writeln!(out, "        {k}: {v}")?,
                }
            }
        }
    }
    Ok(())
}

/// The conformance report: the eight official legs, then the extra checks (the RFC 0248 MUSTs
/// the legs do not hold), each as a table.
pub(super) fn conformance_table(r: &Report) -> String {
    let part = |head: &str, rows: &[(String, crate::conformance::Verdict)]| {
        let mut t = table(&[head, "verdict", "reason"], &[]);
        for (id, v) in rows {
            t.add_row(vec![
                id.clone(),
                v.as_str().to_owned(),
                v.reason().unwrap_or("").to_owned(),
            ]);
        }
        indented(&t)
    };
    let mut out = part("leg", &r.legs);
    if !r.extra.is_empty() {
        out.push_str("\n\n");
        out.push_str(&part("extra check", &r.extra));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::LocalHost;
    use wop_sdk::caps::Capabilities;

    fn columns_line_up(text: &str) {
        // Every row's `requests` figure ends in the same column as the header's.
        let lines: Vec<&str> = text
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .collect();
        let header = lines[0];
        let end = header.find("requests").expect("header") + "requests".len();
        for l in lines.iter().skip(2) {
            let cell = &l[..end];
            assert!(
                cell.ends_with(|c: char| c.is_ascii_digit()),
                "misaligned row `{l}` in\n{text}"
            );
            assert_eq!(l.chars().nth(end), Some(' '), "`{l}` in\n{text}");
        }
    }

    fn call(
        charged: u32,
        requests: Option<u32>,
        tokens: Option<u64>,
        status: &'static str,
    ) -> CallReport {
        CallReport {
            call_index: 0,
            charged,
            requests,
            output_tokens: tokens,
            usage_complete: tokens.map(|_| true),
            status,
            retry_reason: None,
        }
    }

    #[test]
    fn a_call_summary_never_invents_a_zero() {
        let failed = call_summary(&call(3, None, None, "envelope_refusal"));
        assert!(
            failed.starts_with("failed (envelope_refusal): budget charge 3"),
            "{failed}"
        );
        assert!(
            failed.contains("requests and output tokens unknown"),
            "{failed}"
        );
        assert!(!failed.contains(" 0 "), "{failed}");
        let refused = call_summary(&call(
            0,
            None,
            None,
            wop_sdk::wire::ErrorCode::BudgetExhausted.as_str(),
        ));
        assert!(
            refused.contains("never sent, no budget charge, nothing billed"),
            "{refused}"
        );
        assert!(refused.contains("the budget doing its job"), "{refused}");
        let mut floor = call(2, Some(2), Some(40), "ok");
        floor.usage_complete = Some(false);
        assert_eq!(
            call_summary(&floor),
            "2 requests, at least 40 output tokens (usage withheld), ok, budget charge 2"
        );
        let no_tokens = call_summary(&call(1, Some(1), None, "ok"));
        assert!(no_tokens.contains("output tokens unknown"), "{no_tokens}");
        let no_attempts = call_summary(&call(3, None, None, "ok"));
        assert!(
            no_attempts.contains("the host reports no attempts"),
            "{no_attempts}"
        );
    }

    #[test]
    fn a_long_node_id_keeps_the_columns() {
        let caps = Capabilities::negotiate(LocalHost::rfc0248().build().capabilities());
        let mut e = Estimate::new(&caps);
        let plan = wop_sdk::budget::CallPlan::new([wop_sdk::budget::PlannedCall::structured(
            100,
            wop_sdk::policy::RetryPolicy::HOST_DEFAULT,
        )]);
        e.add_node(&caps, None, "x", "community.t.x", Some(3), &plan);
        e.add_node(
            &caps,
            None,
            "a-node-id-far-longer-than-twelve-characters",
            "community.test.with-an-even-longer-type-id-than-before",
            Some(30),
            &plan,
        );
        let text = estimate_table(&e);
        columns_line_up(&text);
        assert!(text.contains("a-node-id-far-longer-than-twelve-characters"));
    }
}
