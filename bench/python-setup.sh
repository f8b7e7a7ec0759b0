#!/bin/sh
# Installs the Python implementation (PyPI `bernstein`, needs Python >= 3.12) into
# .cache/venv-bernstein-py, where `bernstein-bench` looks for it. PYTHON names the interpreter
# (default: the first of python3.13, python3.12 and pyenv's 3.12/3.13 found).
set -eu
cd "$(dirname "$0")/.."
py="${PYTHON:-}"
if [ -z "$py" ]; then
    for c in python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
        if command -v "$c" >/dev/null 2>&1; then py="$c"; break; fi
    done
fi
if [ -z "$py" ]; then
    echo "no Python >= 3.12 found (set PYTHON=/path/to/python3.12)" >&2
    exit 1
fi
"$py" -m venv .cache/venv-bernstein-py
.cache/venv-bernstein-py/bin/pip install --quiet "bernstein${BERNSTEIN_PY_VERSION:+==$BERNSTEIN_PY_VERSION}"
.cache/venv-bernstein-py/bin/python -c 'import importlib.metadata as m; print("bernstein", m.version("bernstein"))'
