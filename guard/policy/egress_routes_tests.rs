use super::*;

fn raw(upstream: &str, allow: &[&str]) -> RawRoute {
    RawRoute {
        name: "openai".into(),
        upstream: upstream.into(),
        key_file: "/run/secrets/model-api-key".into(),
        header: default_header(),
        allow: allow.iter().map(|s| (*s).to_owned()).collect(),
        ca_file: None,
        internal: false,
    }
}

fn openai() -> ProviderRoute {
    ProviderRoute::from_raw(
        &raw(
            "https://api.openai.com",
            &["POST /v1/chat/completions", "GET /v1/models"],
        ),
        "test".into(),
    )
    .unwrap()
}

#[test]
fn routes_parse_into_an_upstream_a_header_and_an_allow_list() {
    let r = openai();
    assert_eq!(r.upstream.host, HostPattern::Exact("api.openai.com".into()));
    assert_eq!(r.upstream.ports, vec![443]);
    assert_eq!(r.upstream.scheme, Scheme::Https);
    assert_eq!(r.header_name, "authorization");
    assert_eq!(r.header_with("sk-1"), "Bearer sk-1");
    assert_eq!(r.upstream_url(), "https://api.openai.com:443");
    let mut x = raw("https://10.0.0.5:8443/openai/", &["post /v1/responses"]);
    x.header = "x-api-key: {key}".into();
    let r = ProviderRoute::from_raw(&x, "t".into()).unwrap();
    assert_eq!(
        (r.tls_name.as_str(), r.base_path.as_str()),
        ("10.0.0.5", "/openai")
    );
    assert_eq!(
        r.allow,
        vec![("POST".to_owned(), "/v1/responses".to_owned())]
    );
    assert_eq!(r.header_with("k"), "k");
}

#[test]
fn a_route_that_could_leak_the_key_or_match_loosely_is_refused_at_load() {
    let rows: [(&str, RawRoute); 11] = [
        (
            "plain http",
            raw("http://api.openai.com", &["GET /v1/models"]),
        ),
        (
            "userinfo",
            raw("https://u:p@api.openai.com", &["GET /v1/models"]),
        ),
        (
            "query",
            raw("https://api.openai.com/?x=1", &["GET /v1/models"]),
        ),
        ("wildcard", raw("https://*.openai.com", &["GET /v1/models"])),
        (
            "bad host",
            raw("https://api..openai.com", &["GET /v1/models"]),
        ),
        ("empty allow", raw("https://api.openai.com", &[])),
        (
            "allow without path",
            raw("https://api.openai.com", &["GET"]),
        ),
        (
            "allow dot-dot",
            raw("https://api.openai.com", &["GET /v1/../admin"]),
        ),
        (
            "allow relative",
            raw("https://api.openai.com", &["GET v1/models"]),
        ),
        (
            "bad method",
            raw("https://api.openai.com", &["G-T /v1/models"]),
        ),
        (
            "base dot-dot",
            raw("https://api.openai.com/a/../b", &["GET /v1/models"]),
        ),
    ];
    for (what, r) in rows {
        assert!(ProviderRoute::from_raw(&r, "t".into()).is_err(), "{what}");
    }
    for header in [
        "Authorization Bearer {key}",
        "Authorization: Bearer",
        "A: {key}{key}",
        "A B: {key}",
    ] {
        let mut r = raw("https://api.openai.com", &["GET /v1/models"]);
        r.header = header.into();
        assert!(ProviderRoute::from_raw(&r, "t".into()).is_err(), "{header}");
    }
    let mut r = raw("https://api.openai.com", &["GET /v1/models"]);
    r.name = "Open AI".into();
    assert!(ProviderRoute::from_raw(&r, "t".into()).is_err());
}

#[test]
fn only_listed_methods_and_clear_paths_under_a_prefix_pass() {
    let r = openai();
    let rows: [(&str, &str, Option<&str>); 10] = [
        ("POST", "/v1/chat/completions", Some("/v1/chat/completions")),
        ("GET", "/v1/models", Some("/v1/models")),
        (
            "GET",
            "/v1/models/gpt-4o?x=1",
            Some("/v1/models/gpt-4o?x=1"),
        ),
        ("GET", "/v1/chat/completions", None),
        ("DELETE", "/v1/models/x", None),
        ("POST", "/v1/files", None),
        ("GET", "/v1/modelsx", None),
        ("POST", "/v1/chat/completions/../../files", None),
        ("POST", "/v1/chat/completions%2f..%2ffiles", None),
        ("GET", "//v1/models", None),
    ];
    for (m, p, want) in rows {
        assert_eq!(r.permits(m, p).ok().as_deref(), want, "{m} {p}");
    }
    assert!(matches!(
        r.permits("POST", "/v1/files"),
        Err(RouteRefusal::NotAllowed { .. })
    ));
    assert_eq!(
        split_route_target("/providers/openai/v1/models?x"),
        Ok(("openai", "/v1/models?x"))
    );
    assert!(split_route_target("/providers/openai").is_err());
    assert!(split_route_target("/v1/models").is_err());
}
