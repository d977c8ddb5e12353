//! The OpenWOP v2 rules every JSON document this SDK writes must follow, each stated here in our
//! own words as a Rust check (read in openwop/openwop `schemas/v2/`: `node-pack-manifest`, `ids`,
//! `run-event`, `run-event-payloads`, `capabilities`, `error-envelope`), then one test per rule
//! and one test that runs the real `book_ai` binary and checks everything it prints.
//!
//! The checks are written apart from `wop_sdk::rules` on purpose: a mistake in the SDK's shared
//! rules cannot hide behind itself here. No schema file is copied and nothing is fetched (CI has
//! no network).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};
use wop_sdk::journal::{Journal, SqliteJournal};
use wop_sdk::local::{LocalHost, ScriptedProvider, Step};
use wop_sdk::manifest::{is_pack_name, is_type_id, validate_manifest};
use wop_sdk::wire::{CapabilityDocument, ErrorCode, FinishReason, RunEvent, normalize_type};
use wop_sdk::{AiRequest, NodeCtx, NodeError, pack, wop_node};

// ---------------------------------------------------------------------------------------------
// The rules, in our words.
// ---------------------------------------------------------------------------------------------

/// A segment starts with a lowercase ASCII letter; then letters, digits, `_` or `-`; uppercase
/// letters only where `upper` allows them.
fn segment(s: &str, upper: bool) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_lowercase())
        && b.all(|c| {
            c.is_ascii_lowercase()
                || c.is_ascii_digit()
                || c == b'_'
                || c == b'-'
                || (upper && c.is_ascii_uppercase())
        })
}

/// A node type id: two or more dotted segments, at most 256 characters; after the first segment
/// camelCase is allowed (`core.ai.callPrompt`).
fn type_id_ok(id: &str) -> bool {
    let parts: Vec<&str> = id.split('.').collect();
    id.len() <= 256 && parts.len() >= 2 && parts.iter().enumerate().all(|(i, p)| segment(p, i > 0))
}

/// A pack name: `core|vendor|community|private`, an owner segment (no uppercase), then one or
/// more segments: `community.<author>.<pack>`.
fn pack_name_ok(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    name.len() <= 256
        && parts.len() >= 3
        && ["core", "vendor", "community", "private"].contains(&parts[0])
        && parts[1..]
            .iter()
            .enumerate()
            .all(|(i, p)| segment(p, i > 0))
}

fn id_chars(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
}

/// A run id: `<tenant>/<opaque>`, the opaque part 16 to 128 id characters.
fn run_id_ok(id: &str) -> bool {
    id.split_once('/').is_some_and(|(tenant, opaque)| {
        id_chars(tenant.strip_prefix("anon:").unwrap_or(tenant), 1, 128)
            && id_chars(opaque, 16, 128)
    })
}

/// An RFC 3339 UTC date-time: `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
fn timestamp_ok(t: &str) -> bool {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && t.ends_with('Z')
        && (b.len() == 20 || (b[19] == b'.' && digits(20..b.len() - 1)))
}

/// An error code of the v2 registry that this SDK may write.
const REGISTERED: &[&str] = &[
    "validation_error",
    "capability_not_provided",
    "envelope_invalid",
    "envelope_refusal",
    "envelope_truncation_unrecoverable",
    "idempotency_key_mismatch",
    "replay_source_missing",
];

