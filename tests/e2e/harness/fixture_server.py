"""The conformance fixture server (`bernstein-conformance-fixture`: the same engine, transport and
ledger as `bernstein mcp --transport http`, serving the MCP conformance suite's fixture tools,
among them those that ask the client for input) started on a free loopback port for one test.
Binary: $BERNSTEIN_CONFORMANCE_FIXTURE_BIN, else the cargo target dir's debug build.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .launch import REPO_ROOT, base_env

READY = re.compile(r"serving MCP over HTTP at http://(\S+)/mcp")
START_GUARD = 60  # a hang guard for the server's start, never a timing assertion


def binary() -> Path:
    explicit = os.environ.get("BERNSTEIN_CONFORMANCE_FIXTURE_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_ROOT / "target")
    if not target.is_absolute():
        target = REPO_ROOT / target
    return target / "debug" / "bernstein-conformance-fixture"


@contextmanager
def running(scratch: Path, extra: list[str] | None = None) -> Iterator[str]:
    """Starts the fixture server (`extra`: more arguments, e.g. `--input-expiry-secs`) with its
    workdir `scratch/fixture-work`; yields its `/mcp` URL (its legacy SSE stream is `/sse`)."""
    path = binary()
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: cargo build -p bernstein-conformance-fixture")
    workdir = scratch / "fixture-work"
    workdir.mkdir()
    stderr_path = scratch / "fixture.stderr.log"
    with open(stderr_path, "wb") as err:
        argv = [str(path), "--workdir", str(workdir), "--host", "127.0.0.1", "--port", "0", *(extra or [])]
        proc = subprocess.Popen(argv,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=base_env(), cwd=str(workdir))
    try:
        deadline = time.monotonic() + START_GUARD
        while not (m := READY.search(stderr_path.read_text(errors="replace"))):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fixture server did not start: {stderr_path.read_text()[-2000:]}")
            time.sleep(0.02)  # polling the readiness line
        yield f"http://{m.group(1)}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
