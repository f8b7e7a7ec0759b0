"""`bernstein worker --url https://…` obtaining its token from a real local IdP with OAuth client
credentials (BERNSTEIN_WORKER_OAUTH_*), on both runtimes, against a server bound to every
interface with an issuer and TLS (so every call must carry a valid token):

* the token is asked for the server's `/mcp` URL as its resource (RFC 8707) and the server
  accepts it as its audience; `bernstein run --url` and the worker complete a task with it;
* the worker keeps the token: far fewer token requests than calls;
* a token URL that would send the secret in clear to a remote host, and a fixed token set beside
  the client credentials, are refused at start with a clear error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import launch
from harness.idp import Idp
from harness.tls import HttpsServer, make_certs

from test_worker_tls import TlsWorker


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


def oauth_env(idp: Idp, ca: Path) -> dict[str, str]:
    return {
        "SSL_CERT_FILE": str(ca),
        "BERNSTEIN_WORKER_OAUTH_TOKEN_URL": idp.issuer + "/token",
        "BERNSTEIN_WORKER_OAUTH_CLIENT_ID": "worker-1",
        "BERNSTEIN_WORKER_OAUTH_CLIENT_SECRET": "worker-1-secret",
    }


def test_the_worker_gets_its_token_with_client_credentials(launcher, workdir: Path, tmp_path: Path, idp):
    certs = make_certs(tmp_path, "cc")
    srv = HttpsServer(launcher, "https-cc", certs.cert, certs.key, host="0.0.0.0",
                      env={"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer})
    env = oauth_env(idp, certs.ca)
    try:
        # Without a credential the server refuses the run: every call must carry a token.
        bare = launch.run_cli(["run", "--url", srv.mcp_url, "never started"], env={"SSL_CERT_FILE": str(certs.ca)})
        assert bare.returncode != 0 and "401" in bare.stderr + bare.stdout, bare
        before = idp.issued()
        r = launch.run_cli(["run", "--url", srv.mcp_url, "done with a client credentials token"], env=env)
        assert r.returncode == 0, r.stderr
        w = TlsWorker(srv.mcp_url, workdir, tmp_path / "cc.log", env)
        try:
            w.wait_for("completed: done with")
        finally:
            w.stop()
        text = w.text()
        assert "worker-1-secret" not in text, text
        # One token for the run command, one for the worker (kept across its calls).
        assert idp.issued() - before == 2, (idp.issued(), before)
    finally:
        srv.stop()


def test_bad_client_credential_settings_are_refused_at_start(workdir: Path, tmp_path: Path, idp):
    env = oauth_env(idp, tmp_path / "none.pem")
    env["BERNSTEIN_WORKER_OAUTH_TOKEN_URL"] = "http://idp.example.com/token"
    r = launch.run_cli(["run", "--url", "https://127.0.0.1:9/mcp", "x"], env=env)
    assert r.returncode != 0 and "in clear" in r.stderr, r.stderr
    env = oauth_env(idp, tmp_path / "none.pem") | {"BERNSTEIN_MCP_TOKEN": "t"}
    r = launch.run_cli(["run", "--url", "https://127.0.0.1:9/mcp", "x"], env=env)
    assert r.returncode != 0 and "unset one" in r.stderr, r.stderr
