use super::*;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

#[test]
fn environment_gives_url_key_and_model() {
    let c = OpenAiConfig::from_lookup(env(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"),
        ("OPENAI_API_KEY", "sk-secret-1"),
        ("OPENAI_MODEL", "m-1"),
    ]))
    .expect("config");
    assert_eq!(c.model_name(), "m-1");
    assert!(c.has_api_key());
    assert_eq!(
        c.endpoint().as_str(),
        "http://127.0.0.1:9/v1/chat/completions"
    );
    assert!(!format!("{c:?}").contains("sk-secret-1"));
}

#[test]
fn defaults_without_url_or_key() {
    let c = OpenAiConfig::from_lookup(env(&[("OPENAI_MODEL", "m"), ("OPENAI_API_KEY", "")]))
        .expect("config");
    assert_eq!(
        c.endpoint().as_str(),
        "https://api.openai.com/v1/chat/completions"
    );
    assert!(!c.has_api_key());
    assert_eq!(
        c.request_timeout(),
        crate::local::LocalConfig::default().provider_timeout
    );
    assert_eq!(
        c.reply_limit(),
        crate::local::LocalConfig::default().max_reply_bytes
    );
}

#[test]
fn missing_model_names_the_variable() {
    let e = OpenAiConfig::from_lookup(env(&[])).expect_err("no model");
    assert_eq!(e.field, "OPENAI_MODEL");
}

#[test]
fn bad_urls_name_the_field_and_rule() {
    let field = |url: &str| {
        OpenAiConfig::from_lookup(env(&[("OPENAI_BASE_URL", url), ("OPENAI_MODEL", "m")]))
            .expect_err(url)
    };
    assert_eq!(field("localhost:8080").field, "OPENAI_BASE_URL");
    assert!(field("ftp://h/v1").message.contains("`http` or `https`"));
    assert!(field("http://u:p@h/v1").message.contains("credentials"));
    assert!(field("http://h/v1?x=1").message.contains("query"));
    let e = OpenAiConfig::new("not a url", "m").expect_err("bad");
    assert_eq!(e.field, "base_url");
    assert_eq!(
        OpenAiConfig::new("http://h/v1", " ")
            .expect_err("empty model")
            .field,
        "model"
    );
}

#[test]
fn key_debug_is_redacted() {
    assert_eq!(format!("{:?}", ApiKey::new("sk-abc")), "ApiKey(<redacted>)");
}
