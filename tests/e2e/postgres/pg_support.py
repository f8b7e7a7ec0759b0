"""Helpers of the PostgreSQL end-to-end tests: the throwaway cluster script, psql, and reading
answers and exported ledgers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PG_SCRIPT = ROOT / "scripts" / "postgres.sh"


def pg_script(*args: str) -> str:
    out = subprocess.run(["bash", str(PG_SCRIPT), *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/postgres.sh {' '.join(args)} failed: {out.stderr[-2000:]}")
    return out.stdout.strip()


def psql(url: str, sql: str) -> str:
    out = subprocess.run(["psql", url, "-Atqc", sql], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"psql {sql!r} failed: {out.stderr}")
    return out.stdout.strip()


TIMING = ("latency_ms", "ts")


def _without_timing(node):
    """`node` with the `_meter` timing fields dropped, looking inside JSON text blocks too."""
    if isinstance(node, dict):
        return {
            k: {mk: mv for mk, mv in v.items() if mk not in TIMING} if k == "_meter" and isinstance(v, dict)
            else _without_timing(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_without_timing(x) for x in node]
    if isinstance(node, str) and node.startswith("{"):
        try:
            return _without_timing(json.loads(node))
        except ValueError:
            return node
    return node


def normalised(reply) -> str:
    """The JSON-RPC response as canonical text, the `_meter` timing fields removed (all that may
    differ between instances)."""
    return json.dumps(_without_timing(reply.rpc_response()), sort_keys=True)


def payload(reply) -> dict:
    resp = reply.rpc_response()
    assert "result" in resp, resp
    doc = json.loads(resp["result"]["content"][0]["text"])
    return doc.get("result", doc) if isinstance(doc, dict) else doc


def export_and_verify(bernstein_bin: Path, workdir: Path, url: str, out: Path) -> list[dict]:
    """`bernstein ledger export`, then `bernstein audit verify` on the copy; the records."""
    done = subprocess.run(
        [str(bernstein_bin), "--workdir", str(workdir), "ledger", "export", "--store", url, "--out", str(out),
         "--with-keys"],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    verify = subprocess.run(
        [str(bernstein_bin), "audit", "verify", "--workdir", str(out)], capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "MAC" in verify.stdout or "mac" in verify.stdout.lower(), verify.stdout
    lines = (out / ".sdd" / "ledger" / "ledger.jsonl").read_bytes().splitlines()
    return [json.loads(line) for line in lines]


