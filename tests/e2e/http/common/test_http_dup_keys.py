"""A duplicate JSON key in a POST /mcp body, at any depth, is a 400 with a -32700 parse error
that names the key, on both runtimes; nothing runs and the server keeps serving."""

from __future__ import annotations

import json

import pytest

from harness.ledger import ledger_lines

from harness.http_raw import call_tool, request, rpc_body, rpc_headers

BODIES = [
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bernstein_status","name":"bernstein_run","arguments":{"goal":"dup"}}}', "name"),
    (b'{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}', "id"),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"a":1,"\\u0061":2}}}', "a"),
]


@pytest.mark.parametrize("body,key", BODIES)
def test_a_duplicate_key_is_a_parse_error(http_server, workdir, body, key):
    srv = http_server("dup-keys", record=False)
    headers = rpc_headers(rpc_body("tools/list"))
    r = request(srv.direct_base, "POST", "/mcp", body, headers)
    assert r.status == 400, (r.status, r.body[:300])
    resp = r.rpc_response()
    assert resp["error"]["code"] == -32700, resp
    assert f'duplicate key "{key}" in an object' in resp["error"]["message"], resp
    status = call_tool(srv.direct_base, "bernstein_status")
    assert status.status == 200 and "result" in status.rpc_response()
    kinds = [json.loads(line.raw)["kind"] for line in ledger_lines(workdir / ".sdd")]
    assert "task.created" not in kinds, "the call a duplicate key hid must not run"
