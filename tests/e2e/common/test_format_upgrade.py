"""Format 3 from outside: every record's tag is HMAC-SHA256(key, label + hash bytes), checked here
with Python's own hmac; a ledger written in format 2 (each tag over the pre-image) is refused by
the server and by `audit verify` with a message naming `bernstein ledger upgrade`, and the
upgrade gives back exactly the bytes the current format writes. The workdir itself is never
edited: every attack runs on a copy.
"""

from __future__ import annotations

import hashlib
import hmac
import re

import pytest

from harness import ledger
from harness.launch import run_cli
from harness.payloads import ok_payload
from harness.raw import RawServer

LABEL = b"bernstein.record.v3:"
TAG = re.compile(rb',"mac":"hmac-sha256:([0-9a-f]{64})"')
HASH = re.compile(rb',"hash":"sha256:([0-9a-f]{64})"')


@pytest.fixture
def store(launcher, workdir):
    with RawServer.start(launcher, "fill") as srv:
        srv.initialize()
        for goal in ("upgrade one", "upgrade two"):
            ok_payload(srv.call_tool("bernstein_run", {"goal": goal})["result"])
        code, _ = srv.close()
        assert code == 0
    sdd = workdir / ".sdd"
    ledger.assert_verifies(sdd)
    key = bytes.fromhex((sdd / "keys" / "audit.key").read_text().strip())
    return sdd, key


def top_level(pattern: re.Pattern[bytes], line: bytes) -> re.Match[bytes]:
    """The record's own member (the last match: the body comes first and may hold look-alikes)."""
    return list(pattern.finditer(line))[-1]


def preimage(line: bytes) -> bytes:
    """The line without its `hash` and `mac` members (FORMATS.md section 3)."""
    for pattern in (TAG, HASH):
        m = top_level(pattern, line)
        line = line[: m.start()] + line[m.end():]
    return line


def test_every_tag_is_the_hmac_of_the_label_and_the_hash(store):
    sdd, key = store
    lines = ledger.ledger_lines(sdd)
    assert lines
    for ll in lines:
        digest = bytes.fromhex(top_level(HASH, ll.raw).group(1).decode())
        assert hashlib.sha256(preimage(ll.raw)).digest() == digest
        tag = hmac.new(key, LABEL + digest, hashlib.sha256).hexdigest().encode()
        assert top_level(TAG, ll.raw).group(1) == tag, f"line {ll.line_no}"


def test_a_format_2_ledger_is_refused_then_upgraded_to_the_same_bytes(store, tmp_path):
    sdd, key = store
    copy = ledger.copy_store(sdd, tmp_path / "v2")
    path = copy / "ledger" / "ledger.jsonl"
    current = path.read_bytes()
    old = []
    for line in current.split(b"\n")[:-1]:
        m = top_level(TAG, line)
        tag = hmac.new(key, preimage(line), hashlib.sha256).hexdigest().encode()
        old.append(line[: m.start(1)] + tag + line[m.end(1):])
    path.write_bytes(b"\n".join(old) + b"\n")
    # The checkpoint is left in place: its offsets still fit, and it must not hide the tags.
    assert (copy / "ledger" / "checkpoint.json").exists()

    proc = ledger.audit_verify(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ledger.jsonl:1 (seq 1)" in proc.stdout and "format-2 tag" in proc.stdout, proc.stdout
    assert "bernstein ledger upgrade" in proc.stdout, proc.stdout
    served = run_cli(["mcp", "--workdir", str(copy.parent)], timeout=60)
    assert served.returncode == 2, served.stderr
    assert "was written in ledger format 2" in served.stderr, served.stderr
    assert "bernstein ledger upgrade" in served.stderr and "corrupt" not in served.stderr, served.stderr

    up = run_cli(["ledger", "upgrade", "--dir", str(copy)])
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"upgraded to format 3: {len(old)} tags replaced, 0 untagged records sealed" in up.stdout, up.stdout
    assert path.read_bytes() == current, "re-tagging under the same key gives the current format's bytes"
    ledger.assert_verifies(copy)
    again = run_cli(["ledger", "upgrade", "--dir", str(copy)])
    assert again.returncode == 0 and "already format 3" in again.stdout, again.stdout
    served = run_cli(["mcp", "--workdir", str(copy.parent)], timeout=60)
    assert served.returncode == 0, served.stderr


def test_a_format_2_tag_under_another_key_is_not_upgraded(store, tmp_path):
    sdd, key = store
    copy = ledger.copy_store(sdd, tmp_path / "forged")
    path = copy / "ledger" / "ledger.jsonl"
    before = path.read_bytes()
    lines = before.split(b"\n")[:-1]
    out = []
    for n, line in enumerate(lines, 1):
        m = top_level(TAG, line)
        k = b"mallory" if n == 2 else key
        tag = hmac.new(k, preimage(line), hashlib.sha256).hexdigest().encode()
        out.append(line[: m.start(1)] + tag + line[m.end(1):])
    forged = b"\n".join(out) + b"\n"
    path.write_bytes(forged)
    up = run_cli(["ledger", "upgrade", "--dir", str(copy)])
    assert up.returncode == 1, up.stdout + up.stderr
    assert "not upgraded, nothing changed" in up.stdout and "ledger.jsonl:2 (seq 2)" in up.stdout, up.stdout
    assert path.read_bytes() == forged
