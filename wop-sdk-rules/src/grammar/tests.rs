use super::*;
use crate::sets::{AI_PROVIDER_FACETS, ENVELOPE_FAILURE_REASONS};

#[test]
fn type_ids() {
    for ok in [
        "core.ai.callPrompt",
        "vendor.acme.my_tools.echo",
        "community.bookai.draft-scene",
        "conformance.callai.echo-attempts",
        "core.ai",
    ] {
        assert_eq!(type_id_problem(ok), None, "{ok}");
    }
    let bad = |id: &str, why: &str| {
        let p = type_id_problem(id);
        assert!(p.as_deref().is_some_and(|p| p.contains(why)), "{id}: {p:?}");
    };
    bad(
        "community.2fa.verify",
        "`2fa` must start with a lowercase letter",
    );
    bad("community", "at least two");
    bad("Community.x.y", "`Community` must start");
    bad("core_X.a", "only lowercase");
    bad("a..b", "empty");
    bad("", "empty");
    bad(&format!("a.{}", "b".repeat(300)), "limit is 256");
}

#[test]
fn pack_names() {
    for ok in [
        "community.demo.book-ai",
        "vendor.acme.my_tools",
        "private.host.a.b",
        "core.x.yZ",
    ] {
        assert_eq!(pack_name_problem(ok), None, "{ok}");
    }
    let bad = |n: &str, why: &str| {
        let p = pack_name_problem(n);
        assert!(p.as_deref().is_some_and(|p| p.contains(why)), "{n}: {p:?}");
    };
    bad("community.bookai", "three dotted segments");
    bad("community.2fa.verify", "`2fa` must start");
    bad("acme.tools.x", "first segment");
    bad("community.bOok.x", "only lowercase");
    bad("local.a.b", "first segment");
}

#[test]
fn versions() {
    for ok in [
        "0.1.0",
        "10.20.30",
        "1.0.0-alpha.1",
        "1.0.0+build.5",
        "1.0.0-rc-1+x",
    ] {
        assert_eq!(semver_problem(ok), None, "{ok}");
    }
    for bad in [
        "1", "1.0", "1.0.0.0", "01.0.0", "v1.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "",
    ] {
        assert!(semver_problem(bad).is_some(), "{bad}");
    }
    assert_eq!(minor_version_problem("2.0"), None);
    assert!(minor_version_problem("2").is_some());
    assert!(minor_version_problem("02.0").is_some());
}

#[test]
fn facets_and_extensions() {
    assert_eq!(facet_problem("callAccounting", AI_PROVIDER_FACETS), None);
    assert!(facet_problem("call_accounting", AI_PROVIDER_FACETS).is_some());
    assert!(facet_problem("attempts", AI_PROVIDER_FACETS).is_some_and(|p| p.contains("declared")));
    assert!(is_extension_key("x-maxCalls"));
    assert!(is_extension_key("vendor.acme.k"));
    assert!(!is_extension_key("maxCalls"));
}

#[test]
fn vendor_codes() {
    for ok in ["wop-sdk.budget_exhausted", "acme.x", "a1-b2.c_3"] {
        assert_eq!(vendor_code_problem(ok), None, "{ok}");
    }
    for bad in [
        "budget_exhausted",
        "openwop.x",
        "wop-sdk.a.b",
        "Wop.x",
        "wop-.x",
        "wop-sdk.Budget",
        "wop-sdk.1x",
        "-a.x",
    ] {
        assert!(vendor_code_problem(bad).is_some(), "{bad}");
    }
}

#[test]
fn reasons() {
    assert_eq!(
        envelope_reason_problem("parse-error", ENVELOPE_FAILURE_REASONS),
        None
    );
    assert_eq!(
        envelope_reason_problem("x-host-wop-provider", ENVELOPE_FAILURE_REASONS),
        None
    );
    assert!(envelope_reason_problem("provider-error", ENVELOPE_FAILURE_REASONS).is_some());
    assert!(envelope_reason_problem("x-host-wop", ENVELOPE_FAILURE_REASONS).is_some());
}

#[test]
fn ids() {
    assert_eq!(opaque_id_problem("0123456789abcdef"), None);
    assert!(opaque_id_problem("short").is_some());
    assert!(opaque_id_problem("0123456789abcdef/").is_some());
    assert_eq!(run_id_problem("local/0123456789abcdef"), None);
    assert_eq!(run_id_problem("anon:s1/0123456789abcdef"), None);
    assert!(run_id_problem("run-1").is_some());
    assert!(run_id_problem("local/short").is_some_and(|p| p.contains("16 to 128")));
    assert!(run_id_problem("/0123456789abcdef").is_some());
}
