//! The request fingerprint: SHA-256 over a canonical JSON form (RFC 8785 style: sorted keys, no
//! whitespace, normalized numbers) of the fields that change what the provider is asked.

use crate::wire::CallAiRequest;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;

/// A request fingerprint.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses lowercase hex.
    pub fn from_hex(s: &str) -> Option<Self> {
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", &self.to_hex()[..12])
    }
}

/// The fingerprint of a request. `beneficiaryUserIds` (billing only) and fields a host ignores do
/// not enter it; everything that changes what the provider is asked, or how often, does.
pub fn fingerprint(request: &CallAiRequest) -> Fingerprint {
    let mut v = request.to_json();
    if let Value::Object(map) = &mut v {
        map.remove("beneficiaryUserIds");
    }
    let mut text = String::new();
    canonical_json(&v, &mut text);
    Fingerprint(Sha256::digest(text.as_bytes()).into())
}

/// Writes the canonical JSON form of `v`: object keys sorted by UTF-16 code units, no whitespace,
/// integers without a fraction or exponent, other numbers in shortest round-trip form.
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    #[allow(clippy::cast_possible_truncation)]
                    out.push_str(&(f as i64).to_string());
                } else {
                    out.push_str(&f.to_string());
                }
            }
        }
        Value::String(s) => push_str_json(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_str_json(k, out);
                out.push(':');
                canonical_json(&map[k], out);
            }
            out.push('}');
        }
    }
}

/// Writes `s` as a JSON string (serde_json's escaping) without copying it into a `Value` first.
fn push_str_json(s: &str, out: &mut String) {
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: &Value) -> String {
        let mut s = String::new();
        canonical_json(v, &mut s);
        s
    }

    #[test]
    fn keys_sorted_no_whitespace_numbers_normalized() {
        assert_eq!(
            canon(&json!({"b": 1, "a": [1.0, 2.5, "x"]})),
            r#"{"a":[1,2.5,"x"],"b":1}"#
        );
    }

    #[test]
    fn billing_fields_do_not_change_the_fingerprint_but_the_prompt_does() {
        let mut a = CallAiRequest::from_json(&json!({"prompt": "hello"})).expect("valid");
        let fa = fingerprint(&a);
        a.beneficiary_user_ids = vec!["u1".into()];
        assert_eq!(fingerprint(&a), fa);
        a.messages[0].content.push('!');
        assert_ne!(fingerprint(&a), fa);
        assert_eq!(Fingerprint::from_hex(&fa.to_hex()), Some(fa));
    }
}
