"""The `.sdd/` ledger as seen from outside: `bernstein audit verify` and tampering helpers.

Ledger files are found by content, not by name (their layout is the store's business): a file
is a ledger file when its lines are JSON records carrying `seq`, `prev`, `hash`, `stream` and
`kind`. Tampering happens on copies only; the workdir a test used is never edited.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .launch import run_cli

RECORD_KEYS = {"seq", "prev", "hash", "stream", "kind"}


@dataclass(frozen=True)
class LedgerLine:
    file: Path
    line_no: int  # 1-based
    seq: int
    raw: bytes


def audit_verify(sdd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["audit", "verify", "--dir", str(sdd)])


def assert_verifies(sdd: Path) -> None:
    proc = audit_verify(sdd)
    assert proc.returncode == 0, (
        f"bernstein audit verify --dir {sdd} exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    )


def _is_record(line: bytes) -> dict | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if isinstance(obj, dict) and RECORD_KEYS <= set(obj) and isinstance(obj.get("seq"), int):
        return obj
    return None


def ledger_lines(sdd: Path) -> list[LedgerLine]:
    """Every record line under `sdd`, ordered by seq."""
    out: list[LedgerLine] = []
    for path in sorted(p for p in sdd.rglob("*") if p.is_file()):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if not lines:
            continue
        records = [_is_record(line) for line in lines]
        if not all(r is not None for r in records):
            continue  # not a ledger file (key, snapshot, lock, ...)
        for n, (line, rec) in enumerate(zip(lines, records), 1):
            out.append(LedgerLine(path, n, rec["seq"], line))
    out.sort(key=lambda ll: ll.seq)
    return out


def copy_store(sdd: Path, dest_root: Path) -> Path:
    """A copy of `sdd` at `dest_root/.sdd` (modes preserved, so key files stay 0600)."""
    dest = dest_root / ".sdd"
    shutil.copytree(sdd, dest, symlinks=True)
    return dest


def tampered_copy(sdd: Path, dest_root: Path, old: bytes, new: bytes) -> Path:
    """A copy of the store `sdd` under `dest_root` whose ledger has `old` replaced by `new` (an
    edit that breaks its hashes) and no checkpoint to start from; the copy's `.sdd/`."""
    copy = copy_store(sdd, dest_root)
    for cp in (copy / "ledger").glob("checkpoint*"):
        cp.unlink()
    path = copy / "ledger" / "ledger.jsonl"
    path.write_bytes(path.read_bytes().replace(old, new))
    return copy


def replace_line(path: Path, line_no: int, new: bytes | None) -> None:
    """Replaces (or, with None, removes) 1-based line `line_no` of `path`, keeping the rest."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if new is None:
        del lines[line_no - 1]
    else:
        lines[line_no - 1] = new
    path.write_bytes(b"\n".join(lines))


def flip_byte(line: bytes, index: int) -> bytes:
    """`line` with the byte at `index` XOR 0x01 (ASCII stays ASCII, never a newline)."""
    b = bytearray(line)
    b[index] ^= 0x01
    assert b[index] != ord("\n")
    return bytes(b)


def names_entry(output: str, file: Path, line_no: int, seq: int) -> list[str]:
    """What the verifier's message fails to name of the bad entry (empty when all named)."""
    missing = []
    if file.name not in output:
        missing.append(f"file {file.name}")
    if not re.search(rf"(?:line\D{{0,3}}|:){line_no}\b", output, re.IGNORECASE):
        missing.append(f"line {line_no}")
    if not re.search(rf"seq\W{{0,3}}{seq}\b", output, re.IGNORECASE):
        missing.append(f"seq {seq}")
    return missing
