//! Fuzz the wire parsers: any bytes that are JSON must parse without a panic, every rejection
//! must name a field, and what is accepted must round-trip.
//!
//! `cargo install cargo-fuzz`, then from `fuzz/`: `RUSTC_BOOTSTRAP=1 cargo fuzz run wire -- -max_total_time=60`
//! (the stable toolchain needs `RUSTC_BOOTSTRAP` for the sanitizer flags cargo-fuzz passes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wop_sdk::wire::{CallAiRequest, CallAiResult, CapabilityDocument, RunEvent};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    match CallAiRequest::from_json(&v) {
        Ok(r) => assert_eq!(CallAiRequest::from_json(&r.to_json()), Ok(r)),
        Err(e) => assert!(!e.field.is_empty()),
    }
    for structured in [false, true] {
        match CallAiResult::from_json(&v, structured) {
            Ok(r) => assert_eq!(CallAiResult::from_json(&r.to_json(), structured), Ok(r)),
            Err(e) => assert!(!e.field.is_empty()),
        }
    }
    if let Ok(d) = CapabilityDocument::from_json(&v) {
        assert_eq!(CapabilityDocument::from_json(&d.to_json()), Ok(d));
    }
    match RunEvent::from_json(&v) {
        Ok(e) => assert_eq!(RunEvent::from_json(&e.to_json()), Ok(e)),
        Err(e) => assert!(!e.field.is_empty()),
    }
});
