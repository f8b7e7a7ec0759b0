"""Moving a recorded `.sdd/` project into PostgreSQL with the CLI: `bernstein ledger import`
copies a recorded journal of tests/fixtures/ into a migrated database, and an instance serving
it answers exactly as a file-store instance serving the same bytes does. A server refuses a
database whose schema was never migrated.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from harness.http_raw import HANDSHAKE, call_tool
from harness.http_server import HttpServer
from pg_support import ROOT, normalised

FIXTURE = ROOT / "tests" / "fixtures" / "worker-loop-2025-11-25"


def project_from_fixture(dest: Path) -> Path:
    (dest / ".sdd" / "ledger").mkdir(parents=True)
    keys = dest / ".sdd" / "keys"
    keys.mkdir()
    keys.chmod(0o700)
    shutil.copy(FIXTURE / "ledger.jsonl", dest / ".sdd" / "ledger" / "ledger.jsonl")
    for name in ("audit.key", "signing.ed25519"):
        shutil.copy(FIXTURE / "keys" / name, keys / name)
        (keys / name).chmod(0o600)
    return dest


def test_an_imported_journal_answers_like_the_file_store(launcher, pg_url, bernstein_bin, tmp_path):
    source = project_from_fixture(tmp_path / "source")
    done = subprocess.run(
        [str(bernstein_bin), "--workdir", str(source), "ledger", "import", "--store", pg_url, "--from", str(source)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "imported" in done.stdout
    # Running it again copies nothing.
    again = subprocess.run(
        [str(bernstein_bin), "--workdir", str(source), "ledger", "import", "--store", pg_url, "--from", str(source)],
        capture_output=True, text=True,
    )
    assert again.returncode == 0 and "imported 0 records" in again.stdout, again.stdout + again.stderr

    file_copy = project_from_fixture(tmp_path / "file-copy")
    pg = HttpServer(launcher, "pg-imported", workdir=source, extra_args=["--store", pg_url], record=False)
    fs = HttpServer(launcher, "file-store", workdir=file_copy, record=False)
    try:
        for name, args in (("bernstein_status", {}), ("bernstein_task_list", {})):
            a = call_tool(pg.direct_base, name, args, version=HANDSHAKE, id_=3)
            b = call_tool(fs.direct_base, name, args, version=HANDSHAKE, id_=3)
            assert a.status == b.status == 200
            if "error" in a.rpc_response() and "error" in b.rpc_response():
                continue  # a tool this tier does not serve: both refuse alike
            assert normalised(a) == normalised(b), (name, a.body[:300], b.body[:300])
            assert a.headers.get("x-bernstein-span-id") == b.headers.get("x-bernstein-span-id")
    finally:
        pg.stop()
        fs.stop()


def test_a_server_refuses_an_unmigrated_database(bernstein_bin, pg_admin_url, tmp_path):
    from pg_support import psql

    psql(pg_admin_url, "DROP DATABASE IF EXISTS e2e_unmigrated WITH (FORCE)")
    psql(pg_admin_url, "CREATE DATABASE e2e_unmigrated")
    url = pg_admin_url.rsplit("/", 1)[0] + "/e2e_unmigrated"
    work = tmp_path / "w"
    work.mkdir()
    proc = subprocess.run(
        [str(bernstein_bin), "--workdir", str(work), "mcp", "--transport", "http", "--port", "0", "--store", url],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "bernstein store migrate" in proc.stderr, proc.stderr
    # `store migrate` brings it up to date, once.
    status = subprocess.run([str(bernstein_bin), "store", "migrate", "--store", url], capture_output=True, text=True)
    assert status.returncode == 0 and "applied migrations [1]" in status.stdout, status.stdout + status.stderr
    status = subprocess.run([str(bernstein_bin), "store", "migrate", "--store", url], capture_output=True, text=True)
    assert "up to date" in status.stdout
