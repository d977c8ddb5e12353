//! The demo: estimate, run with progress lines, then report estimate against actual.
//!
//! The bundled script (`script.json`) is served one reply per provider request, in order:
//!
//! | # | node | reply | what it shows |
//! |---|---|---|---|
//! | 0 | outline | `{"title"}` only | a schema violation, retried by the host |
//! | 1 | outline | the outline, `usage: false` | usage withheld: `usageComplete: false` |
//! | 2 | draft-1 | prose instead of JSON | a parse error, retried by the host |
//! | 3 | draft-1 | a 22-word scene without Hale | closed-world failure: `invalid_output` |
//! | 4 | draft-1 | the repair, 900 tokens > `maxTokens` 600 | truncated; retried with 1200 |
//! | 5 | draft-1 | the repair again, 820 tokens | valid: the pack's deliberate retry worked |
//! | – | draft-1 | scene 2 is never sent | 4 of 6 used, worst case 3: `budget_exhausted` |
//! | 6 | review-1 | a plain-text review | host retries off, one request |

use crate::pack::{
    BookBrief, ChapterDraft, DraftRequest, DraftScene, Outline, PlanOutline, Review, ReviewChapter,
    ReviewRequest, draft_plan, outline_plan, review_plan,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};
use wop_sdk::budget::NodeEstimate;
use wop_sdk::cli::report::{Chart, ChartRow};
use wop_sdk::cli::{Progress, WatchedProvider};
use wop_sdk::journal::{Journal, MemoryJournal};
use wop_sdk::local::{
    LocalConfig, LocalHost, Provider, ProviderRequest, RunOptions, Script, ScriptedProvider,
};
use wop_sdk::node::{CallReport, DynNode, NodeOutcome};
use wop_sdk::{Capabilities, Estimate, Node, RunId};

/// The public code of a call the node's budget refused before dispatch.
fn budget_exhausted() -> &'static str {
    wop_sdk::wire::ErrorCode::BudgetExhausted.as_str()
}

/// The bundled script, compiled into the binary.
pub const SCRIPT: &str = include_str!("script.json");
/// Who owns the demo run (charged for calls that name no beneficiary).
pub const OWNER: &str = "author-1";
/// The fewest words a scene may have.
pub const MIN_WORDS: u32 = 60;

/// The demo's brief: one chapter of two scenes.
pub fn demo_brief() -> BookBrief {
    BookBrief {
        premise: "A lighthouse keeper's daughter finds the keeper's ledger torn on the night \
                  the light goes out."
            .to_owned(),
        chapters: 1,
        scenes_per_chapter: 2,
    }
}

/// The bundled script, parsed.
pub fn bundled_script() -> Result<Script, String> {
    let v: Value =
        serde_json::from_str(SCRIPT).map_err(|e| format!("script.json: not JSON: {e}"))?;
    Script::from_json(&v).map_err(|e| format!("script.json: {e}"))
}

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

/// One node execution: its estimate, its outcome, and what the provider itself saw.
#[derive(Debug)]
pub struct NodeRun {
    /// The worst case computed before the run.
    pub estimate: NodeEstimate,
    /// The outcome, with the runtime's per-call reports.
    pub outcome: NodeOutcome,
    /// Requests the provider received for this node (its own count, not the runtime's).
    pub provider_requests: usize,
}

/// A call the runtime refused before dispatch: nothing charged, nothing sent.
fn never_sent(c: &CallReport) -> bool {
    c.charged == 0 && c.requests.is_none()
}

impl NodeRun {
    /// Provider requests the host reported (`attempts.count`, summed over the calls); `None`
    /// when a dispatched call reported none (a failed call carries no `attempts`).
    pub fn requests(&self) -> Option<u32> {
        self.outcome
            .calls
            .iter()
            .filter(|c| !never_sent(c))
            .map(|c| c.requests)
            .sum()
    }

    /// Output tokens the host reported (`attempts.outputTokens`, summed); `None` when a
    /// dispatched call reported none.
    pub fn output_tokens(&self) -> Option<u64> {
        self.outcome
            .calls
            .iter()
            .filter(|c| !never_sent(c))
            .map(|c| c.output_tokens)
            .sum()
    }

