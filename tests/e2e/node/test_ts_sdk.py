"""The TypeScript SDK, 1.x (`@modelcontextprotocol/sdk`) and 2.x (`@modelcontextprotocol/client`),
against `bernstein mcp` over stdio, streamable HTTP and legacy SSE.

Eras: 1.x speaks the handshake era only; 2.x runs `legacy` (plain initialize), `modern`
(pinned to 2026-07-28; not over legacy SSE, a handshake-era transport) and `auto`
(`server/discover` probe: adopts 2026-07-28 where offered, falls back to the handshake on SSE).
Each scenario (clients/scenarios.mjs) runs in its own server and reports raw observations.
"""

from __future__ import annotations

import pytest

import checks

ERAS = {"ts1.mjs": ["legacy"], "ts2.mjs": ["legacy", "modern", "auto"]}
TRANSPORTS = ["stdio", "http", "sse"]
CASES = [
    pytest.param(script, transport, era, id=f"{script[:3]}-{transport}-{era}")
    for script, eras in ERAS.items()
    for transport in TRANSPORTS
    for era in eras
    if not (transport == "sse" and era == "modern")
]


def expected_revision(transport: str, era: str) -> str | None:
    """The revision the client must end up on (None: any handshake revision)."""
    if era == "modern" or (era == "auto" and transport != "sse"):
        return checks.MODERN
    return None


def run(node_clients, target, script, transport, era, scenario) -> dict:
    return report(node_clients, target, script, transport, era, scenario)["result"]


def report(node_clients, target, script, transport, era, scenario) -> dict:
    rep = checks.connected(node_clients.run(script, target, scenario, era))
    got = rep["connect"]["protocolVersion"]
    want = expected_revision(transport, era)
    if want is None:
        assert got in checks.HANDSHAKE_REVISIONS, rep["connect"]
    else:
        assert got == want, rep["connect"]
    return rep


@pytest.mark.parametrize("script,transport,era", CASES)
def test_surface(node_clients, target, script, transport, era):
    checks.surface(run(node_clients, target, script, transport, era, "surface"))


@pytest.mark.parametrize("script,transport,era", CASES)
def test_run_status_cancel_loop(node_clients, target, script, transport, era):
    checks.loop(run(node_clients, target, script, transport, era, "loop"))


@pytest.mark.parametrize("script,transport,era", CASES)
def test_progress_token(node_clients, target, script, transport, era):
    checks.progress(run(node_clients, target, script, transport, era, "progress"))


@pytest.mark.parametrize("script,transport,era", CASES)
def test_bad_arguments(node_clients, target, script, transport, era):
    checks.bad_arguments(run(node_clients, target, script, transport, era, "bad_arguments"))


@pytest.mark.parametrize("script,transport,era", CASES)
def test_no_unknown_format_warnings(node_clients, target, script, transport, era):
    rep = report(node_clients, target, script, transport, era, "formats")
    assert rep["result"]["tools"] > 0
    checks.no_unknown_formats(rep["warnings"], rep["stderr"])


@pytest.mark.parametrize("script,transport,era", CASES)
def test_a_run_reads_as_a_resource(node_clients, target, script, transport, era):
    checks.resources(run(node_clients, target, script, transport, era, "resources"))
