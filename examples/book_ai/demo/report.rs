//! The demo's report: per node, the estimate against what the host reported and what the
//! provider itself received; the charges; the book as far as it got; and its printing (a table,
//! the calls, the charges, the book) and picture.

use crate::pack::{ChapterDraft, Outline, Review};
use std::collections::BTreeMap;
use std::fmt;
use wop_sdk::budget::NodeEstimate;
use wop_sdk::node::{CallReport, NodeOutcome};
use wop_sdk::{Estimate, RunId};
use wop_sdk_host::cli::report::{Chart, ChartRow};

use super::sent::Sent;

/// The public code of a call the node's budget refused before dispatch.
pub(super) fn budget_exhausted() -> &'static str {
    wop_sdk::wire::ErrorCode::BudgetExhausted.as_str()
}

/// One node execution: its estimate, its outcome, and what the provider itself saw.
#[derive(Debug)]
pub struct NodeRun {
    /// The worst case computed before the run.
    pub estimate: NodeEstimate,
    /// The outcome, with the runtime's per-call reports.
    pub outcome: NodeOutcome,
    /// Requests the provider received for this node (its own count, not the runtime's).
    pub provider_requests: usize,
    /// Requests sent for this node with no answer: whether the provider received them is
    /// unknown, so `provider_requests` is then a floor.
    pub provider_unanswered: usize,
}

impl NodeRun {
    /// The calls that were dispatched: not those the runtime refused before dispatch (nothing
    /// charged, nothing sent).
    fn dispatched(&self) -> impl Iterator<Item = &CallReport> {
        self.outcome
            .calls
            .iter()
            .filter(|c| !(c.charged == 0 && c.requests.is_none()))
    }

    /// Provider requests the host reported (`attempts.count`, summed over the calls); `None`
    /// when a dispatched call reported none (a failed call carries no `attempts`).
    pub fn requests(&self) -> Option<u32> {
        self.dispatched().map(|c| c.requests).sum()
    }

    /// Output tokens the host reported (`attempts.outputTokens`, summed); `None` when a
    /// dispatched call reported none.
    pub fn output_tokens(&self) -> Option<u64> {
        self.dispatched().map(|c| c.output_tokens).sum()
    }

    /// `Some(false)` when a call reported `usageComplete: false` (the tokens are a floor),
    /// `None` when a dispatched call reported nothing (a failed call carries no attempts: its
    /// usage is unknown), `Some(true)` otherwise.
    pub fn usage(&self) -> Option<bool> {
        if self
            .outcome
            .calls
            .iter()
            .any(|c| c.usage_complete == Some(false))
        {
            return Some(false);
        }
        self.dispatched()
            .all(|c| c.usage_complete.is_some())
            .then_some(true)
    }

    /// True only when every dispatched call reported complete usage.
    pub fn usage_complete(&self) -> bool {
        self.usage() == Some(true)
    }

    /// Calls refused before dispatch because the budget could not cover their worst case.
    pub fn refused_calls(&self) -> usize {
        self.outcome
            .calls
            .iter()
            .filter(|c| c.status == budget_exhausted())
            .count()
    }

    /// The node's row of the picture: estimate against actual.
    pub fn chart_row(&self) -> ChartRow {
        ChartRow {
            node_id: self.outcome.node_id.clone(),
            estimate_requests: self.estimate.requests,
            requests: u32::try_from(self.provider_requests + self.provider_unanswered).ok(),
            requests_no_answer: u32::try_from(self.provider_unanswered).unwrap_or(u32::MAX),
            estimate_output_tokens: self.estimate.output_tokens,
            output_tokens: self.output_tokens(),
            output_tokens_floor: !self.usage_complete(),
            budget_used: self.outcome.budget.used,
            max_calls: self.outcome.budget.max_calls,
            held_back: u32::try_from(self.refused_calls()).unwrap_or(u32::MAX),
        }
    }
}

/// Everything the demo reports.
#[derive(Debug)]
pub struct BookReport {
    /// The run.
    pub run_id: RunId,
    /// The estimate before the run.
    pub estimate: Estimate,
    /// The node executions, in order.
    pub nodes: Vec<NodeRun>,
    /// The user's bill per beneficiary, from the host's ledger: (generations, output tokens; the
    /// tokens are a floor when a node's usage is not known complete).
    pub charges: BTreeMap<String, (u32, u64)>,
    /// The beneficiaries whose output tokens are a floor: one of the calls charged to them
    /// reported no complete usage. Each person's own calls decide, not the run's.
    pub charges_floor: std::collections::BTreeSet<String>,
    /// What the provider was sent, to compare its own record with the report.
    pub provider: Sent,
    /// The book as far as it got.
    pub outline: Option<Outline>,
    /// The drafted chapters.
    pub drafts: Vec<ChapterDraft>,
    /// The reviews.
    pub reviews: Vec<Review>,
}

impl BookReport {
    /// Whether every node completed.
    pub fn completed(&self) -> bool {
        self.nodes.iter().all(|n| n.outcome.result.is_ok())
    }

