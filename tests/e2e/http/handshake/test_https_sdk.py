"""`mcp<2` over HTTPS on both runtimes: `streamablehttp_client` and the legacy `sse_client`
(its GET stream and POST endpoint) complete a `tools/call` against a server with a test
certificate, trusting its CA through SSL_CERT_FILE (which httpx honours)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sdk_http import handshake_sse, handshake_streamable
from harness.tls import HttpsServer, make_certs

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("connect", [handshake_streamable, handshake_sse], ids=["streamable", "sse"])
async def test_a_tools_call_over_https(launcher, tmp_path: Path, monkeypatch, connect):
    certs = make_certs(tmp_path, "sdk1")
    srv = HttpsServer(launcher, "https-sdk1", certs.cert, certs.key)
    try:
        assert srv.mcp_url.startswith("https://"), srv.mcp_url
        monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
        async with connect(srv) as (session, _init):
            result = await session.call_tool("bernstein_status", {})
            assert not result.isError, result
    finally:
        srv.stop()
