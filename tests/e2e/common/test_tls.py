"""HTTPS on both runtimes (`--tls-cert`/`--tls-key`), with a CA made at test time:

* curl over HTTPS with the test CA: the probes, a stateless `tools/call`; curl without the CA
  refuses the server;
* plain HTTP to the TLS port gets a clear 400 naming the https:// URL, and the port serves on;
* SIGHUP with a new certificate while a client keeps calling: no call is lost, new connections
  are presented the new certificate; a SIGHUP with a bad file keeps the old one and says so;
* `bernstein dashboard` over HTTPS;
* a missing key, a key of another certificate: the server refuses to start, naming the file.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness import launch
from harness.http_server import terminate, wait_announced
from harness.tls import (READY_TLS_DASHBOARD, HttpsServer, context, der_of, install, make_certs,
                         peer_certificate, stateless_status_call)


@pytest.fixture
def https(launcher, tmp_path: Path):
    """A running HTTPS server whose files are `server-cert.pem`/`server-key.pem` (CA `a`)."""
    certs = make_certs(tmp_path, "a")
    cert, key = tmp_path / "server-cert.pem", tmp_path / "server-key.pem"
    install(certs, cert, key)
    srv = HttpsServer(launcher, "https", cert, key)
    srv.certs, srv.cert_file, srv.key_file = certs, cert, key
    yield srv
    srv.stop()


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", "--max-time", "30", *args], capture_output=True, text=True, timeout=60)


def test_curl_over_https_with_the_test_ca(https):
    base = https.direct_base
    r = curl("--cacert", str(https.certs.ca), base + "/healthz")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "bernstein_status", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    r = curl("--cacert", str(https.certs.ca), "-X", "POST", base + "/mcp", "-H", "Content-Type: application/json",
             "-H", "Accept: application/json, text/event-stream", "-H", "MCP-Protocol-Version: 2026-07-28",
             "-H", "Mcp-Method: tools/call", "-H", "Mcp-Name: bernstein_status", "-d", body)
    assert r.returncode == 0, r
    assert json.loads(r.stdout)["result"]["isError"] is False, r.stdout
    # Without the CA, curl refuses the server's certificate (exit 60: peer certificate not verified).
    r = curl(base + "/healthz")
    assert r.returncode == 60, r


def test_plain_http_to_the_tls_port_is_refused_clearly(https):
    r = curl("-i", f"http://127.0.0.1:{https.port}/mcp", "-X", "POST", "-d", "{}")
    assert r.returncode == 0, r
    assert r.stdout.startswith("HTTP/1.1 400 "), r.stdout
    assert f"https://127.0.0.1:{https.port}/" in r.stdout, r.stdout
    stateless_status_call(https.port, context(https.certs.ca), 1)


def test_sighup_reloads_the_certificate_and_loses_no_call(https, tmp_path: Path):
    a, b = https.certs, make_certs(tmp_path, "b")
    both = context(a.ca, b.ca)
    stop, failures, calls = threading.Event(), [], [0]

    def keep_calling():
        i = 0
        while not stop.is_set() or i < 20:
            i += 1
            try:
                stateless_status_call(https.port, both, i)
            except Exception as e:  # noqa: BLE001 - every failure is reported below
                failures.append(f"call {i}: {e!r}")
            calls[0] += 1

    caller = threading.Thread(target=keep_calling)
    caller.start()
    try:
        assert peer_certificate(https.port, context(a.ca)) == der_of(a.cert)
        install(b, https.cert_file, https.key_file)
        https.proc.send_signal(signal.SIGHUP)
        wait_announced(https.proc, https.stderr_path, _line("TLS certificate reloaded from"))
        assert peer_certificate(https.port, context(b.ca)) == der_of(b.cert)
        # A bad file: the reload fails, says why, and the certificate in use stays.
        https.cert_file.write_text("not a certificate\n")
        https.proc.send_signal(signal.SIGHUP)
        wait_announced(https.proc, https.stderr_path, _line("TLS reload failed"))
        assert "no PEM certificate" in https.stderr_text()
        assert peer_certificate(https.port, context(b.ca)) == der_of(b.cert)
        before = calls[0]
        while calls[0] < before + 5 and caller.is_alive():
            time.sleep(0.02)  # waiting for the caller's progress, not for time
    finally:
        stop.set()
        caller.join(timeout=120)
    assert not failures, failures[:5]
    assert https.proc.poll() is None, "the server stopped"


def _line(text: str):
    import re

    return re.compile("(" + re.escape(text) + ")")


def test_the_dashboard_serves_https(bernstein_bin: Path, workdir: Path, runtime: str, tmp_path: Path):
    assert launch.run_cli(["init", str(workdir)]).returncode == 0
    certs = make_certs(tmp_path, "d")
    err = tmp_path / "dash.stderr"
    with open(err, "wb") as sink:
        proc = subprocess.Popen(
            [str(bernstein_bin), "dashboard", "--workdir", str(workdir), "--port", "0", "--runtime", runtime,
             "--tls-cert", str(certs.cert), "--tls-key", str(certs.key)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink, env=launch.base_env())
        try:
            authority = wait_announced(proc, err, READY_TLS_DASHBOARD)
            port = authority.rpartition(":")[2]
            r = curl("--cacert", str(certs.ca), f"https://127.0.0.1:{port}/healthz")
            assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r
        finally:
            terminate(proc)


def test_bad_tls_files_refuse_to_start(bernstein_bin: Path, workdir: Path, tmp_path: Path):
    a, b = make_certs(tmp_path, "a"), make_certs(tmp_path, "b")
    base = [str(bernstein_bin), "mcp", "--workdir", str(workdir), "--transport", "http", "--port", "0"]
    cases = [
        (["--tls-cert", str(a.cert)], "given without its key"),
        (["--tls-cert", str(a.cert), "--tls-key", str(b.key)], f"{b.key}: it is not the key of the certificate"),
        (["--tls-cert", str(tmp_path / "none.pem"), "--tls-key", str(a.key)], "none.pem: cannot read it"),
    ]
    for args, expected in cases:
        r = subprocess.run(base + args, capture_output=True, text=True, timeout=60, env=launch.base_env(),
                           stdin=subprocess.DEVNULL)
        assert r.returncode != 0 and expected in r.stderr, (args, r.stderr)
    r = subprocess.run(base[:4] + ["--tls-cert", str(a.cert), "--tls-key", str(a.key)], capture_output=True,
                       text=True, timeout=60, env=launch.base_env(), stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and "need --transport http" in r.stderr, r.stderr
