//! The host-allow decision: binds on loopback, IPv6 loopback and wildcards, the configured
//! list, ports, case, brackets, trailing dots and authority tricks.

use super::*;

fn policy(local: &str, extra: &[&str]) -> HostPolicy {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let configured = local.rsplit_once(':').unwrap().0;
    HostPolicy::new(configured, local.parse().unwrap(), &extra).unwrap()
}

fn check(p: &HostPolicy, host: &str) -> Result<String, HostRefusal> {
    p.check(&[host.as_bytes()], 1)
}

fn allows(p: &HostPolicy, host: &str) -> bool {
    check(p, host).is_ok()
}

#[test]
fn loopback_v4_bind_allows_loopback_names_on_its_port() {
    let p = policy("127.0.0.1:8053", &[]);
    for ok in [
        "127.0.0.1:8053",
        "localhost:8053",
        "LOCALHOST:8053",
        "localhost.:8053",
        "[::1]:8053",
        "[0:0:0:0:0:0:0:1]:8053",
    ] {
        assert!(allows(&p, ok), "{ok}");
    }
    assert_eq!(check(&p, "LocalHost:8053").unwrap(), "localhost:8053");
    for foreign in [
        "127.0.0.1:8054",
        "localhost",
        "127.0.0.1",
        "rebind.attacker.example:8053",
        "localhost.attacker.example:8053",
        "127.0.0.1.nip.io:8053",
        "2130706433:8053",
        "127.1:8053",
        "0.0.0.0:8053",
        "[::]:8053",
    ] {
        assert_eq!(check(&p, foreign), Err(HostRefusal::Foreign), "{foreign}");
    }
}

#[test]
fn authority_tricks_are_malformed_not_allowed() {
    let p = policy("127.0.0.1:8053", &[]);
    for bad in [
        "localhost@evil:8053",
        "localhost:8053@evil.example",
        "evil.example@localhost:8053",
        "localhost:8053/evil",
        "localhost:8053 evil",
        "localhost:",
        "localhost:80:80",
        "[::1]8053",
        "[::1",
        "localhost\0:8053",
        "localhost..:8053",
        "",
    ] {
        assert_eq!(check(&p, bad), Err(HostRefusal::Malformed), "{bad:?}");
    }
    assert_eq!(p.check(&[b"\xff"], 1), Err(HostRefusal::Malformed));
}

#[test]
fn missing_and_repeated_host() {
    let p = policy("127.0.0.1:8053", &[]);
    assert_eq!(p.check(&[], 1), Err(HostRefusal::Missing));
    assert_eq!(p.check(&[], 0).unwrap(), "127.0.0.1:8053", "HTTP/1.0");
    let same: &[u8] = b"localhost:8053";
    assert_eq!(p.check(&[same, same], 1), Err(HostRefusal::Repeated));
    assert_eq!(p.check(&[same, same], 0), Err(HostRefusal::Repeated));
}

#[test]
fn ipv6_loopback_bind() {
    let p = policy("[::1]:9000", &[]);
    for ok in ["[::1]:9000", "localhost:9000", "127.0.0.1:9000"] {
        assert!(allows(&p, ok), "{ok}");
    }
    assert!(!allows(&p, "[::1]:9001"));
    assert!(!allows(&p, "[::2]:9000"));
    assert_eq!(p.check(&[], 0).unwrap(), "[::1]:9000");
}

#[test]
fn wildcard_bind_allows_loopback_names_and_the_list_only() {
    let p = policy("0.0.0.0:8053", &[]);
    assert!(allows(&p, "localhost:8053"));
    assert!(allows(&p, "127.0.0.1:8053"));
    for foreign in ["0.0.0.0:8053", "10.0.0.5:8053", "mcp.internal:8053"] {
        assert!(!allows(&p, foreign), "{foreign}");
    }
    assert_eq!(p.check(&[], 0).unwrap(), "127.0.0.1:8053");
    let p = policy("[::]:8053", &["mcp.internal", "10.0.0.5:8053", "fd00::7"]);
    assert!(allows(&p, "mcp.internal:8053"));
    assert!(allows(&p, "MCP.Internal.:443"));
    assert!(allows(&p, "mcp.internal"), "any port, the default 80 too");
    assert!(allows(&p, "10.0.0.5:8053"));
    assert!(!allows(&p, "10.0.0.5:8054"));
    assert!(!allows(&p, "10.0.0.5"));
    assert!(allows(&p, "[fd00::7]:1"));
    assert!(!allows(&p, "mcp.internal.evil:8053"));
    assert!(!allows(&p, "evil.mcp.internal:8053"));
    assert_eq!(p.check(&[], 0).unwrap(), "[::1]:8053");
}

#[test]
fn specific_public_bind_pins_its_address_and_name() {
    let p = HostPolicy::new("mcp.lan", "10.0.0.5:8053".parse().unwrap(), &[]).unwrap();
    assert!(allows(&p, "10.0.0.5:8053"));
    assert!(allows(&p, "mcp.lan:8053"));
    assert!(!allows(&p, "mcp.lan:8054"));
    assert!(
        !allows(&p, "localhost:8053"),
        "loopback names do not reach 10.0.0.5"
    );
    assert!(!allows(&p, "127.0.0.1:8053"));
    let p = policy("10.0.0.5:80", &[]);
    assert!(allows(&p, "10.0.0.5"), "no port means 80");
}

#[test]
fn list_entries_with_ports() {
    let p = policy(
        "127.0.0.1:8053",
        &["proxy.example:443", "[::1]:9999", "Box"],
    );
    assert!(allows(&p, "proxy.example:443"));
    assert!(!allows(&p, "proxy.example:444"));
    assert!(!allows(&p, "proxy.example"), "no port is 80, not 443");
    assert!(allows(&p, "[::1]:9999"));
    assert!(allows(&p, "box:1"));
    assert_eq!(
        p.describe(),
        "127.0.0.1:8053, localhost:8053, [::1]:8053, proxy.example:443, [::1]:9999, box:*"
    );
}

#[test]
fn bad_list_entries_are_refused_at_startup() {
    for bad in ["a@b", "http://x", "x/y", "x:99999", "x:", " ", "a b"] {
        let err = HostPolicy::new(
            "127.0.0.1",
            "127.0.0.1:1".parse().unwrap(),
            &[bad.to_string()],
        )
        .unwrap_err();
        assert!(err.contains("not a host"), "{bad}: {err}");
    }
}
