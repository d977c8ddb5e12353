use wop_sdk::{Category, Node, RetryPolicy, Role};

#[wop_sdk::wop_node(type_id = "core.text.upper", version = "0.1.0")]
async fn upper(_ctx: &wop_sdk::NodeCtx<'_>, input: String) -> std::result::Result<String, wop_sdk::NodeError> {
    Ok(input.to_uppercase())
}

#[wop_sdk::wop_node(type_id = "private.acme.lower", version = "2.0.0", retry(grow_max_tokens = false))]
pub(crate) async fn lower<'run>(_ctx: &wop_sdk::NodeCtx<'run>, input: Vec<String>) -> Result<Vec<String>, wop_sdk::NodeError> {
    Ok(input.into_iter().map(|s| s.to_lowercase()).collect())
}

#[wop_sdk::wop_node(type_id = "vendor.acme.one-shot.v2", version = "1.2.3", max_calls = 1, retry(max_attempts = 1))]
async fn one_shot(_ctx: &wop_sdk::NodeCtx<'_>, input: u32) -> Result<u64, wop_sdk::NodeError> {
    Ok(u64::from(input))
}

fn main() {
    let spec = Upper::SPEC;
    assert_eq!(spec.category, Category::Chat);
    assert_eq!(spec.role, Role::SideEffect);
    assert_eq!(spec.retry, RetryPolicy::HOST_DEFAULT);
    assert_eq!(spec.max_calls, None);
    assert!(spec.requires.is_empty());
    assert_eq!(spec.label, None);
    assert_eq!(Lower::SPEC.retry.max_attempts(), None);
    assert!(!Lower::SPEC.retry.grows_max_tokens());
    assert_eq!(OneShot::SPEC.retry, RetryPolicy::NO_RETRIES);
    let _ = (Upper, Lower, OneShot::default());
}
