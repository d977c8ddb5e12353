//! End to end over HTTP: the eight RFC 0248 conformance legs and the Book AI example, every
//! provider request served by the loopback server.

use super::*;

/// The eight RFC 0248 legs with this provider: each leg's script is served by the loopback server
/// as OpenAI-compatible replies (`server::scripted`), so every provider request goes over HTTP.
struct OverHttp {
    server: Server,
    local: LocalHost,
}

impl ConformanceTarget for OverHttp {
    fn host(&self) -> Arc<dyn Host> {
        Arc::new(self.local.clone())
    }

    fn run_fixture(&self, input: Value) -> BoxFuture<'_, Observed> {
        // A leg that stops early leaves answers behind: each run starts from its own script.
        self.server.clear();
        let steps = input["script"].as_array().cloned().unwrap_or_default();
        self.server.push(steps.iter().map(scripted));
        ConformanceTarget::run_fixture(&self.local, input)
    }

    fn replay<'a>(&'a self, source: &'a RunId) -> BoxFuture<'a, Observed> {
        ConformanceTarget::replay(&self.local, source)
    }
}

#[tokio::test]
async fn the_eight_conformance_legs_pass_over_http() {
    let server = Server::start().await;
    let local = provider(config(&server)).local_host().build();
    let target = OverHttp { server, local };
    let report = run_conformance(&target).await;
    assert!(report.all_passed(), "{report}");
    let json = report.to_json();
    let legs = json["legs"].as_array().expect("legs");
    assert_eq!(legs.len(), LEG_IDS.len());
    for leg in legs {
        assert_eq!(leg["verdict"], "executed-pass", "{leg}");
    }
    // The legs really went over HTTP.
    assert!(target.server.received().len() >= 7);
}

/// Book AI, written by "a model" behind the loopback server that serves the bundled script's
/// replies as OpenAI-compatible completions: the same estimate, progress and report as with the
/// scripted provider, every request over HTTP.
#[tokio::test]
async fn book_ai_over_http_reports_what_the_script_reports() {
    use wop_sdk_host::journal::MemoryJournal;
    let brief = demo::demo_brief();
    let collect = || {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&lines);
        (lines, move |l: &str| {
            sink.lock().expect("lock").push(l.to_owned());
        })
    };

    let (script_lines, sink) = collect();
    let reference = demo::run_book(
        &brief,
        demo::bundled_script().expect("script"),
        Arc::new(MemoryJournal::new()),
        wop_sdk_host::cli::Progress::sink(sink),
    )
    .await
    .expect("fits");

    let server = Server::start().await;
    let steps: Value = serde_json::from_str(demo::SCRIPT).expect("script.json");
    server.push(steps.as_array().expect("steps").iter().map(scripted));
    let p = provider(config(&server));
    let fit = p.clone();
    let (http_lines, sink) = collect();
    let over_http = demo::run_book_with(
        &brief,
        Arc::new(p),
        move |c| fit.configure_host(c),
        Arc::new(MemoryJournal::new()),
        wop_sdk_host::cli::Progress::sink(sink),
    )
    .await
    .expect("fits");

    let text = |r: &demo::BookReport| r.to_string().replace(r.run_id.as_str(), "RUN");
    assert_eq!(text(&reference), text(&over_http));
    let lines = |l: &Arc<Mutex<Vec<String>>>, r: &demo::BookReport| {
        l.lock()
            .expect("lock")
            .iter()
            .map(|s| {
                s.replace(r.run_id.as_str(), "RUN")
                    .replace("mock-1", "MODEL")
                    .replace("test-model", "MODEL")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        lines(&script_lines, &reference),
        lines(&http_lines, &over_http)
    );
    // Every reply was asked for over HTTP, and the provider's own record agrees with the server.
    assert_eq!(server.remaining(), 0);
    assert_eq!(
        server.received().len(),
        over_http.provider.requests_of(&over_http.run_id).len()
    );
    assert_eq!(
        server.received().len(),
        reference.provider.requests_of(&reference.run_id).len()
    );
}
