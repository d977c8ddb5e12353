//! What a tracing subscriber writes, kept for a test to read (`tests/runtime.rs`,
//! `tests/openai/`): `let (subscriber, captured) = capture();` then, after the traced work,
//! `captured.text()`.

use std::sync::{Arc, Mutex, PoisonError};

/// A `Write` into a shared buffer, for the subscriber.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        String::from_utf8(bytes).expect("utf-8")
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A subscriber writing a line as each span closes (no colours), and what it writes.
pub fn capture() -> (impl tracing::Subscriber + Send + Sync, Captured) {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .finish();
    (subscriber, captured)
}
