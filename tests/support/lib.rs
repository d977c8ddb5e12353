//! What several test binaries (and the benches) share.
//!
//! - [`openai_server`]: a small OpenAI-compatible server on 127.0.0.1 that logs what it received;
//! - [`openai_script`]: that server's answer to one step of the conformance script;
//! - [`book_ai_example`]: the `book_ai` example binary, built once by the same cargo;
//! - [`harness`]: the harness of openwop-app's contract, run in Node on a scenario;
//! - [`pack_author`]: a pack author's `cargo wop new`, `build` and `keygen` with the real binary;
//! - [`child`]: the test binary re-executed as a child process (killed in crash tests);
//! - [`trace`]: what a tracing subscriber writes, for a test to read;
//! - [`picture`]: the report picture's labels;
//! - [`test_elf`]: a whole ELF shared object for another architecture, built from bytes (the pack
//!   writer's unit tests use the same file);
//! - [`bench`](mod@bench): the benches' node, provider and measures (also used by `benches/rig_compare`).

// Test code: its types are read by tests, never printed.
#![allow(missing_debug_implementations)]

pub mod bench;
pub mod book_ai_example;
pub mod child;
pub mod harness;
pub mod openai_script;
pub mod openai_server;
pub mod pack_author;
pub mod picture;
#[path = "../../wop-sdk-host/src/pack/test_elf.rs"]
pub mod test_elf;
pub mod trace;
