"""Artifacts, lineage, capsules and run handles end to end, through the official Python SDK of
whichever major the venv holds (`mcp<2`: handshake era; `mcp>=2`: the stateless era), on every
runtime (the artifact flow also over streamable HTTP):

* `bernstein_post_artifact` versions a key (v1, v2, an idempotent re-post), with the host's W3C
  trace context in `_meta`; `bernstein_verify_lineage` walks the chain and gives the host's
  trace id back from the provenance (and, with `check_file`, compares the file at the key's
  path through a host read); an invalid traceparent is ignored, never recorded.
* `bernstein_task_capsule` issues a signed capsule that verifies through the tool and offline
  (`bernstein capsule verify`), and a flipped byte fails both.
* `bernstein audit verify-handle` accepts a saved `bernstein_run_status` result and rejects a
  forged status whose receiptHash was recomputed (exit 1).
"""

from __future__ import annotations

import hashlib
import json
from contextlib import asynccontextmanager
from importlib.metadata import version

import pytest

from harness.launch import run_cli
from harness.ledger import ledger_lines
from harness.payloads import outcome

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c"


MODERN_SDK = int(version("mcp").split(".")[0]) >= 2


@asynccontextmanager
async def sdk(launcher, label: str, transport: str = "stdio"):
    """A connected client of the venv's SDK major, tier all, over stdio or streamable HTTP."""
    if transport == "http":
        from harness import sdk_http
        from harness.http_server import HttpServer

        srv = HttpServer(launcher, label, tier="all")
        try:
            if MODERN_SDK:
                async with sdk_http.stateless(srv) as client:
                    yield client
            else:
                async with sdk_http.handshake_streamable(srv) as (session, _init):
                    yield session
        finally:
            srv.stop()
    elif MODERN_SDK:
        from harness.sdk_stateless import connect

        async with connect(launcher, label, tier="all") as client:
            yield client
    else:
        from harness.sdk_handshake import connect

        async with connect(launcher, label, tier="all") as (session, _init):
            yield session


async def call(client, name: str, arguments: dict, meta: dict | None = None):
    kw = {"meta": meta} if meta is not None else {}
    result = await client.call_tool(name, arguments, **kw)
    o = outcome(result)
    return o, result


async def ok(client, name: str, arguments: dict, meta: dict | None = None):
    o, _ = await call(client, name, arguments, meta)
    assert not o.is_error, f"{name} {arguments} failed: {o.text[:500]}"
    return o.payload


