# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Mark phases and iterations for memwatch from Python, without forking
`memwatch mark` (a fork makes every page the program writes next a
copy-on-write fault).  Copy this file beside your program:

    import memwatch_mark
    memwatch_mark.phase("load_model")
    model = load()
    for batch in batches:
        memwatch_mark.iteration()
        model(batch)

`memwatch -- CMD` gives CMD its session's control socket as MEMWATCH_CONTROL;
without it each call does nothing and returns False.  The protocol is in
memwatch_mark.h beside this file: one line each way, answered once the
marker is taken."""
import os
import socket

_PATH = os.environ.get("MEMWATCH_CONTROL")


def _send(line):
    if not _PATH:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(_PATH)
            s.sendall(line.encode())
            return s.recv(64) == b"ok\n"
    except OSError:
        return False


def phase(name):
    """Start the phase @name (1 to 63 printable characters)."""
    return _send(f"phase {name}\n")


def iteration():
    """Start one iteration (a request, a batch, a step)."""
    return _send("iter\n")
