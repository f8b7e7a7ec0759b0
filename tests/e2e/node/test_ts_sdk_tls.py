"""The TypeScript SDK, 1.x and 2.x, over HTTPS on both runtimes: streamable HTTP (and, for
1.x, legacy SSE) against a server with a test certificate, trusting its CA through
NODE_EXTRA_CA_CERTS; each runs the run / status / cancel loop (`tools/call`s)."""

from __future__ import annotations

from pathlib import Path

import pytest

import checks
from harness.tls import HttpsServer, make_certs

CASES = [("ts1.mjs", "http", "legacy"), ("ts1.mjs", "sse", "legacy"), ("ts2.mjs", "http", "modern")]


@pytest.mark.parametrize("script,transport,era", CASES, ids=[f"{s[:3]}-{t}-{e}" for s, t, e in CASES])
def test_a_loop_over_https(node_clients, launcher, tmp_path: Path, script, transport, era):
    certs = make_certs(tmp_path, "ts")
    srv = HttpsServer(launcher, "https-ts", certs.cert, certs.key)
    try:
        url = srv.mcp_url if transport == "http" else srv.sse_url
        assert url.startswith("https://"), url
        rep = checks.connected(node_clients.run(script, {"transport": transport, "url": url}, "loop", era,
                                                env={"NODE_EXTRA_CA_CERTS": str(certs.ca)}))
        checks.loop(rep["result"])
    finally:
        srv.stop()
