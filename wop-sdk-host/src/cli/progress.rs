//! Progress while a run goes: one line per event worth a line, each with the time elapsed since
//! the run started; a live indicator (indicatif) on a terminal, plain lines otherwise.

use crate::provider::{ProviderError, ProviderReply, ProviderRequest};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use wop_sdk::wire::{RunEvent, kind};

/// One progress line for a run event, `None` for events not worth a line.
///
/// A provider request whose reply withheld its usage emits no `provider.usage`: its line comes
/// from [`super::reply_line`], through a [`super::WatchedProvider`]. A figure the event does not carry is
/// written `unknown`, never 0.
pub fn progress_line(e: &RunEvent) -> Option<String> {
    let p = &e.payload();
    let node = p.get("nodeId").and_then(Value::as_str).unwrap_or("?");
    let num = |k: &str| {
        p.get(k)
            .and_then(Value::as_u64)
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string())
    };
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("unknown");
    Some(match e.kind() {
        kind::NODE_STARTED => format!("{node}: started ({})", text("typeId")),
        kind::PROVIDER_USAGE => format!(
            "{node}: provider request answered, {} output tokens",
            num("outputTokens")
        ),
        kind::TRUNCATED => match p.get("outputTokenCount").and_then(Value::as_u64) {
            Some(n) => format!("{node}: reply truncated at {n} output tokens"),
            None => format!("{node}: reply truncated (output tokens unknown)"),
        },
        kind::RETRY_ATTEMPTED => format!(
            "{node}: host retry, request {} ({})",
            num("attempt"),
            text("reason")
        ),
        kind::RETRY_EXHAUSTED => format!(
            "{node}: host retries exhausted after {} provider requests ({})",
            num("totalAttempts"),
            text("finalReason")
        ),
        // A reply that reported its output tokens and not its input tokens: no `provider.usage`
        // (its two figures are required), so the line is here. Other requests without usage
        // get theirs from the provider's answer ([`super::reply_line`]).
        crate::local::PROVIDER_REQUEST
            if p.get("usage").and_then(Value::as_str) == Some("input-tokens-unknown") =>
        {
            format!(
                "{node}: provider request answered, {} output tokens (input tokens unknown)",
                num("outputTokens")
            )
        }
        kind::REFUSAL => format!("{node}: the provider refused"),
        kind::NL_TO_FORMAT_ENGAGED => format!("{node}: natural-language fallback engaged"),
        kind::NODE_COMPLETED => format!("{node}: completed"),
        kind::NODE_FAILED => format!(
            "{node}: failed ({})",
            p.pointer("/error/error")
                .or_else(|| p.pointer("/error/code"))
                .and_then(Value::as_str)
                .unwrap_or("unknown")
        ),
        _ => return None,
    })
}

/// Whether to colour output: a terminal (or `CLICOLOR_FORCE` set to anything but `0`), and
/// `NO_COLOR` absent or empty (<https://no-color.org>: `NO_COLOR` wins over everything).
pub fn colors_wanted(is_terminal: bool) -> bool {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    decide_colors(
        is_terminal,
        var("NO_COLOR").is_some(),
        var("CLICOLOR_FORCE").is_some_and(|v| v != "0"),
    )
}

fn decide_colors(is_terminal: bool, no_color: bool, force: bool) -> bool {
    !no_color && (is_terminal || force)
}

/// How a progress line reads at a glance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tone {
    Plain,
    Good,
    Warn,
    Bad,
}

fn tone_of(line: &str) -> Tone {
    if line.contains(": failed") || line.contains("exhausted") || line.contains("refused") {
        Tone::Bad
    } else if line.contains("retry")
        || line.contains("truncated")
        || line.contains("unknown")
        || line.contains("fallback")
        || line.contains("held back")
    {
        Tone::Warn
    } else if line.ends_with(": completed") {
        Tone::Good
    } else {
        Tone::Plain
    }
}

/// Paints `text` in `tone` when `on`.
fn paint(text: &str, tone: Tone, on: bool) -> String {
    let style = match tone {
        Tone::Plain => return text.to_owned(),
        Tone::Good => console::Style::new().green(),
        Tone::Warn => console::Style::new().yellow(),
        Tone::Bad => console::Style::new().red().bold(),
    };
    style.force_styling(on).apply_to(text).to_string()
}

/// `  1.25s` — the time column of a progress line.
pub fn elapsed_column(d: Duration) -> String {
    format!("{:>7.2}s", d.as_secs_f64())
}

enum Out {
    /// A terminal: a spinner with the latest line, finished lines printed above it.
    Live(ProgressBar),
    /// Anything else: one plain line each; a closed pipe is ignored.
    Plain(Box<dyn Write + Send>),
    /// Lines handed to a function, without the time column (tests, embedding).
    Sink(Box<dyn Fn(&str) + Send + Sync>),
    /// Nothing (`--json`).
    Hidden,
}

struct Inner {
    start: Instant,
    color: bool,
    out: Mutex<Out>,
}

impl Drop for Inner {
    /// A live indicator never outlives its progress, whichever way the command ended.
    fn drop(&mut self) {
        if let Out::Live(bar) = self.out.get_mut().unwrap_or_else(PoisonError::into_inner) {
            bar.finish_and_clear();
        }
    }
}

/// Where progress lines go. Cheap to clone: clones share the clock and the output.
#[derive(Clone)]
pub struct Progress(Arc<Inner>);

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let out = match &*self.out() {
            Out::Live(_) => "live",
            Out::Plain(_) => "plain",
            Out::Sink(_) => "sink",
            Out::Hidden => "hidden",
        };
        f.debug_struct("Progress")
            .field("out", &out)
            .field("color", &self.0.color)
            .finish_non_exhaustive()
    }
}

