//! What a call's output can be: a type with a JSON schema (its `responseSchema`, generated once
//! per type and cached, with its digest) or plain [`Text`].

use foldhash::HashMap;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::TypeId;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

/// What a call returns: a type with a JSON schema (a structured call) or [`Text`] (a plain call).
///
/// Implemented for every `T: JsonSchema + DeserializeOwned + Send + 'static`, whose schema becomes
/// the request's `responseSchema` (generated once per type and cached), and for [`Text`].
pub trait Output: Sized + Send + 'static {
    /// The `responseSchema` of the call, `None` for a plain call.
    fn response_schema() -> Option<Arc<Value>>;
    /// Reads the output from the result's `data` (structured) or `content` (plain); the error
    /// lists why it does not meet the contract.
    fn from_result(data: Option<&Value>, content: Option<&str>) -> Result<Self, Vec<String>>;
}

/// Schemas generated per type, and the digest of each (by the address of its `Arc`: these
/// schemas live as long as the process, so an address names one schema for good).
struct SchemaCache {
    by_type: HashMap<TypeId, Arc<Value>>,
    digests: HashMap<usize, SchemaDigest>,
}

fn schema_cache() -> &'static RwLock<SchemaCache> {
    static CACHE: OnceLock<RwLock<SchemaCache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        RwLock::new(SchemaCache {
            by_type: HashMap::default(),
            digests: HashMap::default(),
        })
    })
}

/// The schema of `T`, generated once per type and cached (with its digest).
pub fn schema_of<T: JsonSchema + 'static>() -> Arc<Value> {
    let cache = schema_cache();
    let id = TypeId::of::<T>();
    if let Some(s) = cache
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .by_type
        .get(&id)
    {
        return Arc::clone(s);
    }
    let schema =
        Arc::new(serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Bool(true)));
    let digest = SchemaDigest::of(&schema);
    let mut w = cache.write().unwrap_or_else(PoisonError::into_inner);
    let kept = Arc::clone(w.by_type.entry(id).or_insert(schema));
    w.digests.insert(Arc::as_ptr(&kept) as usize, digest);
    kept
}

/// The SHA-256 of a response schema's canonical JSON, and its lowercase hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaDigest {
    /// The digest.
    pub bytes: [u8; 32],
    hex: [u8; 64],
}

impl SchemaDigest {
    fn of(schema: &Value) -> Self {
        let bytes = crate::wire::digest(schema);
        let mut hex = [0u8; 64];
        crate::hex::fill(&mut hex, &bytes);
        Self { bytes, hex }
    }

    /// Lowercase hex.
    pub fn hex(&self) -> &str {
        std::str::from_utf8(&self.hex).unwrap_or_default()
    }
}

/// The digest of a response schema: looked up for a schema made by [`schema_of`] (computed once
/// per type), computed for any other (a request parsed at a JSON edge).
pub fn schema_digest(schema: &Arc<Value>) -> SchemaDigest {
    let known = schema_cache()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .digests
        .get(&(Arc::as_ptr(schema) as usize))
        .copied();
    known.unwrap_or_else(|| SchemaDigest::of(schema))
}

impl<T: JsonSchema + DeserializeOwned + Send + 'static> Output for T {
    fn response_schema() -> Option<Arc<Value>> {
        Some(schema_of::<T>())
    }

    fn from_result(data: Option<&Value>, _content: Option<&str>) -> Result<Self, Vec<String>> {
        let data = data.ok_or_else(|| vec!["the result carries no `data`".to_owned()])?;
        T::deserialize(data).map_err(|e| vec![e.to_string()])
    }
}

/// The output of a plain call (no `responseSchema`): the result's `content`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text(pub String);

impl Output for Text {
    fn response_schema() -> Option<Arc<Value>> {
        None
    }

    fn from_result(_data: Option<&Value>, content: Option<&str>) -> Result<Self, Vec<String>> {
        content
            .map(|c| Self(c.to_owned()))
            .ok_or_else(|| vec!["the result carries no `content`".to_owned()])
    }
}
