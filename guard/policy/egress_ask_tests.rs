use super::*;

fn ask_line(ask: &str) -> String {
    format!(r#"{{"type":"egress-ask","id":"a1","token":"t","ask":{ask}}}"#)
}

const GOOD: &str =
    r#"{"host":"api.example.com","port":443,"method":"CONNECT","waitMs":30000,"grantSecs":600}"#;

#[test]
fn a_well_formed_ask_parses_and_everything_else_is_refused() {
    let (f, host) = parse_ask(ask_line(GOOD).as_bytes()).unwrap();
    assert_eq!(host, DestHost::Name("api.example.com".into()));
    assert_eq!((f.ask.port, f.ask.path), (443, None));
    let plain = r#"{"host":"10.0.0.5","port":80,"method":"GET","path":"/x?y=1","client":"127.0.0.1:5000","waitMs":1,"grantSecs":1}"#;
    assert!(parse_ask(ask_line(plain).as_bytes()).is_ok());
    let long_host = format!(
        r#"{{"host":"{}.com","port":443,"method":"CONNECT","waitMs":1,"grantSecs":1}}"#,
        "a".repeat(300)
    );
    for (what, line) in [
        ("not json", "{".to_owned()),
        (
            "too large",
            ask_line(&GOOD.replace("api", &"a".repeat(5000))),
        ),
        (
            "unknown field",
            ask_line(&GOOD.replace("}", r#","extra":1}"#)),
        ),
        (
            "other type",
            ask_line(GOOD).replace("egress-ask", "egress-asks"),
        ),
        ("bad id", ask_line(GOOD).replace(r#""a1""#, r#""a 1""#)),
        ("upper-case host", ask_line(&GOOD.replace("api.", "API."))),
        (
            "bracketed host",
            ask_line(&GOOD.replace("api.example.com", "[example.com]")),
        ),
        ("trailing dot", ask_line(&GOOD.replace(".com", ".com."))),
        ("long host", ask_line(&long_host)),
        ("port 0", ask_line(&GOOD.replace("443", "0"))),
        ("port too big", ask_line(&GOOD.replace("443", "70000"))),
        (
            "lower method",
            ask_line(&GOOD.replace("CONNECT", "connect")),
        ),
        (
            "tunnel with a path",
            ask_line(&GOOD.replace("\"waitMs", "\"path\":\"/\",\"waitMs")),
        ),
        (
            "plain without a path",
            ask_line(&GOOD.replace("CONNECT", "GET")),
        ),
        ("wait 0", ask_line(&GOOD.replace("30000", "0"))),
        ("wait too long", ask_line(&GOOD.replace("30000", "6000000"))),
        ("grant too long", ask_line(&GOOD.replace("600", "999999"))),
        ("no token", ask_line(GOOD).replace(r#""token":"t","#, "")),
    ] {
        assert!(parse_ask(line.as_bytes()).is_err(), "{what} accepted");
    }
}

#[test]
fn answers_must_answer_this_ask_in_full() {
    let ok =
        r#"{"type":"egress-answer","id":"a1","decision":"allow-for","reason":"r","untilMs":5}"#;
    assert_eq!(parse_answer(ok.as_bytes(), "a1").unwrap().until_ms, Some(5));
    for bad in [
        ok.replace("a1", "a2"),
        ok.replace(r#","untilMs":5"#, ""),
        ok.replace("allow-for", "allow-always"),
        ok.replace("allow-for", "allow-maybe"),
        ok.replace("}", r#","x":1}"#),
        "garbage".to_owned(),
    ] {
        assert!(parse_answer(bad.as_bytes(), "a1").is_err(), "{bad}");
    }
}

#[test]
fn the_stored_rule_is_the_shown_rule_and_reads_back_as_that_host_and_port() {
    let host = DestHost::Name("api.example.com".into());
    let text = rule_toml(&proposed_rule(&host, 443, true));
    assert_eq!(
        text,
        r#"{ action = "allow", host = "api.example.com", ports = [443], scheme = "https" }"#
    );
    let block = overlay_entry(&text).unwrap();
    let rules = parse_overlay(&format!("{block}{block}")).unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[1].origin, "overlay rule 2");
    assert_eq!(rules[0].ports, vec![443]);
    for bad in [
        r#"{ action = "deny", host = "a.example", ports = [443], scheme = "https" }"#,
        r#"{ action = "allow", host = "*.example.com", ports = [443], scheme = "https" }"#,
        r#"{ action = "allow", host = "a.example", ports = [443, 80], scheme = "https" }"#,
        "{ action = \"allow\" }\n[x]",
    ] {
        assert!(overlay_entry(bad).is_err(), "{bad}");
    }
    let v6 = DestHost::Ip("2001:db8::1".parse().unwrap());
    assert_eq!(target(&v6, 443), "[2001:db8::1]:443");
}
