"""Auth over HTTP (raw requests, both runtimes): no / wrong / right bearer token on a loopback
and on a public bind; OAuth protected-resource discovery with the issuer set and unset; forged
`Host` and `X-Forwarded-Proto` never reach a URL unsanitised.
"""

from __future__ import annotations

import json

import pytest

from harness.http_raw import call_tool, request, rpc, send_raw, status_of
from harness.http_server import start_and_expect_failure

TOKEN = "e2e-token-5f1c0d"
ISSUER = "https://issuer.example"
REALM = 'Bearer realm="bernstein"'
METADATA = "/.well-known/oauth-protected-resource"


def assert_refused(reply, challenge: str | None, wrong: bool = False) -> None:
    """A 401 whose RFC 6750 challenge is `challenge` (plus `error="invalid_token"` when a wrong
    bearer token was sent) and whose body names the fix."""
    assert reply.status == 401, (reply.status, reply.body)
    body = reply.json()
    assert body["error"] == ("invalid_token" if wrong else "unauthorized"), body
    assert "Authorization: Bearer" in body["error_description"], body
    if challenge is None:
        assert "www-authenticate" not in reply.headers, reply.headers
    else:
        assert "BERNSTEIN_MCP_TOKEN" in body["error_description"], body
        expected = challenge + (', error="invalid_token"' if wrong else "")
        assert reply.headers.get("www-authenticate") == expected, reply.headers
    assert reply.headers.get("x-bernstein-span-id"), reply.headers


def assert_served(reply) -> None:
    assert reply.status == 200, (reply.status, reply.body[:300])
    resp = reply.rpc_response()
    assert "result" in resp, resp


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
def test_token_matrix(http_server, bind):
    srv = http_server(f"bearer-{bind}", host=bind, env={"BERNSTEIN_MCP_TOKEN": TOKEN}, record=False)
    base = srv.direct_base  # a public bind is reached via 127.0.0.1
    assert_refused(rpc(base, "tools/list"), REALM)
    assert_refused(rpc(base, "tools/list", token="wrong-" + TOKEN), REALM, wrong=True)
    assert_refused(rpc(base, "tools/list", token=TOKEN[:-1]), REALM, wrong=True)
    # Another scheme is no bearer token at all (RFC 6750 §3.1: no error attribute).
    assert_refused(rpc(base, "tools/list", extra={"Authorization": f"Basic {TOKEN}"}), REALM)
    assert_served(rpc(base, "tools/list", token=TOKEN))
    assert_served(call_tool(base, "bernstein_status", token=TOKEN))


def test_alternative_token_variable(http_server):
    srv = http_server("auth-token-var", env={"BERNSTEIN_MCP_AUTH_TOKEN": TOKEN}, record=False)
    assert_refused(rpc(srv.direct_base, "tools/list"), REALM)
    assert_served(rpc(srv.direct_base, "tools/list", token=TOKEN))


def test_loopback_without_token_is_anonymous(http_server):
    srv = http_server("anonymous", record=False)
    assert_served(rpc(srv.direct_base, "tools/list"))
    assert_served(call_tool(srv.direct_base, "bernstein_status"))


def test_public_bind_without_token_is_refused(launcher):
    done = start_and_expect_failure(launcher, host="0.0.0.0")
    assert done.returncode != 0, done
    assert done.returncode != 101 and "panicked" not in done.stderr, done.stderr
    assert "token" in done.stderr.lower() or "BERNSTEIN_MCP_TOKEN" in done.stderr, done.stderr


@pytest.mark.parametrize("mode", ["basic", "oauth", "BEARER-ish"])
def test_unknown_auth_mode_is_refused(launcher, mode):
    done = start_and_expect_failure(launcher, host="127.0.0.1", extra_args=["--auth", mode],
                                    env={"BERNSTEIN_MCP_TOKEN": TOKEN})
    assert done.returncode not in (0, 101), done
    assert "auth" in done.stderr.lower(), done.stderr


def test_bearer_mode_without_token_is_refused(launcher):
    done = start_and_expect_failure(launcher, host="127.0.0.1", extra_args=["--auth", "bearer"])
    assert done.returncode not in (0, 101), done
    assert "token" in done.stderr.lower(), done.stderr


