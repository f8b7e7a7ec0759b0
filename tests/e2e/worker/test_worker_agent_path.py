"""`bernstein worker --agent NAME` checks at start that the preset's agent CLI is on PATH
(issue 13, the first run): without it the worker refuses with exit 2, naming the program and
the PATH, and claims nothing; with it (a fake `claude` here) the task runs. Also: `worker`
without arguments names both `--exec` and `--agent`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness.launch import base_env, binary_path, run_cli
from harness.payloads import outcome
from harness.raw import RawServer


def make_task(launcher, goal: str) -> str:
    with RawServer.start(launcher, "make-task") as srv:
        srv.initialize()
        return outcome(srv.call_tool("bernstein_run", {"goal": goal})["result"]).payload["task_id"]


def task_status(workdir: Path, task_id: str) -> str:
    proc = run_cli(["status", "--workdir", str(workdir), "--json"])
    assert proc.returncode == 0, proc.stderr
    return next(t["status"] for t in json.loads(proc.stdout)["tasks"] if t["id"] == task_id)


def worker(workdir: Path, path: str, *args: str) -> subprocess.CompletedProcess:
    env = base_env({"PATH": path})
    return subprocess.run(
        [str(binary_path()), "worker", "--workdir", str(workdir), "--poll", "100ms", "--max-poll", "200ms", *args],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )


def test_missing_agent_cli_is_refused_before_any_claim(launcher, workdir, tmp_path):
    task_id = make_task(launcher, "never claimed")
    before = (workdir / ".sdd" / "ledger" / "ledger.jsonl").read_bytes()
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    for agent in ("claude", "codex", "gemini", "aider"):
        proc = worker(workdir, str(empty), "--agent", agent)
        assert proc.returncode == 2, (agent, proc.stdout, proc.stderr)
        assert f"`{agent}` is not on PATH ({empty})" in proc.stderr, proc.stderr
        assert f"BERNSTEIN_AGENT_{agent.upper()}" in proc.stderr and "--exec" in proc.stderr, proc.stderr
    assert (workdir / ".sdd" / "ledger" / "ledger.jsonl").read_bytes() == before, "the refusal wrote to the ledger"
    assert task_status(workdir, task_id) == "open"


def test_a_fake_agent_cli_on_path_runs_the_task(launcher, workdir, tmp_path):
    task_id = make_task(launcher, "run by the fake claude")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    # Prints its arguments, leaves a trace, then asks the worker to shut down (it drains, exit 0).
    fake.write_text(
        "#!/bin/sh\n"
        'printf "%s\\n" "$*" > "$BERNSTEIN_TASK_ID.fake-claude"\n'
        "mkdir -p .sdd/runtime/signals && touch .sdd/runtime/signals/SHUTDOWN\n"
    )
    fake.chmod(0o755)
    proc = worker(workdir, f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "--agent", "claude")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (workdir / f"{task_id}.fake-claude").read_text() == "--print run by the fake claude\n"
    assert task_status(workdir, task_id) == "done"


def test_worker_without_arguments_names_exec_and_agent():
    proc = run_cli(["worker"])
    assert proc.returncode == 2
    assert "--exec" in proc.stderr and "--agent" in proc.stderr, proc.stderr
