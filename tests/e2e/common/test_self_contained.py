"""The repository stands on its own: no tracked test, script, build file or document reaches for
a path outside the checkout (a sibling `shared/` folder, `../..` past the root). A clone in an
empty directory must test and read the same as this one.
"""

from __future__ import annotations

import re
import subprocess

from harness.launch import REPO_ROOT

# A path that leaves the repository: a sibling folder or a parent of the root.
OUTSIDE = [
    re.compile(r"\.\./shared\b"),
    re.compile(r"REPO_ROOT\.parent\b"),
    re.compile(r"CARGO_MANIFEST_DIR\"\)?,\s*\"/\.\./\.\./"),
    re.compile(r"\bDESIGN\.md\b"),
]
CHECKED = (".py", ".rs", ".sh", ".toml", ".md", ".mjs", ".json", ".yml", ".yaml")


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.splitlines() if f.endswith(CHECKED) and not f.startswith("tests/mcp-schema/")]


def test_no_tracked_file_reads_outside_the_repository():
    offenders = []
    this = "tests/e2e/common/test_self_contained.py"
    for name in tracked_files():
        if name == this:
            continue
        path = REPO_ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        for pattern in OUTSIDE:
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                offenders.append(f"{name}:{line}: {m.group(0)}")
    assert not offenders, "paths outside the repository:\n" + "\n".join(offenders)


def test_the_vendored_schemas_are_present():
    for revision in ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "ext-tasks"):
        assert (REPO_ROOT / "tests" / "mcp-schema" / revision / "schema.json").is_file(), revision
