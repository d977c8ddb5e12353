//! The Book AI pack (`examples/book_ai/pack.rs`, unchanged) as a Node native addon.
//!
//! ```text
//! cargo build -p book-ai-addon
//! cargo run --example book_ai -- pack --out dist --addon target/debug/libbook_ai_addon.so \
//!     --provider mock --model mock-1
//! ```

#[path = "../../pack.rs"]
mod pack;

wop_sdk_node::addon!(pack::pack());
