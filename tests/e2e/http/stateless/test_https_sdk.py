"""`mcp>=2` over HTTPS on both runtimes: `Client(url)` completes a `tools/call` against a
server with a test certificate, trusting its CA through SSL_CERT_FILE (which httpx honours)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.payloads import outcome
from harness.sdk_http import stateless
from harness.tls import HttpsServer, make_certs

pytestmark = pytest.mark.anyio


async def test_a_tools_call_over_https(launcher, tmp_path: Path, monkeypatch):
    certs = make_certs(tmp_path, "sdk2")
    srv = HttpsServer(launcher, "https-sdk2", certs.cert, certs.key)
    try:
        assert srv.mcp_url.startswith("https://"), srv.mcp_url
        monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
        async with stateless(srv) as client:
            status = outcome(await client.call_tool("bernstein_status", {}))
            assert not status.is_error, status.payload
    finally:
        srv.stop()
