"""`bernstein_shutdown_orchestrator` through the real binary, on every runtime.

The official SDK (`mcp<2`, stdio) signals a project and the test sees the signal file a worker
polls; the audit ledger records the request. Over raw pipes, the containment barrier refuses a
symlinked `.sdd/runtime` leading outside the project, a `..` workdir, a NUL, a 4,097-byte path
and a directory that is not a project, and creates nothing anywhere (both trees compared before
and after).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.ledger import ledger_lines
from harness.payloads import ok_payload, outcome, refusal
from harness.raw import RawServer

TOOL = "bernstein_shutdown_orchestrator"
SIGNAL = Path(".sdd/runtime/signals/SHUTDOWN")


def _sdk_major() -> int | None:
    try:
        from importlib.metadata import version

        return int(version("mcp").split(".")[0])
    except Exception:
        return None


def tree(root: Path) -> dict[str, str]:
    """Every entry under `root`: path → file bytes, link target or `dir`."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = "file:" + p.read_bytes().hex()
    return out


def project(t: dict[str, str]) -> dict[str, str]:
    """A project tree without the ledger's own files (each call appends its audit record)."""
    return {k: v for k, v in t.items() if not k.startswith(".sdd/") or k.startswith(".sdd/runtime/signals")}


def audit_kinds(workdir: Path) -> list[str]:
    return [json.loads(line.raw)["kind"] for line in ledger_lines(workdir / ".sdd")]


@pytest.mark.anyio
@pytest.mark.skipif(_sdk_major() != 1, reason="the stdio SDK test runs with mcp<2")
async def test_sdk_signals_the_project_and_the_file_appears(launcher, workdir):
    from harness.sdk_handshake import connect

    async with connect(launcher, "sdk-shutdown") as (session, _init):
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert TOOL in listed, "standard tier lists the shutdown tool"
        assert "writes files" in listed[TOOL].description
        result = await session.call_tool(TOOL, {"workdir": str(workdir)})
        payload = ok_payload(result)
    signal = workdir / SIGNAL
    assert signal.is_file(), "the signal file a worker polls exists"
    assert payload["signalled"] is True
    assert Path(payload["path"]) == signal.resolve()
    body = json.loads(signal.read_text())
    assert body["call_id"] == payload["call_id"]
    assert body["tool"] == TOOL
    assert "orchestrator.shutdown_requested" in audit_kinds(workdir)


def test_default_workdir_is_the_served_project(launcher, workdir):
    with RawServer.start(launcher, "default-workdir") as srv:
        srv.initialize()
        payload = ok_payload(srv.call_tool(TOOL, {})["result"])
        srv.close()
    assert (workdir / SIGNAL).is_file()
    assert payload["workdir"] == "."


def test_barrier_refusals_create_nothing_anywhere(launcher, workdir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("outside")
    plain = tmp_path / "plain"
    plain.mkdir()
    with RawServer.start(launcher, "barrier") as srv:
        srv.initialize()
        # The server created .sdd (and .sdd/runtime) on start; point `signals` outside.
        (workdir / ".sdd" / "runtime").mkdir(exist_ok=True)
        os.symlink(outside, workdir / ".sdd" / "runtime" / "signals")
        cases = [
            ({"workdir": str(workdir)}, "symlink_escape"),
            ({"workdir": f"{workdir}/sub/.."}, "invalid_workdir"),
            ({"workdir": "../" + workdir.name}, "invalid_workdir"),
            # The engine's argument screen refuses control characters before the handler runs.
            ({"workdir": f"{workdir}\u0000x"}, ("invalid_arguments", "invalid_workdir")),
            ({"workdir": "/" + "a" * 4096}, "invalid_workdir"),
            ({"workdir": str(plain)}, "not_a_project"),
            ({"workdir": str(tmp_path / "missing")}, "workdir_not_found"),
        ]
        for args, code in cases:
            before = (tree(workdir), tree(outside), tree(plain))
            err = refusal(srv.call_tool(TOOL, args)["result"])
            codes = code if isinstance(code, tuple) else (code,)
            assert err["error"] in codes, (args["workdir"][:80], err)
            # The ledger grows by the call's audit record only; compare everything else.
            after = (tree(workdir), tree(outside), tree(plain))
            assert (project(after[0]), after[1], after[2]) == (project(before[0]), before[1], before[2]), args
        # A plain non-string workdir is an argument error, not a crash.
        bad = srv.call_tool(TOOL, {"workdir": 7})
        assert "error" in bad or outcome(bad["result"]).is_error
        srv.close()
    assert sorted(p.name for p in outside.iterdir()) == ["keep"]
    assert not (plain / ".sdd").exists()
    assert "orchestrator.shutdown_requested" not in audit_kinds(workdir)
