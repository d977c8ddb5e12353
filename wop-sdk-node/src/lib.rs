//! # wop-sdk-node: the Node bridge
//!
//! The same `#[wop_node]` code that runs on the embedded local host, run on a production host
//! that loads **JavaScript packs** (the reference host openwop-app): the pack is built as a Node
//! native addon, and `pack` (a subcommand of the pack command line) writes the folder such a
//! host mounts: `pack.json`, a generated `index.mjs` that exports `nodes`, and the addon.
//!
//! ```text
//! host ──ctx──▶ index.mjs (generated) ──wopStart(JSON, timeoutMs, onStep)──▶ addon: the node,
//!                  │                                          spawned on the addon's runtime
//!                  │   ◀── onStep({calls: [request]}) ─────── (JsHost: wop_sdk::Host)
//!                  ├─ await ctx.callAI(request)
//!                  ├─ wopResume(task, id, answer) ──▶ the node's call wakes
//!                  └─ ◀── onStep({done: outcome})
//! ```
//!
//! # Building a pack as an addon
//!
//! A small `cdylib` crate beside the pack (the Book AI example has one in
//! `examples/book_ai/addon`):
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib"]
//! [dependencies]
//! wop-sdk-node = "0.1"
//! [build-dependencies]
//! napi-build = "2.6"
//! ```
//!
//! ```rust,no_run
//! // src/lib.rs: export every node of the pack(s) (here a pack without nodes).
//! wop_sdk_node::addon!(wop_sdk::manifest::Pack::new("community.example.empty", "0.1.0"));
//! # fn main() {}
//! ```
//!
//! and `build.rs`: `fn main() { napi_build::setup(); }`.
//!
//! `cargo build -p my-pack-addon` writes `target/debug/libmy_pack_addon.so` (`.dylib` on macOS,
//! `.dll` on Windows); `my-pack pack --out dist --addon that-file` writes the pack folder.
//!
//! # What the bridge needs
//!
//! - **Node ≥ 18.** The addon is loaded with `require` by the generated `index.mjs`.
//! - **A real async runtime.** Each node execution runs on the addon's tokio runtime
//!   ([`runtime`]: a fixed set of worker threads per process), so a node may await anything:
//!   tokio timers, sockets, an HTTP client such as `reqwest`, `tokio::fs`, tasks it spawns. Only
//!   `ctx.callAI` goes to the host's JavaScript thread (an N-API thread-safe function queues each
//!   call there; the answer comes back with `wopResume`). A node that blocks a worker thread
//!   (a long synchronous loop, `std::thread::sleep`) holds that thread from every other node:
//!   use `spawn_blocking` for such work.
//! - **An end for every node.** A node ends within its timeout (`ctx.config.timeoutMs`, else
//!   the pack's default): past it, the bridge drops the node's execution, and every future it
//!   awaited with it, and the node fails `wop-sdk.node_timeout`; the local host does the same
//!   ([`wop_sdk::wire::ErrorCode::NodeTimeout`]). A node that panics fails
//!   `wop-sdk.node_failed` with the panic's message. A host that gives up on a node (an
//!   `AbortSignal` as `ctx.signal` that fires) gets `wop-sdk.node_cancelled`, and the execution
//!   is dropped. Nothing of an ended execution stays: no task, no waiter, no reservation, and no
//!   reference that keeps the host's event loop alive.
//! - **`unsafe` in the addon crate only.** `napi-derive`'s expansion (the exported functions
//!   and their registration) is FFI code with `unsafe` blocks, so the crate that invokes
//!   [`addon!`] cannot inherit `unsafe_code = "forbid"`; it must not hold anything else. This
//!   crate and the runtime (`wop-sdk`) keep `unsafe_code` forbidden: they use only napi's safe
//!   API.
//! - **A host `ctx.callAI`.** A node whose host offers none fails `capability_not_provided`
//!   (host code `host_capability_missing`) at its first call.
//! - The node's `ctx.inputs` is its input; its output becomes `outputs`.
//!
//! # Which kind of host: how the bridge learns it
//!
//! A host that loads JavaScript packs does not hand a pack its capability document through
//! `ctx`. So the generated `index.mjs` reads it, once at import, from the environment variable
//! **`WOP_SDK_HOST_CAPABILITIES`**: the host's `/.well-known/openwop` document as JSON text (or
//! `@/path/to/file.json`). Without it, the bridge assumes [`OPENWOP_APP_SNAPSHOT`]: the public
//! openwop-app, which advertises no `aiProviders.callAccounting`. It never guesses from results:
//! the kind must be known before the first request (the budget and the `retry` field depend on
//! it), and RFC 0248 §C forbids relying on a field the host did not advertise. A document that
//! does not parse fails every node with `protocol_error` naming the variable.
//!
//! | | host with `callAccounting` (RFC 0248) | host without it (openwop-app's public snapshot) |
//! |---|---|---|
//! | `retry` | sent when `retryPolicy` is advertised | never sent |
//! | budget charge | `attempts.count` | the worst case: the ceiling, plus the natural-language fallback when the host advertises one (see [`host_document`]) |
//! | `attemptId` | the host's | made by the bridge, `local:` prefixed: local to this node execution, never sent to the host |
//! | lineage (`retryOfAttemptId`, `retryReason`) | sent; checked by the host | checked by the bridge alone (the id must be one it made for a completion of this execution), then removed from the request |
//! | a deliberate retry | the host knows it is one | the runtime adds the retried completion's reply and its validation errors as messages, so it is a different provider request and no host cache can return the rejected reply |
//!
//! # Provider and model
//!
//! openwop-app requires `provider` and `model` on every call. A call that names them
//! ([`wop_sdk::AiRequest::provider`], [`wop_sdk::AiRequest::model`]) keeps them; otherwise the
//! node's configuration (`ctx.config.provider`, `ctx.config.model`) gives them, else the pack's
//! default (`cargo wop build --provider P --model M`). A call left without either fails
//! `validation_error` naming the field, before any request.
//!
//! # Errors
//!
//! The generated `index.mjs` turns every answer of `ctx.callAI` into data before it reaches
//! Rust: a result, or `{code, message, details}` for a thrown `AiProviderError`, any other
//! thrown value, or a call that did not settle within the node's timeout (`ctx.config.timeoutMs`,
//! else the pack's default). [`map_host_error`] maps the host's code to the SDK's (the host's
//! own code is kept as `details.hostCode`; its message, cut to 300 characters with keys
//! redacted, ends the public message and is kept as `details.hostMessage`, since it is what says
//! what to fix, e.g. openwop-app's `byok_required` "No credential available for provider …"). A
//! node failure is thrown to the host as an `Error` whose `code` is the SDK's code, which the
//! host records as `{status: 'failure', error: {code, message}}`.
//!
//! A pack whose addon cannot be loaded on the host (missing, built for another platform, Node or
//! bridge ABI, or a file that does not load in the child Node process `index.mjs` tries it in
//! before the host's process loads it) fails every node at once with
//! `wop-sdk.addon_unloadable`, saying why; the host's process never loads such a file.

