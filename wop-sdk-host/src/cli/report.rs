//! The picture of a run: estimate against actual per node, as an SVG document built with the
//! `svg` crate (elements and attributes, escaped by the crate; no hand-written markup).
//!
//! Three panels, one bar pair per node: provider requests, output tokens, and the budget used
//! of `max_calls`. Every bar carries `class` (`bar estimate`, `bar actual`, `bar max-calls`,
//! `bar used`), `data-node` and `data-value` attributes, so a reader (or a test) can find it. An
//! unknown figure is drawn as a dashed empty box labelled `unknown`, never as 0.

use svg::Document;
use svg::node::element::{Group, Line, Rectangle, Text};

/// One node's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartRow {
    /// The node id.
    pub node_id: String,
    /// Worst-case provider requests (the estimate).
    pub estimate_requests: u32,
    /// Provider requests really sent (answered or not); `None` when unknown.
    pub requests: Option<u32>,
    /// Of `requests`, those that got no answer (a timeout): the provider may have received them.
    pub requests_no_answer: u32,
    /// Worst-case output tokens (the estimate).
    pub estimate_output_tokens: u64,
    /// Output tokens reported; `None` when unknown.
    pub output_tokens: Option<u64>,
    /// True when `output_tokens` is a floor (a reply withheld its usage).
    pub output_tokens_floor: bool,
    /// Provider requests charged to the node's budget.
    pub budget_used: u32,
    /// The node's `max_calls`, if it has one.
    pub max_calls: Option<u32>,
    /// Calls the node's budget refused before dispatch (never sent).
    pub held_back: u32,
}

/// Estimate against actual for the nodes of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chart {
    /// The heading (e.g. the run id).
    pub title: String,
    /// One row per node, in run order.
    pub rows: Vec<ChartRow>,
}

const WIDTH: u32 = 820;
const BAR: u32 = 14;
const ROW: u32 = 44;
const FONT: &str = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
const ESTIMATE: &str = "#b8c2cc";
const ACTUAL: &str = "#2b6cb0";
const USED: &str = "#2f855a";
const OVER: &str = "#c53030";

fn text(x: u32, y: u32, content: impl Into<String>) -> Text {
    Text::new(content)
        .set("x", x)
        .set("y", y)
        .set("font-family", FONT)
        .set("font-size", 12)
        .set("fill", "#1a202c")
}

/// A bar of `value` scaled by `scale`; at least 1 px wide when the value is not 0.
fn bar(x: u32, y: u32, value: u64, scale: f64, class: &str, node: &str, fill: &str) -> Rectangle {
    #[allow(clippy::cast_precision_loss)]
    let w = (value as f64 * scale).round();
    let w = if value > 0 { w.max(1.0) } else { 0.0 };
    Rectangle::new()
        .set("x", x)
        .set("y", y)
        .set("width", w)
        .set("height", BAR)
        .set("rx", 2)
        .set("fill", fill)
        .set("class", format!("bar {class}"))
        .set("data-node", node)
        .set("data-value", value)
}

fn width_of(value: u64, scale: f64) -> u32 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let w = (value as f64 * scale).round() as u32;
    w
}

fn unknown_box(x: u32, y: u32, class: &str, node: &str) -> Group {
    Group::new()
        .add(
            Rectangle::new()
                .set("x", x)
                .set("y", y)
                .set("width", 60)
                .set("height", BAR)
                .set("fill", "none")
                .set("stroke", ACTUAL)
                .set("stroke-dasharray", "3 2")
                .set("class", format!("bar {class} unknown"))
                .set("data-node", node)
                .set("data-value", "unknown"),
        )
        .add(text(x + 66, y + 11, "unknown").set("class", "value"))
}

impl Chart {
    /// The chart as an SVG document.
    pub fn to_svg(&self) -> String {
        self.document().to_string()
    }

