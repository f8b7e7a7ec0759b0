"""The official SDK `mcp>=2` (2026-07-28, stateless) completing calls with an access token
issued by a real local IdP (npm oauth2-mock-server, harness/idp.py) over streamable HTTP on both
runtimes: the server checks the token itself; a read-scope token sees only the tools that
write nothing, and its call of one that writes is refused.
"""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from harness.idp import Idp
from harness.payloads import outcome

pytestmark = pytest.mark.anyio

AUDIENCE = "urn:bernstein:e2e"


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


def connect(srv, token: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(srv.mcp_url, http_client=http), mode="auto", cache=None)


def oauth_server(http_server, idp):
    env = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer, "BERNSTEIN_MCP_OAUTH_AUDIENCE": AUDIENCE}
    return http_server("oauth-stateless", env=env)


async def test_stateless_sdk_calls_with_an_idp_token(http_server, idp):
    srv = oauth_server(http_server, idp)
    token = idp.token(claims={"aud": AUDIENCE, "sub": "sdk2-user", "scope": "bernstein.write"})
    async with connect(srv, token) as client:
        assert client.session.initialize_result is None, "stateless: no initialize"
        names = [t.name for t in (await client.list_tools()).tools]
        assert "bernstein_run" in names, names
        run = outcome(await client.call_tool("bernstein_run", {"goal": "started with an IdP token"}))
        assert not run.is_error and run.payload["run_id"], run.payload


async def test_stateless_sdk_read_scope(http_server, idp):
    srv = oauth_server(http_server, idp)
    token = idp.token(claims={"aud": AUDIENCE, "sub": "sdk2-reader", "scope": "bernstein.read"})
    async with connect(srv, token) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "bernstein_status" in names and "bernstein_run" not in names, names
        assert not outcome(await client.call_tool("bernstein_status", {})).is_error
        with pytest.raises(Exception) as refused:
            await client.call_tool("bernstein_run", {"goal": "not allowed"})
        assert "bernstein.write" in str(refused.value), refused.value