    /// False when any call reported `usageComplete: false`: the tokens are then a floor.
    pub fn usage_complete(&self) -> bool {
        self.outcome
            .calls
            .iter()
            .all(|c| c.usage_complete != Some(false))
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
            requests: u32::try_from(self.provider_requests).ok(),
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
    /// Charges per beneficiary: (generations, output tokens).
    pub charges: BTreeMap<String, (u32, u64)>,
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

/// The provider's own record of every request it was sent: the report's "provider" column is
/// the provider's count, not the runtime's.
#[derive(Clone, Debug, Default)]
pub struct Sent(Arc<Mutex<Vec<ProviderRequest>>>);

impl Sent {
    fn push(&self, request: &ProviderRequest) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
    }

    /// The requests sent for `run`, in order.
    pub fn requests_of(&self, run: &RunId) -> Vec<ProviderRequest> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|r| &r.run_id == run)
            .cloned()
            .collect()
    }
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
    let mut builder = LocalHost::builder()
        .config(configure)
        // Every answer the provider gives gets a line, including a reply that withheld its usage
        // (no `provider.usage` event says anything about it).
        .provider(WatchedProvider::new(provider, move |request, answer| {
            record.push(request);
            on_reply.reply(request, answer);
        }))
        .journal(journal)
        // The host's observer sees every event as it happens.
        .observer(move |event| on_event.event(event));
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
    progress.text(&wop_sdk::cli::estimate_table(&estimate));
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
        report.run_id = run_id;
    }
    Ok(report)
}

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
        let provider_requests = self
            .report
            .provider
            .requests_of(run_id)
            .iter()
            .filter(|r| r.node_id == node_id)
            .count();
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
        });
        output
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
            "budget",
        ]);
        for i in 1..=6 {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let (mut er, mut r, mut p, mut et, mut tok) = (0, Some(0), 0, 0, Some(0));
        let mut floor = false;
        for n in &self.nodes {
            let b = n.outcome.budget;
            t.add_row([
                n.outcome.node_id.clone(),
                n.estimate.requests.to_string(),
                figure(n.requests().map(u64::from), false),
                n.provider_requests.to_string(),
                n.refused_calls().to_string(),
                n.estimate.output_tokens.to_string(),
                figure(n.output_tokens(), !n.usage_complete()),
                if n.usage_complete() {
                    "complete"
                } else {
                    "incomplete"
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
            et += n.estimate.output_tokens;
            tok = tok.zip(n.output_tokens()).map(|(a, b)| a + b);
            floor |= !n.usage_complete();
        }
        t.add_row([
            "total".to_owned(),
            er.to_string(),
            figure(r.map(u64::from), false),
            p.to_string(),
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
             received; held back: calls the budget refused before dispatch)"
        )?;

        writeln!(f, "\nCalls")?;
        for n in &self.nodes {
            for c in &n.outcome.calls {
                writeln!(
                    f,
                    "  {:<10} call {}: {}",
                    n.outcome.node_id,
                    c.call_index,
                    wop_sdk::cli::call_summary(c)
                )?;
            }
            if let Err(e) = &n.outcome.result {
                writeln!(f, "  {:<10} FAILED: {e}", n.outcome.node_id)?;
            }
        }

        writeln!(f, "\nCharges per beneficiary")?;
        for (who, (generations, tokens)) in &self.charges {
            let plural = if *generations == 1 { "" } else { "s" };
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

/// The demo: the estimate, the run with progress lines, the report; with `report`, the picture
/// too (an SVG file). With `provider` (an OpenAI-compatible server, and whether to ask for native
/// structured output), the book is written by that model instead of the bundled script. Exit 0
/// when the book completed, 1 when a node failed or the run was refused.
pub async fn main(
    report: Option<std::path::PathBuf>,
    provider: Option<(wop_sdk::local::openai::OpenAiProvider, bool)>,
) -> std::process::ExitCode {
    let brief = demo_brief();
    let journal: Arc<dyn Journal> = Arc::new(MemoryJournal::new());
    let progress = Progress::stdout();
    let result = match provider {
        Some((p, native)) => {
            let fit = p.clone();
            let configure = move |c: &mut LocalConfig| {
                fit.configure_host(c);
                c.native_structured_output = native;
            };
            run_book_with(&brief, Arc::new(p), configure, journal, progress.clone()).await
        }
        None => match bundled_script() {
            Ok(script) => run_book(&brief, script, journal, progress.clone()).await,
            Err(e) => {
                eprintln!("error: {e}");
                return std::process::ExitCode::FAILURE;
            }
        },
    };
    progress.finish();
    match result {
        Err(refused) => {
            eprintln!("error: {refused}");
            std::process::ExitCode::FAILURE
        }
        Ok(book) => {
            say(&format!("\n{book}"));
            if let Some(path) = report {
                if let Err(e) = book.chart().save(&path) {
                    eprintln!("error: --report {}: cannot write: {e}", path.display());
                    return std::process::ExitCode::FAILURE;
                }
                say(&format!("The picture: {}", path.display()));
            }
            if book.completed() {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
    }
}

/// Prints a line; a closed pipe (`book_ai | head`) is not worth a panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}
