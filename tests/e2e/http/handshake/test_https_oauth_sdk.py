"""`mcp<2` over HTTPS with an access token from a real local IdP (harness/idp.py), on both
runtimes: a server bound to every interface with an issuer and TLS needs no static token (the
bind rule), completes the SDK's `tools/call` with the IdP's token, and refuses the same client
without it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from harness.idp import Idp
from harness.sdk_http import handshake_streamable
from harness.tls import HttpsServer, make_certs

pytestmark = pytest.mark.anyio

AUDIENCE = "urn:bernstein:e2e"


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


async def test_a_public_https_server_with_an_issuer_needs_no_static_token(launcher, tmp_path: Path,
                                                                          monkeypatch, idp):
    certs = make_certs(tmp_path, "oauth")
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer, "BERNSTEIN_MCP_OAUTH_AUDIENCE": AUDIENCE}
    srv = HttpsServer(launcher, "https-oauth", certs.cert, certs.key, host="0.0.0.0", env=env)
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
        token = idp.token(claims={"aud": AUDIENCE, "sub": "remote", "scope": "bernstein.write"})
        async with handshake_streamable(srv, headers={"Authorization": f"Bearer {token}"}) as (session, _):
            result = await session.call_tool("bernstein_status", {})
            assert not result.isError, result
        refused = httpx.post(srv.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Accept": "application/json"}, verify=str(certs.ca))
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"].startswith('Bearer resource_metadata="https://')
    finally:
        srv.stop()
