"""A run's outcome, end to end (issue 38): `bernstein run --wait` against a real HTTP server,
`bernstein worker` running the repository's example agent (examples/agent.sh), then the outcome
in `bernstein run --wait`'s output and in `bernstein_run_status`'s answer beside the handle,
which still verifies offline against the ledger (`bernstein audit verify-handle`).
"""

from __future__ import annotations

import json
import re
import subprocess

from harness import launch
from harness.http_raw import call_tool

GOAL = "Write the release notes"


def answer_of(reply) -> dict:
    body = reply.json()
    assert "error" not in body, body
    content = body["result"]["structuredContent"]
    return content.get("result", content)  # the cost meter's envelope, when on


def test_run_wait_and_run_status_show_the_outcome(http_server, workdir, tmp_path):
    srv = http_server("outcome", tier="standard")
    url = srv.direct_base + "/mcp"
    binary = str(launch.binary_path())
    env = launch.base_env()
    run = subprocess.Popen(
        [binary, "run", "--wait", "--url", url, GOAL],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env, cwd=str(workdir),
    )
    log = open(tmp_path / "worker.log", "wb")
    worker = subprocess.Popen(
        [binary, "worker", "--url", url, "--project", str(workdir),
         "--exec", str(launch.REPO_ROOT / "examples" / "agent.sh"),
         "--poll", "100ms", "--max-poll", "400ms", "--flush", "200ms"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(workdir),
    )
    try:
        out, err = run.communicate(timeout=90)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()
    assert run.returncode == 0, (run.returncode, out, err)
    started = re.search(r"^started run (T-[0-9a-f]{16}): " + GOAL, out, re.M)
    assert started, out
    run_id = started.group(1)
    assert f"run {run_id} completed" in out, out
    assert re.search(r'^result: done with "Write the release notes" \(\d+ words of goal read\)$',
                     out, re.M), out

    handle = answer_of(call_tool(srv.direct_base, "bernstein_run_status", {"run_id": run_id}))
    assert handle["status"] == "completed", handle
    assert "waiting" not in handle, handle
    outcome = handle["outcome"]
    assert outcome["more"] == 0, outcome
    assert [t["taskId"] for t in outcome["tasks"]] == [run_id], outcome
    task = outcome["tasks"][0]
    assert task["status"] == "done", task
    assert task["summary"].startswith('done with "Write the release notes"'), task
    assert "reason" not in task and "truncated" not in task, task

    # The handle's fields are the handle's: the same bytes with or without the outcome beside
    # them, and `--json` prints the same answer.
    signed = {k: v for k, v in handle.items() if k not in ("outcome", "waiting")}
    assert set(signed) == {"taskId", "runId", "status", "journalHead", "chainHead",
                           "specRevision", "receiptHash", "pollToken"}, signed
    saved = tmp_path / "handle.json"
    saved.write_text(json.dumps(handle))
    verified = launch.run_cli(["--workdir", str(workdir), "audit", "verify-handle", str(saved)])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith(f"OK: run {run_id} handle (completed) verified"), verified.stdout

    # The command line is a caller like any host: its run is recorded as a tool call's is.
    from harness.ledger import ledger_lines

    records = [json.loads(line.raw) for line in ledger_lines(workdir / ".sdd")]
    first = [r["kind"] for r in records[:4]]
    assert first == ["task.created", "run.created", "run.task_added", "mcp.stateless_call"], first
    audit = records[3]["body"]
    assert audit["tool"] == "bernstein_run" and audit["ok"] is True and audit["run_id"] == run_id, audit
