//! The README's quickstart node (`tests/quickstart.rs`, unchanged) as a Node native addon.
//!
//! `cargo build -p wop-sdk-quickstart-addon`; used by `tests/node_bridge.rs`.

// The file is also an integration test: its test-only imports are unused here.
#[allow(unused_imports, dead_code)]
#[path = "../../quickstart.rs"]
mod quickstart;

wop_sdk_node::addon!(quickstart::pack());
