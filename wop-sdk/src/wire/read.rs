//! A small reader over a JSON object that names the exact field in every error.

use super::error::WireError;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Who sent the value: decides whether a broken rule is a `validation_error` (the pack's request)
/// or a `protocol_error` (a host's answer).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Side {
    Request,
    Host,
}

pub(crate) struct Obj<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
    side: Side,
}

pub(crate) fn path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

impl<'a> Obj<'a> {
    pub(crate) fn new(value: &'a Value, prefix: &str, side: Side) -> Result<Self, WireError> {
        match value {
            Value::Object(map) => Ok(Self {
                map,
                prefix: prefix.to_owned(),
                side,
            }),
            _ => Err(err(
                side,
                if prefix.is_empty() { "$" } else { prefix },
                "must be a JSON object",
            )),
        }
    }

    pub(crate) fn path(&self, key: &str) -> String {
        path(&self.prefix, key)
    }

    pub(crate) fn err(&self, key: &str, rule: impl Into<String>) -> WireError {
        err(self.side, &self.path(key), rule)
    }

    /// The value, treating JSON `null` as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The first of several spellings that is present (v2 first, then v1 aliases).
    pub(crate) fn get_any(&self, keys: &[&'static str]) -> Option<(&'static str, &'a Value)> {
        keys.iter().find_map(|k| self.get(k).map(|v| (*k, v)))
    }

    pub(crate) fn child(&self, key: &str) -> Result<Option<Obj<'a>>, WireError> {
        self.get(key)
            .map(|v| Obj::new(v, &self.path(key), self.side))
            .transpose()
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<String>, WireError> {
        Ok(self.opt_text(key)?.map(str::to_owned))
    }

    /// A string as a shared text, made once from the value's text (no `String` in between).
    pub(crate) fn opt_shared_str(&self, key: &str) -> Result<Option<Arc<str>>, WireError> {
        Ok(self.opt_text(key)?.map(Arc::from))
    }

    /// A string, borrowed from the value.
    fn opt_text(&self, key: &str) -> Result<Option<&'a str>, WireError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, WireError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.err(key, "must be a boolean (`true` or `false`)")),
        }
    }

    /// An integer in `min..=max`. A number with a fractional part, a string or any other type is
    /// refused; `3.0` is accepted as the integer 3 (JSON does not distinguish them).
    pub(crate) fn opt_int(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, WireError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let rule = || {
            if max == u64::MAX {
                format!("must be an integer ≥ {min}")
            } else {
                format!("must be an integer in {min}..={max}")
            }
        };
        let n = int_value(v).ok_or_else(|| self.err(key, rule()))?;
        if n < i128::from(min) || n > i128::from(max) {
            return Err(self.err(key, format!("{}, got {n}", rule())));
        }
        Ok(Some(u64::try_from(n).map_err(|_| self.err(key, rule()))?))
    }

    pub(crate) fn opt_f64(&self, key: &str, min: f64, max: f64) -> Result<Option<f64>, WireError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if (min..=max).contains(&x) => Ok(Some(x)),
                _ => Err(self.err(key, format!("must be a number in {min}..={max}"))),
            },
            Some(_) => Err(self.err(key, format!("must be a number in {min}..={max}"))),
        }
    }

    pub(crate) fn opt_str_list(&self, key: &str) -> Result<Option<Vec<String>>, WireError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(err(
                        self.side,
                        &format!("{}[{i}]", self.path(key)),
                        "must be a string",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.err(key, "must be an array of strings")),
        }
    }

    /// Refuses an explicit JSON `null` for any of `keys`: a typed optional field is either
    /// absent or a value of its type, never `null` (RFC 0248 §B.5: a malformed field is refused,
    /// not taken as absent).
    pub(crate) fn deny_null(&self, keys: &[&str], rule: &str) -> Result<(), WireError> {
        match keys
            .iter()
            .find(|k| self.map.get(**k).is_some_and(Value::is_null))
        {
            Some(key) => Err(self.err(key, format!("must not be `null`: {rule}"))),
            None => Ok(()),
        }
    }

    /// Refuses any key not in `allowed`.
    pub(crate) fn deny_unknown(&self, allowed: &[&str]) -> Result<(), WireError> {
        for key in self.map.keys() {
            if !allowed.contains(&key.as_str()) {
                return Err(self.err(
                    key,
                    format!("is not a known key (valid: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

pub(crate) fn err(side: Side, field: &str, rule: impl Into<String>) -> WireError {
    match side {
        Side::Request => WireError::validation(field, rule),
        Side::Host => WireError::protocol(field, rule),
    }
}

/// The integer a JSON number denotes, or `None` for a non-integer or a non-number.
pub(crate) fn int_value(v: &Value) -> Option<i128> {
    let Value::Number(n) = v else { return None };
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let f = n.as_f64()?;
    #[allow(clippy::cast_possible_truncation)]
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i128)
}
