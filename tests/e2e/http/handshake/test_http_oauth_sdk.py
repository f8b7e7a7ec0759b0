"""The official SDK `mcp<2` completing calls with an access token issued by a real local IdP
(npm oauth2-mock-server, harness/idp.py), over streamable HTTP and the legacy HTTP+SSE transport
on both runtimes: the server checks the token itself; a read-scope token sees and calls only the
tools that write nothing. The token's audience is the one BERNSTEIN_MCP_OAUTH_AUDIENCE names.
An opaque token (not a JWT) works too: the server introspects it at the IdP (RFC 7662).
"""

from __future__ import annotations

import pytest

from harness.idp import RS_CLIENT_ID, RS_CLIENT_SECRET, Idp
from harness.payloads import outcome
from harness.sdk_http import handshake_sse, handshake_streamable

pytestmark = pytest.mark.anyio

AUDIENCE = "urn:bernstein:e2e"
TRANSPORTS = {"streamable": handshake_streamable, "sse": handshake_sse}


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


@pytest.fixture(params=sorted(TRANSPORTS))
def connect(request):
    return TRANSPORTS[request.param]


def oauth_server(http_server, idp):
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer, "BERNSTEIN_MCP_OAUTH_AUDIENCE": AUDIENCE}
    return http_server("oauth-sdk", env=env)


async def test_sdk_calls_with_an_idp_token(http_server, idp, connect):
    srv = oauth_server(http_server, idp)
    token = idp.token(claims={"aud": AUDIENCE, "sub": "sdk-user", "scope": "bernstein.write"})
    async with connect(srv, headers={"Authorization": f"Bearer {token}"}) as (session, _):
        names = [t.name for t in (await session.list_tools()).tools]
        assert "bernstein_run" in names, names
        run = outcome(await session.call_tool("bernstein_run", {"goal": "started with an IdP token"}))
        assert not run.is_error and run.payload["run_id"], run.payload


async def test_sdk_read_scope_sees_only_what_it_may_call(http_server, idp, connect):
    srv = oauth_server(http_server, idp)
    token = idp.token(claims={"aud": AUDIENCE, "sub": "sdk-reader", "scope": "bernstein.read"})
    async with connect(srv, headers={"Authorization": f"Bearer {token}"}) as (session, _):
        names = [t.name for t in (await session.list_tools()).tools]
        assert "bernstein_status" in names and "bernstein_run" not in names, names
        status = outcome(await session.call_tool("bernstein_status", {}))
        assert not status.is_error, status.payload


async def test_sdk_calls_with_an_opaque_token(http_server, idp, connect):
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer, "BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID,
           "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET": RS_CLIENT_SECRET,
           "BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL": idp.issuer + "/introspect"}
    srv = http_server("oauth-sdk-opaque", env=env)
    token = idp.opaque(sub="sdk-opaque", scope="bernstein.write")
    before = idp.introspections()
    async with connect(srv, headers={"Authorization": f"Bearer {token}"}) as (session, _):
        names = [t.name for t in (await session.list_tools()).tools]
        assert "bernstein_run" in names, names
        run = outcome(await session.call_tool("bernstein_run", {"goal": "started with an opaque token"}))
        assert not run.is_error and run.payload["run_id"], run.payload
    assert idp.introspections() - before == 1, "one introspection for the whole session"
