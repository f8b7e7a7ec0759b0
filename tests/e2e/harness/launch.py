"""Where things are and how a server under test is started.

Every `bernstein mcp` process the suite starts goes through `tee_server.py`, so that each
message it emits is recorded and validated after the test (see `transcript.py`). This module
only builds command lines and environments; it never talks MCP itself.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = E2E_DIR.parent.parent
TEE_SERVER = E2E_DIR / "tee_server.py"

# Environment variables the server reads; never inherited from the caller's shell, so a
# developer's own settings cannot change what a test sees.
SERVER_ENV_PREFIX = "BERNSTEIN_"
# Except these, which a run sets on purpose to serve every test some way: how many engines
# each HTTP server runs (`BERNSTEIN_MCP_ENGINES=2` runs the whole suite on two).
PASSED_THROUGH = ("BERNSTEIN_MCP_ENGINES",)


def schema_dir() -> Path:
    """The official MCP schemas, vendored in the repository (tests/mcp-schema/README.md)."""
    return REPO_ROOT / "tests" / "mcp-schema"


def binary_path() -> Path:
    """The `bernstein` binary: $BERNSTEIN_BIN, else the cargo target dir's debug build."""
    explicit = os.environ.get("BERNSTEIN_BIN")
    if explicit:
        return Path(explicit)
    target = os.environ.get("CARGO_TARGET_DIR")
    base = Path(target) if target else REPO_ROOT / "target"
    if not base.is_absolute():
        base = REPO_ROOT / base
    return base / "debug" / "bernstein"


def runtimes() -> list[str]:
    """Runtimes to run every server test on ($BERNSTEIN_E2E_RUNTIMES, comma separated)."""
    raw = os.environ.get("BERNSTEIN_E2E_RUNTIMES", "std,smol")
    return [r.strip() for r in raw.split(",") if r.strip()]


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment for a child process: the caller's minus BERNSTEIN_* (but
    `PASSED_THROUGH`), plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(SERVER_ENV_PREFIX) or k in PASSED_THROUGH}
    env.setdefault("RUST_BACKTRACE", "1")
    if extra:
        env.update(extra)
    return env


@dataclass
class Launcher:
    """Starts recorded `bernstein mcp` processes for one test.

    `workdir` is the project directory (its `.sdd/` is the ledger), `logdir` receives one
    set of transcript files per process started.
    """

    binary: Path
    runtime: str
    workdir: Path
    logdir: Path
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1))
    prefixes: list[Path] = field(default_factory=list)

    def _prefix(self, label: str) -> Path:
        n = next(self._counter)
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in label)
        prefix = self.logdir / f"{n:02d}-{safe}"
        self.prefixes.append(prefix)
        return prefix

    def server_argv(
        self,
        *,
        tier: str | None = None,
        runtime: str | None = None,
        workdir: Path | None = None,
        extra_args: list[str] | None = None,
    ) -> list[str]:
        """The `bernstein mcp ...` command line (without the recording proxy)."""
        argv = [
            str(self.binary),
            "mcp",
            "--workdir",
            str(workdir or self.workdir),
            "--runtime",
            runtime or self.runtime,
        ]
        if tier is not None:
            argv += ["--mcp-tier", tier]
        argv += extra_args or []
        return argv

    def recorded(
        self,
        label: str = "server",
        *,
        tier: str | None = None,
        env: dict[str, str] | None = None,
        runtime: str | None = None,
        workdir: Path | None = None,
        extra_args: list[str] | None = None,
    ) -> tuple[str, list[str], dict[str, str]]:
        """(command, args, env) that start a recorded server.

        `env` holds only the variables the test wants the server to see on top of a clean
        environment (no inherited BERNSTEIN_*).
        """
        prefix = self._prefix(label)
        args = [
            str(TEE_SERVER),
            "--log-prefix",
            str(prefix),
            "--",
            *self.server_argv(tier=tier, runtime=runtime, workdir=workdir, extra_args=extra_args),
        ]
        return sys.executable, args, base_env(env)

    def stdio_params(self, label: str = "sdk", **kw):
        """`mcp.StdioServerParameters` for the official SDK's stdio client (either major)."""
        from mcp import StdioServerParameters

        command, args, env = self.recorded(label, **kw)
        # Both SDK majors merge `env` over a small default environment; pass everything
        # the server should see so the result is the same for both.
        return StdioServerParameters(command=command, args=args, env=env, cwd=str(self.workdir))

    def sdk_errlog(self, label: str = "sdk"):
        """A file for the SDK to send the proxy's own stderr to (pytest's capture has no fd)."""
        return open(self.logdir / f"{label}.sdk-stderr.log", "a", encoding="utf-8")


def run_cli(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Runs `bernstein ARGS...` to completion (not a server) and captures its output."""
    return subprocess.run(
        [str(binary_path()), *args],
        env=base_env(env),
        cwd=str(cwd) if cwd else None,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
