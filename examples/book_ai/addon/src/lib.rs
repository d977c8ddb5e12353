//! The Book AI pack (the `book-ai` crate, without its demo) as a Node native addon.
//!
//! ```text
//! cargo build -p book-ai-addon
//! cargo run --example book_ai -- pack --out dist --addon target/debug/libbook_ai_addon.so \
//!     --provider mock --model mock-1
//! ```

wop_sdk_node::addon!(book_ai::pack());
