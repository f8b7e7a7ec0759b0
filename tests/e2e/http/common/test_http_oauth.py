"""OAuth resource-server mode over HTTP (raw requests, both runtimes) against a real local IdP
(npm oauth2-mock-server on loopback, harness/idp.py): IdP-issued tokens are checked by the
server itself (signature against the IdP's JWKS, issuer, audience, time); every bad token is a
401 with the RFC 6750/9728 challenge; a read-scope token cannot call a tool that writes (403
insufficient_scope) nor see it in tools/list; rotated keys work without a restart; the caller's
principal (never the token) is in the ledger and in `bernstein audit verify --verbose`.
"""

from __future__ import annotations

import base64
import json
import time

import pytest

from harness.http_raw import call_tool, request, rpc
from harness.idp import Idp
from harness.ledger import audit_verify

WRITE = "bernstein.read bernstein.write"


@pytest.fixture(scope="module")
def idp():
    server = Idp.start()
    yield server
    server.stop()


@pytest.fixture
def srv(http_server, idp):
    return http_server("oauth-idp", env={"BERNSTEIN_MCP_OAUTH_ISSUER": idp.issuer}, record=False)


def audience(srv) -> str:
    return srv.direct_base.rstrip("/") + "/mcp"


def b64(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def assert_invalid(reply, token: str, why: str) -> None:
    assert reply.status == 401, (why, reply.status, reply.body[:300])
    challenge = reply.headers.get("www-authenticate", "")
    assert challenge.startswith('Bearer resource_metadata="http://'), challenge
    assert 'error="invalid_token"' in challenge and "error_description=" in challenge, challenge
    assert reply.json()["error"] == "invalid_token", reply.body
    assert token not in reply.body.decode() and token not in challenge, why


def test_idp_tokens_are_checked_by_the_server(srv, idp, launcher):
    base, aud = srv.direct_base, audience(srv)
    good = idp.token(claims={"aud": aud, "sub": "alice", "scope": WRITE})
    ok = call_tool(base, "bernstein_status", token=good)
    assert ok.status == 200 and "result" in ok.rpc_response(), ok.body[:300]
    # An audience array naming this server is accepted too.
    listed = idp.token(claims={"aud": ["https://other.example", aud], "sub": "alice", "scope": WRITE})
    assert rpc(base, "tools/list", token=listed).status == 200

    header, payload, _ = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    sig = good.split(".")[2]
    bad = {
        "another audience": idp.token(claims={"aud": "https://other.example/mcp", "sub": "alice"}),
        "names no audience": idp.token(claims={"sub": "alice"}, drop=["aud"]),
        "has expired": idp.token(claims={"aud": aud, "sub": "alice"}, expires_in=-3600),
        "another issuer": idp.token(claims={"aud": aud, "sub": "alice", "iss": "http://127.0.0.1:1"}),
        "algorithm none": f"{b64({'alg': 'none', 'typ': 'JWT'})}.{payload}.",
        "algorithm HS256": idp.hs256("k-rs256", claims),
        "a key the issuer does not publish": f"{b64({'alg': 'RS256', 'kid': 'no-such-key'})}.{payload}.{sig}",
        "signature does not verify": f"{header}.{b64({**claims, 'sub': 'mallory'})}.{sig}",
        "not a well-formed JWT": "opaque-token-123",
    }
    for why, token in bad.items():
        reply = call_tool(base, "bernstein_status", token=token)
        assert_invalid(reply, token, why)
        assert why in reply.json()["error_description"], (why, reply.body)
    # Nothing refused reached the ledger; the served call names its principal, not its token.
    ledger = (launcher.workdir / ".sdd" / "ledger" / "ledger.jsonl").read_text()
    assert '"principal":{"iss":"' + idp.issuer in ledger.replace(" ", ""), "principal recorded"
    assert good not in ledger and "mallory" not in ledger
    verify = audit_verify(launcher.workdir / ".sdd")
    assert verify.returncode == 0, verify.stderr


def test_audit_verify_names_the_principal(srv, idp, launcher):
    token = idp.token(claims={"aud": audience(srv), "sub": "bob", "scope": WRITE})
    assert call_tool(srv.direct_base, "bernstein_status", token=token).status == 200
    from harness.launch import run_cli
    out = run_cli(["audit", "verify", "--verbose", "--dir", str(launcher.workdir / ".sdd")])
    assert out.returncode == 0, out.stderr
    assert f"by {idp.issuer} bob" in out.stdout, out.stdout[-2000:]
    # The dashboard's overview counts the calls by principal (an access token reads it too).
    overview = request(srv.direct_base, "GET", "/api/overview", headers={"Authorization": f"Bearer {token}"})
    assert overview.status == 200, overview.body[:300]
    assert overview.json()["calls"]["by_principal"] == {f"bob ({idp.issuer})": 1}, overview.json()["calls"]


def test_rotated_and_other_algorithms_work_without_restart(srv, idp):
    base, aud = srv.direct_base, audience(srv)
    first = idp.token(claims={"aud": aud, "sub": "alice", "scope": WRITE})
    assert call_tool(base, "bernstein_status", token=first).status == 200
    for alg in ("ES256", "EdDSA", "PS256"):
        kid = f"k-{alg.lower()}-{time.monotonic_ns()}"
        idp.generate(alg, kid)
        token = idp.token(kid=kid, claims={"aud": aud, "sub": "alice", "scope": WRITE})
        # The server refetches the keys at most every few seconds: a token of a brand new key
        # may be refused until then, and is accepted once the keys are fetched again.
        deadline = time.monotonic() + 60
        while True:
            reply = call_tool(base, "bernstein_status", token=token)
            if reply.status == 200 or time.monotonic() > deadline:
                break
            assert_invalid(reply, token, f"{alg} before its key was fetched")
            time.sleep(1)
        assert reply.status == 200, (alg, reply.status, reply.body[:300])


def test_read_scope_cannot_write(srv, idp):
    base = srv.direct_base
    read = idp.token(claims={"aud": audience(srv), "sub": "reader", "scope": "bernstein.read"})
    listed = rpc(base, "tools/list", token=read)
    assert listed.status == 200
    names = {t["name"] for t in listed.rpc_response()["result"]["tools"]}
    assert "bernstein_status" in names and "bernstein_post_message" not in names, names
    refused = call_tool(base, "bernstein_post_message", {"run_id": "T-1", "body": "hi"}, token=read)
    assert refused.status == 403, (refused.status, refused.body[:300])
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="bernstein.write"' in challenge, challenge
    assert "resource_metadata=" in challenge, challenge
    error = refused.rpc_response()["error"]
    assert "bernstein.write" in error["message"] and error["data"]["error"] == "insufficient_scope", error
    assert call_tool(base, "bernstein_status", token=read).status == 200
    write = idp.token(claims={"aud": audience(srv), "sub": "writer", "scope": WRITE})
    names = {t["name"] for t in rpc(base, "tools/list", token=write).rpc_response()["result"]["tools"]}
    assert "bernstein_post_message" in names, names


def test_a_token_pasted_into_an_argument_never_reaches_the_ledger(srv, idp, launcher):
    token = idp.token(claims={"aud": audience(srv), "sub": "paster", "scope": WRITE})
    goal = f"deploy with Authorization: Bearer {token} and again {token}"
    reply = call_tool(srv.direct_base, "bernstein_run", {"goal": goal}, token=token)
    assert reply.status == 200 and "result" in reply.rpc_response(), reply.body[:300]
    ledger = (launcher.workdir / ".sdd" / "ledger" / "ledger.jsonl").read_text()
    assert "[REDACTED:" in ledger, "the pasted token was redacted"
    for part in token.split("."):
        assert part not in ledger, "no part of the token is in the ledger"
