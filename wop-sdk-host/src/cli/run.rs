//! `run`: one node on the local host, with the estimate first, progress while it runs, and the
//! outcome (text, JSON, or the picture) at the end.

use super::*;

pub(super) async fn run(
    node: &dyn DynNode,
    input: Input,
    script: Option<Script>,
    journal: Arc<dyn Journal>,
    args: &RunArgs,
    color: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let plan = plan_of(node, &input.value, &input.origin, "")?;
    let chosen = provider(&args.provider)?;
    if !args.provider.is_script() && script.is_some() {
        return Err(CliError::usage(
            "--script serves the scripted provider: drop it, or drop `--provider openai`",
        ));
    }
    if args.provider.is_script() && script.is_none() && input.value.get("script").is_none() {
        return Err(CliError::usage(format!(
            "{}: no provider script: pass --script FILE (or a `script` field in the input, for a \
             node that takes one; the format is in `run --help`), or use `--provider openai` for \
             an OpenAI-compatible server",
            input.origin
        )));
    }
    let progress = if args.json {
        Progress::hidden()
    } else {
        Progress::stderr()
    };
    let sent = SentLog::default();
    let host = host_with(journal, chosen, &progress, &sent);
    let caps = Capabilities::negotiate(host.capabilities());
    let mut estimate = Estimate::new(&caps);
    let s = node.spec();
    let node_id = "main";
    estimate.add_node(
        &caps,
        Some(host.config().provider_max_tokens),
        node_id,
        s.type_id,
        s.max_calls,
        &plan,
    );
    progress.text(&estimate_table(&estimate));
    fits(&estimate).map_err(|e| CliError::failed(format!("refusing to start: {e}")))?;
    progress.text("Progress");
    let options = RunOptions {
        node_id: Some(node_id.to_owned()),
        script,
        ..RunOptions::default()
    };
    let outcome = host.run_with(node, input.value, options).await;
    progress.finish();
    let provider = sent.of(node_id);
    if let Some(path) = &args.report {
        let chart = chart_of(&outcome, &estimate, provider, s.type_id);
        chart.save(path).map_err(|e| {
            CliError::failed(format!("--report {}: cannot write: {e}", path.display()))
        })?;
    }
    print_outcome(&outcome, provider, Some(&estimate), args.json, color, out)
}

/// The picture of one node's run: its estimate against what the provider received.
fn chart_of(o: &NodeOutcome, estimate: &Estimate, sent: Sent, type_id: &str) -> report::Chart {
    let e = estimate.nodes.iter().find(|n| n.node_id == o.node_id);
    report::Chart {
        title: format!("{type_id}: estimate against actual (run {})", o.run_id),
        rows: vec![report::ChartRow {
            node_id: o.node_id.clone(),
            estimate_requests: e.map_or(0, |n| n.requests),
            // Requests sent; those with no answer may or may not have been received (said so).
            requests: Some(sent.sent),
            requests_no_answer: sent.no_answer,
            estimate_output_tokens: e.map_or(0, |n| n.output_tokens),
            output_tokens: sent.output_tokens,
            output_tokens_floor: !sent.usage_complete,
            budget_used: o.budget.used,
            max_calls: o.budget.max_calls,
            held_back: held_back(&o.calls),
        }],
    }
}

/// Calls the node's budget refused before dispatch.
fn held_back(calls: &[wop_sdk::node::CallReport]) -> u32 {
    let n = calls
        .iter()
        .filter(|c| c.status == wop_sdk::wire::ErrorCode::BudgetExhausted.as_str())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}
