"""The README's first run, command for command: the shell block under "A first run, start to
finish" is read from README.md and run by bash as written, in a fresh HOME, with two
substitutions only: `cargo install` is replaced by putting the binary under test on PATH (the
suite has built it), and the dashboard's port 8054 by a free one. The run must complete with the
example agent's result, the status and `audit verify` must say so, and the dashboard must show
the run.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

from harness.launch import REPO_ROOT, base_env

STEP_TIMEOUT_S = 120


def first_run_block() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("## A first run, start to finish", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the README's first-run section has a sh block"
    return block.group(1).strip().splitlines()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DASHBOARD_CHECK = """
for _ in $(seq 100); do
  python3 - "$PORT" <<'PY' && break
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/overview") as r:
    overview = json.load(r)
print("DASHBOARD-RUNS", json.dumps([[r["run_id"], r["status"]] for r in overview["runs"]]))
PY
  sleep 0.1
done
"""


def test_the_readme_first_run_works_as_written(bernstein_bin: Path, tmp_path: Path):
    lines = first_run_block()
    assert any(line.startswith("cargo install") for line in lines), lines
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bernstein").symlink_to(bernstein_bin.resolve())
    port = free_port()
    script = ["set -e", f"PORT={port}"]
    for line in lines:
        if line.startswith("cargo install"):
            script.append(": the binary under test is on PATH")
            continue
        if line.startswith("kill "):
            script.append(DASHBOARD_CHECK)
        script.append(line.replace("8054", str(port)))
    script.append("wait")
    home = tmp_path / "home"
    home.mkdir()
    env = base_env({"HOME": str(home), "PATH": f"{bin_dir}:{base_env()['PATH']}"})
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
    )
    out = done.stdout
    assert done.returncode == 0, (done.returncode, out, done.stderr)
    started = re.search(r"^started run (T-[0-9a-f]{16}): Write the release notes", out, re.M)
    assert started, out
    run_id = started.group(1)
    assert f"run {run_id} completed" in out, out
    assert re.search(r'^result: done with "Write the release notes"', out, re.M), out
    assert re.search(rf"^{run_id}\s+done\s+{run_id}\s+Write the release notes", out, re.M), out
    assert re.search(r"^OK: \d+ records .* HMAC tags verified", out, re.M), out
    runs = json.loads(out.split("DASHBOARD-RUNS ", 1)[1].splitlines()[0])
    assert [run_id, "completed"] in runs, runs
    assert (home / "proj" / ".sdd" / "ledger" / "ledger.jsonl").is_file()
