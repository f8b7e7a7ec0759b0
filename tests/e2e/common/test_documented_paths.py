"""The traps a newcomer met following the README from a fresh clone, on the real binary:

* every server (`mcp` over stdio and HTTP, `dashboard`, an in-process `worker`) names the store
  it serves on stderr: the `.sdd/` ledger file, or the database by host, port, name and user;
* a password in a store URL is never printed, by any command, whatever fails.

The PostgreSQL half of the store line is in tests/e2e/postgres/test_pg_store_named.py.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
from pathlib import Path

from harness.http_server import HttpServer, wait_announced
from harness.launch import base_env, binary_path, run_cli
from harness.operator import start_dashboard
from harness.payloads import outcome
from harness.raw import RawServer

TASK = "T-0123456789abcdef"
SECRET = "pw-N0T-T0-B3-PRINTED"
STORE_LINE = re.compile(r"bernstein: store: (.*)")


def file_store_line(workdir: Path) -> str:
    return f"bernstein: store: the ledger file {workdir.resolve()}/.sdd/ledger/ledger.jsonl"


def payload(resp: dict):
    return outcome(resp["result"]).payload


# -- the store line ----------------------------------------------------------------------------


def test_every_server_names_its_file_store(launcher, workdir, runtime, tmp_path):
    # stdio, piped (as an MCP host starts it): the line is said there too, once.
    first = subprocess.run([str(binary_path()), "mcp", "--workdir", str(workdir), "--runtime", runtime],
                           env=base_env(), input=b"", capture_output=True, timeout=60)
    err = first.stderr.decode()
    assert first.returncode == 0, err
    assert f"{file_store_line(workdir)}, empty (no --store URL or BERNSTEIN_STORE_URL given)" in err, err
    assert err.count("bernstein: store:") == 1, err

    with RawServer.start(launcher, "records") as srv:
        srv.initialize()
        payload(srv.call_tool("bernstein_run", {"goal": "counted in the store line"}))

    srv = HttpServer(launcher, "named-http", record=False)
    try:
        text = srv.stderr_text()
    finally:
        srv.stop()
    line = re.search(re.escape(file_store_line(workdir)) + r", (\d+) records \(", text)
    assert line and int(line.group(1)) > 0, text
    assert text.index("bernstein: store:") < text.index("serving MCP over HTTP"), text

    proc, _ = start_dashboard(binary_path(), workdir, runtime, tmp_path / "dash.log")
    proc.terminate()
    proc.wait(timeout=30)
    assert file_store_line(workdir) in (tmp_path / "dash.log").read_text(), (tmp_path / "dash.log").read_text()

    log = tmp_path / "worker.log"
    with open(log, "wb") as err_file:
        worker = subprocess.Popen([str(binary_path()), "worker", "--workdir", str(workdir), "--exec", "true",
                                   "--poll", "100ms"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=err_file, env=base_env())
        try:
            said = wait_announced(worker, log, STORE_LINE)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0
    assert f"bernstein: store: {said}".startswith(file_store_line(workdir)), said


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def store_commands(tmp_path: Path, project: Path) -> list[list[str]]:
    """Every command that reads a store URL (each with what it needs to get that far)."""
    (tmp_path / "r.json").write_text("{}")
    return [
        ["mcp"],
        ["mcp", "--migrate"],
        ["mcp", "--transport", "http", "--port", "0"],
        ["dashboard", "--port", "0"],
        ["worker", "--exec", "true"],
        ["status"],
        ["status", "--json"],
        ["plan", "list"],
        ["plan", "show", TASK],
        ["plan", "approve", TASK, "--hash", "sha256:0"],
        ["task", "cancel", TASK],
        ["store", "migrate"],
        ["audit", "verify"],
        ["mailbox", "verify"],
        ["backlog", "verify-claim", "--receipt", str(tmp_path / "r.json")],
        ["ledger", "export", "--out", str(tmp_path / "out")],
        ["ledger", "import", "--from", str(project)],
    ]


def test_a_password_in_the_store_url_is_never_printed(tmp_path):
    project = tmp_path / "proj"
    assert run_cli(["init", str(project)]).returncode == 0
    port = closed_port()
    refused = f"postgres://alice:{SECRET}@127.0.0.1:{port}/ledgerdb"
    unparsable = f"postgres://alice:{SECRET}@127.0.0.1:notaport/ledgerdb"
    named = f"PostgreSQL database ledgerdb at 127.0.0.1:{port} as user alice"
    for url in (refused, unparsable):
        for args in store_commands(tmp_path, project):
            for how, env in ((["--store", url], None), ([], {"BERNSTEIN_STORE_URL": url})):
                proc = subprocess.run([str(binary_path()), *args, *how, "--workdir", str(project)],
                                      env=base_env(env), input="", capture_output=True, text=True, timeout=60,
                                      cwd=tmp_path)
                said = proc.stdout + proc.stderr
                assert SECRET not in said, (args, how, said)
                assert proc.returncode != 0, (args, how, said)
                if url == refused and args[0] in ("mcp", "dashboard", "worker", "status", "plan", "task", "store"):
                    # The failure names the database it could not reach (never its password).
                    assert named in proc.stderr, (args, how, proc.stderr)
