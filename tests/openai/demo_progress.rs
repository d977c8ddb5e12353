//! The Book AI demo's progress on plain output (a file, a pipe, a CI log): a streamed scene gets
//! a summary line per attempt, not a line per fragment.

use super::*;

/// Bytes written to a progress, kept for the test.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Written {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn on_plain_output_a_streamed_scene_gets_a_line_per_attempt_not_per_fragment() {
    let written = Written::default();
    let progress = wop_sdk_host::cli::Progress::plain(written.clone());
    let script = demo::bundled_script().expect("script");
    let report = demo::run_book(
        &demo::demo_brief(),
        script,
        Arc::new(wop_sdk_host::journal::MemoryJournal::new()),
        progress,
    )
    .await
    .expect("fits");
    assert!(report.completed(), "{report}");
    let text = String::from_utf8(written.0.lock().expect("lock").clone()).expect("UTF-8");
    assert!(!text.contains("chars so far"), "{text}");
    let call0: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().split_once("  ").map(|(_, rest)| rest.trim()))
        .filter(|l| l.starts_with("draft-1: call 0"))
        .collect();
    assert_eq!(
        call0,
        [
            "draft-1: call 0: 38 chars of attempt 1 discarded",
            "draft-1: call 0: stream complete, 136 chars (attempt 2)",
        ],
        "{text}"
    );
}
