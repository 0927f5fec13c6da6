"""What the end-to-end case modules share: units, the RSS tolerance, the
/proc/PID/status parser, and waiting for a condition."""
import time

KIB = 1024
MIB = 1024 * KIB


def rss_tol(truth):
    """Tolerance the brief sets for RSS: 1% or 256 KiB, whichever is larger."""
    return max(truth // 100, 256 * KIB)


def parse_status(path):
    """The kB fields of a /proc/PID/status copy, in bytes."""
    out = {}
    with open(path) as f:
        for line in f:
            key, _, val = line.partition(":")
            val = val.strip()
            if val.endswith(" kB"):
                out[key] = int(val[:-3]) * KIB
    return out


def wait_for(pred, timeout, step=0.005):
    """Poll pred until it gives something true, and return that; or None
    when timeout seconds pass."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def _release():
    import os
    import re
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2)))


# Before 6.2 (f1a7941243c1, "mm: convert mm's rss stats into percpu_counter")
# a task's own faults count in caches in the task, folded into the mm's
# counters every 64 faults: /proc/PID/status shows the mm's counters alone,
# behind the truth by what the caches hold; smaps walks the page tables and
# is exact.  memwatch reports the exact value (docs/kernels.md).
SPLIT_RSS = _release() < (6, 2)


def smaps_rss(path):
    """Sum of Rss over a copy of /proc/PID/smaps, in bytes: the resident
    pages as the page tables have them."""
    total = 0
    with open(path, errors="surrogateescape") as f:
        for line in f:
            if line.startswith("Rss:"):
                total += int(line.split()[1]) * KIB
    return total


def status_lag(status, smaps_path):
    """How far a checkpoint's status VmRSS is behind its smaps (SPLIT_RSS
    kernels; 0 elsewhere): the slack its per-counter readings need."""
    if not SPLIT_RSS:
        return 0
    return max(0, smaps_rss(smaps_path) - status["VmRSS"])
