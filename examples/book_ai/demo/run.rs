//! The book's run: the worst-case estimate from the brief alone, then the nodes (outline, then
//! per chapter a draft and a review) as one run on a local host, each recorded in the report.

use super::report::{BookReport, NodeRun, budget_exhausted};
use super::sent::Sent;
use super::streams::Streams;
use super::{MIN_WORDS, OWNER};
use crate::pack::{
    BookBrief, ChapterDraft, DraftRequest, DraftScene, Outline, PlanOutline, Review, ReviewChapter,
    ReviewRequest, draft_plan, outline_plan, review_plan,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use wop_sdk::budget::NodeEstimate;
use wop_sdk::node::DynNode;
use wop_sdk::{Capabilities, Estimate, Node, RunId};
use wop_sdk_host::cli::{Progress, WatchedProvider};
use wop_sdk_host::journal::Journal;
use wop_sdk_host::local::{
    LocalConfig, LocalHost, Provider, ProviderError, ProviderRequest, RunOptions, Script,
    ScriptedProvider,
};

/// The run refused to start: some node's worst case does not fit its `max_calls`.
#[derive(Debug)]
pub struct Refused {
    /// The estimate that refused it.
    pub estimate: Estimate,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("refusing to start the run:")?;
        for n in self.estimate.nodes.iter().filter(|n| !n.fits) {
            write!(
                f,
                "\n  node `{}` ({}) may make {} provider requests, but its max_calls is {}",
                n.node_id,
                n.type_id,
                n.requests,
                n.max_calls.unwrap_or(0)
            )?;
        }
        Ok(())
    }
}

/// A host-independent description of the run to estimate: node id, node, plan.
fn planned_nodes(
    brief: &BookBrief,
) -> Vec<(String, &'static wop_sdk::NodeSpec, wop_sdk::CallPlan)> {
    let mut nodes = vec![(
        "outline".to_owned(),
        &PlanOutline::SPEC,
        outline_plan(brief),
    )];
    for n in 1..=brief.chapters {
        let scenes = usize::try_from(brief.scenes_per_chapter).unwrap_or(usize::MAX);
        nodes.push((format!("draft-{n}"), &DraftScene::SPEC, draft_plan(scenes)));
        nodes.push((format!("review-{n}"), &ReviewChapter::SPEC, review_plan()));
    }
    nodes
}

/// The worst case of the whole book run on `host`, computed from the brief alone.
pub fn estimate_book(host: &LocalHost, brief: &BookBrief) -> Estimate {
    // The ceiling the host advertises, negotiated exactly as the runtime does for each node.
    let caps = Capabilities::negotiate(host.capabilities());
    let provider_max = Some(host.config().provider_max_tokens);
    let mut estimate = Estimate::new(&caps);
    for (node_id, spec, plan) in planned_nodes(brief) {
        estimate.add_node(
            &caps,
            provider_max,
            &node_id,
            spec.type_id,
            spec.max_calls,
            &plan,
        );
    }
    estimate
}

/// Estimates, then runs the book: outline, then per chapter a draft and a review, as nodes of
/// one run on a local host with the scripted provider. `journal` is where the run is recorded
/// (in memory for the demo; a `SqliteJournal` plugs in here unchanged). `progress` gets the
/// estimate table first, then one line per provider answer and per interesting event while the
/// run goes.
pub async fn run_book(
    brief: &BookBrief,
    script: Script,
    journal: Arc<dyn Journal>,
    progress: Progress,
) -> Result<BookReport, Refused> {
    let mock = ScriptedProvider::default();
    let provider = Arc::new(mock.clone()) as Arc<dyn Provider>;
    run_book_on(
        brief,
        provider,
        Some((mock, script)),
        |_| {},
        journal,
        progress,
    )
    .await
}

/// [`run_book`] with any provider (an OpenAI-compatible server, say) and the host settings it
/// needs (`configure`).
pub async fn run_book_with(
    brief: &BookBrief,
    provider: Arc<dyn Provider>,
    configure: impl FnOnce(&mut LocalConfig),
    journal: Arc<dyn Journal>,
    progress: Progress,
) -> Result<BookReport, Refused> {
    run_book_on(brief, provider, None, configure, journal, progress).await
}

