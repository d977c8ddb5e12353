//! Compiled response-schema validators, built once per distinct schema.

use super::lock::lock;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Validators by the address of their schema's `Arc`, confirmed by equality. A typed request's
/// schema is one `Arc` per type for the life of the process (`wop_sdk::ai::schema_of`), so the
/// lookup is a pointer comparison; a schema parsed at a JSON edge is matched by value.
#[derive(Default)]
pub(crate) struct Schemas {
    cache: Mutex<Vec<(Arc<Value>, Arc<jsonschema::Validator>)>>,
}

/// Schemas kept at most (distinct schemas, most recent first); a pack has a few.
const KEEP: usize = 256;

impl Schemas {
    /// The compiled validator of `schema`.
    pub(crate) fn validator(
        &self,
        schema: &Arc<Value>,
    ) -> Result<Arc<jsonschema::Validator>, String> {
        let find = |cache: &Vec<(Arc<Value>, Arc<jsonschema::Validator>)>| {
            cache
                .iter()
                .find(|(s, _)| Arc::ptr_eq(s, schema))
                .or_else(|| cache.iter().find(|(s, _)| **s == **schema))
                .map(|(_, v)| Arc::clone(v))
        };
        if let Some(v) = find(&lock(&self.cache)) {
            return Ok(v);
        }
        let v = Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|e| format!("the response schema is invalid: {e}"))?,
        );
        let mut cache = lock(&self.cache);
        if let Some(v) = find(&cache) {
            return Ok(v);
        }
        cache.insert(0, (Arc::clone(schema), Arc::clone(&v)));
        cache.truncate(KEEP);
        Ok(v)
    }
}

/// Validates `data`: up to eight errors, joined. A valid reply (the common case) is checked
/// without collecting anything.
pub(crate) fn check(validator: &jsonschema::Validator, data: &Value) -> Result<(), String> {
    if validator.is_valid(data) {
        return Ok(());
    }
    let errors: Vec<String> = validator
        .iter_errors(data)
        .take(8)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