def test_oauth_discovery_with_issuer(http_server):
    env = {"BERNSTEIN_MCP_TOKEN": TOKEN, "BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER,
           "BERNSTEIN_MCP_ALLOWED_HOSTS": "mcp.example.com"}
    srv = http_server("oauth", env=env, record=False)
    base = srv.direct_base
    authority = base.split("://", 1)[1]
    # RFC 9728: the root document describes the origin, the path-suffixed one /mcp.
    for path, resource in ((METADATA, f"http://{authority}"), (METADATA + "/mcp", f"http://{authority}/mcp")):
        meta = request(base, "GET", path)  # served without auth
        assert meta.status == 200, (path, meta.status, meta.body)
        doc = meta.json()
        assert doc["authorization_servers"][0] == ISSUER, doc
        assert doc["resource"] == resource, doc
        assert doc["scopes_supported"] == ["bernstein.read", "bernstein.write"], doc
    challenge = f'Bearer resource_metadata="http://{authority}{METADATA}/mcp"'
    assert_refused(rpc(base, "tools/list"), challenge)
    assert_refused(rpc(base, "tools/list", token="wrong-" + TOKEN), challenge, wrong=True)
    # Behind a TLS proxy: the challenge and the metadata follow an allowed Host and
    # X-Forwarded-Proto.
    fwd = {"Host": "mcp.example.com:8443", "X-Forwarded-Proto": "https"}
    refused = rpc(base, "tools/list", extra=fwd)
    assert refused.headers["www-authenticate"] == (
        f'Bearer resource_metadata="https://mcp.example.com:8443{METADATA}/mcp"'
    )
    doc = request(base, "GET", METADATA + "/mcp", headers=fwd).json()
    assert doc["resource"] == "https://mcp.example.com:8443/mcp", doc
    assert request(base, "GET", "/.well-known/oauth-authorization-server").status == 404
    assert_served(rpc(base, "tools/list", token=TOKEN))


def test_oauth_scopes_from_environment(http_server):
    env = {"BERNSTEIN_MCP_TOKEN": TOKEN, "BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER,
           "BERNSTEIN_MCP_OAUTH_SCOPES": "mcp.read mcp.write"}
    srv = http_server("oauth-scopes", env=env, record=False)
    doc = request(srv.direct_base, "GET", METADATA).json()
    assert set(doc["scopes_supported"]) == {"mcp.read", "mcp.write"}, doc


def test_no_issuer_no_discovery_but_a_realm_challenge(http_server):
    srv = http_server("no-oauth", env={"BERNSTEIN_MCP_TOKEN": TOKEN}, record=False)
    for path in (METADATA, METADATA + "/mcp", "/.well-known/oauth-authorization-server"):
        assert request(srv.direct_base, "GET", path).status == 404, path
    assert_refused(rpc(srv.direct_base, "tools/list"), REALM)
    assert_refused(request(srv.direct_base, "GET", "/sse"), REALM)


@pytest.mark.parametrize(
    "host",
    ['evil.example"><x', "evil.example/path", "evil.example\\x", "user@evil.example", "a b", ""],
)
def test_forged_host_is_refused_or_sanitised(http_server, host):
    env = {"BERNSTEIN_MCP_TOKEN": TOKEN, "BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}
    srv = http_server("forged-host", env=env, record=False)
    for path in (METADATA, "/mcp"):
        method = "GET" if path == METADATA else "POST"
        raw = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\n"
               "Connection: close\r\n\r\n{}").encode()
        reply = send_raw(srv.direct_base, raw)
        status = status_of(reply)
        assert status in (400, 401, 404), (host, reply[:300])
        head, _, body = reply.partition(b"\r\n\r\n")
        for bad in ('"><x', "/path/", "\\x", "@evil", "a b"):
            assert bad.encode() not in head and bad.encode() not in body, (host, reply[:400])


@pytest.mark.parametrize("proto", ["javascript", "https://evil", "ftp", 'http"x'])
def test_forged_forwarded_proto_is_sanitised(http_server, proto):
    env = {"BERNSTEIN_MCP_TOKEN": TOKEN, "BERNSTEIN_MCP_OAUTH_ISSUER": ISSUER}
    srv = http_server("forged-proto", env=env, record=False)
    for reply in (
        request(srv.direct_base, "GET", METADATA, headers={"X-Forwarded-Proto": proto}),
        rpc(srv.direct_base, "tools/list", extra={"X-Forwarded-Proto": proto}),
    ):
        assert reply.status in (200, 400, 401), reply
        text = json.dumps(reply.headers) + reply.body.decode(errors="replace")
        assert "javascript" not in text and "evil" not in text and "ftp:" not in text, text
        urls = [v for v in (reply.headers.get("www-authenticate", ""),) if v]
        if reply.status == 200:
            urls.append(reply.json()["resource"])
        for u in urls:
            assert "http://" in u or "https://" in u, u


def test_a_flood_of_refused_requests_writes_a_budget_of_lines(http_server):
    """300 refused requests in a burst write at most the budget of lines about single peers
    (20 a second), and a later refusal says how many were left out; every request is still
    refused and the server still serves."""
    import time

    srv = http_server("log-budget", host="0.0.0.0", env={"BERNSTEIN_MCP_TOKEN": TOKEN}, record=False)
    base = srv.direct_base
    began = time.monotonic()
    for _ in range(300):
        assert rpc(base, "tools/list", token="wrong").status == 401
    burst = time.monotonic() - began
    time.sleep(1.1)  # the next second of the budget (waiting on the budget's clock, not racing it)
    assert rpc(base, "tools/list", token="wrong").status == 401
    assert_served(rpc(base, "tools/list", token=TOKEN))
    text = srv.stderr_text()
    refused = text.count(": 401 ")
    seconds = int(burst) + 2
    assert 20 <= refused <= 20 * seconds + 1, (refused, burst)
    assert "more lines about single peers were left out" in text, text[-2000:]