    /// Writes the SVG document to `path`.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        svg::save(path, &self.document())
    }

    fn document(&self) -> Document {
        let longest = self
            .rows
            .iter()
            .map(|r| r.node_id.chars().count())
            .max()
            .unwrap_or(4);
        let label_w = u32::try_from(longest)
            .unwrap_or(u32::MAX)
            .saturating_mul(8)
            .saturating_add(24)
            .clamp(110, 320);
        let plot_w = WIDTH - label_w - 130;
        let rows = u32::try_from(self.rows.len()).unwrap_or(u32::MAX).max(1);
        let panel_h = 34 + rows * ROW;
        let top = 78;
        let height = top + 3 * panel_h + 16;

        let mut doc = Document::new()
            .set("viewBox", (0, 0, WIDTH, height))
            .set("width", WIDTH)
            .set("height", height)
            .add(
                Rectangle::new()
                    .set("width", "100%")
                    .set("height", "100%")
                    .set("fill", "#ffffff"),
            )
            .add(
                text(16, 28, self.title.clone())
                    .set("font-size", 16)
                    .set("font-weight", "bold")
                    .set("class", "title"),
            );
        // The legend.
        let mut legend = Group::new().set("class", "legend");
        for (i, (fill, label)) in [
            (ESTIMATE, "estimate (worst case)"),
            (ACTUAL, "actual"),
            (USED, "budget used"),
        ]
        .into_iter()
        .enumerate()
        {
            let x = 16 + u32::try_from(i).unwrap_or(0) * 190;
            legend = legend
                .add(
                    Rectangle::new()
                        .set("x", x)
                        .set("y", 42)
                        .set("width", 12)
                        .set("height", 12)
                        .set("fill", fill),
                )
                .add(text(x + 18, 52, label));
        }
        doc = doc.add(legend);

        for (p, metric) in [Metric::Requests, Metric::OutputTokens, Metric::Budget]
            .into_iter()
            .enumerate()
        {
            let (id, title) = metric.names();
            let y0 = top + u32::try_from(p).unwrap_or(0) * panel_h;
            let pairs: Vec<Pair> = self.rows.iter().map(|r| metric.pair(r)).collect();
            let max = pairs
                .iter()
                .flat_map(|f| [f.estimate, f.actual])
                .flatten()
                .max()
                .unwrap_or(1)
                .max(1);
            #[allow(clippy::cast_precision_loss)]
            let scale = f64::from(plot_w) / max as f64;
            let mut g = Group::new()
                .set("class", format!("panel {id}"))
                .set("data-panel", id)
                .add(
                    text(16, y0 + 16, title)
                        .set("font-size", 13)
                        .set("font-weight", "bold")
                        .set("class", "panel-title"),
                )
                .add(
                    Line::new()
                        .set("x1", label_w)
                        .set("y1", y0 + 24)
                        .set("x2", label_w)
                        .set("y2", y0 + 24 + rows * ROW)
                        .set("stroke", "#a0aec0"),
                );
            for (i, (row, f)) in self.rows.iter().zip(&pairs).enumerate() {
                let y = y0 + 28 + u32::try_from(i).unwrap_or(0) * ROW;
                let node = row.node_id.as_str();
                g = g.add(
                    text(label_w - 8, y + BAR + 2, node)
                        .set("text-anchor", "end")
                        .set("class", "node-label"),
                );
                g = g.add(Self::pair(label_w + 1, y, node, f, scale));
            }
            doc = doc.add(g);
        }
        doc
    }

    fn pair(x: u32, y: u32, node: &str, f: &Pair, scale: f64) -> Group {
        let mut g = Group::new().set("data-node", node);
        let (est_class, est_fill) = if f.budget {
            ("max-calls", ESTIMATE)
        } else {
            ("estimate", ESTIMATE)
        };
        match f.estimate {
            Some(v) => {
                let label = if f.budget {
                    format!("max_calls {v}")
                } else {
                    v.to_string()
                };
                g = g.add(bar(x, y, v, scale, est_class, node, est_fill)).add(
                    text(x + width_of(v, scale) + 6, y + 11, label)
                        .set("class", "value")
                        .set("fill", "#4a5568"),
                );
            }
            None => {
                g = g.add(text(x + 6, y + 11, "no max_calls").set("class", "value"));
            }
        }
        let y2 = y + BAR + 4;
        match f.actual {
            Some(v) => {
                let over = f.budget && f.estimate.is_some_and(|m| v > m);
                let (class, fill) = if f.budget {
                    ("used", if over { OVER } else { USED })
                } else {
                    ("actual", ACTUAL)
                };
                let label = match (f.budget, f.estimate, f.floor, f.held_back) {
                    (true, Some(m), _, _) => format!("{v} of {m}"),
                    (_, _, true, _) => format!("at least {v} (usage withheld)"),
                    _ if f.no_answer > 0 => format!(
                        "{v} sent, {} with no answer (the provider may have received it)",
                        f.no_answer
                    ),
                    (_, _, _, 1) => format!("{v} (1 call held back by the budget)"),
                    (_, _, _, n) if n > 1 => format!("{v} ({n} calls held back by the budget)"),
                    _ => v.to_string(),
                };
                g = g
                    .add(bar(x, y2, v, scale, class, node, fill))
                    .add(text(x + width_of(v, scale) + 6, y2 + 11, label).set("class", "value"));
            }
            None => g = g.add(unknown_box(x, y2, "actual", node)),
        }
        g
    }
}