def canonical_sha256(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_artifact_versions_lineage_and_trace_provenance(launcher, workdir, transport):
    key = "reports/release-notes.md"
    async with sdk(launcher, f"artifacts-{transport}", transport) as client:
        run = await ok(client, "bernstein_run", {"goal": "Write the release notes"}, {"traceparent": TRACEPARENT})
        task = run["task_id"]
        meta = {"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7", "baggage": "tenant=acme"}
        post = {"task_id": task, "key": key, "kind": "report", "title": "Notes", "content": "# v1\n- faster"}
        v1 = await ok(client, "bernstein_post_artifact", post, meta)
        assert v1["version"] == 1 and v1["artifact_id"].startswith("A-")
        assert v1["content_hash"] == canonical_sha256({"content": post["content"], "kind": "report", "title": "Notes"})
        assert v1["trace"] == {
            "trace_id": TRACE_ID,
            "parent_span": "00f067aa0ba902b7",
            "traceparent": TRACEPARENT,
            "tracestate": "rojo=00f067aa0ba902b7",
            "baggage": "tenant=acme",
        }
        again = await ok(client, "bernstein_post_artifact", post, meta)
        assert again == v1, "re-posting the newest content is idempotent"
        other = {"traceparent": f"00-{OTHER_TRACE}-b7ad6b7169203331-00"}
        v2 = await ok(client, "bernstein_post_artifact", {**post, "content": "# v2"}, other)
        assert (v2["version"], v2["parent_lineage_head"]) == (2, v1["lineage_head"])
        # An invalid traceparent (uppercase hex) is ignored: no trace, and no error.
        table = {"task_id": task, "key": "data/t", "kind": "table", "content": {"columns": ["a"], "rows": [["1"]]}}
        bad = await ok(client, "bernstein_post_artifact", table, {"traceparent": TRACEPARENT.upper()})
        assert "trace" not in bad
        report = await ok(client, "bernstein_verify_lineage", {"artefact_path": key})
        assert report["valid"], report["problems"]
        assert [v["version"] for v in report["versions"]] == [1, 2]
        assert report["head"] == v2["lineage_head"]
        assert report["trace"]["trace_id"] == OTHER_TRACE
        # Each lineage entry carries its post's traceparent, whole, as step_id.
        assert [v["step_id"] for v in report["versions"]] == [TRACEPARENT, other["traceparent"]]
        first = await ok(client, "bernstein_verify_lineage", {"artefact_path": f"{key}@1"})
        assert first["valid"] and first["head"] == v1["lineage_head"]
        assert first["trace"]["trace_id"] == TRACE_ID, "the host's trace id is read back from the provenance"
        # check_file: the runtime reads the file at the key's path for the handler.
        on_disk = workdir / key
        on_disk.parent.mkdir(parents=True, exist_ok=True)
        on_disk.write_text("# v2")
        same = await ok(client, "bernstein_verify_lineage", {"artefact_path": key, "check_file": True})
        assert same["file"]["matches_newest"], same["file"]
        on_disk.write_text("# v2 edited")
        edited = await ok(client, "bernstein_verify_lineage", {"artefact_path": key, "check_file": True})
        assert not edited["file"]["matches_newest"] and edited["valid"]
        unknown = await ok(client, "bernstein_verify_lineage", {"artefact_path": "never/posted"})
        assert not unknown["valid"]
        o, _ = await call(client, "bernstein_post_artifact", {**post, "kind": "link"})
        assert o.is_error and o.payload["error"] == "invalid_arguments"
    # bernstein_run recorded the host's trace on the new task's records, and the engine used its
    # trace id for the call's audit record.
    records = [json.loads(line.raw) for line in ledger_lines(workdir / ".sdd")]
    created = [r for r in records if r["kind"] in ("task.created", "run.task_added")]
    assert [r["body"]["trace"]["trace_id"] for r in created] == [TRACE_ID, TRACE_ID]
    calls = [r["body"] for r in records if r["kind"] == "mcp.stateless_call" and r["body"]["tool"] == "bernstein_run"]
    assert calls and calls[0]["trace_id"] == TRACE_ID
    posted = [r["body"] for r in records if r["kind"] == "artifact.posted"]
    assert [p.get("trace", {}).get("trace_id") for p in posted] == [TRACE_ID, OTHER_TRACE, None]


async def test_capsule_verifies_through_the_tool_and_offline(launcher, workdir, tmp_path):
    async with sdk(launcher, "capsule") as client:
        run = await ok(client, "bernstein_run", {"goal": "Capsule me"})
        task = run["task_id"]
        await ok(client, "bernstein_post_message", {"task_id": task, "body": "found it", "kind": "finding"})
        await ok(client, "bernstein_post_artifact", {"task_id": task, "key": "r.md", "kind": "report", "content": "r"})
        capsule = await ok(client, "bernstein_task_capsule", {"task_id": task})
        assert capsule["type"] == "bernstein.task_capsule.v1"
        assert [e["body"] for e in capsule["mailbox"]] == ["found it"]
        assert [a["key"] for a in capsule["artifacts"]] == ["r.md"]
        verdict = await ok(client, "bernstein_task_capsule", {"task_id": task, "verify": True, "capsule": capsule})
        assert verdict["valid"], verdict["problems"]
        tampered = json.loads(json.dumps(capsule).replace("found it", "found It"))
        verdict = await ok(client, "bernstein_task_capsule", {"task_id": task, "verify": True, "capsule": tampered})
        assert not verdict["valid"] and verdict["problems"]
    good, bad = tmp_path / "capsule.json", tmp_path / "tampered.json"
    good.write_text(json.dumps(capsule))
    bad.write_text(json.dumps(tampered))
    proc = run_cli(["--workdir", str(workdir), "capsule", "verify", str(good)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK:")
    proc = run_cli(["--workdir", str(workdir), "capsule", "verify", str(bad)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED" in proc.stdout


async def test_saved_handles_verify_offline_and_forged_ones_fail(launcher, workdir, tmp_path):
    async with sdk(launcher, "handles") as client:
        run = await ok(client, "bernstein_run", {"goal": "Handle me"})
        _, result = await call(client, "bernstein_run_status", {"run_id": run["task_id"]})
    saved = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    whole = tmp_path / "result.json"
    whole.write_text(json.dumps(saved))
    proc = run_cli(["--workdir", str(workdir), "audit", "verify-handle", str(whole)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "still current" in proc.stdout
    handle = outcome(result).payload
    forged = dict(handle, status="completed")
    fields = ["chainHead", "journalHead", "runId", "specRevision", "status", "taskId"]
    forged["receiptHash"] = canonical_sha256({k: forged[k] for k in fields})
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    proc = run_cli(["--workdir", str(workdir), "audit", "verify-handle", str(path)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED" in proc.stdout and "completed" in proc.stdout
    junk = tmp_path / "junk.json"
    junk.write_text(json.dumps({"hello": "world"}))
    proc = run_cli(["--workdir", str(workdir), "audit", "verify-handle", str(junk)])
    assert proc.returncode == 1 and "no run handle" in proc.stdout
