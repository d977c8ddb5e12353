//! The file helpers of `keygen`, `sign`, `publish` and `check`: their errors name the file, the
//! field and the rule.

use serde_json::Value;
use std::path::Path;

pub(crate) use crate::Failure as WopError;

/// The result of a `cargo wop` step.
pub type Result<T> = std::result::Result<T, WopError>;

/// The bytes of `path`, or an error naming it.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| WopError::usage(format!("{}: cannot read: {e}", path.display())))
}

/// Writes `bytes` to `path`, creating its folder.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| WopError::failed(format!("{}: cannot create: {e}", parent.display())))?;
    }
    std::fs::write(path, bytes)
        .map_err(|e| WopError::failed(format!("{}: cannot write: {e}", path.display())))
}

/// `path` parsed as JSON, or an error naming the file and where it stops being JSON.
pub fn json(path: &Path) -> Result<Value> {
    parse(path, &read(path)?)
}

/// `bytes` (the content of `path`) parsed as JSON.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Value> {
    serde_json::from_slice(bytes)
        .map_err(|e| WopError::failed(format!("{}: not JSON: {e}", path.display())))
}

/// `v` as pretty JSON text with a final newline.
pub fn pretty(v: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    text.push('\n');
    text.into_bytes()
}

/// The string at `field` of `v` (a top-level key), or an error naming the file and the field.
pub fn str_field<'a>(v: &'a Value, field: &str, file: &Path) -> Result<&'a str> {
    v.get(field).and_then(Value::as_str).ok_or_else(|| {
        WopError::failed(format!(
            "{}: `{field}` is missing or not a string",
            file.display()
        ))
    })
}
