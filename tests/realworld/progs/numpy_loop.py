"""numpy_loop — numpy arrays of many sizes made and dropped (large ones are
malloc's own mmaps), for tests/realworld.

Usage: /usr/bin/python3 numpy_loop.py [SECONDS]   (0 or none: until killed)
Prints "ready" once started.  With MW_RW_CKPT=DIR it writes
DIR/final.status and DIR/final.smaps as its last act (rwckpt.py).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rwckpt  # noqa: E402

import numpy as np  # noqa: E402

rng = np.random.default_rng(0)
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 0
keep = [None] * 16
print("ready", flush=True)
end = time.monotonic() + secs
i = 0
while not secs or time.monotonic() < end:
    n = int(rng.integers(1, 1 << 20))
    a = rng.random(n)
    b = np.sort(a) * 2.0 + a.mean()
    keep[i % len(keep)] = b[: n // 2].copy()
    i += 1
rwckpt.final()
