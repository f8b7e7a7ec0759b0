"""The 2026-07-28 stateless era over raw stdio pipes.

What the SDK's `mode="auto"` does not exercise: an unsupported per-request version (-32022
with `data.supported` and `data.requested`), handshake-only methods sent as modern requests,
and the era chosen per request on one connection. Every line is checked against the
2026-07-28 schema at teardown.
"""

from __future__ import annotations

from harness.payloads import ok_payload
from harness.raw import RawServer, modern_meta

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def modern(params: dict | None = None, **meta) -> dict:
    out = dict(params or {})
    out["_meta"] = modern_meta(**meta)
    return out


def test_discover_describes_the_server(launcher):
    with RawServer.start(launcher, "discover") as srv:
        resp = srv.request("server/discover", modern())
        result = resp["result"]
        assert "2026-07-28" in result["supportedVersions"]
        assert result["resultType"] == "complete"
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
        assert result["cacheScope"] in ("public", "private")
        assert {"tools", "prompts", "resources"} <= set(result["capabilities"])
        assert isinstance(result.get("instructions"), str) and 0 < len(result["instructions"]) <= 900
        assert result["_meta"][SERVER_INFO]["name"]


def test_unsupported_version_is_refused_with_the_supported_list(launcher):
    with RawServer.start(launcher, "unsupported-modern") as srv:
        for method in ("server/discover", "tools/list"):
            resp = srv.request(method, {"_meta": modern_meta(version="2099-01-01")})
            assert "error" in resp, resp
            err = resp["error"]
            assert err["code"] == -32022, resp
            assert err["data"]["requested"] == "2099-01-01"
            assert "2026-07-28" in err["data"]["supported"]


def test_modern_results_carry_result_type_and_cache_hints(launcher):
    with RawServer.start(launcher, "modern-lists") as srv:
        for method in ("tools/list", "prompts/list", "resources/list"):
            result = srv.request(method, modern())["result"]
            assert result["resultType"] == "complete", (method, result)
            assert isinstance(result["ttlMs"], int), (method, result)
            assert result["cacheScope"] in ("public", "private"), (method, result)
            assert result["_meta"][SERVER_INFO]["name"], (method, result)
        call = srv.request("tools/call", modern({"name": "bernstein_status", "arguments": {}}))["result"]
        assert call["resultType"] == "complete"
        assert call["_meta"][SERVER_INFO]["name"]
        assert "counts" in ok_payload(call)


def test_handshake_methods_are_not_modern_methods(launcher):
    with RawServer.start(launcher, "modern-no-ping") as srv:
        for method, params in (
            ("ping", {}),
            (
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}},
            ),
        ):
            resp = srv.request(method, modern(params))
            assert "error" in resp, f"{method} with 2026-07-28 _meta must be refused: {resp}"
        # the process still serves both eras
        assert "result" in srv.request("server/discover", modern())


def test_era_is_chosen_per_request(launcher):
    with RawServer.start(launcher, "mixed-eras") as srv:
        assert "result" in srv.request("server/discover", modern())
        init = srv.initialize("2025-06-18")
        assert init["protocolVersion"] == "2025-06-18"
        legacy = srv.request("tools/list")["result"]
        assert "resultType" not in legacy, "a handshake-era result carries no resultType"
        current = srv.request("tools/list", modern())["result"]
        assert current["resultType"] == "complete"
        assert [t["name"] for t in legacy["tools"]] == [t["name"] for t in current["tools"]]


def test_modern_run_and_poll(launcher):
    with RawServer.start(launcher, "modern-run") as srv:
        run = srv.request(
            "tools/call", modern({"name": "bernstein_run", "arguments": {"goal": "modern raw run"}})
        )["result"]
        started = ok_payload(run)
        poll = srv.request(
            "tools/call", modern({"name": "bernstein_run_status", "arguments": {"run_id": started["run_id"]}})
        )["result"]
        handle = ok_payload(poll)
        assert handle["runId"] == started["run_id"]
        assert handle["status"] == "working"
