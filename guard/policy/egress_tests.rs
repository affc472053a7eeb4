use super::*;

fn rule(toml_text: &str) -> Result<EgressRule, EgressRuleError> {
    let raw: RawEgressRule = toml::from_str(toml_text).map_err(|e| EgressRuleError {
        rule: toml_text.to_owned(),
        why: e.to_string(),
    })?;
    EgressRule::from_raw(&raw, "test".into())
}

fn name(n: &str) -> DestHost {
    DestHost::Name(n.to_owned())
}

fn tunnel(host: DestHost, port: u16) -> Destination {
    Destination {
        host,
        port,
        plain: None,
    }
}

fn plain(host: DestHost, port: u16, method: &str, path: &str) -> Destination {
    Destination {
        host,
        port,
        plain: Some((method.to_owned(), path.to_owned())),
    }
}

#[test]
fn rules_that_cannot_mean_one_thing_are_refused_at_load() {
    let refused = [
        // Wildcards only as a whole leading label, over at least two labels.
        (
            r#"action="allow"
host="*.com"
ports=[443]"#,
            "two labels",
        ),
        (
            r#"action="allow"
host="a*.example.com"
ports=[443]"#,
            "wildcard",
        ),
        (
            r#"action="allow"
host="*example.com"
ports=[443]"#,
            "wildcard",
        ),
        (
            r#"action="allow"
host="example.*"
ports=[443]"#,
            "wildcard",
        ),
        // Not host names.
        (
            r#"action="allow"
host="[example.com]"
ports=[443]"#,
            "host name",
        ),
        (
            r#"action="allow"
host="exa mple.com"
ports=[443]"#,
            "host name",
        ),
        (
            r#"action="allow"
host="example.com/x"
ports=[443]"#,
            "host name",
        ),
        (
            r#"action="allow"
host="a..b"
ports=[443]"#,
            "host name",
        ),
        (
            r#"action="allow"
host="-a.com"
ports=[443]"#,
            "host name",
        ),
        (
            r#"action="allow"
host="evil.0x7f"
ports=[443]"#,
            "host name",
        ),
        (
            r#"action="allow"
host="1.2.3"
ports=[443]"#,
            "host name",
        ),
        // Ports.
        (
            r#"action="allow"
host="example.com"
ports=[]"#,
            "no port",
        ),
        (
            r#"action="allow"
host="example.com"
ports=[0]"#,
            "1-65535",
        ),
        (
            r#"action="allow"
host="example.com"
ports=[65536]"#,
            "1-65535",
        ),
        // An allow that names what a tunnel hides.
        (
            r#"action="allow"
host="example.com"
ports=[443]
path_prefix="/v1/""#,
            "scheme = \"http\"",
        ),
        (
            r#"action="allow"
host="example.com"
ports=[443]
scheme="https"
methods=["GET"]"#,
            "scheme = \"http\"",
        ),
        // Paths that read two ways.
        (
            r#"action="allow"
host="example.com"
ports=[80]
scheme="http"
path_prefix="/v1/../admin""#,
            "plain absolute path",
        ),
        (
            r#"action="allow"
host="example.com"
ports=[80]
scheme="http"
path_prefix="v1/""#,
            "plain absolute path",
        ),
        (
            r#"action="allow"
host="example.com"
ports=[80]
scheme="http"
methods=["GE T"]"#,
            "method",
        ),
        (
            r#"action="allow"
host="*.example.com"
ports=[80]
internal=true"#,
            "one named service",
        ),
        (
            r#"action="maybe"
host="example.com"
ports=[80]"#,
            "unknown variant",
        ),
        (
            r#"action="allow"
host="example.com"
ports=[80]
extra=1"#,
            "unknown field",
        ),
    ];
    for (text, why) in refused {
        let err = rule(text).expect_err(text);
        assert!(err.why.contains(why), "{text}: {err}");
    }
}

#[test]
fn hosts_match_exactly_or_strictly_below() {
    let exact = rule("action='allow'\nhost='API.Example.COM.'\nports=[443]").unwrap();
    let below = rule("action='allow'\nhost='*.example.com'\nports=[443]").unwrap();
    let idn = rule("action='allow'\nhost='bücher.example'\nports=[443]").unwrap();
    let ip = rule("action='allow'\nhost='[::ffff:10.0.0.5]'\nports=[8080]").unwrap();
    let rows: [(&EgressRule, DestHost, u16, bool); 16] = [
        (&exact, name("api.example.com"), 443, true),
        (&exact, name("api.example.com"), 80, false),
        (&exact, name("x.api.example.com"), 443, false),
        (&exact, name("api.example.com.evil"), 443, false),
        (&exact, name("apiexample.com"), 443, false),
        (&below, name("a.example.com"), 443, true),
        (&below, name("a.b.example.com"), 443, true),
        (&below, name("example.com"), 443, false),
        (&below, name("evilexample.com"), 443, false),
        (&below, name("a.example.com.evil.net"), 443, false),
        // IDNA: the rule is stored as the proxy reads names (punycode); a lookalike differs.
        (&idn, name("xn--bcher-kva.example"), 443, true),
        (&idn, name("bucher.example"), 443, false),
        // Every spelling of the address is the address.
        (&ip, DestHost::Ip("10.0.0.5".parse().unwrap()), 8080, true),
        (
            &ip,
            DestHost::Ip("::ffff:10.0.0.5".parse().unwrap()),
            8080,
            true,
        ),
        (&ip, DestHost::Ip("10.0.0.6".parse().unwrap()), 8080, false),
        // A name never matches an address rule (the address is checked after resolution).
        (&ip, name("ten.example"), 8080, false),
    ];
    for (r, host, port, want) in rows {
        let d = tunnel(host.clone(), port);
        assert_eq!(r.covers(&d), want, "{} vs {host:?}:{port}", describe(r));
    }
}

