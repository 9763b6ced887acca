"""A worker started as a process of its own, for machines without ``fork`` (a student's Windows laptop).

``grade check`` normally forks its workers from a warm process. Where ``os.fork`` does not exist, the
trusted side starts ``python -m autograder.worker.spawned PORT FOLDER SPAWN LIMITS`` instead (``SPAWN``: the
request a forked worker gets, as JSON: the unit's modules, which were read from notebooks, which staging refused); the
worker connects back to 127.0.0.1:PORT, proves it is the one started (a one-time token from its environment), applies
what limits the platform has, and serves the same requests as a forked worker (``child.serve``).
"""
from __future__ import annotations

import json
import os
import socket
import sys


def main(argv: list[str]) -> None:
    port, folder, spawn, limits = int(argv[0]), argv[1], json.loads(argv[2]), json.loads(argv[3])
    token = os.environ.pop("AUTOGRADER_WORKER_TOKEN", "")
    # torch before connecting: its import (seconds on a busy machine) is the grader's start-up, bounded by the
    # parent's wait for the connection, never counted against the first step's time limit
    import torch  # noqa: PLC0415 - the grader's own start-up, before the student's code

    from . import child, confine  # noqa: PLC0415 - they import torch: with it, after the token left the environment

    channel = socket.create_connection(("127.0.0.1", port), timeout=60)
    channel.settimeout(None)
    channel.sendall(token.encode("ascii"))

    torch.set_num_threads(1)
    confine.limit_process(limits)  # memory and file size where the platform has rlimits
    child.serve(channel, folder, spawn)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    finally:
        sys.stdout.flush()
        os._exit(0)
