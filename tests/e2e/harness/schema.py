"""The official MCP JSON schemas, loaded once and queried by type name.

Revisions 2025-03-26 and 2025-06-18 are draft-07 documents with their types under
`definitions`; 2025-11-25 and 2026-07-28 are 2020-12 documents with `$defs`. Callers name a
revision and a type (`"2025-06-18", "ListToolsResult"`) and get the list of violations.

This module never decides which type a message should have; `transcript.py` does.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

from .launch import schema_dir

# Revisions for which a schema exists. 2024-11-05 has none: transcripts negotiated at
# 2024-11-05 are checked against the nearest later revision (see `validation_revision`).
KNOWN_REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
HANDSHAKE_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_REVISIONS = ("2026-07-28",)
NEWEST_HANDSHAKE = "2025-11-25"
NEWEST_MODERN = "2026-07-28"


def validation_revision(protocol_version: str | None) -> str:
    """The schema revision used to check messages of a negotiated protocol version."""
    if protocol_version in KNOWN_REVISIONS:
        return protocol_version
    if protocol_version == "2024-11-05":
        # No official schema; 2025-03-26 is the closest superset of its message shapes.
        return "2025-03-26"
    return NEWEST_HANDSHAKE


class RevisionSchema:
    """One revision's schema document with validators built on demand per type."""

    def __init__(self, revision: str, path: Path):
        self.revision = revision
        self.document = json.loads(path.read_text(encoding="utf-8"))
        self.defs_key = "$defs" if "$defs" in self.document else "definitions"
        self.defs: dict = self.document[self.defs_key]
        self.uri = f"urn:mcp-schema:{revision}"
        resource = Resource.from_contents(self.document)
        self.registry = Registry().with_resource(self.uri, resource)
        self.validator_cls = jsonschema.validators.validator_for(self.document)
        self._validators: dict[str, object] = {}
        self._method_defs: dict[str, str] | None = None

    def has(self, type_name: str) -> bool:
        return type_name in self.defs

    def validator(self, pointer: str):
        v = self._validators.get(pointer)
        if v is None:
            v = self.validator_cls({"$ref": f"{self.uri}#{pointer}"}, registry=self.registry)
            self._validators[pointer] = v
        return v

    def errors(self, type_name: str, instance) -> list[str]:
        """Violations of `instance` against `type_name` (empty when valid)."""
        return self.errors_at(f"/{self.defs_key}/{type_name}", instance)

    def errors_at(self, pointer: str, instance) -> list[str]:
        v = self.validator(pointer)
        out = []
        for err in sorted(v.iter_errors(instance), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in err.absolute_path) or "<root>"
            out.append(f"{self.revision} {pointer}: at {where}: {err.message[:300]}")
        return out

    def def_for_method(self, method: str) -> str | None:
        """The request or notification type whose `method` is the constant `method`."""
        if self._method_defs is None:
            table: dict[str, str] = {}
            for name, d in self.defs.items():
                m = d.get("properties", {}).get("method", {}) if isinstance(d, dict) else {}
                const = m.get("const")
                if isinstance(const, str) and name.endswith(("Request", "Notification")):
                    table.setdefault(const, name)
            self._method_defs = table
        return self._method_defs.get(method)

    def error_object_pointer(self) -> str:
        """Pointer to the JSON-RPC error *object* type (`{code, message, data?}`)."""
        if "Error" in self.defs:
            return f"/{self.defs_key}/Error"
        return f"/{self.defs_key}/JSONRPCError/properties/error"

    def result_envelope(self) -> str:
        return "JSONRPCResultResponse" if "JSONRPCResultResponse" in self.defs else "JSONRPCResponse"

    def error_envelope(self) -> str:
        return "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in self.defs else "JSONRPCError"


@cache
def load(revision: str) -> RevisionSchema:
    path = schema_dir() / revision / "schema.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"MCP schema {path} is missing from the repository (tests/mcp-schema)"
        )
    return RevisionSchema(revision, path)
