"""Fixtures of the PostgreSQL end-to-end tests (issue 8): several `bernstein mcp --transport
http --store postgres://…` instances on one database.

* `pg_admin_url` (session): the throwaway cluster: `$BERNSTEIN_TEST_PG_URL` when set, else
  `scripts/postgres.sh start` (which installs PostgreSQL from Debian's packages if needed).
* `pg_url`: a fresh database per test, migrated with `bernstein store migrate`.
* `pg_servers(n)`: n HTTP instances on that database, sharing the test's workdir (so they share
  the audit and signing keys, as production instances must); runtimes alternate std/smol
  across the instances; a test may kill one (SIGKILL) and teardown still exports and verifies.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from harness.http_server import HttpServer
from harness.launch import runtimes

from pg_support import pg_script, psql


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    return os.environ.get("BERNSTEIN_TEST_PG_URL") or pg_script("start")


@pytest.fixture
def pg_url(request, pg_admin_url: str, bernstein_bin: Path) -> str:
    db = "e2e_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40]
    psql(pg_admin_url, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    psql(pg_admin_url, f"CREATE DATABASE {db}")
    url = pg_admin_url.rsplit("/", 1)[0] + "/" + db
    done = subprocess.run([str(bernstein_bin), "store", "migrate", "--store", url], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return url


@pytest.fixture
def pg_servers(launcher, pg_url: str, bernstein_bin: Path, workdir: Path):
    """A factory: `pg_servers(n, **kw)` -> n running `HttpServer`s on the test's database.

    `env` adds to each server's environment (`{"BERNSTEIN_MCP_ENGINES": "2"}`: two engines each).
    At teardown the servers are stopped (one a test killed, `HttpServer.kill`, is left as it is)
    and the database's ledger is exported into the workdir (`bernstein ledger export`), where the
    root conftest's `bernstein audit verify` checks it: what a killed instance committed must
    verify too.
    """
    started: list[HttpServer] = []
    names = [launcher.runtime] + [r for r in runtimes() if r != launcher.runtime]

    def start(n: int, *, record: bool = True, env: dict[str, str] | None = None) -> list[HttpServer]:
        out = []
        for i in range(n):
            srv = HttpServer(
                launcher,
                f"pg-{len(started)}",
                runtime=names[(len(started)) % len(names)],
                extra_args=["--store", pg_url],
                record=record,
                env=env,
            )
            started.append(srv)
            out.append(srv)
        return out

    yield start
    for srv in started:
        srv.stop()
    done = subprocess.run(
        [str(bernstein_bin), "--workdir", str(workdir), "ledger", "export", "--store", pg_url, "--out", str(workdir)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
