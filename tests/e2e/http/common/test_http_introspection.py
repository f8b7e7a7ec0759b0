"""Opaque access tokens (RFC 7662 introspection) over HTTP (raw requests, both runtimes) against
a real local IdP (npm oauth2-mock-server's POST /introspect, harness/idp.py): the server
introspects a token that is not a JWT as its own client at the IdP (HTTP Basic, the secret from
BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE, the endpoint from the issuer's metadata), keeps the
answer, and decides like for a JWT: an inactive token is 401, a read-scope token calling a write
tool 403 insufficient_scope; 100 requests with one token cost the IdP one introspection; an IdP
that is down is a 503 with Retry-After, and the server recovers when it is back; the principal
(never the token) is in the ledger and in `bernstein audit verify --verbose`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.http_raw import call_tool, rpc
from harness.idp import RS_CLIENT_ID, RS_CLIENT_SECRET, Idp
from harness.launch import run_cli
from harness.ledger import audit_verify

WRITE = "bernstein.read bernstein.write"


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


@pytest.fixture
def srv(http_server, idp, tmp_path):
    secret = tmp_path / "client-secret"
    secret.write_text(RS_CLIENT_SECRET + "\n")
    secret.chmod(0o600)
    env = {
        "BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer,
        "BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID,
        "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE": str(secret),
    }
    return http_server("oauth-introspect", env=env, record=False)


def test_an_opaque_token_is_introspected_and_its_principal_recorded(srv, idp, launcher):
    token = idp.opaque(sub="olga", scope=WRITE)
    assert "." not in token
    reply = call_tool(srv.direct_base, "bernstein_run", {"goal": "started with an opaque token"}, token=token)
    assert reply.status == 200 and "result" in reply.rpc_response(), reply.body[:300]
    # A JWT of the same IdP keeps its local check: it is not introspected.
    before = idp.introspections()
    jwt = idp.token(claims={"aud": srv.direct_base + "/mcp", "sub": "jay", "scope": WRITE})
    assert call_tool(srv.direct_base, "bernstein_status", token=jwt).status == 200
    assert idp.introspections() == before
    sdd = launcher.workdir / ".sdd"
    ledger = (sdd / "ledger" / "ledger.jsonl").read_text()
    assert token not in ledger, "never the token"
    out = run_cli(["audit", "verify", "--verbose", "--dir", str(sdd)])
    assert out.returncode == 0, out.stderr
    assert f"by {idp.issuer} olga" in out.stdout, out.stdout[-2000:]
    assert audit_verify(sdd).returncode == 0
    log = srv.stderr_path.read_text()
    assert token not in log and RS_CLIENT_SECRET not in log


def test_an_inactive_or_unknown_token_is_a_401(srv, idp):
    for token in (idp.opaque(active=False, sub="revoked"), "no-such-token-at-the-idp"):
        reply = call_tool(srv.direct_base, "bernstein_status", token=token)
        assert reply.status == 401, (reply.status, reply.body[:300])
        challenge = reply.headers.get("www-authenticate", "")
        assert challenge.startswith('Bearer resource_metadata="http://'), challenge
        assert 'error="invalid_token"' in challenge, challenge
        assert "not active" in reply.json()["error_description"], reply.body
        assert token not in reply.body.decode() and token not in challenge


def test_a_read_scope_opaque_token_cannot_call_a_write_tool(srv, idp):
    read = idp.opaque(sub="reader", scope="bernstein.read")
    refused = call_tool(srv.direct_base, "bernstein_post_message", {"run_id": "T-1", "body": "hi"}, token=read)
    assert refused.status == 403, (refused.status, refused.body[:300])
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="bernstein.write"' in challenge, challenge
    names = {t["name"] for t in rpc(srv.direct_base, "tools/list", token=read).rpc_response()["result"]["tools"]}
    assert "bernstein_status" in names and "bernstein_post_message" not in names, names


def test_a_hundred_requests_with_one_token_cost_one_introspection(srv, idp):
    token = idp.opaque(sub="busy", scope="bernstein.read")
    before = idp.introspections()
    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(lambda _: call_tool(srv.direct_base, "bernstein_status", token=token).status,
                                 range(100)))
    assert statuses == [200] * 100, statuses
    assert idp.introspections() - before == 1


def test_an_idp_that_is_down_is_a_503_and_the_server_recovers(srv, idp):
    token = idp.opaque(sub="patient", scope="bernstein.read")
    idp.pause()
    try:
        reply = call_tool(srv.direct_base, "bernstein_status", token=token)
        assert reply.status == 503, (reply.status, reply.body[:300])
        assert reply.headers.get("retry-after") == "5", reply.headers
        assert reply.json()["error"] == "idp_unavailable", reply.body
        assert token not in reply.body.decode()
    finally:
        idp.resume()
    reply = call_tool(srv.direct_base, "bernstein_status", token=token)
    assert reply.status == 200, (reply.status, reply.body[:300])


def test_a_half_configured_introspection_is_refused_at_start(launcher, idp, tmp_path):
    import subprocess

    from harness.launch import base_env

    empty = tmp_path / "empty-secret"
    empty.write_text("\n")
    issuer = {"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer}
    cases = {
        "without a secret": {"BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID},
        "without BERNSTEIN_MCP_OAUTH_CLIENT_ID": {"BERNSTEIN_MCP_OAUTH_CLIENT_SECRET": "never-echo-me"},
        "unset one": {"BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID, "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET": "never-echo-me",
                      "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE": str(empty)},
        "is empty": {"BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID,
                     "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE": str(empty)},
        "needs this server's client": {"BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL": idp.issuer + "/introspect"},
        "not HTTPS": {"BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID, "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET": "never-echo-me",
                      "BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL": "http://idp.example/introspect"},
        "from 1 to 3600": {"BERNSTEIN_MCP_OAUTH_CLIENT_ID": RS_CLIENT_ID, "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET": "never-echo-me",
                           "BERNSTEIN_MCP_OAUTH_INTROSPECTION_CACHE_SECS": "0"},
    }
    argv = launcher.server_argv() + ["--transport", "http", "--host", "127.0.0.1", "--port", "0"]
    for why, env in cases.items():
        done = subprocess.run(argv, env=base_env({**issuer, **env}), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60, cwd=str(launcher.workdir))
        assert done.returncode != 0, (why, done.stderr[-500:])
        assert why in done.stderr, (why, done.stderr[-500:])
        assert "never-echo-me" not in done.stderr
