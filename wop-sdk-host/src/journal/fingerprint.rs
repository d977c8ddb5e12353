//! The request fingerprint: SHA-256 over a canonical JSON form of the fields that change what the
//! provider is asked, written straight from the typed request (no JSON value is built). The
//! response schema enters as its digest, computed once per schema type ([`wop_sdk::ai::schema_of`]).
//!
//! The canonical form is the request's v2 JSON with keys sorted, `beneficiaryUserIds` left out,
//! and `responseSchema` replaced by `"sha256:<hex of the schema's canonical JSON>"`.

use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::fmt;
use wop_sdk::wire::canonical::{push_f64, push_str_json};
use wop_sdk::wire::{CallAiRequest, Role};

/// A request fingerprint.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        wop_sdk::hex::of_bytes(&self.0)
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

/// Writes `"key":` after a comma when one is due.
fn key(out: &mut String, first: &mut bool, k: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push('"');
    out.push_str(k);
    out.push_str("\":");
}

fn opt_str(out: &mut String, first: &mut bool, k: &str, v: Option<&str>) {
    if let Some(v) = v {
        key(out, first, k);
        push_str_json(v, out);
    }
}

/// The fingerprint of a request. `beneficiaryUserIds` (billing only) and fields a host ignores do
/// not enter it; everything that changes what the provider is asked, or how often, does.
pub fn fingerprint(request: &CallAiRequest) -> Fingerprint {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut out) => {
            out.clear();
            canonical(request, &mut out);
            let fingerprint = Fingerprint(Sha256::digest(out.as_bytes()).into());
            if out.capacity() > SCRATCH_KEPT {
                // A long request's room is not kept for the thread's life.
                *out = String::new();
            }
            fingerprint
        }
        // Only reached if writing a canonical form fingerprinted another request (it does not).
        Err(_) => {
            let mut out = String::new();
            canonical(request, &mut out);
            Fingerprint(Sha256::digest(out.as_bytes()).into())
        }
    })
}

thread_local! {
    /// The canonical form is written here, hashed, and kept for the next call's: no allocation
    /// a call.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The most room the scratch text keeps between calls.
const SCRATCH_KEPT: usize = 64 * 1024;

/// Writes the canonical form of `r` (module docs) into `out`.
fn canonical(r: &CallAiRequest, out: &mut String) {
    let mut first = true;
    out.push('{');
    // Keys in canonical (UTF-16) order.
    if let Some(n) = r.max_tokens {
        key(out, &mut first, "maxTokens");
        push_u64(out, u64::from(n));
    }
    key(out, &mut first, "messages");
    out.push('[');
    for (i, m) in r.messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"content\":");
        push_str_json(&m.content, out);
        out.push_str(match m.role {
            Role::User => ",\"role\":\"user\"}",
            Role::Assistant => ",\"role\":\"assistant\"}",
            Role::System => ",\"role\":\"system\"}",
        });
    }
    out.push(']');
    opt_str(out, &mut first, "model", r.model.as_deref());
    opt_str(out, &mut first, "provider", r.provider.as_deref());
    opt_str(out, &mut first, "purpose", r.purpose.as_deref());
    if let Some(schema) = &r.response_schema {
        key(out, &mut first, "responseSchema");
        out.push_str("\"sha256:");
        out.push_str(wop_sdk::ai::schema_digest(schema).hex());
        out.push('"');
    }
    if let Some(retry) = &r.retry {
        key(out, &mut first, "retry");
        let mut inner = true;
        out.push('{');
        if let Some(g) = retry.grow_max_tokens {
            key(out, &mut inner, "growMaxTokens");
            out.push_str(if g { "true" } else { "false" });
        }
        if let Some(m) = retry.max_attempts {
            key(out, &mut inner, "maxAttempts");
            push_u64(out, u64::from(m));
        }
        out.push('}');
    }
    opt_str(
        out,
        &mut first,
        "retryOfAttemptId",
        r.retry_of_attempt_id.as_deref(),
    );
    opt_str(
        out,
        &mut first,
        "retryReason",
        r.retry_reason.map(|x| x.as_str()),
    );
    opt_str(out, &mut first, "slot", r.slot.as_deref());
    if let Some(stops) = &r.stop_sequences {
        key(out, &mut first, "stopSequences");
        out.push('[');
        for (i, s) in stops.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_str_json(s, out);
        }
        out.push(']');
    }
    opt_str(out, &mut first, "systemPrompt", r.system_prompt.as_deref());
    if let Some(t) = r.temperature {
        key(out, &mut first, "temperature");
        push_f64(t, out);
    }
    out.push('}');
}

fn push_u64(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::sync::Arc;
    use wop_sdk::wire::Message;
    use wop_sdk::wire::canonical::canonical_json;

    #[test]
    fn billing_fields_do_not_change_the_fingerprint_but_the_prompt_does() {
        let mut a = CallAiRequest::from_json(&json!({"prompt": "hello"})).expect("valid");
        let fa = fingerprint(&a);
        a.beneficiary_user_ids = vec!["u1".into()];
        assert_eq!(fingerprint(&a), fa);
        a.messages = Arc::new([Message::user("hello!")]);
        assert_ne!(fingerprint(&a), fa);
        assert_eq!(Fingerprint::from_hex(&fa.to_hex()), Some(fa));
    }

    /// The typed writer produces exactly the canonical JSON of the request's own JSON form (with
    /// the schema as its digest): the same bytes a JSON round trip would hash.
    #[test]
    fn the_typed_form_is_the_canonical_json_of_the_wire_form() {
        let schema = json!({"type": "object", "properties": {"b": {"type": "string"}}});
        let request = CallAiRequest::from_json(&json!({
            "provider": "p", "model": "m", "systemPrompt": "sys \"quoted\" \u{1}",
            "messages": [{"role": "user", "content": "hé"}, {"role": "assistant", "content": "x"}],
            "temperature": 0.7, "maxTokens": 800, "stopSequences": ["\n\n"],
            "responseSchema": schema, "retry": {"maxAttempts": 2, "growMaxTokens": false},
            "slot": "s", "purpose": "p2", "beneficiaryUserIds": ["u"],
            "retryOfAttemptId": "att_1", "retryReason": "invalid_output"
        }))
        .expect("valid");
        let mut wire = request.to_json();
        let Value::Object(map) = &mut wire else {
            panic!("object")
        };
        map.remove("beneficiaryUserIds");
        map.insert(
            "responseSchema".into(),
            Value::String(format!(
                "sha256:{}",
                wop_sdk::hex::of_bytes(&wop_sdk::wire::canonical::digest(&schema))
            )),
        );
        let mut text = String::new();
        canonical_json(&wire, &mut text);
        assert_eq!(
            fingerprint(&request),
            Fingerprint(Sha256::digest(text.as_bytes()).into())
        );
        // Whole-number temperatures are written as integers, as canonical JSON does.
        let whole =
            CallAiRequest::from_json(&json!({"prompt": "x", "temperature": 1.0})).expect("valid");
        let mut t = String::new();
        canonical_json(&whole.to_json(), &mut t);
        assert_eq!(
            fingerprint(&whole),
            Fingerprint(Sha256::digest(t.as_bytes()).into())
        );
    }
}
