//! Why a pack folder was not written.

use std::fmt;

/// Why a pack folder was not written: the file, the field and the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackError {
    /// 2 for a mistake in what was asked (a missing addon, an empty flag), 1 for a failure.
    pub exit: u8,
    /// What went wrong.
    pub message: String,
}

impl PackError {
    pub(super) fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: 2,
            message: message.into(),
        }
    }

    pub(super) fn failed(message: impl Into<String>) -> Self {
        Self {
            exit: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PackError {}
