"""Reading Bernstein's tool results, whichever client produced them.

A tool result's first text content is JSON: by default the meter envelope
`{"result": ..., "_meter": {tool, call_id, latency_ms, cost_usd, ok, ts}}`, or the bare payload
when `BERNSTEIN_MCP_COST_METER=0`. A refusal is a result with `isError: true` whose payload is
`{error, message, hint, ...}`. These helpers accept SDK result objects (pydantic, either
major) and raw JSON-RPC dicts alike, and assert on shape, never on wording.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

METER_KEYS = {"tool", "call_id", "latency_ms", "cost_usd", "ok", "ts"}


@dataclass
class ToolOutcome:
    is_error: bool
    text: str  # the raw JSON text of the first text content
    document: object  # that text, parsed
    meter: dict | None  # the `_meter` block when enveloped
    payload: object  # the bare result (the envelope's `result`, or the document)


def _as_dict(result) -> dict:
    if isinstance(result, dict):
        return result
    # pydantic models of either SDK major
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def outcome(result) -> ToolOutcome:
    """Decodes a CallToolResult (SDK object or the `result` member of a raw response)."""
    d = _as_dict(result)
    texts = [c.get("text") for c in d.get("content", []) if c.get("type") == "text"]
    assert texts, f"tool result has no text content: {d}"
    text = texts[0]
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise AssertionError(f"tool result text is not JSON: {text[:300]!r}") from e
    meter = None
    payload = doc
    if isinstance(doc, dict) and "_meter" in doc:
        assert set(doc) == {"result", "_meter"}, f"meter envelope must be exactly {{result, _meter}}: {list(doc)}"
        meter = doc["_meter"]
        payload = doc["result"]
    return ToolOutcome(bool(d.get("isError", False)), text, doc, meter, payload)


def ok_payload(result) -> object:
    """The bare payload of a successful call (fails the test on isError)."""
    o = outcome(result)
    assert not o.is_error, f"tool call unexpectedly failed: {o.text[:500]}"
    return o.payload


def refusal(result) -> dict:
    """The structured error of a refused call: `{error, message, hint, ...}` with isError."""
    o = outcome(result)
    assert o.is_error, f"expected a refusal (isError), got: {o.text[:500]}"
    err = o.payload
    assert isinstance(err, dict), f"refusal payload is not an object: {o.text[:300]}"
    for key in ("error", "message", "hint"):
        assert isinstance(err.get(key), str) and err[key], f"refusal lacks a non-empty {key!r}: {err}"
    return err


def check_meter(meter: dict, tool: str, ok: bool = True) -> None:
    assert isinstance(meter, dict), f"_meter is not an object: {meter!r}"
    missing = METER_KEYS - set(meter)
    assert not missing, f"_meter lacks {sorted(missing)}: {meter}"
    assert meter["tool"] == tool, meter
    assert meter["ok"] is ok, meter
    assert isinstance(meter["call_id"], str) and meter["call_id"], meter
    assert isinstance(meter["latency_ms"], (int, float)) and meter["latency_ms"] >= 0, meter
    assert isinstance(meter["cost_usd"], (int, float)) and meter["cost_usd"] >= 0, meter
    assert isinstance(meter["ts"], (str, int, float)), meter


def find_values(obj, key: str) -> list:
    """Every value stored under `key` anywhere inside `obj` (depth-first)."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                found.append(v)
            found.extend(find_values(v, key))
    elif isinstance(obj, list):
        for v in obj:
            found.extend(find_values(v, key))
    return found


def mentions(obj, text: str) -> bool:
    return text in json.dumps(obj)