#![warn(missing_docs)]

mod errors;
mod host;
mod run;
pub mod runtime;
mod task;

pub use errors::map_host_error;
pub use host::{
    HostKind, HostRequest, JsCallAi, JsHost, NodeConfig, OPENWOP_APP_SNAPSHOT, host_document,
};
pub use run::{ABI_VERSION, budget_check_json, manifests_json, pack_files_json, run_node};
pub use task::{OnStep, StepSink, cancel, in_progress, resume, start};

/// Exports the nodes of one or more packs as a Node native addon. Invoke it once, at the root of
/// a `cdylib` crate whose build script calls `napi_build::setup()`.
///
/// ```rust,no_run
/// use wop_sdk::manifest::Pack;
/// wop_sdk_node::addon!(
///     Pack::new("community.example.one", "0.1.0"),
///     Pack::new("community.example.two", "0.1.0"),
/// );
/// # fn main() {}
/// ```
///
/// The addon exports `wopAbi()` (the bridge's ABI version, checked by `index.mjs`),
/// `wopManifests()` (the packs' `pack.json`, a JSON array), `wopPackFiles()` (each pack's
/// `pack.json` and schema files, [`pack_files_json`], what `cargo wop build` reads),
/// `wopBudgetCheck(inputs)` ([`budget_check_json`], what `cargo wop build` reports), and [`start`], [`resume`] and
/// [`cancel`] as `wopStart`, `wopResume`, `wopCancel`: one node execution, driven call by call
/// from the host's thread. Each argument is an expression of type `wop_sdk::manifest::Pack`,
/// evaluated once, at the first call.
#[macro_export]
macro_rules! addon {
    ($($pack:expr),+ $(,)?) => {
        #[doc(hidden)]
        fn __wop_sdk_node_packs() -> ::std::vec::Vec<$crate::__private::Pack> {
            ::std::vec![$($pack),+]
        }

        #[doc(hidden)]
        #[allow(missing_docs, clippy::all, clippy::pedantic)]
        mod __wop_sdk_node_addon {
            // napi-derive's expansion names `napi::…`.
            use $crate::__private::napi;

            fn packs() -> &'static [$crate::__private::Pack] {
                static PACKS: ::std::sync::OnceLock<::std::vec::Vec<$crate::__private::Pack>> =
                    ::std::sync::OnceLock::new();
                PACKS.get_or_init(super::__wop_sdk_node_packs)
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopAbi")]
            pub fn abi() -> u32 {
                $crate::ABI_VERSION
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopManifests")]
            pub fn manifests() -> ::std::string::String {
                $crate::manifests_json(packs())
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopPackFiles")]
            pub fn pack_files() -> ::std::string::String {
                $crate::pack_files_json(packs())
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopBudgetCheck")]
            pub fn budget_check(inputs: ::std::string::String) -> ::std::string::String {
                $crate::budget_check_json(packs(), &inputs)
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopStart")]
            pub fn start(
                request: ::std::string::String,
                timeout_ms: u32,
                on_step: $crate::OnStep,
            ) -> u32 {
                $crate::start(packs(), request, timeout_ms, on_step)
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopResume")]
            pub fn resume(task: u32, call: u32, answer: ::std::string::String) -> bool {
                $crate::resume(task, call, answer)
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopInProgress")]
            pub fn in_progress() -> u32 {
                u32::try_from($crate::in_progress()).unwrap_or(u32::MAX)
            }

            #[$crate::__private::napi_derive::napi(js_name = "wopCancel")]
            pub fn cancel(task: u32) -> bool {
                $crate::cancel(task)
            }
        }
    };
}

/// What [`addon!`]'s expansion uses. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use napi;
    pub use napi_derive;
    pub use wop_sdk::manifest::Pack;
}
