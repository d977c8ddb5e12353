//! `ctx.callAI` through N-API: a threadsafe function over the JavaScript wrapper the generated
//! `index.mjs` passes, called from the runtime's task and awaited as a Promise.

use crate::host::JsCallAi;
use crate::run::run_node;
use napi::Status;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use std::sync::Arc;
use wop_sdk::host::BoxFuture;
use wop_sdk::manifest::Pack;

/// The JavaScript `(requestJson: string) => Promise<string>` that `index.mjs` passes to
/// `wopRunNode`, as a threadsafe function (its one argument is the string, not an error-first
/// pair).
pub type CallAiFn = ThreadsafeFunction<String, Promise<String>, String, Status, false>;

struct NapiCallAi(CallAiFn);

impl JsCallAi for NapiCallAi {
    fn call(&self, request: String) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            // `call_async_catch`: a synchronous throw comes back as an error instead of
            // terminating the process. `index.mjs`'s wrapper neither throws nor rejects, so
            // either error here is the bridge's own.
            let promise = self
                .0
                .call_async_catch(request)
                .await
                .map_err(|e| format!("calling ctx.callAI: {e}"))?;
            promise
                .await
                .map_err(|e| format!("awaiting ctx.callAI: {e}"))
        })
    }
}

/// `wopRunNode`: one node execution with the host's `callAI`.
pub async fn run_napi(packs: &[Pack], request: String, call_ai: CallAiFn) -> String {
    run_node(packs, &request, Arc::new(NapiCallAi(call_ai))).await
}
