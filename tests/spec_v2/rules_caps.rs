//! The rules, in our words: the capability document.

use super::*;

pub(crate) fn minor_ok(v: &str) -> bool {
    v.split_once('.').is_some_and(|(a, b)| {
        [a, b].iter().all(|n| {
            !n.is_empty()
                && n.bytes().all(|c| c.is_ascii_digit())
                && (*n == "0" || !n.starts_with('0'))
        })
    })
}

/// The capability document.
pub(crate) fn caps_problems(d: &Value) -> Vec<String> {
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
