"""The new catalogue over streamable HTTP, both eras, both runtimes: the shutdown signal is
written, the skills index and the scenario list answer, an alias is wrapped and the same alias
is unknown with `BERNSTEIN_MCP_DEPRECATED_ALIASES=0`. Every message goes through the recording
proxy and is schema-validated at teardown, as over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.http_raw import HANDSHAKE, MODERN, call_tool
from harness.http_server import HttpServer


def payload(reply) -> tuple[bool, dict]:
    result = reply.rpc_response()["result"]
    doc = json.loads(result["content"][0]["text"])
    return bool(result.get("isError")), doc.get("result", doc) if "_meter" in doc else doc


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
def test_catalogue_over_http(launcher, workdir: Path, version):
    skill = workdir / "templates" / "skills" / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# Review checklist\n")
    srv = HttpServer(launcher, f"catalogue-{version}", tier="all")
    try:
        err, body = payload(call_tool(srv.base, "bernstein_shutdown_orchestrator", {}, version=version, id_=1))
        assert not err, body
        assert (workdir / ".sdd/runtime/signals/SHUTDOWN").is_file()
        err, body = payload(call_tool(srv.base, "load_skill", {}, version=version, id_=2))
        assert not err and [s["name"] for s in body["skills"]] == ["review"], body
        err, body = payload(call_tool(srv.base, "bernstein_scenario", {"action": "list"}, version=version, id_=3))
        assert not err and len(body["scenarios"]) >= 3, body
        err, body = payload(call_tool(srv.base, "bernstein_health", {}, version=version, id_=4))
        assert not err and body["deprecated"] is True and body["replacement"] == "bernstein_status", body
    finally:
        srv.stop()
    off = HttpServer(launcher, f"catalogue-off-{version}", env={"BERNSTEIN_MCP_DEPRECATED_ALIASES": "0"})
    try:
        reply = call_tool(off.base, "bernstein_health", {}, version=version, id_=5).rpc_response()
        assert reply.get("error", {}).get("code") == -32602, reply
    finally:
        off.stop()
