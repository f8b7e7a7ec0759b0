"""Every server names the PostgreSQL database it serves (host, port, database, user) on stderr,
and no command ever prints the password of the store URL: the URL here carries one (the test
cluster trusts loopback connections, so it is sent nowhere), and every line every process
writes is searched for it. The file-store half, and a password in the URL of a database that
cannot be reached, are in tests/e2e/common/test_documented_paths.py.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from harness.http_raw import HANDSHAKE, call_tool
from harness.http_server import HttpServer, wait_announced
from harness.launch import base_env
from harness.operator import start_dashboard
from pg_support import payload

SECRET = "pw-N0T-T0-B3-PRINTED"
STORE_LINE = re.compile(r"(bernstein: store: .*)")


def with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{SECRET}@{parts.hostname}:{parts.port}"))


def test_every_server_names_the_database_and_never_its_password(launcher, runtime, pg_url, bernstein_bin,
                                                               tmp_path):
    url = with_password(pg_url)
    parts = urlsplit(pg_url)
    named = (f"bernstein: store: PostgreSQL database {parts.path.lstrip('/')} at {parts.hostname}:{parts.port} "
             f"as user {parts.username}")
    instance = tmp_path / "instance"
    instance.mkdir()
    said: list[str] = []

    srv = HttpServer(launcher, "pg-named", workdir=instance, extra_args=["--store", url], record=False)
    try:
        task = payload(call_tool(srv.direct_base, "bernstein_run", {"goal": "named store"}, version=HANDSHAKE))
    finally:
        srv.stop()
    text = srv.stderr_text()
    said.append(text)
    assert f"{named}, empty\n" in text, text
    assert text.index("bernstein: store:") < text.index("serving MCP over HTTP"), text

    stdio = subprocess.run([str(bernstein_bin), "mcp", "--workdir", str(instance), "--runtime", runtime],
                           env=base_env({"BERNSTEIN_STORE_URL": url}), input=b"", capture_output=True, timeout=60)
    err = stdio.stderr.decode()
    said.append(err)
    assert stdio.returncode == 0, err
    held = re.search(re.escape(named) + r", (\d+) records\n", err)
    assert held and int(held.group(1)) > 0, err

    log = tmp_path / "dash.log"
    proc, _ = start_dashboard(bernstein_bin, instance, runtime, log, extra=["--store", url])
    proc.terminate()
    proc.wait(timeout=30)
    said.append(log.read_text())
    assert named in said[-1], said[-1]

    log = tmp_path / "worker.log"
    with open(log, "wb") as err_file:
        worker = subprocess.Popen([str(bernstein_bin), "worker", "--workdir", str(instance), "--exec", "true",
                                   "--store", url, "--poll", "100ms"], stdin=subprocess.DEVNULL,
                                  stdout=err_file, stderr=err_file, env=base_env())
        try:
            line = wait_announced(worker, log, STORE_LINE)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0, log.read_text()
    said.append(log.read_text())
    assert line.startswith(named), line

    def cli(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([str(bernstein_bin), "--workdir", str(instance), *args], capture_output=True,
                              text=True, env=base_env(), timeout=120)
        said.append(done.stdout + done.stderr)
        return done

    migrated = cli("store", "migrate", "--store", url)
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.startswith("schema is up to date (version ") and named[len("bernstein: store: "):] in \
        migrated.stdout, migrated.stdout
    as_json = json.loads(cli("store", "migrate", "--store", url, "--json").stdout)
    assert as_json["applied"] == [] and as_json["database"] == named[len("bernstein: store: "):], as_json
    assert task["task_id"] in cli("status", "--store", url).stdout
    assert cli("task", "cancel", task["task_id"], "--store", url).returncode == 0
    for args in (["audit", "verify"], ["mailbox", "verify", "--json"], ["plan", "list", "--json"]):
        done = cli(*args, "--store", url)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    # Unreachable and misspelled: the errors name the database, never the password.
    gone = cli("status", "--store", url.replace(f":{parts.port}/", ":1/"))
    assert gone.returncode == 2 and f"at {parts.hostname}:1 as user" in gone.stderr, gone.stderr

    leaked = [t for t in said if SECRET in t]
    assert not leaked, leaked
    # Nothing else of the instance's was written: it has the keys, and no ledger file.
    assert not (Path(instance) / ".sdd" / "ledger" / "ledger.jsonl").exists()
