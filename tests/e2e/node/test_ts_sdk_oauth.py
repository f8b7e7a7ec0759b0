"""The TypeScript SDK, 1.x and 2.x, completing its run/status/cancel loop over streamable HTTP
with an access token issued by a real local IdP (npm oauth2-mock-server, harness/idp.py): the
server checks the token itself (its audience is BERNSTEIN_MCP_OAUTH_AUDIENCE's). Without the
token the same client is refused.
"""

from __future__ import annotations

import pytest

import checks
from harness.idp import Idp

AUDIENCE = "urn:bernstein:e2e"
CASES = [("ts1.mjs", "legacy"), ("ts2.mjs", "legacy"), ("ts2.mjs", "auto")]


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


@pytest.mark.parametrize("script,era", CASES, ids=[f"{s[:3]}-{e}" for s, e in CASES])
def test_ts_sdk_with_an_idp_token(node_clients, http_server, idp, script, era):
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer, "BERNSTEIN_MCP_OAUTH_AUDIENCE": AUDIENCE,
           # A static token too: without one a loopback peer would be let in anonymously.
           "BERNSTEIN_MCP_TOKEN": "static-token-not-given-to-the-client"}
    srv = http_server("oauth-ts", env=env)
    token = idp.token(claims={"aud": AUDIENCE, "sub": "ts-user", "scope": "bernstein.write"})
    target = {"transport": "http", "url": srv.mcp_url, "headers": {"Authorization": f"Bearer {token}"}}
    rep = checks.connected(node_clients.run(script, target, "loop", era))
    checks.loop(rep["result"])
    refused = node_clients.run(script, {"transport": "http", "url": srv.mcp_url}, "loop", era)
    assert not refused.get("ok") and refused.get("stage") == "connect", refused
    assert "unauthorized" in str(refused.get("error")) or "401" in str(refused.get("error")), refused


@pytest.mark.parametrize("script,era", [("ts1.mjs", "legacy"), ("ts2.mjs", "modern")], ids=["ts1", "ts2"])
def test_ts_sdk_with_an_idp_token_over_https(node_clients, launcher, tmp_path, idp, script, era):
    """Over HTTPS on a public bind with an issuer and TLS (no static token), the token's
    audience being the server's own `/mcp` URL: the remote deployment of OPERATIONS.md."""
    from harness.tls import HttpsServer, make_certs

    certs = make_certs(tmp_path, "ts-oauth")
    srv = HttpsServer(launcher, "https-oauth-ts", certs.cert, certs.key, host="0.0.0.0",
                      env={"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer})
    try:
        token = idp.token(claims={"aud": srv.mcp_url, "sub": "ts-remote", "scope": "bernstein.write"})
        env = {"NODE_EXTRA_CA_CERTS": str(certs.ca)}
        target = {"transport": "http", "url": srv.mcp_url, "headers": {"Authorization": f"Bearer {token}"}}
        checks.loop(checks.connected(node_clients.run(script, target, "loop", era, env=env))["result"])
        refused = node_clients.run(script, {"transport": "http", "url": srv.mcp_url}, "loop", era, env=env)
        assert not refused.get("ok") and refused.get("stage") == "connect", refused
    finally:
        srv.stop()