/// A vendor error code: `<org>.<code>`; the org is lowercase words joined by single `-` (not
/// `openwop`), the code a lowercase letter then lowercase letters, digits or `_`.
fn vendor_code_ok(code: &str) -> bool {
    let Some((org, name)) = code.split_once('.') else {
        return false;
    };
    let org_ok = org != "openwop"
        && org.split('-').enumerate().all(|(i, w)| {
            let mut b = w.bytes();
            b.next()
                .is_some_and(|c| c.is_ascii_lowercase() || (i > 0 && c.is_ascii_digit()))
                && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    let mut n = name.bytes();
    org_ok
        && n.next().is_some_and(|c| c.is_ascii_lowercase())
        && n.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

fn code_ok(code: &str) -> bool {
    REGISTERED.contains(&code) || vendor_code_ok(code)
}

/// An extension key, the only extra key a closed v2 object carries.
fn extension(key: &str) -> bool {
    key.starts_with("x-") || key.starts_with("openwop-") || key.starts_with("vendor.")
}

fn closed(obj: &Map<String, Value>, at: &str, allowed: &[&str], out: &mut Vec<String>) {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) && !extension(k) {
            out.push(format!("{at}.{k}: not a key of this closed object"));
        }
    }
}

/// `pack.json` v2 (with the schema files the pack ships).
fn manifest_problems(m: &Value, files: &[(String, Value)]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(root) = m.as_object() else {
        return vec!["not an object".into()];
    };
    closed(
        root,
        "$",
        &[
            "kind",
            "name",
            "version",
            "description",
            "engines",
            "peerDependencies",
            "peerDependenciesMeta",
            "nodes",
            "runtime",
        ],
        &mut out,
    );
    if !m["name"].as_str().is_some_and(pack_name_ok) {
        out.push(format!("name {}: not namespace.owner.pack", m["name"]));
    }
    if m["kind"] != "node" {
        out.push("kind: must be node".into());
    }
    let range = m["engines"]["openwop"].as_str().unwrap_or("");
    if !(range.starts_with(">=") && range.contains(" <") && range.ends_with(".0.0")) {
        out.push(format!("engines.openwop {range}: needs an upper bound"));
    }
    let language = m["runtime"]["language"].as_str().unwrap_or("");
    if ![
        "javascript",
        "python",
        "go",
        "wasm",
        "wasm-component",
        "remote",
    ]
    .contains(&language)
    {
        out.push(format!("runtime.language {language}: not a v2 runtime"));
    }
    let entry = m["runtime"]["entry"].as_str().unwrap_or("");
    if entry.is_empty() || entry.starts_with('/') || entry.split('/').any(|p| p == "..") {
        out.push(format!("runtime.entry {entry}: not a file inside the pack"));
    }
    let nodes = m["nodes"].as_array().cloned().unwrap_or_default();
    if nodes.is_empty() {
        out.push("nodes: at least one".into());
    }
    for (i, n) in nodes.iter().enumerate() {
        let at = format!("nodes[{i}]");
        let Some(obj) = n.as_object() else {
            out.push(format!("{at}: not an object"));
            continue;
        };
        closed(
            obj,
            &at,
            &[
                "typeId",
                "version",
                "label",
                "description",
                "category",
                "role",
                "inputSchemaRef",
                "outputSchemaRef",
            ],
            &mut out,
        );
        for req in ["typeId", "version", "category", "role"] {
            if !obj.contains_key(req) {
                out.push(format!("{at}.{req}: required"));
            }
        }
        if !n["typeId"].as_str().is_some_and(type_id_ok) {
            out.push(format!("{at}.typeId {}: breaks the grammar", n["typeId"]));
        }
        let category = n["category"].as_str().unwrap_or("");
        if ![
            "chat",
            "control",
            "data",
            "canvas",
            "coordination",
            "integration",
        ]
        .contains(&category)
        {
            out.push(format!("{at}.category {category}: not a v2 category"));
        }
        for r in ["inputSchemaRef", "outputSchemaRef"] {
            if let Some(path) = n.get(r) {
                let path = path.as_str().unwrap_or("");
                if !files.iter().any(|(f, s)| f == path && s.is_object()) {
                    out.push(format!("{at}.{r} {path}: no such schema file in the pack"));
                }
            }
        }
    }
    if let Some(meta) = m.get("peerDependenciesMeta") {
        for (family, entry) in meta.as_object().cloned().unwrap_or_default() {
            let facets = entry["facets"].as_array().cloned().unwrap_or_default();
            if facets.is_empty() {
                out.push(format!(
                    "peerDependenciesMeta.{family}.facets: at least one"
                ));
            }
            for f in facets {
                // RFC 0248 §C makes `callAccounting` a facet of `aiProviders`.
                let declared = family == "aiProviders"
                    && ["callAccounting", "providers", "byok", "policies", "input"]
                        .contains(&f.as_str().unwrap_or(""));
                if !declared {
                    out.push(format!(
                        "peerDependenciesMeta.{family}.facets {f}: not declared"
                    ));
                }
            }
        }
    }
    out
}

/// The `{code, message, details?}` of `node.failed`.
fn event_error_problems(e: &Value, at: &str, out: &mut Vec<String>) {
    let Some(obj) = e.as_object() else {
        out.push(format!("{at}: not an object"));
        return;
    };
    closed(obj, at, &["code", "message", "details", "retryable"], out);
    if !e["code"].as_str().is_some_and(code_ok) {
        out.push(format!(
            "{at}.code {}: neither registered nor a vendor code",
            e["code"]
        ));
    }
    if e["message"].as_str().is_none_or(str::is_empty) {
        out.push(format!("{at}.message: a non-empty string"));
    }
}

const FAILURE_REASONS: &[&str] = &[
    "schema-violation",
    "truncation",
    "type-drift",
    "type-mismatch",
    "refusal",
    "parse-error",
    "unknown",
];

fn reason_ok(r: &str) -> bool {
    FAILURE_REASONS.contains(&r)
        || r.strip_prefix("x-host-")
            .is_some_and(|rest| rest.contains('-') && rest.split('-').all(|w| segment(w, false)))
}

/// A run event document: the wrapper and the payload of each type this SDK writes.
fn event_problems(e: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = e.as_object() else {
        return vec!["not an object".into()];
    };
    closed(
        obj,
        "$",
        &[
            "eventId",
            "runId",
            "nodeId",
            "type",
            "payload",
            "timestamp",
            "sequence",
            "schemaVersion",
            "engineVersion",
            "causationId",
        ],
        &mut out,
    );
    if !e["eventId"].as_str().is_some_and(|i| id_chars(i, 16, 128)) {
        out.push(format!("eventId {}: not a 16..128 opaque id", e["eventId"]));
    }
    if !e["runId"].as_str().is_some_and(run_id_ok) {
        out.push(format!("runId {}: not <tenant>/<opaque>", e["runId"]));
    }
    if !e["timestamp"].as_str().is_some_and(timestamp_ok) {
        out.push(format!("timestamp {}: not RFC 3339", e["timestamp"]));
    }
    if e["sequence"].as_u64().is_none() {
        out.push("sequence: an integer from 0".into());
    }
    if e["schemaVersion"].as_u64().is_none_or(|v| v < 1) {
        out.push("schemaVersion: an integer from 1".into());
    }
    let p = &e["payload"];
    let Some(payload) = p.as_object() else {
        out.push("payload: an object".into());
        return out;
    };
    let has = |k: &str| payload.contains_key(k);
    let string = |k: &str| p[k].as_str().is_some();
    let mut need = |ok: bool, what: &str| {
        if !ok {
            out.push(format!("{}: {what}", e["type"]));
        }
    };
    match e["type"].as_str().unwrap_or("") {
        "provider.usage" => {
            need(string("provider") && string("model"), "provider and model");
            need(
                p["inputTokens"].is_u64() && p["outputTokens"].is_u64(),
                "token counts",
            );
            closed(
                payload,
                "payload",
                &[
                    "provider",
                    "model",
                    "inputTokens",
                    "outputTokens",
                    "totalTokens",
                    "nodeId",
                ],
                &mut out,
            );
        }
        "envelope.retry-attempted" => {
            need(string("nodeId"), "nodeId");
            need(
                p["attempt"].as_u64().is_some_and(|a| (1..=16).contains(&a)),
                "attempt 1..16",
            );
            need(
                p["reason"].as_str().is_some_and(reason_ok),
                "a registered reason",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "attempt", "reason", "previousError"],
                &mut out,
            );
        }
        "envelope.retry-exhausted" => {
            need(string("nodeId"), "nodeId");
            need(
                p["totalAttempts"].as_u64().is_some_and(|a| a >= 1),
                "totalAttempts ≥ 1",
            );
            need(
                p["finalReason"].as_str().is_some_and(reason_ok),
                "a registered reason",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "totalAttempts", "finalReason", "finalError"],
                &mut out,
            );
        }
        "envelope.truncated" => {
            need(
                string("nodeId") && string("provider") && string("model"),
                "ids",
            );
            need(
                ["max_tokens", "length", "stop_sequence", "unknown"]
                    .contains(&p["stopReason"].as_str().unwrap_or("")),
                "a v2 stopReason",
            );
            closed(
                payload,
                "payload",
                &[
                    "nodeId",
                    "provider",
                    "model",
                    "stopReason",
                    "partialPayloadAvailable",
                    "outputTokenCount",
                ],
                &mut out,
            );
        }
        "envelope.refusal" => {
            need(
                string("nodeId") && string("provider") && string("model"),
                "ids",
            );
            closed(
                payload,
                "payload",
                &[
                    "nodeId",
                    "provider",
                    "model",
                    "refusalText",
                    "safetyCategory",
                ],
                &mut out,
            );
        }
        "envelope.nl-to-format-engaged" => {
            need(string("nodeId") && string("originalEnvelopeType"), "ids");
            closed(
                payload,
                "payload",
                &["nodeId", "originalEnvelopeType", "fallbackCalls"],
                &mut out,
            );
        }
        "node.started" => {
            need(
                string("nodeId") && p["typeId"].as_str().is_some_and(type_id_ok),
                "nodeId and typeId",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "typeId", "attempt"],
                &mut out,
            );
        }
        "node.completed" => {
            need(string("nodeId"), "nodeId");
            need(
                !has("outputs") || p["outputs"].is_object(),
                "outputs is a port map",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "outputs", "durationMs"],
                &mut out,
            );
        }
        "node.failed" => {
            need(string("nodeId"), "nodeId");
            event_error_problems(&p["error"], "payload.error", &mut out);
            closed(
                payload,
                "payload",
                &["nodeId", "error", "attempts"],
                &mut out,
            );
        }
        other => out.push(format!("type {other}: not a type this SDK writes")),
    }
    out
}

