"""The pull-worker loop in the 2026-07-28 stateless era (`mcp>=2`, `Client(mode="auto")`):
claim -> post_message -> complete, and the receipt, signed under revision 2026-07-28,
verifies offline with the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import scenarios
from harness.launch import run_cli
from harness.sdk_stateless import connect

pytestmark = pytest.mark.anyio


async def test_worker_loop_in_the_stateless_era(launcher, workdir: Path, tmp_path: Path):
    async with connect(launcher, "worker") as client:
        assert client.protocol_version == "2026-07-28"
        dep = await scenarios.ok(client, "bernstein_run", {"goal": "first"})
        gated = await scenarios.ok(client, "bernstein_run", {"goal": "second", "depends_on": [dep["task_id"]]})
        r1 = await scenarios.ok(client, "bernstein_claim", {"claimer_id": "w1", "claimer_card_fingerprint": "sha256:c1"})
        assert r1["taskId"] == dep["task_id"] and r1["specRevision"] == "2026-07-28", r1
        assert r1["claimerCardFingerprint"] == "sha256:c1"
        refused = await scenarios.ok(client, "bernstein_claim", {"claimer_id": "w2"})
        assert refused["granted"] is False, refused
        entry = await scenarios.ok(
            client,
            "bernstein_post_message",
            {"task_id": dep["task_id"], "body": "db at postgres://app:hunter2@db:5432/x", "kind": "artefact_ref"},
        )
        assert "hunter2" not in entry["body"] and entry["redactions"] == 1, entry
        await scenarios.ok(client, "bernstein_complete", {"task_id": dep["task_id"], "result_summary": "ok"})
        r2 = await scenarios.ok(client, "bernstein_claim", {"claimer_id": "w2"})
        assert r2["taskId"] == gated["task_id"], r2
    sdd = workdir / ".sdd"
    for name, receipt in (("r1", r1), ("refused", refused), ("r2", r2)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(receipt), encoding="utf-8")
        proc = run_cli(["backlog", "verify-claim", "--receipt", str(path), "--dir", str(sdd)])
        assert proc.returncode == 0, f"{name}: {proc.stdout}{proc.stderr}"
    proc = run_cli(["mailbox", "verify", "--dir", str(sdd)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
