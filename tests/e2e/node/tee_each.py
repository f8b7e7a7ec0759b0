#!/usr/bin/env python3
"""`tee_each.py PREFIX COMMAND...`: runs ../tee_server.py with the log prefix `PREFIX-<pid>`.

A Node client may spawn its stdio server more than once from the same parameters (the TS SDK
2.x `auto` mode probes on a short-lived sibling process first); one prefix per process keeps
each recording whole, and the launcher's teardown validates every one of them. No `--`
before COMMAND, so that CLIs which parse their target's arguments (the Inspector) pass it on.
"""

import os
import sys
from pathlib import Path

TEE = Path(__file__).resolve().parent.parent / "tee_server.py"

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.stderr.write("usage: tee_each.py PREFIX COMMAND [ARGS...]\n")
        sys.exit(2)
    prefix = f"{sys.argv[1]}-{os.getpid()}"
    os.execv(sys.executable, [sys.executable, str(TEE), "--log-prefix", prefix, "--", *sys.argv[2:]])