/// A run's log: every event valid, one run, `sequence` 0, 1, 2, …, distinct ids.
fn log_problems(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = events.iter().flat_map(event_problems).collect();
    for (i, e) in events.iter().enumerate() {
        if e["sequence"].as_u64() != Some(i as u64) {
            out.push(format!(
                "event {i}: sequence {} (from 0, no gap)",
                e["sequence"]
            ));
        }
        if e["runId"] != events[0]["runId"] {
            out.push(format!("event {i}: another run"));
        }
        if events[..i].iter().any(|o| o["eventId"] == e["eventId"]) {
            out.push(format!("event {i}: eventId repeated"));
        }
    }
    out
}

/// An error envelope `{error, message, details?}`.
fn envelope_problems(e: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = e.as_object() else {
        return vec!["not an object".into()];
    };
    closed(obj, "$", &["error", "message", "details"], &mut out);
    if !e["error"].as_str().is_some_and(code_ok) {
        out.push(format!(
            "error {}: neither registered nor a vendor code",
            e["error"]
        ));
    }
    if e["message"].as_str().is_none_or(str::is_empty) {
        out.push("message: a non-empty string".into());
    }
    if e.get("details").is_some_and(|d| !d.is_object()) {
        out.push("details: an object".into());
    }
    out
}

