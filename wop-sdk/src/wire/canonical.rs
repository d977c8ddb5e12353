//! Canonical JSON (RFC 8785 style): object keys sorted by UTF-16 code units, no whitespace,
//! integers without a fraction or exponent, other numbers in shortest round-trip form. What the
//! request fingerprint and the schema digests are computed over.

use serde_json::Value;
use sha2::{Digest, Sha256};

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
                push_f64(f, out);
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

/// Writes `s` as a JSON string, escaped as serde_json escapes (`\"`, `\\`, `\b \f \n \r \t`,
/// other control characters as `\u00xx`; nothing else), in place.
pub fn push_str_json(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            out.push_str("\\u00");
            crate::hex::push_u64(out, u64::from(b), 2);
        } else {
            out.push_str(escaped);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Writes an `f64` as canonical JSON writes a number.
pub fn push_f64(f: f64, out: &mut String) {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        out.push_str(&(f as i64).to_string());
    } else {
        out.push_str(&f.to_string());
    }
}

/// The SHA-256 of `v`'s canonical JSON.
pub fn digest(v: &Value) -> [u8; 32] {
    let mut text = String::new();
    canonical_json(v, &mut text);
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every_control: String = (0u8..0x20).map(char::from).collect();
        every_control.push_str("\u{7f} / é 🦀 \" \\ end");
        for s in ["", "plain", "a\"b", "tab\tnew\nline\r", &every_control] {
            let mut out = String::new();
            push_str_json(s, &mut out);
            assert_eq!(out, serde_json::to_string(s).expect("serialize"), "{s:?}");
        }
    }

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
    fn equal_values_have_equal_digests() {
        assert_eq!(
            digest(&json!({"a": 1, "b": 2})),
            digest(&json!({"b": 2, "a": 1.0}))
        );
        assert_ne!(digest(&json!({"a": 1})), digest(&json!({"a": 2})));
    }
}
