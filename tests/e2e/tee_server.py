#!/usr/bin/env python3
"""Recording stdio proxy for the end-to-end suite.

Runs the real server command given after ``--`` and sits between it and the MCP client:

* every line the client writes is copied to ``PREFIX.client.jsonl`` and then to the server;
* every line the server writes on stdout is copied to ``PREFIX.server.jsonl`` and then to
  the client;
* the server's stderr goes to ``PREFIX.stderr.log``;
* the server's exit status is written to ``PREFIX.exit`` once it has ended.

The bytes are passed through unchanged (no re-encoding, no reordering), so the logs are exactly
what went over the wire and every server message can be schema-validated afterwards.

This proxy must never interpret, drop or synthesise messages: it is a wire tap, nothing more.

Usage: tee_server.py --log-prefix PREFIX -- COMMAND [ARGS...]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading


def _pump_client_to_server(src, dst, log) -> None:
    """Copies client lines to the server until the client closes its end."""
    try:
        for line in iter(src.readline, b""):
            log.write(line)
            log.flush()
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, ValueError):
                # The server is gone; keep draining (and logging) what the client sends.
                continue
    finally:
        try:
            dst.close()
        except (BrokenPipeError, OSError, ValueError):
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--log-prefix" or argv[2] != "--":
        sys.stderr.write("usage: tee_server.py --log-prefix PREFIX -- COMMAND [ARGS...]\n")
        return 2
    prefix = argv[1]
    command = argv[3:]

    client_log = open(prefix + ".client.jsonl", "wb")
    server_log = open(prefix + ".server.jsonl", "wb")
    stderr_log = open(prefix + ".stderr.log", "wb")

    child = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr_log,
        bufsize=0,
    )

    def forward(signum, _frame):
        if child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)

    pump = threading.Thread(
        target=_pump_client_to_server,
        args=(sys.stdin.buffer, child.stdin, client_log),
        daemon=True,
    )
    pump.start()

    out = sys.stdout.buffer
    client_gone = False
    for line in iter(child.stdout.readline, b""):
        server_log.write(line)
        server_log.flush()
        if client_gone:
            continue
        try:
            out.write(line)
            out.flush()
        except (BrokenPipeError, ValueError):
            client_gone = True

    code = child.wait()
    server_log.close()
    stderr_log.close()
    with open(prefix + ".exit", "w", encoding="ascii") as f:
        f.write(f"{code}\n")
    # The client log is still written by the pump thread while the client keeps its end open;
    # flush what we have. The daemon thread dies with the process.
    try:
        client_log.flush()
    except ValueError:
        pass
    if code < 0:
        # Mirror the child's death by signal the way a shell would.
        return 128 - code
    return code


if __name__ == "__main__":
    try:
        rc = main(sys.argv[1:])
    except KeyboardInterrupt:
        rc = 130
    sys.stdout.flush()
    os._exit(rc)