fn minor_ok(v: &str) -> bool {
    v.split_once('.').is_some_and(|(a, b)| {
        [a, b].iter().all(|n| {
            !n.is_empty()
                && n.bytes().all(|c| c.is_ascii_digit())
                && (*n == "0" || !n.starts_with('0'))
        })
    })
}

/// The capability document.
fn caps_problems(d: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let versions: Vec<&str> = d["protocolVersions"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if versions.is_empty() || !versions.iter().all(|v| minor_ok(v)) {
        out.push("protocolVersions: one or more <major>.<minor>".into());
    }
    if !d["preferredVersion"]
        .as_str()
        .is_some_and(|p| versions.contains(&p))
    {
        out.push("preferredVersion: one of protocolVersions".into());
    }
    for (family, record) in d.as_object().cloned().unwrap_or_default() {
        if ["protocolVersions", "preferredVersion", "protocolVersion"].contains(&family.as_str()) {
            continue;
        }
        let status = record["status"].as_str().unwrap_or("");
        if !["stable", "experimental", "deprecated"].contains(&status) {
            out.push(format!("{family}.status {status}"));
        }
        if !record["since"]
            .as_str()
            .is_some_and(|s| versions.contains(&s))
        {
            out.push(format!("{family}.since: a version of protocolVersions"));
        }
        if (status == "stable") == record.get("until").is_some() {
            out.push(format!("{family}.until: only, and always, when not stable"));
        }
        let witness = record["witness"].as_str().unwrap_or("");
        if ![
            "witnessable-unaided",
            "witnessable-gated",
            "seam-gated",
            "claims-check",
            "negative-existence",
        ]
        .contains(&witness)
        {
            out.push(format!("{family}.witness {witness}"));
        }
    }
    if let Some(rel) = d.pointer("/envelopes/reliability") {
        let events: Vec<&str> = rel["events"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for e in &events {
            if ![
                "envelope.retry-attempted",
                "envelope.retry-exhausted",
                "envelope.refusal",
                "envelope.truncated",
                "envelope.nl-to-format-engaged",
                "envelope.recovery-applied",
            ]
            .contains(e)
            {
                out.push(format!("reliability.events {e}: not a full v2 name"));
            }
        }
        for must in ["envelope.retry-exhausted", "envelope.refusal"] {
            if !events.contains(&must) {
                out.push(format!("reliability.events: must list {must}"));
            }
        }
        if let Some(m) = rel.pointer("/completion/truncationBudgetMultiplier")
            && !m.as_f64().is_some_and(|m| (1.0..=8.0).contains(&m))
        {
            out.push(format!("truncationBudgetMultiplier {m}: a number in 1..8"));
        }
    }
    if let Some(limits) = d.get("limits") {
        for k in ["clarificationRounds", "schemaRounds", "envelopesPerTurn"] {
            if !limits[k].is_u64() {
                out.push(format!("limits.{k}: required"));
            }
        }
    }
    if let Some(replay) = d.get("replay")
        && replay["effectSeamsManifest"] != "/host/effect-seams"
    {
        out.push("replay.effectSeamsManifest: required".into());
    }
    if d.pointer("/aiProviders/providers")
        .is_some_and(|p| !p.is_array())
    {
        out.push("aiProviders.providers: an array".into());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A pack to write documents from.
// ---------------------------------------------------------------------------------------------

#[derive(Serialize, Deserialize, JsonSchema)]
struct Title {
    title: String,
}

#[wop_node(
    type_id = "community.demo.spec.title",
    version = "1.0.0",
    retry(max_attempts = 3),
    requires(attempts)
)]
async fn write_title(ctx: &NodeCtx<'_>, topic: String) -> Result<Title, NodeError> {
    let done = ctx
        .call_ai(AiRequest::<Title>::prompt(&topic).max_tokens(50))
        .await?;
    done.into_output()
        .map_err(|e| NodeError::new(e.to_string()))
}

#[wop_node(type_id = "core.ai.callPrompt", version = "1.0.0", category = "data")]
async fn call_prompt(_ctx: &NodeCtx<'_>, text: String) -> Result<String, NodeError> {
    Ok(text)
}

pack! { name = "community.demo.spec", version = "1.0.0", nodes = [WriteTitle, CallPrompt] }

fn good() -> Step {
    Step::json(&json!({"title": "ok"}), 5)
}

/// Runs `WriteTitle` on a fresh SQLite journal with `steps`; the run id and its events as JSON.
async fn run_title(steps: Vec<Step>, nl_fallback: bool) -> (String, Vec<Value>) {
    let path = std::env::temp_dir().join(format!(
        "wop-spec-v2-{}-{}.db",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&path);
    let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&path).expect("journal"));
    let host = LocalHost::builder()
        .provider(ScriptedProvider::new(steps.into_iter().collect()))
        .journal(journal)
        .nl_fallback(nl_fallback)
        .build();
    let out = host.run(&WriteTitle, json!("a topic")).await;
    let events = wop_sdk::host::Host::events(&host, &out.run_id).await;
    let json = events.iter().map(RunEvent::to_json).collect();
    (out.run_id.as_str().to_owned(), json)
}

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

// ---------------------------------------------------------------------------------------------
// One test per rule.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_pack_name_is_namespace_owner_pack() {
    for (name, ok) in [
        ("community.demo.bookai", true),
        ("vendor.acme.my_tools", true),
        ("private.host.a.bC", true),
        ("community.bookai", false),
        ("community.2fa.verify", false),
        ("acme.tools.x", false),
        ("community.Demo.x", false),
    ] {
        assert_eq!(pack_name_ok(name), ok, "our rule: {name}");
        assert_eq!(is_pack_name(name), ok, "the SDK: {name}");
    }
    assert!(pack_name_ok(pack().name()));
}

