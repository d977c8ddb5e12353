//! Unit tests of the argument parsers.

use super::*;
use quote::quote;

fn messages(errors: Errors) -> Vec<String> {
    errors
        .finish(())
        .err()
        .map(|e| e.into_iter().map(|e| e.to_string()).collect())
        .unwrap_or_default()
}

fn retry(tokens: TokenStream) -> (RetryArgs, Vec<String>) {
    let mut errors = Errors::default();
    let args = retry_args(tokens, &mut errors);
    (args, messages(errors))
}

#[test]
fn reads_a_retry_policy() {
    let (args, errors) = retry(quote!(max_attempts = 2, grow_max_tokens = false,));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(args.max_attempts.map(|l| l.value), Some(2));
    assert_eq!(args.grow_max_tokens.map(|l| l.value), Some(false));
}

#[test]
fn refuses_every_bad_max_attempts() {
    for bad in [
        quote!(max_attempts = 0),
        quote!(max_attempts = 17),
        quote!(max_attempts = -1),
        quote!(max_attempts = 2.5),
        quote!(max_attempts = "3"),
        quote!(max_attempts = 300),
    ] {
        let (args, errors) = retry(bad.clone());
        assert!(args.max_attempts.is_none(), "{bad}");
        assert_eq!(errors.len(), 1, "{bad}");
        assert!(
            errors[0].starts_with("`max_attempts` must be an integer in 1..=16"),
            "{bad}: {errors:?}"
        );
    }
    for missing in [quote!(max_attempts), quote!(max_attempts =)] {
        let (_, errors) = retry(missing);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("`max_attempts` needs a value"),
            "{errors:?}"
        );
    }
}

#[test]
fn a_named_value_is_told_a_literal_is_required_and_why() {
    for (tokens, key, named) in [
        (quote!(max_attempts = ATTEMPTS), "max_attempts", "ATTEMPTS"),
        (
            quote!(max_attempts = consts::ATTEMPTS),
            "max_attempts",
            "consts :: ATTEMPTS",
        ),
        (
            quote!(max_attempts = attempts()),
            "max_attempts",
            "attempts ()",
        ),
        (quote!(grow_max_tokens = GROW), "grow_max_tokens", "GROW"),
    ] {
        let (args, errors) = retry(tokens.clone());
        assert!(args.max_attempts.is_none() && args.grow_max_tokens.is_none());
        assert_eq!(errors.len(), 1, "{tokens}");
        assert!(
            errors[0].starts_with(&format!("`{key}` needs a literal, not `{named}`")),
            "{tokens}: {errors:?}"
        );
        assert!(
            errors[0].contains("before constants are evaluated"),
            "{errors:?}"
        );
    }
    // A negative literal is still a literal: its own rule applies.
    let (_, errors) = retry(quote!(max_attempts = -1));
    assert!(errors[0].starts_with("`max_attempts` must be an integer"));
}

#[test]
fn collects_repeated_unknown_and_bad_keys_together() {
    let (_, errors) = retry(quote!(
        max_attempts = 2,
        max_attempts = 3,
        tries = 4,
        grow_max_tokens = 1
    ));
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("given twice"));
    assert!(errors[1].contains("unknown key `tries`") && errors[1].contains("`grow_max_tokens`"));
    assert!(errors[2].contains("`true` or `false`"));
}

#[test]
fn reads_node_arguments() {
    let mut errors = Errors::default();
    let args = node_args(
        quote!(
            type_id = "community.demo.bookai.draft-scene",
            version = "1.0.0",
            category = "data",
            role = "pure",
            max_calls = 6,
            retry(max_attempts = 2),
            requires(attempts, replay),
            plan = plans::draft,
            label = "Draft"
        ),
        &mut errors,
    );
    assert!(errors.is_empty());
    assert_eq!(
        args.type_id.map(|l| l.value).as_deref(),
        Some("community.demo.bookai.draft-scene")
    );
    assert_eq!(args.category.map(|l| l.value.spelling()), Some("data"));
    assert_eq!(args.role.map(|l| l.value.spelling()), Some("pure"));
    assert_eq!(args.max_calls.map(|l| l.value), Some(6));
    assert_eq!(
        args.requires
            .iter()
            .map(|c| c.value.spelling())
            .collect::<Vec<_>>(),
        ["attempts", "replay"]
    );
    assert!(args.plan.is_some());
}

#[test]
fn lists_valid_values_of_closed_sets() {
    let mut errors = Errors::default();
    node_args(
        quote!(
            category = "chatty",
            role = "impure",
            requires(magic),
            colour = "red"
        ),
        &mut errors,
    );
    let errors = messages(errors);
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors[0].contains("`chat`, `control`, `data`, `canvas`, `coordination`, `integration`")
    );
    assert!(errors[1].contains("`pure`, `side-effect`"));
    assert!(
        errors[2]
            .contains("`ai_providers`, `attempts`, `retry_policy`, `provider_usage`, `replay`")
    );
    assert!(errors[3].contains("`type_id`, `version`, `category`"));
}

#[test]
fn reads_a_pack() {
    let mut errors = Errors::default();
    let args = pack_args(
        quote!(
            name = "community.demo.bookai",
            version = "0.1.0",
            nodes = [A, b::B]
        ),
        &mut errors,
    );
    assert!(errors.is_empty());
    assert_eq!(args.nodes.map(|n| n.value.len()), Some(2));
}
