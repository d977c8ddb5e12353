//! The Book AI pack (`pack`): plan an outline, draft its scenes under a `max_calls` budget,
//! review the chapter. With the feature `demo`, the demo that runs the whole book on the local
//! host (`demo`), as `cargo run --example book_ai` does.

pub mod pack;

#[cfg(feature = "demo")]
pub mod demo;

pub use pack::pack;
