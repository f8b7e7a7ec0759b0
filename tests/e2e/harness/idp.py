"""A real local OAuth 2 authorization server (npm `oauth2-mock-server`, pinned in
tests/e2e/idp/package-lock.json and installed into .cache/e2e-idp) for the OAuth e2e tests.

`Idp.start()` runs tests/e2e/idp/idp.mjs on loopback with Node 22 from .cache/node22; its
metadata, JWKS and token signing are the library's own. `token(...)` asks it for a signed access
token with claims changed or dropped, `generate(alg, kid)` adds a signing key (rotation),
`hs256(kid, claims)` makes the HS256 token keyed with an RSA public key's PEM. `opaque(answer)`
makes an opaque token its POST /introspect answers for (to the resource server's client,
`RS_CLIENT_ID`/`RS_CLIENT_SECRET`, by HTTP Basic), `introspections()` counts those POSTs, and
`pause()`/`resume()` stop and restart its listener on the same port (an IdP that is down).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from harness.node import ensure_locked, ensure_node

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "tests" / "e2e" / "idp"

# The resource server's client at the IdP (introspection); the secret has characters that HTTP
# Basic client authentication must form-encode (RFC 6749 §2.3.1).
RS_CLIENT_ID = "bernstein-rs"
RS_CLIENT_SECRET = "rs-secret:with&odd=chars"


class Idp:
    def __init__(self, proc: subprocess.Popen, issuer: str):
        self.proc = proc
        self.issuer = issuer

    @classmethod
    def start(cls) -> "Idp":
        cache = REPO / ".cache"
        _, env = ensure_node(cache)
        dest = cache / "e2e-idp"
        ensure_locked(SRC, dest, env)
        # Named by its content: checkouts sharing the cache never run each other's script.
        script = (SRC / "idp.mjs").read_bytes()
        name = f"idp-{hashlib.sha256(script).hexdigest()[:12]}.mjs"
        shutil.copyfile(SRC / "idp.mjs", dest / name)
        proc = subprocess.Popen(["node", name], cwd=dest, env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        first = json.loads(proc.stdout.readline())
        return cls(proc, first["issuer"])

    def _ask(self, cmd: dict) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        assert "error" not in out, out
        return out

    def token(self, *, kid: str = "k-rs256", claims: dict | None = None, drop: list[str] | None = None,
              expires_in: int = 600) -> str:
        cmd = {"kid": kid, "claims": claims or {}, "drop": drop or [], "expiresIn": expires_in}
        return self._ask({"token": cmd})["token"]

    def generate(self, alg: str, kid: str) -> None:
        self._ask({"generate": {"alg": alg, "kid": kid}})

    def hs256(self, kid: str, claims: dict) -> str:
        return self._ask({"hs256": {"kid": kid, "claims": claims}})["token"]

    def issued(self) -> int:
        """How many tokens the /token endpoint issued so far."""
        return self._ask({"stats": {}})["issued"]

    def opaque(self, **answer) -> str:
        """A fresh opaque token; its introspection answers `{"active": true, "iss": issuer,
        **answer}` (pass `active=False` for a revoked one)."""
        return self._ask({"opaque": {"answer": answer}})["token"]

    def introspections(self) -> int:
        """How many POST /introspect it answered so far."""
        return self._ask({"stats": {}})["introspections"]

    def pause(self) -> None:
        """Stops listening (connections are refused) until `resume()`."""
        self._ask({"stop": {}})

    def resume(self) -> None:
        self._ask({"start": {}})

    def stop(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
