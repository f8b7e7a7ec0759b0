"""Two HTTP server processes on different ports over one workdir (one `.sdd/` ledger): the same
request gives byte-identical results from either, the `_meter` timing fields aside. Raw HTTP,
both eras, both runtimes (and one process of each runtime).
"""

from __future__ import annotations

import json

import pytest

from harness.http_raw import HANDSHAKE, MODERN, call_tool

TIMING = ("latency_ms", "ts")


def normalised(reply) -> tuple[int, str]:
    """The response with `_meter` timing fields blanked (they are all that may differ)."""
    resp = reply.rpc_response()
    result = resp.get("result") or {}
    for block in result.get("content", []):
        if block.get("type") == "text":
            doc = json.loads(block["text"])
            if isinstance(doc, dict) and "_meter" in doc:
                for k in TIMING:
                    doc["_meter"].pop(k, None)
                block["text"] = json.dumps(doc, sort_keys=True)
    sc = result.get("structuredContent")
    if isinstance(sc, dict) and "_meter" in sc:
        for k in TIMING:
            sc["_meter"].pop(k, None)
    return reply.status, json.dumps(resp, sort_keys=True)


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
@pytest.mark.parametrize("pair", ["same", "mixed"])
def test_two_processes_one_ledger(http_server, runtime, version, pair):
    other = runtime if pair == "same" else ("smol" if runtime == "std" else "std")
    a = http_server("proc-a", record=False)
    b = http_server("proc-b", record=False, runtime=other)
    assert a.port != b.port
    run = call_tool(a.direct_base, "bernstein_run", {"goal": "one ledger, two ports"}, version=version)
    assert run.status == 200, run
    payload = json.loads(run.rpc_response()["result"]["content"][0]["text"])
    run_id = payload.get("result", payload)["run_id"]
    for name, args in (("bernstein_run_status", {"run_id": run_id}), ("bernstein_status", {})):
        ra = call_tool(a.direct_base, name, args, version=version, id_=7)
        rb = call_tool(b.direct_base, name, args, version=version, id_=7)
        assert normalised(ra) == normalised(rb), (name, ra.body[:400], rb.body[:400])
        assert ra.headers.get("x-bernstein-span-id") == rb.headers.get("x-bernstein-span-id")
    # Written through B, read through A: still the same.
    cancel = call_tool(b.direct_base, "bernstein_cancel", {"task_id": payload.get("result", payload)["task_id"]},
                       version=version, id_=8)
    assert cancel.status == 200 and not cancel.rpc_response()["result"].get("isError"), cancel.body[:400]
    ra = call_tool(a.direct_base, "bernstein_run_status", {"run_id": run_id}, version=version, id_=9)
    rb = call_tool(b.direct_base, "bernstein_run_status", {"run_id": run_id}, version=version, id_=9)
    assert normalised(ra) == normalised(rb)
    assert "cancelled" in ra.rpc_response()["result"]["content"][0]["text"]