/// The run itself, on the scripted provider (with its script) or on any other.
async fn run_book_on(
    brief: &BookBrief,
    provider: Arc<dyn Provider>,
    scripted: Option<(ScriptedProvider, Script)>,
    configure: impl FnOnce(&mut LocalConfig),
    journal: Arc<dyn Journal>,
    progress: Progress,
) -> Result<BookReport, Refused> {
    let sent = Sent::default();
    let (on_reply, on_event, record) = (progress.clone(), progress.clone(), sent.clone());
    let mut builder = LocalHost::rfc0248()
        .config(configure)
        // Every answer the provider gives gets a line, including a reply that withheld its usage
        // (no `provider.usage` event says anything about it).
        .provider(WatchedProvider::new(provider, move |request, answer| {
            // A request that never reached the server (refused, DNS, TLS) was not received.
            match answer {
                Err(e) if e.never_sent() => {}
                Err(ProviderError::NoAnswer(_)) => record.push(request, false),
                _ => record.push(request, true),
            }
            on_reply.reply(request, answer);
        }))
        .journal(journal)
        // The host's observer sees every event as it happens; a streamed scene gets a line per
        // fragment, so it grows on screen.
        .observer({
            let streams = Streams::default();
            move |event| streams.event(&on_event, event)
        });
    let script = match scripted {
        Some((mock, script)) => {
            builder = builder.scripts(mock);
            Some(script)
        }
        None => None,
    };
    let host = builder.build();

    // 1. The estimate, before anything is sent. A node that cannot fit refuses the run.
    let estimate = estimate_book(&host, brief);
    progress.text(&wop_sdk_host::cli::estimate_table(&estimate));
    if !estimate.fits() {
        return Err(Refused { estimate });
    }
    progress.text("Progress");

    let mut book = Book {
        host,
        progress: progress.clone(),
        run_id: None,
        script,
        report: BookReport {
            run_id: RunId::new(""),
            estimate,
            nodes: Vec::new(),
            charges: BTreeMap::new(),
            charges_floor: std::collections::BTreeSet::new(),
            provider: sent,
            outline: None,
            drafts: Vec::new(),
            reviews: Vec::new(),
        },
    };

    // 2. The run. A node that fails stops the book; the report says where.
    let outline: Option<Outline> = book.step("outline", &PlanOutline, json!(brief)).await;
    if let Some(outline) = outline {
        book.report.outline = Some(outline.clone());
        for chapter in outline.chapters {
            let n = chapter.number;
            let input = DraftRequest {
                chapter,
                min_words: MIN_WORDS,
            };
            let Some(draft) = book
                .step::<ChapterDraft>(&format!("draft-{n}"), &DraftScene, json!(input))
                .await
            else {
                break;
            };
            book.report.drafts.push(draft.clone());
            let review = ReviewRequest { draft };
            let Some(review) = book
                .step::<Review>(&format!("review-{n}"), &ReviewChapter, json!(review))
                .await
            else {
                break;
            };
            book.report.reviews.push(review);
        }
    }

    // 3. What it cost, from the host's billing ledger.
    let mut report = book.report;
    if let Some(run_id) = book.run_id {
        report.charges = book
            .host
            .charges_by_beneficiary(Some(&run_id))
            .await
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        // A person's bill is a floor when one of the calls charged to them is: their own calls
        // decide, from the ledger's rows and each call's report.
        let rows = book.host.ledger(Some(&run_id)).await.unwrap_or_default();
        report.charges_floor = rows
            .iter()
            .filter(|row| {
                let complete = report
                    .nodes
                    .iter()
                    .filter(|n| n.outcome.node_id == row.node_id)
                    .flat_map(|n| &n.outcome.calls)
                    .find(|c| c.call_index == row.call_index)
                    .and_then(|c| c.usage_complete);
                complete != Some(true)
            })
            .flat_map(|row| row.charge.beneficiaries.iter().cloned())
            .collect();
        report.run_id = run_id;
    }
    Ok(report)
}

/// The run as it goes: the host, the run once its first node made it, and the report so far.
struct Book {
    host: LocalHost,
    progress: Progress,
    run_id: Option<RunId>,
    script: Option<Script>,
    report: BookReport,
}

impl Book {
    /// Runs one node of the book's run and records it in the report; its output when it
    /// completed.
    async fn step<T: DeserializeOwned>(
        &mut self,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> Option<T> {
        let options = RunOptions {
            run_id: self.run_id.clone(),
            node_id: Some(node_id.to_owned()),
            owner: Some(OWNER.to_owned()),
            // The script belongs to the run: given with its first node.
            script: self.script.take(),
        };
        let outcome = self.host.run_with(node, input, options).await;
        let run_id = self.run_id.get_or_insert_with(|| outcome.run_id.clone());
        let count = |requests: Vec<ProviderRequest>| {
            requests.iter().filter(|r| *r.node_id == *node_id).count()
        };
        let provider_requests = count(self.report.provider.requests_of(run_id));
        let provider_unanswered = count(self.report.provider.unanswered_of(run_id));
        let estimate = self
            .report
            .estimate
            .nodes
            .iter()
            .find(|n| n.node_id == node_id)
            .cloned()
            .unwrap_or_else(|| NodeEstimate {
                node_id: node_id.to_owned(),
                type_id: node.spec().type_id.to_owned(),
                max_calls: node.spec().max_calls,
                requests: 0,
                output_tokens: 0,
                output_tokens_with_growth: 0,
                output_tokens_without_growth: 0,
                fits: true,
                requests_without_accounting: 0,
                fits_without_accounting: true,
            });
        // A call the budget held back emits no event: say so here, as what it is.
        for c in outcome
            .calls
            .iter()
            .filter(|c| c.status == budget_exhausted())
        {
            self.progress.line(&format!(
                "{node_id}: call {} held back by the node's budget before dispatch (its worst \
                 case does not fit what is left): the budget doing its job",
                c.call_index
            ));
        }
        let output = outcome
            .result
            .as_ref()
            .ok()
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        self.report.nodes.push(NodeRun {
            estimate,
            outcome,
            provider_requests,
            provider_unanswered,
        });
        output
    }
}