impl Progress {
    fn with(out: Out, color: bool) -> Self {
        Self(Arc::new(Inner {
            start: Instant::now(),
            color,
            out: Mutex::new(out),
        }))
    }

    fn out(&self) -> std::sync::MutexGuard<'_, Out> {
        self.0.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live(target: ProgressDrawTarget) -> Out {
        let bar = ProgressBar::with_draw_target(None, target);
        if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed:>4} {wide_msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        Out::Live(bar)
    }

    /// Progress on standard error: live on a terminal, plain lines otherwise.
    pub fn stderr() -> Self {
        let tty = std::io::stderr().is_terminal();
        let out = if tty {
            Self::live(ProgressDrawTarget::stderr())
        } else {
            Out::Plain(Box::new(std::io::stderr()))
        };
        Self::with(out, colors_wanted(tty))
    }

    /// Progress on standard output: live on a terminal, plain lines otherwise.
    pub fn stdout() -> Self {
        let tty = std::io::stdout().is_terminal();
        let out = if tty {
            Self::live(ProgressDrawTarget::stdout())
        } else {
            Out::Plain(Box::new(std::io::stdout()))
        };
        Self::with(out, colors_wanted(tty))
    }

    /// Plain lines with the time column into `w`, uncoloured.
    pub fn plain(w: impl Write + Send + 'static) -> Self {
        Self::with(Out::Plain(Box::new(w)), false)
    }

    /// Every line and block handed to `f`, without the time column.
    pub fn sink(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self::with(Out::Sink(Box::new(f)), false)
    }

    /// No progress at all.
    pub fn hidden() -> Self {
        Self::with(Out::Hidden, false)
    }

    /// Whether lines go, plain, to a stream that is not a terminal (a file, a pipe, a CI log):
    /// there a streamed call is worth a summary line per attempt, not a line per fragment.
    pub fn is_plain(&self) -> bool {
        matches!(&*self.out(), Out::Plain(_))
    }

    /// Whether lines are coloured.
    pub fn colored(&self) -> bool {
        self.0.color
    }

    /// One progress line, after the time elapsed since this progress was made.
    pub fn line(&self, text: &str) {
        let time = elapsed_column(self.0.start.elapsed());
        let painted = paint(text, tone_of(text), self.0.color);
        match &mut *self.out() {
            Out::Live(bar) => {
                bar.println(format!("{time}  {painted}"));
                bar.set_message(text.trim().to_owned());
            }
            Out::Plain(w) => {
                let _ = writeln!(w, "{time}  {painted}");
            }
            Out::Sink(f) => f(text),
            Out::Hidden => {}
        }
    }

    /// A block printed as it is (a table, a heading), without the time column.
    pub fn text(&self, block: &str) {
        match &mut *self.out() {
            Out::Live(bar) => bar.println(block),
            Out::Plain(w) => {
                let _ = writeln!(w, "{block}");
            }
            Out::Sink(f) => f(block),
            Out::Hidden => {}
        }
    }

    /// The line of a run event, if it has one ([`progress_line`]).
    pub fn event(&self, e: &RunEvent) {
        if let Some(l) = progress_line(e) {
            self.line(&l);
        }
    }

    /// The line of a provider answer no event describes, if any ([`super::reply_line`]).
    pub fn reply(&self, request: &ProviderRequest, answer: &Result<ProviderReply, ProviderError>) {
        if let Some(l) = super::reply_line(request, answer) {
            self.line(&l);
        }
    }

    /// Stops the live indicator (the printed lines stay); plain output is flushed.
    pub fn finish(&self) {
        match &mut *self.out() {
            Out::Live(bar) => bar.finish_and_clear(),
            Out::Plain(w) => {
                let _ = w.flush();
            }
            Out::Sink(_) | Out::Hidden => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, payload: Value) -> RunEvent {
        let event = wop_sdk::wire::Event::from_parts(kind, &payload).expect("a valid event");
        RunEvent::new("r", 0, String::new(), event)
    }

    #[test]
    fn missing_figures_are_unknown_not_zero() {
        // The one optional figure of the events we draw: a truncation's token count.
        let truncated =
            json!({"nodeId": "n", "provider": "p", "model": "m", "stopReason": "length"});
        let l = progress_line(&event(kind::TRUNCATED, truncated)).expect("line");
        assert_eq!(l, "n: reply truncated (output tokens unknown)");
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn plain_lines_carry_the_elapsed_time_and_no_colour() {
        let buf = Shared::default();
        let p = Progress::plain(buf.clone());
        p.line("n: started (x)");
        p.text("Heading");
        p.line("n: failed (budget_exhausted)");
        p.finish();
        let text = String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for l in [lines[0], lines[2]] {
            let (time, rest) = l.trim_start().split_once("s  ").expect("time column");
            assert!(time.parse::<f64>().is_ok(), "{l}");
            assert!(rest.starts_with("n: "), "{l}");
        }
        assert_eq!(lines[1], "Heading");
        assert!(!text.contains('\u{1b}'), "no escape codes: {text:?}");
    }

    #[test]
    fn no_color_wins() {
        assert!(decide_colors(true, false, false));
        assert!(!decide_colors(true, true, false));
        assert!(!decide_colors(false, false, false));
        assert!(decide_colors(false, false, true));
        assert!(!decide_colors(false, true, true));
        assert_eq!(paint("x: failed (e)", Tone::Bad, false), "x: failed (e)");
        assert!(paint("x: failed (e)", Tone::Bad, true).contains('\u{1b}'));
    }

    #[test]
    fn elapsed_column_is_fixed_width() {
        assert_eq!(elapsed_column(Duration::from_millis(1250)), "   1.25s");
        assert_eq!(elapsed_column(Duration::from_secs(0)), "   0.00s");
    }
}
