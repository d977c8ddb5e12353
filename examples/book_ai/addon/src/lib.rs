//! The Book AI pack (`examples/book_ai/pack.rs`, unchanged) as a Node native addon.
//!
//! ```text
//! cargo build -p book-ai-addon
//! cargo run --example book_ai -- pack --out dist --addon target/debug/libbook_ai_addon.so \
//!     --provider mock --model mock-1
//! ```

// In a test build napi-derive leaves the exports out, so the pack looks unused there.
#[cfg_attr(test, allow(dead_code))]
#[path = "../../pack.rs"]
mod pack;

wop_sdk_node::addon!(pack::pack());
