"""The `bernstein` command line around the server: tiers at startup, `mcp tools`, `init`,
`status`, `audit verify` on a fresh store.

These run the binary to completion (no MCP session), except where a listing is compared with
what a live server advertises.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from harness.launch import base_env, binary_path, run_cli
from harness.ledger import assert_verifies
from harness.payloads import find_values, outcome
from harness.raw import RawServer

TIERS = ["core", "standard", "all"]


def tool_names_in(doc) -> set[str]:
    return {v for v in find_values(doc, "name") if isinstance(v, str) and v.startswith("bernstein_")}


def live_tools(launcher, tier: str) -> list[str]:
    with RawServer.start(launcher, f"tools-{tier}", tier=tier) as srv:
        srv.initialize()
        return [t["name"] for t in srv.request("tools/list")["result"]["tools"]]


@pytest.mark.parametrize("tier", TIERS)
def test_mcp_tools_json_matches_what_the_server_lists(launcher, tier):
    proc = run_cli(["mcp", "tools", "--tier", tier, "--json"])
    assert proc.returncode == 0, proc.stderr
    listed = tool_names_in(json.loads(proc.stdout))
    live = {n for n in live_tools(launcher, tier) if n.startswith("bernstein_")}
    assert listed == live, f"`mcp tools --tier {tier}` says {sorted(listed)}, the server lists {sorted(live)}"


def test_mcp_tools_text_lists_every_tier():
    proc = run_cli(["mcp", "tools"])
    assert proc.returncode == 0, proc.stderr
    for name in ("bernstein_run", "bernstein_status", "bernstein_run_status", "bernstein_cancel"):
        assert name in proc.stdout, proc.stdout


def test_tiers_are_cumulative_in_mcp_tools():
    sets = {}
    for tier in TIERS:
        proc = run_cli(["mcp", "tools", "--tier", tier, "--json"])
        assert proc.returncode == 0, proc.stderr
        sets[tier] = tool_names_in(json.loads(proc.stdout))
    assert sets["core"] <= sets["standard"] <= sets["all"]
    assert {"bernstein_run", "bernstein_status", "bernstein_run_status"} <= sets["core"]
    assert "bernstein_cancel" not in sets["core"]
    assert "bernstein_cancel" in sets["standard"]


def test_unknown_tier_is_refused_at_startup(workdir, runtime):
    argv = [str(binary_path()), "mcp", "--workdir", str(workdir), "--runtime", runtime]
    for extra_args, env in (
        (["--mcp-tier", "gold"], {}),
        ([], {"BERNSTEIN_MCP_TOOL_TIER": "gold"}),
    ):
        proc = subprocess.run(
            argv + extra_args,
            env=base_env(env),
            input=b"",
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode != 0, f"tier 'gold' accepted ({extra_args}, {env})"
        err = proc.stderr.decode(errors="replace")
        assert "gold" in err and "tier" in err.lower(), err
        assert proc.stdout == b"", "nothing may reach stdout when startup fails"


def test_unknown_runtime_is_refused(workdir):
    proc = run_cli(["mcp", "--workdir", str(workdir), "--runtime", "tokio-nope"])
    assert proc.returncode != 0


def test_init_creates_the_store_and_is_idempotent(workdir):
    for _ in range(2):
        proc = run_cli(["init", "--workdir", str(workdir)])
        assert proc.returncode == 0, proc.stderr
    assert (workdir / ".sdd").is_dir()
    assert_verifies(workdir / ".sdd")


def test_status_reports_tasks(launcher, workdir):
    # Before the first server there is no project: refused, and nothing is created.
    proc = run_cli(["status", "--workdir", str(workdir), "--json"])
    assert proc.returncode == 2 and "bernstein init" in proc.stderr, proc.stdout + proc.stderr
    assert not (workdir / ".sdd").exists()
    with RawServer.start(launcher, "status-run") as srv:
        srv.initialize()
        task = outcome(srv.call_tool("bernstein_run", {"goal": "shown by bernstein status"})["result"]).payload
    proc = run_cli(["status", "--workdir", str(workdir), "--json"])
    assert proc.returncode == 0, proc.stderr
    after = json.loads(proc.stdout)
    assert task["task_id"] in json.dumps(after) or find_values(after, "total") == [1], after
    table = run_cli(["status", "--workdir", str(workdir)])
    assert table.returncode == 0, table.stderr
    assert task["task_id"] in table.stdout, table.stdout


def test_version_and_help():
    assert run_cli(["--version"]).returncode == 0
    help_text = run_cli(["--help"])
    assert help_text.returncode == 0
    for sub in ("mcp", "init", "status", "audit"):
        assert sub in help_text.stdout


BUDGET = {"core": 5_000, "standard": 12_000, "all": 14_000}


@pytest.mark.parametrize("tier", TIERS)
def test_mcp_tools_sizes_are_the_servers_listing_and_fit_the_budget(launcher, tier):
    """The bytes `mcp tools` reports are the compact `tools` array the server sends (2025-11-25),
    within the tier's budget; tokens are bytes / 4 rounded up (a size, not a time)."""
    proc = run_cli(["mcp", "tools", "--tier", tier, "--json"])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    with RawServer.start(launcher, f"size-{tier}", tier=tier) as srv:
        srv.initialize("2025-11-25")
        tools = srv.request("tools/list")["result"]["tools"]
    sent = len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode())
    assert out["bytes"] == sent, (out["bytes"], sent)
    assert out["estimated_tokens"] == -(-sent // 4)
    assert sent <= BUDGET[tier], f"{tier}: {sent} bytes, budget {BUDGET[tier]}"


def test_mcp_tools_text_shows_sizes_and_aligns():
    proc = run_cli(["mcp", "tools"])
    assert proc.returncode == 0, proc.stderr
    assert "bytes / 4" in proc.stdout
    headers = [l for l in proc.stdout.splitlines() if l.endswith("tokens)")]
    assert len(headers) == 3 and all(" bytes, ~" in h for h in headers), headers
    rows = [l for l in proc.stdout.splitlines() if l.startswith("  ")]
    assert {l.index("[") for l in rows} == {rows[0].index("[")}, "tier column aligned"
    assert any("bernstein_shutdown_orchestrator" in l for l in rows)