#[test]
fn a_type_id_is_two_or_more_segments_camel_case_after_the_first() {
    for (id, ok) in [
        ("core.ai.callPrompt", true),
        ("vendor.acme.my_tools.echo", true),
        ("conformance.callai.echo-attempts", true),
        ("community.bookai", true),
        ("community.2fa.verify", false),
        ("Core.ai.x", false),
        ("core_X.y", false),
        ("echo", false),
        ("a..b", false),
    ] {
        assert_eq!(type_id_ok(id), ok, "our rule: {id}");
        assert_eq!(is_type_id(id), ok, "the SDK: {id}");
    }
}

#[test]
fn a_node_object_is_closed_and_names_its_schema_files() {
    let p = pack();
    let m = p.manifest();
    assert_eq!(
        manifest_problems(&m, &p.schema_files()),
        Vec::<String>::new()
    );
    assert_eq!(validate_manifest(&m), Ok(()));
    // An own key without a prefix breaks the rule, and the SDK says so.
    let mut broken = m.clone();
    broken["nodes"][0]["maxCalls"] = json!(3);
    broken["nodes"][0]["inputSchema"] = json!({});
    assert_eq!(manifest_problems(&broken, &p.schema_files()).len(), 2);
    assert_eq!(validate_manifest(&broken).err().map(|e| e.len()), Some(2));
    // With its prefix it is carried.
    let mut extended = m;
    extended["nodes"][0]["x-maxCalls"] = json!(3);
    assert_eq!(validate_manifest(&extended), Ok(()));
}

