"""MEMWATCH_BPF_STATS=1: memwatch's own programs' costs at the end of a run
(user/capture/bpfstats.c, bpf/parts.bpf.h), what scripts/bench/run
--workloads breakdown reads.  The counts are exact and checked against the
run's own report: sys_exit's record ran once per traced call (the totals'
*_calls), the ring-buffer output once per record it sent, the VMA walk for
the calls that have one; the kernel's run-time statistics are on only for
the run; without the variable nothing is printed."""
import json
import os
import re
import subprocess
import tempfile

LINE = re.compile(r"^memwatch: bpf: (program|part)\s+(\S+)\s+(\d+) runs\s+([\d.]+) ns/run$")
ITERS = 2000


def stats_enabled():
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip()
    except OSError:
        return None


def stats_run(c, mw, wl, env, js, argv):
    """argv (under wl) under MEMWATCH_BPF_STATS=1: the programs' and
    parts' lines, and the report."""
    p = subprocess.run([mw, "-q", "-j", js, "--", os.path.join(wl, argv[0])] + argv[1:],
                       env=dict(env, MEMWATCH_BPF_STATS="1"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    err = p.stderr.decode(errors="replace").splitlines()
    c.eq(p.returncode, 0, f"MEMWATCH_BPF_STATS=1 {argv[0]}: exit status ({err[-1:]})")
    got = {}
    for ln in err:
        m = LINE.match(ln)
        if m:
            got[(m.group(1), m.group(2))] = (int(m.group(3)), float(m.group(4)))
    s = [json.loads(x) for x in open(js)][-1] if os.path.exists(js) else {}
    return got, s


def run(c, mw, wl):
    d = tempfile.mkdtemp(prefix="mw-bpfstats-")
    js = os.path.join(d, "churn.json")
    before = stats_enabled()
    env = {k: v for k, v in os.environ.items() if k != "MW_CKPT_DIR"}
    got, s = stats_run(c, mw, wl, env, js, ["churn", str(ITERS)])
    t = s.get("totals", {})
    calls = sum(v for k, v in t.items() if k.endswith("_calls") and
                k not in ("stack_growth_calls", "rewalk_calls"))
    ex = got.get(("part", "exit"), (0, 0))
    c.check(calls >= 4 * ITERS and ex[0] == calls,
            f"part exit ran once per traced call: {ex[0]} runs, the totals' calls {calls}")
    prog = got.get(("program", "sys_exit_tp"), got.get(("program", "sys_exit_raw"), (0, 0)))
    c.check(prog[0] >= calls and prog[1] > 0,
            f"sys_exit's program: runs >= the calls, with a time per run ({prog})")
    emit = got.get(("part", "emit"), (0, 0))
    walk = got.get(("part", "walk"), (0, 0))
    # Every churn call changes the layout (a record each); brk's shrink
    # walks nothing (its VMA is cut, the loader knows how).
    c.check(2 * ITERS * 2 <= emit[0] <= ex[0],
            f"part emit: one per record sent, at most one per call ({emit[0]} of {ex[0]})")
    c.check(3 * ITERS <= walk[0] < ex[0], f"part walk: the calls that walk ({walk[0]} of {ex[0]})")
    c.check(all(v[1] > 0 for k, v in got.items() if v[0]),
            "every program and part that ran has a time per run")
    c.eq(stats_enabled(), before, "the kernel's BPF run-time statistics are as they were after")
    # Advice that changes pages, not VMAs, walks nothing (bpf/syscalls.bpf.h
    # madvise_keeps_vmas): slotpair's 2 x N MADV_DONTNEED, and the few calls
    # that set it up.
    n = 500
    got, s = stats_run(c, mw, wl, env, js, ["slotpair", str(n)])
    madv = s.get("totals", {}).get("madvise_calls", 0)
    walk = got.get(("part", "walk"), (0, 0))
    ex = got.get(("part", "exit"), (0, 0))
    c.check(madv == 2 * n and ex[0] >= madv and walk[0] < 20,
            f"MADV_DONTNEED walks no VMAs: {walk[0]} walks in {ex[0]} calls, {madv} madvise")
    emit2 = got.get(("part", "emit"), (0, 0))[0]
    # ... and one that changed no page sends no record: slotpair's third
    # drop, of A again, each iteration, counted all the same.
    got, s = stats_run(c, mw, wl, env, js, ["slotpair", str(n), "1"])
    t = s.get("totals", {})
    emit3 = got.get(("part", "emit"), (0, 0))[0]
    c.eq(t.get("madvise_calls"), 3 * n, "a drop of nothing is still a madvise call")
    c.check(0 < emit3 <= emit2 + 10,
            f"... with no record of its own: {emit3} records sent, {emit2} without those calls")
    p = subprocess.run([mw, "-q", "-j", js, "--", os.path.join(wl, "churn"), "10"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    c.check(p.returncode == 0 and b"memwatch: bpf:" not in p.stderr,
            "without MEMWATCH_BPF_STATS: no such lines")
    subprocess.run(["rm", "-rf", d])
