//! openwop-app's reading of a structured reply, for the local host playing it
//! ([`super::HostProfile::OpenwopApp`]): its lenient parse and its schema check, as
//! `backend/typescript/src/host/envelopeReliabilityEmit.ts` (`tryLenientParse`) and
//! `aiProviders/aiProvidersHost.ts` (`validateAgainstSchema`) have them.

use serde_json::Value;

/// The candidates a reply's JSON is read from, in openwop-app's order: the whole text; the body
/// of the first code fence (a line of three backticks, optionally `json`, up to a line of three
/// backticks); the first balanced `{…}` (braces counted as they come, strings not understood).
pub(super) fn candidates(text: &str) -> impl Iterator<Item = &str> {
    [Some(text), fenced(text), first_braces(text)]
        .into_iter()
        .flatten()
}

/// The body of the first fence: "```" then optionally "json", whitespace through a newline,
/// the body, a newline and "```".
fn fenced(text: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(i) = text[from..].find("```") {
        let open = from + i + 3;
        let rest = text[open..].strip_prefix("json").unwrap_or(&text[open..]);
        let start = text.len() - rest.len();
        // `\s*\n`: whitespace up to and including the last newline of the run.
        let ws = rest.len() - rest.trim_start().len();
        if let Some(nl) = rest[..ws].rfind('\n') {
            let body_start = start + nl + 1;
            if let Some(end) = text[body_start..].find("\n```") {
                return Some(&text[body_start..body_start + end]);
            }
        }
        from = open;
    }
    None
}

/// The first balanced `{…}`, braces counted without regard to strings.
fn first_braces(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// openwop-app's schema check: the data is an object (or an array: JavaScript's `object`) that
/// holds every key of the schema's top-level `required`; nothing else is checked.
pub(super) fn required_keys(data: &Value, schema: &Value) -> Result<(), String> {
    let keys = |v: &Value| -> Vec<String> {
        v.get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    match data {
        Value::Object(map) => match keys(schema).into_iter().find(|k| !map.contains_key(k)) {
            Some(missing) => Err(format!("the reply has no required key `{missing}`")),
            None => Ok(()),
        },
        Value::Array(_) if keys(schema).is_empty() => Ok(()),
        Value::Array(_) => {
            Err("the reply is an array, not an object with the required keys".into())
        }
        _ => Err("the reply is not a JSON object".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Option<Value> {
        candidates(text).find_map(|t| serde_json::from_str(t).ok())
    }

    #[test]
    fn openwop_apps_recovery_paths() {
        assert_eq!(read(r#"{"a": 1}"#), Some(json!({"a": 1})));
        assert_eq!(
            read("Here:\n```json\n{\"a\": 2}\n```\nDone."),
            Some(json!({"a": 2}))
        );
        assert_eq!(read("```\n[1, 2]\n```"), Some(json!([1, 2])));
        assert_eq!(
            read("The answer is {\"a\": {\"b\": 3}} as asked."),
            Some(json!({"a": {"b": 3}}))
        );
        // A fence without its newlines is not a fence; the braces inside it still are.
        assert_eq!(read("```json {\"a\": 4} ```"), Some(json!({"a": 4})));
        assert_eq!(read("no json here"), None);
        assert_eq!(read("{ unbalanced"), None);
        // Braces are counted without regard to strings, as openwop-app counts them.
        assert_eq!(read(r#"see {"a": "}"} end"#), None);
    }

    #[test]
    fn the_check_is_the_required_keys_alone() {
        let schema = json!({"type": "object", "required": ["title"],
                            "properties": {"title": {"type": "string"}}});
        assert_eq!(
            required_keys(&json!({"title": 7, "extra": true}), &schema),
            Ok(())
        );
        assert!(
            required_keys(&json!({"name": "x"}), &schema).is_err_and(|e| e.contains("`title`"))
        );
        assert!(required_keys(&json!("text"), &schema).is_err());
        assert_eq!(
            required_keys(&json!([1]), &json!({"type": "array"})),
            Ok(())
        );
    }
}