#[test]
fn the_runtime_is_a_v2_language_with_an_entry_in_the_pack() {
    let p = pack();
    let m = p.manifest();
    assert_eq!(m["runtime"]["language"], "javascript");
    assert_eq!(m["runtime"]["entry"], "index.mjs");
    for (language, entry) in [("rust", "index.mjs"), ("javascript", "")] {
        let mut broken = m.clone();
        broken["runtime"] = json!({"language": language, "entry": entry});
        assert_eq!(manifest_problems(&broken, &p.schema_files()).len(), 1);
        assert!(validate_manifest(&broken).is_err(), "{language} {entry}");
    }
}

#[test]
fn a_facet_named_in_peer_dependencies_meta_is_declared() {
    let m = pack().manifest();
    assert_eq!(
        m["peerDependenciesMeta"],
        json!({"aiProviders": {"facets": ["callAccounting"]}})
    );
    let mut broken = m;
    broken["peerDependenciesMeta"]["aiProviders"]["facets"] = json!(["attempts"]);
    assert_eq!(manifest_problems(&broken, &pack().schema_files()).len(), 1);
    assert!(validate_manifest(&broken).is_err());
}

#[tokio::test]
async fn an_event_is_wrapped_with_id_time_version_and_a_sequence_from_0() {
    let (run_id, events) = run_title(vec![good()], false).await;
    assert!(run_id_ok(&run_id), "{run_id}");
    assert_eq!(log_problems(&events), Vec::<String>::new());
    assert_eq!(events[0]["sequence"], 0);
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["node.started", "provider.usage", "node.completed"]);
}

