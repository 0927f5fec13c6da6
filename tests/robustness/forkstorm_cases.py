"""-p PID -f under a fork storm: a shell starts hundreds of short-lived
children as fast as it can.  With the default ring buffer every one of them is reported
(an exit line each, the right exit status).  With a 4 KiB buffer, and
memwatch stopped (SIGSTOP) while the storm runs so the buffer surely
overflows, the exits that did not fit are counted: reported + lost =
started, and memwatch still ends cleanly."""
import json
import os
import signal
import subprocess
import tempfile
import time

import common

N = 400


def storm(c, mw, tmp, label, extra, hold):
    """The storm under memwatch -f --by process -p (host-wide totals); hold: memwatch is stopped while it
    runs (the shell is not ptraced with -p, so it goes on)."""
    out = os.path.join(tmp, f"{label}.json")
    err = open(os.path.join(tmp, f"{label}.err"), "w+")
    go = os.path.join(tmp, f"{label}.go")
    # Builtins only until the storm: no child but the storm's own.
    script = (f"while [ ! -e {go} ]; do :; done; "
              f"i=0; while [ $i -lt {N} ]; do /bin/true & i=$((i+1)); done; wait; exit 7")
    sh = subprocess.Popen(["/bin/sh", "-c", script])
    p = subprocess.Popen([mw, "-q", "-f", "--by", "process", "-p", str(sh.pid), "-j", out] + extra,
                         stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        err.seek(0)
        if "tracing" in err.read():
            break
        time.sleep(0.02)
    if hold:
        p.send_signal(signal.SIGSTOP)
    open(go, "w").close()
    c.eq(sh.wait(timeout=120), 7, f"{label}: the storm ran")
    if hold:
        p.send_signal(signal.SIGCONT)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    c.eq(rc, 0, f"{label}: memwatch ends cleanly")
    lines = []
    if os.path.exists(out):
        with open(out) as f:
            lines = [json.loads(x) for x in f]
    exits = [o for o in lines if o.get("type") == "exit"]
    steps = [o for o in lines if o.get("type") == "step"]
    lost = steps[-1]["lost_events"] if steps else -1
    trues = [o for o in exits if o["comm"] == "true"]
    sh_exit = [o for o in exits if o["pid"] == sh.pid]
    c.check(len(sh_exit) == 1 and sh_exit[0].get("exit_status") == 7 or lost > 0,
            f"{label}: the shell's own exit, status 7")
    return exits, trues, lost


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-forkstorm-")
    try:
        with common.subcase(c, "forkstorm default buffer"):
            exits, trues, lost = storm(c, mw, tmp, "default", [], False)
            c.eq(lost, 0, "fork storm: no exit lost with the default buffer")
            c.eq(len(trues), N, "fork storm: an exit line for every child")
            c.check(all(o.get("exit_status") == 0 for o in trues), "fork storm: each exit status 0")
            c.check(len({o["pid"] for o in trues}) == N, "fork storm: every child once")
        with common.subcase(c, "forkstorm 4 KiB buffer"):
            exits, trues, lost = storm(c, mw, tmp, "tiny", ["--ringbuf-size", "4096"], True)
            c.check(lost > 0, f"fork storm, 4 KiB buffer: exits were lost ({lost})")
            c.eq(len(exits) + lost, N + 1, "fork storm, 4 KiB buffer: reported + lost = started")
    finally:
        subprocess.run(["rm", "-rf", tmp])
