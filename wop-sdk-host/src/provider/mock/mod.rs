//! The scripted mock provider: one reply per provider request, from a script built in code or
//! loaded from JSON.
//!
//! `script` owns the script: its steps, built in code or parsed from the JSON format (described
//! there). `serve` owns the [`ScriptedProvider`]: the steps not served yet (shared and per run),
//! what it received, and serving one step as a whole or streamed reply.

mod script;
mod serve;

pub use script::{Script, Step};
pub use serve::ScriptedProvider;