#[test]
fn deny_wins_and_what_is_not_seen_fails_closed() {
    let rules = vec![
        rule("action='allow'\nhost='*.example.com'\nports=[443, 80]").unwrap(),
        rule("action='deny'\nhost='admin.example.com'\nports=[443, 80]\npath_prefix='/admin'").unwrap(),
        rule("action='allow'\nhost='api.model.test'\nports=[80]\nscheme='http'\nmethods=['POST']\npath_prefix='/v1/'").unwrap(),
        rule("action='deny'\nhost='*.example.com'\nports=[80]\nmethods=['DELETE']").unwrap(),
    ];
    let verdict = |d: &Destination| match judge(&rules, d) {
        EgressVerdict::Allow(_) => "allow",
        EgressVerdict::Deny(_) => "deny",
        EgressVerdict::Unlisted => "unlisted",
    };
    let rows = [
        (tunnel(name("www.example.com"), 443), "allow"),
        // The deny names a path: a tunnel to its host might carry it.
        (tunnel(name("admin.example.com"), 443), "deny"),
        (
            plain(name("admin.example.com"), 80, "GET", "/public"),
            "allow",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "/admin"),
            "deny",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "/admin/x?y"),
            "deny",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "/%61dmin"),
            "deny",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "/x/../admin"),
            "deny",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "/x%2f..%2fadmin"),
            "deny",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "//admin"),
            "deny",
        ),
        (
            plain(name("admin.example.com"), 80, "GET", "/administrator"),
            "allow",
        ),
        (plain(name("www.example.com"), 80, "DELETE", "/"), "deny"),
        // Method and path allow only plain HTTP, with a clear path under the prefix.
        (
            plain(name("api.model.test"), 80, "POST", "/v1/chat"),
            "allow",
        ),
        (
            plain(name("api.model.test"), 80, "GET", "/v1/chat"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v2/chat"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v1/../admin"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v1/./x"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v1/%2e%2e/admin"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v1\\..\\admin"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v1/%00"),
            "unlisted",
        ),
        (
            plain(name("api.model.test"), 80, "POST", "/v1/%zz"),
            "unlisted",
        ),
        (plain(name("api.model.test"), 80, "POST", "/v1"), "unlisted"),
        (tunnel(name("api.model.test"), 80), "unlisted"),
        (tunnel(name("other.test"), 443), "unlisted"),
    ];
    for (d, want) in rows {
        assert_eq!(verdict(&d), want, "{d:?}");
    }
}

#[test]
fn prefixes_end_at_a_segment_boundary() {
    let r = rule("action='allow'\nhost='m.test'\nports=[80]\nscheme='http'\npath_prefix='/v1'")
        .unwrap();
    for (path, want) in [
        ("/v1", true),
        ("/v1/x", true),
        ("/v10", false),
        ("/v1x", false),
    ] {
        assert_eq!(
            r.covers(&plain(name("m.test"), 80, "GET", path)),
            want,
            "{path}"
        );
    }
}

#[test]
fn allow_entries_are_host_and_port_only() {
    for (e, host, port) in [
        (
            "api.example.com:443",
            HostPattern::Exact("api.example.com".into()),
            443,
        ),
        (
            "API.Example.COM.:443",
            HostPattern::Exact("api.example.com".into()),
            443,
        ),
        (
            "10.0.0.5:8080",
            HostPattern::Ip("10.0.0.5".parse().unwrap()),
            8080,
        ),
        ("[::1]:8080", HostPattern::Ip("::1".parse().unwrap()), 8080),
        ("model:8080", HostPattern::Exact("model".into()), 8080),
    ] {
        let r = EgressRule::from_allow(e).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!((r.host, r.ports), (host, vec![port]), "{e}");
    }
    for e in [
        "*.github.com:443",
        ".github.io:443",
        "github.com",
        "github.com:0",
        "github.com:99999",
        "https://github.com:443",
        "github.com:443/x",
        "gith*b.com:443",
        "-a.com:443",
        "a..b:443",
        ":443",
        "::1:443",
        "github.com:+443",
        "a b:443",
    ] {
        assert!(EgressRule::from_allow(e).is_err(), "{e} accepted");
    }
}