#[tokio::test]
async fn node_completed_carries_a_port_map() {
    let (_, events) = run_title(vec![good()], false).await;
    let done = of_type(&events, "node.completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["payload"]["outputs"], json!({"title": "ok"}));
    assert!(done[0]["payload"].get("output").is_none());
}

#[tokio::test]
async fn node_failed_carries_code_and_message() {
    let (_, events) = run_title(vec![Step::text("nope", 1); 3], false).await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    let failed = of_type(&events, "node.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["payload"]["error"]["code"], "envelope_invalid");
    assert!(failed[0]["payload"]["error"].get("error").is_none());
}

#[tokio::test]
async fn retry_reasons_are_registered_values_or_host_extensions() {
    let (_, events) = run_title(
        vec![
            Step::Error("503 from upstream".into()),
            Step::text("not json", 2),
            good(),
        ],
        false,
    )
    .await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    let reasons: Vec<&str> = of_type(&events, "envelope.retry-attempted")
        .iter()
        .filter_map(|e| e["payload"]["reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(!reasons.contains(&"provider-error"));
    assert_eq!(reasons[1], "parse-error");
}

#[tokio::test]
async fn a_cut_at_the_token_budget_is_max_tokens() {
    let (_, events) = run_title(
        vec![
            Step::text("{\"title\": \"cut", 50).finish(FinishReason::Length),
            good(),
        ],
        false,
    )
    .await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    let cut = of_type(&events, "envelope.truncated");
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0]["payload"]["stopReason"], "max_tokens");
}

#[tokio::test]
async fn the_nl_to_format_fallback_has_its_v2_name() {
    assert_eq!(
        normalize_type("envelope.nlToFormat.engaged"),
        "envelope.nl-to-format-engaged"
    );
    let v1 = RunEvent::from_json(
        &json!({"type": "envelope.nlToFormat.engaged", "runId": "local/0123456789abcdef",
        "payload": {"nodeId": "n", "originalEnvelopeType": "structured"}}),
    )
    .expect("a v1 event reads");
    assert_eq!(v1.to_json()["type"], "envelope.nl-to-format-engaged");
    let (_, events) = run_title(vec![Step::text("no", 1); 4], true).await;
    assert_eq!(log_problems(&events), Vec::<String>::new());
    assert_eq!(of_type(&events, "envelope.nl-to-format-engaged").len(), 1);
}

#[test]
fn the_capability_document_names_versions_and_records_each_family() {
    let host = LocalHost::builder().nl_fallback(true).build();
    let doc = host.capabilities().to_json();
    assert_eq!(caps_problems(&doc), Vec::<String>::new());
    assert_eq!(doc["preferredVersion"], "2.0");
    assert_eq!(
        doc.pointer("/aiProviders/callAccounting/attempts"),
        Some(&json!(true))
    );
    // A missing record, a v1 short event name or an out-of-range multiplier break the rules.
    let mut broken = doc.clone();
    broken["providerUsage"] = json!({});
    broken["envelopes"]["reliability"]["events"] = json!(["retry-exhausted", "envelope.refusal"]);
    broken["envelopes"]["reliability"]["completion"]["truncationBudgetMultiplier"] = json!(9);
    let problems = caps_problems(&broken).join("\n");
    for expected in [
        "providerUsage.status",
        "providerUsage.since",
        "providerUsage.witness",
        "retry-exhausted: not a full v2 name",
        "truncationBudgetMultiplier 9",
    ] {
        assert!(problems.contains(expected), "{expected} in {problems}");
    }
}

#[test]
fn a_fractional_truncation_multiplier_is_read_and_written() {
    let host = LocalHost::builder().build();
    let mut doc = host.capabilities().to_json();
    doc["envelopes"]["reliability"]["completion"]["truncationBudgetMultiplier"] = json!(1.5);
    let read = CapabilityDocument::from_json(&doc).expect("1.5 is in 1..8");
    let written = read.to_json();
    assert_eq!(
        written.pointer("/envelopes/reliability/completion/truncationBudgetMultiplier"),
        Some(&json!(1.5))
    );
    assert_eq!(caps_problems(&written), Vec::<String>::new());
}

#[test]
fn every_error_code_is_registered_or_a_vendor_code() {
    for code in ErrorCode::ALL {
        assert!(code_ok(code.as_str()), "{}", code.as_str());
        let envelope = wop_sdk::wire::ErrorEnvelope::new(code, "m");
        let json = serde_json::to_value(&envelope).expect("serializes");
        assert_eq!(envelope_problems(&json), Vec::<String>::new());
    }
    for bad in ["budget_exhausted", "openwop.x", "Wop.x", "a.b.c"] {
        assert!(!code_ok(bad), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// Everything the command line writes, through the real `book_ai` binary.
// ---------------------------------------------------------------------------------------------

/// The example binary (built by the same cargo; see `tests/cli.rs`).
fn binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "book_ai"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "`cargo build --example book_ai` failed");
            let exe = std::env::current_exe().expect("current exe");
            let profile = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("<target>/<profile>/deps/<test>");
            profile
                .join("examples")
                .join(format!("book_ai{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

fn run(args: &[&str]) -> (i32, Value) {
    let o: Output = Command::new(binary()).args(args).output().expect("runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap_or(-1), json)
}

#[test]
fn everything_the_command_line_writes_follows_the_rules() {
    let dir = std::env::temp_dir().join(format!("wop-spec-v2-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let journal = dir.join("runs.db");
    let _ = std::fs::remove_file(&journal);
    let journal = journal.to_str().expect("utf-8").to_owned();

    // manifest
    let (code, manifest) = run(&["manifest"]);
    assert_eq!(code, 0);
    let mut problems = manifest_problems(&manifest, &[]);
    // The binary prints the manifest alone; the schema files are checked through the library.
    problems.retain(|p| !p.contains("no such schema file"));
    assert_eq!(problems, Vec::<String>::new());

    // run: one that completes and one that fails, both recorded in the journal
    let review = json!({"draft": {"number": 1, "scenes": [
        {"beat": "b", "text": "t", "placeholder": false, "repaired": false}]}})
    .to_string();
    let mut runs = Vec::new();
    for (name, script) in [
        (
            "ok",
            r#"[{"content": "Tighten the ending.", "usage": {"outputTokens": 12}}]"#,
        ),
        (
            "fail",
            r#"[{"error": "503"}, {"error": "503"}, {"error": "503"}, {"error": "503"}]"#,
        ),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, script).expect("script");
        let (_, out) = run(&[
            "run",
            "--node",
            "community.demo.bookai.review-chapter",
            "--input-json",
            &review,
            "--script",
            path.to_str().expect("utf-8"),
            "--journal",
            &journal,
            "--json",
        ]);
        let run_id = out["outcome"]["runId"].as_str().expect("runId").to_owned();
        assert!(run_id_ok(&run_id), "{run_id}");
        if let Some(error) = out["outcome"].get("error") {
            assert_eq!(envelope_problems(error), Vec::<String>::new(), "{error}");
        }
        runs.push((name, run_id, out));
    }
    let failed = &runs[1].2["outcome"];
    assert!(
        failed["status"] == "failed" && failed.get("error").is_some(),
        "the failing script fails the node: {failed}"
    );

    // events --json
    for (name, run_id, _) in &runs {
        let (code, events) = run(&["events", run_id, "--journal", &journal, "--json"]);
        assert_eq!(code, 0);
        let events = events.as_array().cloned().unwrap_or_default();
        assert!(!events.is_empty());
        assert_eq!(log_problems(&events), Vec::<String>::new(), "{name}");
    }

    // conformance --json: verdicts only; every id and code in it follows the rules
    let (code, report) = run(&["conformance", "--json"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["allPassed"], true);
    for leg in report["legs"].as_array().cloned().unwrap_or_default() {
        assert!(leg["id"].as_str().is_some_and(|id| id.starts_with("0248.")));
        assert_eq!(leg["verdict"], "executed-pass");
    }

    // the capability document the local host advertises
    let caps = LocalHost::builder().build().capabilities().to_json();
    assert_eq!(caps_problems(&caps), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_event_of_the_first_shape_still_reads_as_v2() {
    let old = json!({"seq": 1, "runId": "run-1", "type": "node.completed",
        "payload": {"nodeId": "main", "output": "text"}});
    let read = RunEvent::from_json(&old).expect("reads");
    assert_eq!(read.sequence, 0);
    assert_eq!(read.payload()["outputs"], json!({"output": "text"}));
    let failed = json!({"seq": 2, "runId": "run-1", "type": "node.failed",
        "payload": {"nodeId": "main", "error": {"error": "budget_exhausted", "message": "m"}}});
    let read = RunEvent::from_json(&failed).expect("reads");
    assert_eq!(
        read.node_error().map(|e| e.error),
        Some(ErrorCode::BudgetExhausted)
    );
    assert_eq!(read.payload()["error"]["code"], "budget_exhausted");
}
