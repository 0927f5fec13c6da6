# SPDX-License-Identifier: GPL-2.0
"""markself.py - a Python program that marks itself through memwatch's
control socket (include/memwatch_mark.py): phase "load" allocates and
touches 64 MiB, phase "infer" runs 5 iterations that allocate nothing
lasting, phase "done" frees the 64 MiB.  Right before each phase mark it
reads its own VmSize and VmRSS, and at the end writes them to
$MW_CKPT_DIR/marks, a line "NAME VMSIZE VMRSS" (bytes) each.  Every mark
must be answered "ok": exit status 3 if one is not."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include"))
import memwatch_mark  # noqa: E402

seen = []


def phase(name):
    with open("/proc/self/status") as f:
        st = {k: int(v.split()[0]) * 1024 for k, _, v in (x.partition(":") for x in f)
              if k in ("VmSize", "VmRSS")}
    seen.append((name, st["VmSize"], st["VmRSS"]))
    return memwatch_mark.phase(name)


ok = phase("load")
model = bytearray(64 << 20)
for i in range(0, len(model), 4096):
    model[i] = 1
ok &= phase("infer")
for _ in range(5):
    ok &= memwatch_mark.iteration()
    sum(model[::65536])
ok &= phase("done")
del model
if os.environ.get("MW_CKPT_DIR"):
    with open(os.path.join(os.environ["MW_CKPT_DIR"], "marks"), "w") as f:
        f.writelines(f"{n} {vm} {rss}\n" for n, vm, rss in seen)
sys.exit(0 if ok else 3)
