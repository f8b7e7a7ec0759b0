"""Deprecated tool aliases through the real binary, on every runtime: callable and wrapped as
`{deprecated, tool, replacement, removal_release, notice, result}`, never listed, gone with
`BERNSTEIN_MCP_DEPRECATED_ALIASES=0`, and absent when the replacement is outside the tier.
Every tier's tools/list is validated against the MCP schema by the launcher at teardown.
"""

from __future__ import annotations

import pytest

from harness.payloads import ok_payload, outcome
from harness.raw import RawServer, modern_meta

# alias → replacement, as the server declares them (domain/src/aliases.rs).
ALIASES = {
    "bernstein_health": "bernstein_status",
    "bernstein_tasks": "bernstein_status",
    "bernstein_cost": "bernstein_status",
    "bernstein_create_subtask": "bernstein_run",
    "bernstein_task_handle": "bernstein_run_status",
    "bernstein_update": "bernstein_post_message",
    "bernstein_context": "bernstein_task_capsule",
    "bernstein_stop": "bernstein_shutdown_orchestrator",
    "bernstein_scenarios": "bernstein_scenario",
    "bernstein_scenario_status": "bernstein_scenario",
    "verify_chain": "bernstein_verify_lineage",
}


def listed(srv: RawServer) -> set[str]:
    resp = srv.request("tools/list")
    return {t["name"] for t in resp["result"]["tools"]}


def is_unknown_tool(resp: dict) -> bool:
    return resp.get("error", {}).get("code") == -32602 and "Unknown tool" in resp["error"]["message"]


@pytest.mark.parametrize("tier", ["core", "standard", "all"])
@pytest.mark.parametrize("switch", ["default", "off"])
def test_alias_matrix(launcher, tier, switch):
    env = {"BERNSTEIN_MCP_DEPRECATED_ALIASES": "0"} if switch == "off" else None
    with RawServer.start(launcher, f"aliases-{tier}-{switch}", tier=tier, env=env) as srv:
        srv.initialize()
        tools = listed(srv)
        assert not tools & set(ALIASES), "aliases are never listed"
        for alias, replacement in ALIASES.items():
            resp = srv.call_tool(alias, {"detail": False} if replacement == "bernstein_status" else {})
            if switch == "off" or replacement not in tools:
                assert is_unknown_tool(resp), (alias, resp)
                continue
            assert "result" in resp, (alias, resp)
            o = outcome(resp["result"])
            body = o.payload
            assert body["deprecated"] is True, (alias, body)
            assert body["replacement"] == replacement
            assert "notice" in body
            if not o.is_error:
                assert body["tool"] == alias
                assert body["removal_release"] == "v3.12.0"
                assert "result" in body
        srv.close()


def test_alias_answers_what_its_replacement_answers(launcher):
    with RawServer.start(launcher, "alias-same") as srv:
        srv.initialize()
        plain = ok_payload(srv.call_tool("bernstein_status", {})["result"])
        wrapped = ok_payload(srv.call_tool("bernstein_health", {})["result"])
        assert wrapped["result"] == plain
        run = ok_payload(srv.call_tool("bernstein_create_subtask", {"goal": "through an alias"})["result"])
        handle = ok_payload(srv.call_tool("bernstein_run_status", {"run_id": run["result"]["run_id"]})["result"])
        via_alias = ok_payload(srv.call_tool("bernstein_task_handle", {"run_id": run["result"]["run_id"]})["result"])
        assert via_alias["result"] == handle
        srv.close()


@pytest.mark.parametrize("tier", ["core", "standard", "all"])
def test_every_tier_lists_the_same_tools_in_both_eras(launcher, tier):
    """tools/list of each tier, handshake era and 2026-07-28 (each message schema-checked at
    teardown), and an alias called statelessly."""
    with RawServer.start(launcher, f"eras-{tier}", tier=tier) as srv:
        modern = srv.request("tools/list", {"_meta": modern_meta()})
        assert "result" in modern, modern
        stateless_names = {t["name"] for t in modern["result"]["tools"]}
        resp = srv.call_tool("bernstein_health", {}, modern=True)
        assert ok_payload(resp["result"])["deprecated"] is True
        srv.close()
    with RawServer.start(launcher, f"eras-{tier}-handshake", tier=tier) as srv:
        srv.initialize()
        assert listed(srv) == stateless_names
        srv.close()
    assert not stateless_names & set(ALIASES)
    assert ("bernstein_scenario" in stateless_names) == (tier == "all")
    assert ("load_skill" in stateless_names) == (tier != "core")
    assert ("bernstein_shutdown_orchestrator" in stateless_names) == (tier != "core")