/// What a panel shows.
#[derive(Clone, Copy, Debug)]
enum Metric {
    Requests,
    OutputTokens,
    Budget,
}

impl Metric {
    /// The panel's id (its `data-panel`) and heading.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::Requests => ("requests", "Provider requests"),
            Self::OutputTokens => ("output-tokens", "Output tokens"),
            Self::Budget => ("budget", "Budget used of max_calls"),
        }
    }

    fn pair(self, r: &ChartRow) -> Pair {
        match self {
            Self::Requests => Pair {
                estimate: Some(u64::from(r.estimate_requests)),
                actual: r.requests.map(u64::from),
                floor: false,
                budget: false,
                held_back: r.held_back,
                no_answer: r.requests_no_answer,
            },
            Self::OutputTokens => Pair {
                estimate: Some(r.estimate_output_tokens),
                actual: r.output_tokens,
                floor: r.output_tokens_floor,
                budget: false,
                held_back: 0,
                no_answer: 0,
            },
            Self::Budget => Pair {
                estimate: r.max_calls.map(u64::from),
                actual: Some(u64::from(r.budget_used)),
                floor: false,
                budget: true,
                held_back: 0,
                no_answer: 0,
            },
        }
    }
}

/// One panel's figures for one node.
struct Pair {
    estimate: Option<u64>,
    actual: Option<u64>,
    floor: bool,
    budget: bool,
    /// Calls held back by the budget, said beside the requests bar.
    held_back: u32,
    /// Requests with no answer, said beside the requests bar.
    no_answer: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_by_the_builder() {
        let chart = Chart {
            title: "a <b> & c".into(),
            rows: vec![ChartRow {
                node_id: "n<1>".into(),
                estimate_requests: 3,
                requests: None,
                requests_no_answer: 0,
                estimate_output_tokens: 100,
                output_tokens: Some(40),
                output_tokens_floor: true,
                budget_used: 3,
                max_calls: Some(3),
                held_back: 0,
            }],
        };
        let svg = chart.to_svg();
        assert!(svg.contains("a &lt;b&gt; &amp; c"), "{svg}");
        assert!(svg.contains("n&lt;1&gt;"), "{svg}");
        assert!(svg.contains("data-value=\"unknown\""));
        assert!(svg.contains("at least 40"));
    }
}
