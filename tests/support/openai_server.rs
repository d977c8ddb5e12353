//! A small OpenAI-compatible server on 127.0.0.1 for tests and benches: HTTP/1.1 with keep-alive,
//! one scripted answer per request, in order, and a record of every request it received.
//!
//! Written over a tokio `TcpListener` by hand (not a server crate) so that an answer can also
//! misbehave: never come, or stop in the middle of its body.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A computed answer: from the request's JSON body.
pub type Compute = Box<dyn FnOnce(&Value) -> Answer + Send>;

/// How the server answers one request.
pub enum Answer {
    /// A complete response.
    Http {
        /// The status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// A response whose `Content-Length` says `declared` bytes, of which only `body` is sent
    /// before the connection closes.
    CloseMidBody {
        /// The declared length.
        declared: usize,
        /// What is sent.
        body: Vec<u8>,
    },
    /// [`Answer::CloseMidBody`] for a stream: `text/event-stream`, `declared` bytes announced,
    /// only `body` sent before the connection closes.
    CloseMidStream {
        /// The declared length.
        declared: usize,
        /// What is sent.
        body: Vec<u8>,
    },
    /// The request is read and never answered (the connection stays open).
    Hang,
    /// The answer is computed from the request body.
    With(Compute),
    /// This answer, then the server stops as a process that ends does: it stops listening (a
    /// later connection is refused) and closes every connection, idle ones included.
    ThenStop(Box<Answer>),
}

impl Answer {
    /// A chat completion: one choice with `content`, `finish_reason`, and `usage` when given
    /// (`(prompt_tokens, completion_tokens)`).
    pub fn completion(content: &str, finish: &str, usage: Option<(u64, u64)>) -> Self {
        let mut body = json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish}],
        });
        if let Some((input, output)) = usage {
            body["usage"] = json!({"prompt_tokens": input, "completion_tokens": output,
                                   "total_tokens": input + output});
        }
        Self::json(200, &body)
    }

    /// A streamed chat completion (`stream: true`) as server-sent events: a first chunk with the
    /// role, one chunk per piece (the finish reason on the last), the usage chunk when given
    /// (`(prompt_tokens, completion_tokens)`, as `stream_options.include_usage` asks), `[DONE]`.
    pub fn stream<S: AsRef<str>>(pieces: &[S], finish: &str, usage: Option<(u64, u64)>) -> Self {
        let mut out = String::new();
        let mut event = |v: Value| out.push_str(&format!("data: {v}\n\n"));
        event(
            json!({"object": "chat.completion.chunk", "model": "test-model",
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        );
        for (i, p) in pieces.iter().enumerate() {
            let finish = (i + 1 == pieces.len()).then_some(finish);
            event(
                json!({"object": "chat.completion.chunk", "model": "test-model",
                         "choices": [{"index": 0, "delta": {"content": p.as_ref()},
                                      "finish_reason": finish}]}),
            );
        }
        if pieces.is_empty() {
            event(
                json!({"object": "chat.completion.chunk", "model": "test-model",
                         "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            );
        }
        if let Some((input, output)) = usage {
            event(
                json!({"object": "chat.completion.chunk", "model": "test-model", "choices": [],
                         "usage": {"prompt_tokens": input, "completion_tokens": output,
                                   "total_tokens": input + output}}),
            );
        }
        out.push_str("data: [DONE]\n\n");
        Self::Http {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: out.into_bytes(),
        }
    }

    /// A response with a JSON body.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::Http {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    /// The same answer with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Self::Http { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// An answer computed from the request body.
    pub fn with(f: impl FnOnce(&Value) -> Answer + Send + 'static) -> Self {
        Self::With(Box::new(f))
    }
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Received {
    /// `POST /v1/chat/completions`.
    pub request_line: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    answers: VecDeque<Answer>,
    received: Vec<Received>,
    /// Received and not recorded (the bench sets it: the record would grow without bound).
    quiet: bool,
    /// An answer repeated when none is queued.
    repeat: Option<(u16, Vec<u8>)>,
    /// The listener's task and each connection's: aborted when the server stops.
    tasks: Vec<tokio::task::AbortHandle>,
}

/// The server. It stops when dropped.
pub struct Server {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn stop(state: &Mutex<State>) {
    for t in std::mem::take(&mut lock(state).tasks) {
        t.abort();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// Binds 127.0.0.1 on a free port and serves.
    pub async fn start() -> Self {
        Self::start_on(TcpListener::bind("127.0.0.1:0").await.expect("bind"))
    }

    /// Serves on `listener`: e.g. a socket bound earlier and not listening until now, so that
    /// connections to its port were refused before.
    pub fn start_on(listener: TcpListener) -> Self {
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let conn = tokio::spawn(serve(stream, Arc::clone(&shared)));
                lock(&shared).tasks.push(conn.abort_handle());
            }
        });
        lock(&state).tasks.push(task.abort_handle());
        Self { addr, state, task }
    }

    /// Stops the server as a process that ends: no more listening (a connection is refused),
    /// every connection closed. What it received stays readable.
    pub fn stop(&self) {
        stop(&self.state);
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Queues answers, served in order.
    pub fn push(&self, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.state).answers.extend(answers);
    }

    /// Answers every request (when none is queued) with `body`, without recording requests.
    pub fn repeat(&self, status: u16, body: &Value) {
        let mut s = lock(&self.state);
        s.quiet = true;
        s.repeat = Some((status, body.to_string().into_bytes()));
    }

    /// Drops the answers not served yet.
    pub fn clear(&self) {
        lock(&self.state).answers.clear();
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state).received.clone()
    }

    /// Answers not served yet.
    pub fn remaining(&self) -> usize {
        lock(&self.state).answers.len()
    }
}

/// Reads one request; `None` when the client closed the connection.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Received> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 65536];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    buf.drain(..head_end + length);
    Some(Received {
        request_line,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)], length: usize) -> Vec<u8> {
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\ncontent-length: {length}\r\n",
        reason(status)
    );
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    h.into_bytes()
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut buf = Vec::new();
    while let Some(request) = read_request(&mut stream, &mut buf).await {
        let body = request.body.clone();
        let answer = {
            let mut s = lock(&state);
            if !s.quiet {
                s.received.push(request);
            }
            match s.answers.pop_front() {
                Some(a) => a,
                None => match &s.repeat {
                    Some((status, body)) => Answer::Http {
                        status: *status,
                        headers: vec![("content-type".into(), "application/json".into())],
                        body: body.clone(),
                    },
                    None => Answer::json(418, &json!({"error": {"message": "no answer left"}})),
                },
            }
        };
        let (answer, then_stop) = match answer {
            Answer::ThenStop(a) => (*a, true),
            a => (a, false),
        };
        let answer = match answer {
            Answer::With(f) => f(&body),
            other => other,
        };
        match answer {
            Answer::Http {
                status,
                headers,
                body,
            } => {
                let mut out = head(status, &headers, body.len());
                out.extend_from_slice(&body);
                if stream.write_all(&out).await.is_err() {
                    return;
                }
            }
            Answer::CloseMidBody { declared, body } => {
                let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
                let mut out = head(200, &headers, declared);
                out.extend_from_slice(&body);
                let _ = stream.write_all(&out).await;
                let _ = stream.flush().await;
                return;
            }
            Answer::CloseMidStream { declared, body } => {
                let headers = vec![("content-type".to_owned(), "text/event-stream".to_owned())];
                let mut out = head(200, &headers, declared);
                out.extend_from_slice(&body);
                let _ = stream.write_all(&out).await;
                let _ = stream.flush().await;
                return;
            }
            Answer::Hang => {
                std::future::pending::<()>().await;
            }
            Answer::With(_) | Answer::ThenStop(_) => return,
        }
        if then_stop {
            let _ = stream.flush().await;
            drop(stream);
            stop(&state);
            return;
        }
    }
}
