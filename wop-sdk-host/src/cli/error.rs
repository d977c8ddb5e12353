//! [`CliError`]: what went wrong on the command line, and its exit code.

use std::fmt;
use std::io::Write;

/// A command-line failure: the message and the exit code (2 usage, 1 failed run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliError {
    /// 1 or 2.
    pub exit: u8,
    /// What went wrong, naming the file, the field and the rule.
    pub message: String,
}

impl CliError {
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

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<crate::pack::PackError> for CliError {
    fn from(e: crate::pack::PackError) -> Self {
        Self {
            exit: e.exit,
            message: e.message,
        }
    }
}

/// A line on standard error; a closed standard error is not worth a panic.
pub(super) fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A failure to write the output.
pub(super) fn cannot_write(e: std::io::Error) -> CliError {
    CliError::failed(format!("cannot write the output: {e}"))
}
