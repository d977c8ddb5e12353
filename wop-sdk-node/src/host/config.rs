//! What the bridge reads of a node's configuration.

/// The node's configuration the bridge reads, and the pack's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeConfig {
    /// `ctx.config.provider`, else the pack's default.
    pub provider: Option<String>,
    /// `ctx.config.model`, else the pack's default.
    pub model: Option<String>,
}
