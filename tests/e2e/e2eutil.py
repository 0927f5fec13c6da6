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
