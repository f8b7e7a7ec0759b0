"""Fixtures of the HTTP end-to-end tests (streamable HTTP and legacy SSE).

* `http/common/`: raw HTTP (auth matrix, bad input, two processes on one ledger); no SDK.
* `http/handshake/`: `mcp<2` (`streamablehttp_client`, `sse_client`), collected only there.
* `http/stateless/`: `mcp>=2` (`Client(url, mode="auto")`), collected only there.

`http_server` starts `bernstein mcp --transport http` processes on free ports through the
`launcher` of the root conftest (so each gets a log prefix, and whatever went through its
recording proxy is schema-validated at teardown) and stops every one of them after the test.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import pytest



def _mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return None


_MAJOR = _mcp_major()
collect_ignore = []
if _MAJOR != 1:
    collect_ignore.append("handshake")
if _MAJOR is None or _MAJOR < 2:
    collect_ignore.append("stateless")