    /// The report as JSON: per node its estimate, status, output or error, calls (a figure the
    /// host did not report is `null`), budget charge and what the provider received; the bill per
    /// beneficiary (`outputTokensComplete: false` when the tokens are a floor).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let nodes: Vec<_> = self
            .nodes
            .iter()
            .map(|n| {
                let o = &n.outcome;
                let (status, output, error) = match &o.result {
                    Ok(v) => ("completed", Some(v.clone()), None),
                    Err(e) => ("failed", None, Some(e)),
                };
                json!({
                    "nodeId": o.node_id,
                    "status": status,
                    "output": output,
                    "error": error,
                    "estimate": n.estimate,
                    "calls": o.calls,
                    "requests": n.requests(),
                    "outputTokens": n.output_tokens(),
                    "usageComplete": n.usage(),
                    "budget": {"charged": o.budget.used, "maxCalls": o.budget.max_calls},
                    "provider": {"requests": n.provider_requests,
                                 "noAnswer": n.provider_unanswered},
                })
            })
            .collect();
        let billed: serde_json::Map<String, serde_json::Value> = self
            .charges
            .iter()
            .map(|(who, (generations, tokens))| {
                (
                    who.clone(),
                    json!({"generations": generations, "outputTokens": tokens,
                           "outputTokensComplete": !self.charges_floor.contains(who)}),
                )
            })
            .collect();
        json!({
            "runId": self.run_id.as_str(),
            "completed": self.completed(),
            "nodes": nodes,
            "billed": billed,
        })
    }

    /// The picture: estimate against actual per node.
    pub fn chart(&self) -> Chart {
        Chart {
            title: format!(
                "Book AI demo: estimate against actual (run {})",
                self.run_id
            ),
            rows: self.nodes.iter().map(NodeRun::chart_row).collect(),
        }
    }
}

/// A figure, or `unknown`; `at least N` when it is a floor.
fn figure(value: Option<u64>, floor: bool) -> String {
    match (value, floor) {
        (None, _) => "unknown".to_owned(),
        (Some(v), true) => format!("at least {v}"),
        (Some(v), false) => v.to_string(),
    }
}

impl fmt::Display for BookReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use comfy_table::{CellAlignment, Table};
        writeln!(f, "Report for run {}: estimate against actual", self.run_id)?;
        let mut t = Table::new();
        t.load_preset("     -             ").set_header([
            "node",
            "est. req",
            "req",
            "provider",
            "held back",
            "est. tok",
            "out tok",
            "usage",
            "budget charge",
        ]);
        for i in 1..=6 {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let (mut er, mut r, mut p, mut et, mut tok) = (0, Some(0), 0, 0, Some(0));
        let mut floor = false;
        let mut p_floor = false;
        for n in &self.nodes {
            let b = n.outcome.budget;
            t.add_row([
                n.outcome.node_id.clone(),
                n.estimate.requests.to_string(),
                figure(n.requests().map(u64::from), false),
                figure(
                    u64::try_from(n.provider_requests).ok(),
                    n.provider_unanswered > 0,
                ),
                n.refused_calls().to_string(),
                n.estimate.output_tokens.to_string(),
                figure(n.output_tokens(), !n.usage_complete()),
                match n.usage() {
                    Some(true) => "complete",
                    Some(false) => "incomplete",
                    None => "unknown",
                }
                .to_owned(),
                format!(
                    "{}/{}",
                    b.used,
                    b.max_calls.map_or("-".to_owned(), |m| m.to_string())
                ),
            ]);
            er += n.estimate.requests;
            r = r.zip(n.requests()).map(|(a, b)| a + b);
            p += n.provider_requests;
            p_floor |= n.provider_unanswered > 0;
            et += n.estimate.output_tokens;
            tok = tok.zip(n.output_tokens()).map(|(a, b)| a + b);
            floor |= !n.usage_complete();
        }
        t.add_row([
            "total".to_owned(),
            er.to_string(),
            figure(r.map(u64::from), false),
            figure(u64::try_from(p).ok(), p_floor),
            String::new(),
            et.to_string(),
            figure(tok, floor),
            String::new(),
            String::new(),
        ]);
        for line in t.lines() {
            writeln!(f, "  {}", line.trim())?;
        }
        writeln!(
            f,
            "  (req: attempts.count as the host reported it; provider: requests the provider \
             answered, `at least` when some were sent with no answer; held back: calls the budget \
             refused before dispatch; budget charge: the node's own limit, not the user's bill)"
        )?;

        writeln!(f, "\nCalls")?;
        for n in &self.nodes {
            for c in &n.outcome.calls {
                writeln!(
                    f,
                    "  {:<10} call {}: {}",
                    n.outcome.node_id,
                    c.call_index,
                    wop_sdk_host::cli::call_summary(c)
                )?;
            }
            if let Err(e) = &n.outcome.result {
                writeln!(f, "  {:<10} FAILED: {e}", n.outcome.node_id)?;
            }
        }

        // The user's bill (the host's ledger), not the nodes' budget charges above: a failed call
        // keeps its worst case in its node's budget and is billed only what was generated.
        writeln!(
            f,
            "\nBilled per beneficiary (what the user is charged; the budget column above is the \
             nodes' own limit)"
        )?;
        for (who, (generations, tokens)) in &self.charges {
            let plural = if *generations == 1 { "" } else { "s" };
            let tokens = figure(Some(*tokens), self.charges_floor.contains(who));
            writeln!(
                f,
                "  {who:<10} {generations} generation{plural}, {tokens} output tokens"
            )?;
        }

        if let Some(outline) = &self.outline {
            writeln!(f, "\nThe book: \"{}\"", outline.title)?;
            for d in &self.drafts {
                for s in &d.scenes {
                    let mark = if s.placeholder {
                        "PLACEHOLDER"
                    } else if s.repaired {
                        "repaired"
                    } else {
                        "drafted"
                    };
                    writeln!(f, "  ch.{} [{mark}] {}", d.number, s.beat)?;
                    if s.placeholder && s.text.contains(budget_exhausted()) {
                        writeln!(
                            f,
                            "        by design: the node's budget held this scene back before \
                             it was sent, so the run stayed within max_calls; draft it later or \
                             raise max_calls"
                        )?;
                    }
                }
            }
            for r in &self.reviews {
                writeln!(f, "  review of ch.{}: {}", r.number, r.notes)?;
            }
        }
        Ok(())
    }
}
