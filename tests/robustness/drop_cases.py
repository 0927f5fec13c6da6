"""A ring buffer too small for the stream (--ringbuf-size 4096): every record
that does not fit is counted, the per-process count equals the host-wide
one (one traced process), the sequence numbers show the lost structural
records, and the re-reads of /proc keep the final state exact."""
import json
import os
import shutil
import subprocess
import tempfile

import common


def run(c, mw, wl):
    h = common.harness()
    ck = tempfile.mkdtemp(prefix="mw-drop-")
    out = os.path.join(ck, "out.json")
    try:
        # One CPU for both: the reader runs only when the workload is
        # preempted, so a 4 KiB buffer must overflow.
        p = subprocess.run(["taskset", "-c", "0", mw, "-q", "--ringbuf-size", "4096",
                            "-j", out, "--",
                            os.path.join(wl, "churn"), "3000"],
                           env=dict(os.environ, MW_CKPT_DIR=ck), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        c.eq(p.returncode, 0, "tiny ring buffer: exit status")
        s = [json.loads(x) for x in open(out)][-1]
        d = s["diagnostics"]
        c.check(s["lost_events"] > 0, f"drops happen and are counted ({s['lost_events']})")
        c.eq(s["lost_events"], d["lost_events_host"], "per-process drops = host-wide drops")
        c.check(0 < d["seq_gaps"] <= s["lost_events"],
                f"lost structural records seen as sequence gaps ({d['seq_gaps']})")
        c.check(d["resyncs"] > 0, f"gaps make memwatch re-read /proc ({d['resyncs']})")
        h.compare_mappings(c, s, ck)
        final = h.parse_status(os.path.join(ck, "final.status"))
        c.eq(s["totals"]["vm_bytes"], final["VmSize"], "VM size despite drops")
        c.near(s["totals"]["rss_bytes"], final["VmRSS"], "RSS despite drops")
    finally:
        shutil.rmtree(ck, ignore_errors=True)
