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
use wop_sdk::budget::NodeEstimate;
use wop_sdk::journal::{Journal, MemoryJournal};
use wop_sdk::local::{LocalHost, RunOptions, Script, ScriptedProvider};
use wop_sdk::node::NodeOutcome;
use wop_sdk::{Capabilities, DynNode, Estimate, Node, RunId};

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

impl NodeRun {
    /// Provider requests the host reported (`attempts.count`, summed over the calls).
    pub fn requests(&self) -> u32 {
        self.outcome.calls.iter().filter_map(|c| c.requests).sum()
    }

    /// Output tokens the host reported (`attempts.outputTokens`, summed).
    pub fn output_tokens(&self) -> u64 {
        self.outcome
            .calls
            .iter()
            .filter_map(|c| c.output_tokens)
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
            .filter(|c| c.status == wop_sdk::wire::ErrorCode::BudgetExhausted.as_str())
            .count()
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
    /// The provider, to compare its own record with the report.
    pub provider: ScriptedProvider,
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
/// (in memory for the demo; a `SqliteJournal` plugs in here unchanged). `progress` receives the
/// estimate table first, then one line per interesting event while the run goes.
pub async fn run_book(
    brief: &BookBrief,
    script: Script,
    journal: Arc<dyn Journal>,
    progress: impl Fn(&str) + Send + Sync + 'static,
) -> Result<BookReport, Refused> {
    let progress = Arc::new(progress);
    let live = Arc::clone(&progress);
    let provider = ScriptedProvider::default();
    let host = LocalHost::builder()
        .provider(provider.clone())
        .journal(journal)
        // The host's observer sees every event as it happens.
        .observer(move |event| {
            if let Some(line) = wop_sdk::cli::progress_line(event) {
                live(&format!("  {line}"));
            }
        })
        .build();

    // 1. The estimate, before anything is sent. A node that cannot fit refuses the run.
    let estimate = estimate_book(&host, brief);
    progress(&wop_sdk::cli::estimate_table(&estimate));
    if !estimate.fits() {
        return Err(Refused { estimate });
    }
    progress("Progress");

    let mut book = Book {
        host,
        run_id: None,
        script: Some(script),
        report: BookReport {
            run_id: RunId::new(""),
            estimate,
            nodes: Vec::new(),
            charges: BTreeMap::new(),
            provider,
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

impl fmt::Display for BookReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Report for run {}: estimate against actual", self.run_id)?;
        writeln!(
            f,
            "  {:<10} {:>8} {:>8} {:>9} {:>8} {:>10} {:>10} {:>11} {:>8}",
            "node",
            "est.req",
            "req",
            "provider",
            "refused",
            "est.tok",
            "out tok",
            "usage",
            "budget"
        )?;
        let (mut er, mut r, mut p, mut et, mut t) = (0, 0, 0, 0, 0);
        for n in &self.nodes {
            let b = n.outcome.budget;
            writeln!(
                f,
                "  {:<10} {:>8} {:>8} {:>9} {:>8} {:>10} {:>10} {:>11} {:>8}",
                n.outcome.node_id,
                n.estimate.requests,
                n.requests(),
                n.provider_requests,
                n.refused_calls(),
                n.estimate.output_tokens,
                n.output_tokens(),
                if n.usage_complete() {
                    "complete"
                } else {
                    "incomplete"
                },
                format!(
                    "{}/{}",
                    b.used,
                    b.max_calls.map_or("-".to_owned(), |m| m.to_string())
                ),
            )?;
            er += n.estimate.requests;
            r += n.requests();
            p += n.provider_requests;
            et += n.estimate.output_tokens;
            t += n.output_tokens();
        }
        writeln!(
            f,
            "  {:<10} {er:>8} {r:>8} {p:>9} {:>8} {et:>10} {t:>10}",
            "total", ""
        )?;
        writeln!(
            f,
            "  (req: attempts.count as the host reported it; provider: requests the provider received)"
        )?;

        writeln!(f, "\nCalls")?;
        for n in &self.nodes {
            for c in &n.outcome.calls {
                let budget = wop_sdk::wire::ErrorCode::BudgetExhausted.as_str();
                let what = match (c.requests, c.status.as_str()) {
                    (None, status) if status == budget => {
                        "refused before dispatch (budget_exhausted): never sent".to_owned()
                    }
                    (None, status) => {
                        format!("failed ({status}), charged {} to the budget", c.charged)
                    }
                    (Some(req), status) => format!(
                        "{req} request{}, {} output tokens{}, {status}",
                        if req == 1 { "" } else { "s" },
                        c.output_tokens.unwrap_or(0),
                        if c.usage_complete == Some(false) {
                            " (a floor: usage withheld)"
                        } else {
                            ""
                        },
                    ),
                };
                let retry = c
                    .retry_reason
                    .as_ref()
                    .map_or_else(String::new, |r| format!("  [deliberate retry: {r}]"));
                writeln!(
                    f,
                    "  {:<10} call {}: {what}{retry}",
                    n.outcome.node_id, c.call_index
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
                }
            }
            for r in &self.reviews {
                writeln!(f, "  review of ch.{}: {}", r.number, r.notes)?;
            }
        }
        Ok(())
    }
}

/// The demo: the estimate, the run with progress lines, the report. Exit 0 when the book
/// completed, 1 when a node failed or the run was refused.
pub async fn main() -> std::process::ExitCode {
    let brief = demo_brief();
    let script = match bundled_script() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let journal: Arc<dyn Journal> = Arc::new(MemoryJournal::new());
    match run_book(&brief, script, journal, say).await {
        Err(refused) => {
            eprintln!("error: {refused}");
            std::process::ExitCode::FAILURE
        }
        Ok(report) => {
            say(&format!("\n{report}"));
            if report.completed() {
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
