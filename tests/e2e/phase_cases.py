"""Phases and iterations: --phase-at in the executable and in a library that
is dlopen()ed later, the USDT markers of include/memwatch.h, `memwatch mark
[--iter]` from outside, and --iter.  Every boundary is checked against the
workload's own /proc/self/status at the checkpoint taken immediately before
its marker: VM exactly, RSS within 1% or 256 KiB.

run(c, mw, wl) runs every sub-case; MW_E2E_SUBCASE=SUBSTRING runs only the
sub-cases whose name contains it (e.g. MW_E2E_SUBCASE=iter tests/e2e/run -k phases).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIB_SRC = os.path.join(ROOT, "tests", "workloads", "libmwphase.c")
from e2eutil import (ATTACH_S, KIB, MIB, SPLIT_RSS, check_refused, degraded, rss_tol, smaps_rss,  # noqa: E402
                     smaps_vmas, stat_faults, wait_for)

# Phase and iteration durations against checkpoint timestamps: a marker
# fires after its checkpoint's files are written, so allow for that; a
# `memwatch mark` comes after the test has polled the index and started a
# process, so allow more for those.  Scaled by MW_TIME_SCALE (3 in the
# kernel matrix's TCG guests, where writing a checkpoint is several times
# slower: 5.10 once had a phase 59 ms shorter than its checkpoints).
_SCALE = float(os.environ.get("MW_TIME_SCALE", "1"))
TIME_TOL_NS = int(25 * 1000 * 1000 * _SCALE)
MARK_TIME_TOL_NS = int(150 * 1000 * 1000 * _SCALE)


def time_tol(t, ns):
    return t.time_slack + ns // 5


# ---- the workload's truth ------------------------------------------------------

class Truth:
    """The checkpoints in one MW_CKPT_DIR: names in order, times, status, maps."""

    def __init__(self, ckdir):
        self.dir = ckdir
        self.time_slack = TIME_TOL_NS
        self.order = []
        self.ts = {}
        path = os.path.join(ckdir, "index")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    name, ns = line.split()
                    self.order.append(name)
                    self.ts[name] = int(ns)
        self._status = {}
        self._maps = {}

    def has(self, name):
        return name in self.ts

    def status(self, name):
        if name not in self._status:
            st = {}
            with open(os.path.join(self.dir, name + ".status")) as f:
                for line in f:
                    key, _, val = line.partition(":")
                    val = val.strip()
                    if val.endswith(" kB"):
                        st[key] = int(val[:-3]) * KIB
            self._status[name] = st
        return self._status[name]

    def vm(self, name):
        return self.status(name)["VmSize"]

    def faults(self, name):
        return stat_faults(os.path.join(self.dir, name + ".stat"))

    def rss(self, name):
        """RSS at checkpoint @name: status's VmRSS, or where that lags the
        page tables (SPLIT_RSS, before 6.2) the smaps total."""
        smaps = os.path.join(self.dir, name + ".smaps")
        if SPLIT_RSS and os.path.exists(smaps):
            return smaps_rss(smaps)
        return self.status(name)["VmRSS"]

    def maps(self, name):
        """The VMAs of checkpoint @name, each with its "rss" from the
        checkpoint's smaps (what the kernel had resident, whatever the THP
        mode or fault-around made of the workload's touches)."""
        if name not in self._maps:
            path = os.path.join(self.dir, name + ".smaps")
            if not os.path.exists(path):
                path = os.path.join(self.dir, name + ".maps")
            self._maps[name] = smaps_vmas(path)
        return self._maps[name]

    def uprobes(self, name):
        """VM of the [uprobes] page the kernel maps at the first uprobe hit
        that needs an out-of-line slot (no syscall: the workload did not ask)."""
        return sum(v["end"] - v["start"] for v in self.maps(name) if v["path"] == "[uprobes]")

    def new_vma(self, before, after, size, pred=lambda v: True):
        """The one VMA of @size in checkpoint @after that @before did not have."""
        old = {(v["start"], v["end"], v["perms"], v["path"]) for v in self.maps(before)}
        found = [v for v in self.maps(after)
                 if (v["start"], v["end"], v["perms"], v["path"]) not in old
                 and v["end"] - v["start"] == size and pred(v)]
        return found[0] if len(found) == 1 else None

    def between(self, first, last):
        """Checkpoint names from @first to @last, both included."""
        i, j = self.order.index(first), self.order.index(last)
        return self.order[i:j + 1]


# ---- running memwatch ------------------------------------------------------------

def summary_of(c, label, jpath):
    if not os.path.exists(jpath):
        c.check(False, f"{label}: memwatch wrote JSON")
        return None
    try:
        objs = [json.loads(line) for line in open(jpath, "rb")]
    except ValueError as e:
        c.check(False, f"{label}: JSON parses: {e}")
        return None
    if not c.check(bool(objs) and objs[-1].get("type") == "summary", f"{label}: last JSON line is the summary"):
        return None
    return objs[-1]


def run_memwatch(c, label, mw, argv, extra, mode, tmp, env_extra=None, steps=None, mark_iter=False):
    """memwatch -q -j FILE EXTRA (-- ARGV | -p PID) on the workload; with
    @steps, the workload waits after each of those checkpoints (MW_STEPS)
    while the test runs `memwatch mark STEP` (or `memwatch mark --iter`).
    Returns (summary or None, Truth)."""
    ckdir = os.path.join(tmp, "ck")
    os.mkdir(ckdir)
    jpath = os.path.join(tmp, "out.json")
    errpath = os.path.join(tmp, "stderr")
    env = dict(os.environ, MW_CKPT_DIR=ckdir, **(env_extra or {}))
    if steps:
        env["MW_STEPS"] = "1"
    index = os.path.join(ckdir, "index")
    wl = mw_p = None
    mark_ns = 0     # the longest `memwatch mark` took: when in it the mark fell is unknown
    try:
        with open(errpath, "wb") as err:
            if mode == "pid":
                env["MW_WAIT_GO"] = "1"
                wl = subprocess.Popen(argv, env=env)
                if not wait_for(lambda: os.path.exists(os.path.join(ckdir, "ready")), 10):
                    c.check(False, f"{label}: workload ready")
                    return None, Truth(ckdir)
                mw_p = subprocess.Popen([mw, "-q", "-j", jpath] + extra + ["-p", str(wl.pid)], stderr=err)
                wait_for(lambda: b"tracing PID" in open(errpath, "rb").read() or mw_p.poll() is not None, ATTACH_S)
                open(os.path.join(ckdir, "go"), "w").close()
            else:
                mw_p = subprocess.Popen([mw, "-q", "-j", jpath] + extra + ["--"] + argv, env=env, stderr=err)
            for step in steps or ():
                def reached():
                    return os.path.exists(index) and step in open(index).read().split()
                if not wait_for(lambda: reached() or mw_p.poll() is not None, 30) or not reached():
                    c.check(False, f"{label}: workload reached step {step}")
                    break
                cmd = [mw, "mark", "--iter"] if mark_iter else [mw, "mark", step]
                t0 = time.monotonic_ns()
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
                mark_ns = max(mark_ns, time.monotonic_ns() - t0)
                c.eq(p.returncode, 0, f"{label}: `{' '.join(['memwatch'] + cmd[1:])}` exit status")
                open(os.path.join(ckdir, step + ".go"), "w").close()
            if wl:
                wl.wait(timeout=120)
            rc = mw_p.wait(timeout=120)
    except subprocess.TimeoutExpired as e:
        c.check(False, f"{label}: ran: {e}")
        return None, Truth(ckdir)
    finally:
        for p in (wl, mw_p):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    if not c.eq(rc, 0, f"{label}: memwatch exit status"):
        print("        stderr: " + open(errpath, errors="replace").read().strip().replace("\n", "\n        "))
    truth = Truth(ckdir)
    if steps:
        truth.time_slack = MARK_TIME_TOL_NS + mark_ns
    if not c.check(truth.has("final"), f"{label}: the workload reached its final checkpoint"):
        return None, truth
    return summary_of(c, label, jpath), truth


def check_live_mappings(c, label, s, t):
    """Live mappings equal the final /proc/PID/maps: the library loaded late
    and the [uprobes] page a uprobe hit adds included."""
    live = {(int(m["start"], 16), int(m["end"], 16), m["perms"], m["path"])
            for m in s["mappings"] if not m["unmapped"] and m["kind"] != "folded"}
    want = {(v["start"], v["end"], v["perms"], v["path"]) for v in t.maps("final")}
    fmt = lambda k: f"{k[0]:x}-{k[1]:x} {k[2]} {k[3]!r}"
    c.check(live == want, f"{label}: live mappings equal the final /proc/PID/maps ({len(want)} VMAs)" +
            "".join("\n        missing " + fmt(k) for k in sorted(want - live)) +
            "".join("\n        extra   " + fmt(k) for k in sorted(live - want)))


# ---- phases ------------------------------------------------------------------------

def check_phases(c, label, s, t, expected, mode, mapped=None, tops=None, owners=None):
    """@expected: [(phase name, checkpoint holding its start)], the first one
    ("start", None).  @mapped: {phase: (mapped_bytes, unmapped_bytes)} exact.
    @tops: {phase: (vma, rss_delta)} a mapping that must be among the phase's
    top_mappings.  @owners: [(vma, unmapped, phase)] the "phase" of mappings."""
    phases = s.get("phases")
    if not c.check(isinstance(phases, list), f"{label}: summary has \"phases\""):
        return
    names = [p.get("name") for p in phases]
    if not c.eq(names, [n for n, _ in expected], f"{label}: phase names in order"):
        return
    bounds = [ck for _, ck in expected] + ["final"]
    if mode == "pid":
        # Attached while the workload waited for "go": nothing changed
        # between then and its first checkpoint.
        bounds[0] = t.order[0]
    for i, (p, (name, _)) in enumerate(zip(phases, expected)):
        what = f"{label}: phase {name}"
        first, last = bounds[i], bounds[i + 1]
        # A hit that maps the kernel's [uprobes] page (a probed instruction
        # stepped out of line: mwlib_phase's sub) starts its phase with it,
        # as the function sees VmSize; the checkpoint before the call not.
        obs = p.get("observer_vm_bytes", 0)
        if first:
            c.eq(p["vm_start_bytes"], t.vm(first) + obs,
                 f"{what}: vm_start_bytes (VmSize at {first}"
                 f"{', and memwatch' + chr(39) + 's [uprobes] page' if obs else ''})")
            c.near(p["rss_start_bytes"], t.rss(first), f"{what}: rss_start_bytes (VmRSS at {first})")
            inside = t.between(first, last)
            c.eq(p["vm_peak_bytes"], max(t.vm(n) for n in inside),
                 f"{what}: vm_peak_bytes (highest VmSize of {', '.join(inside)})")
            c.near(p["rss_peak_bytes"], max(t.rss(n) for n in inside),
                   f"{what}: rss_peak_bytes (highest VmRSS of {', '.join(inside)})")
            if mode == "cmd" or i > 0:
                dur, want = p["end_ns"] - p["start_ns"], t.ts[last] - t.ts[first]
                c.near(dur, want, f"{what}: duration (checkpoints {first}..{last})", time_tol(t, want))
        else:
            c.check(p["vm_peak_bytes"] >= max(p["vm_start_bytes"], p["vm_end_bytes"]) and
                    p["rss_peak_bytes"] >= p["rss_end_bytes"], f"{what}: peaks not below start and end")
        c.eq(p["vm_end_bytes"], t.vm(last), f"{what}: vm_end_bytes (VmSize at {last})")
        c.near(p["rss_end_bytes"], t.rss(last), f"{what}: rss_end_bytes (VmRSS at {last})")
        c.check(p["start_ns"] <= p["end_ns"], f"{what}: start_ns <= end_ns")
        if i + 1 < len(phases):
            q = phases[i + 1]
            qobs = q.get("observer_vm_bytes", 0)
            c.check(p["end_ns"] == q["start_ns"] and
                    p["vm_end_bytes"] + qobs == q["vm_start_bytes"] and
                    p["rss_end_bytes"] + qobs == q["rss_start_bytes"],
                    f"{what}: ends where {q['name']} starts (time, VM, RSS; "
                    f"{qobs} bytes of memwatch's [uprobes] page between)")
        if mapped and name in mapped:
            c.eq((p["mapped_bytes"], p["unmapped_bytes"]), mapped[name], f"{what}: (mapped_bytes, unmapped_bytes)")
    tot = s["totals"]
    c.eq(phases[-1]["vm_end_bytes"], tot["vm_bytes"], f"{label}: last phase ends at totals.vm_bytes")
    c.eq(sum(p["faults"] for p in phases), tot["faults"], f"{label}: phases' faults add up to totals.faults")
    if mode == "cmd":
        c.eq(max(p["vm_peak_bytes"] for p in phases), tot["vm_peak_bytes"],
             f"{label}: highest phase vm_peak_bytes is totals.vm_peak_bytes")
    by_name = {p["name"]: p for p in phases}
    for name, (vma, delta) in (tops or {}).items():
        if not c.check(vma is not None, f"{label}: phase {name}: its mapping found in the checkpoints"):
            continue
        what = f"{label}: phase {name}: top_mappings has the {(vma['end'] - vma['start']) >> 20} MiB mapping at {vma['start']:#x}"
        hit = [m for m in by_name[name].get("top_mappings", []) if int(m["start"], 16) == vma["start"]]
        if not c.check(len(hit) == 1, what):
            continue
        m = hit[0]
        c.eq(m["bytes"], vma["end"] - vma["start"], what + ": bytes")
        c.near(m["rss_delta_bytes"], delta, what + ": rss_delta_bytes")
    for vma, unmapped, phase in owners or ():
        if not c.check(vma is not None, f"{label}: mapping of phase {phase} found in the checkpoints"):
            continue
        what = f"{label}: mapping {vma['start']:#x} ({(vma['end'] - vma['start']) >> 20} MiB{', unmapped' if unmapped else ''})"
        hit = [m for m in s["mappings"] if int(m["start"], 16) == vma["start"]
               and m["unmapped"] == unmapped and m["bytes"] == vma["end"] - vma["start"]]
        if c.check(len(hit) == 1, what + ": in the summary"):
            c.eq(hit[0].get("phase"), phase, what + ": phase")


def phases_expectations(t, with_lib, names):
    """What `phases` does, located in its checkpoints.  @names: phase name
    for each boundary checkpoint (load_model, alloc_io, mwlib_phase, release)."""
    model = t.new_vma("load_model", "alloc_io", 32 * MIB, lambda v: "mw-phases-" in v["path"])
    staging = t.new_vma("alloc_io", "alloc_io.peak", 16 * MIB, lambda v: not v["path"])
    after_io = "mwlib_phase" if with_lib else "release"
    io = t.new_vma("alloc_io.peak", after_io, 4 * MIB, lambda v: v["perms"] == "rw-s")
    mapped = {names["load_model"]: (32 * MIB, 0), names["release"]: (0, 32 * MIB)}
    rss = lambda v: v and v["rss"]	# its smaps Rss where the checkpoints found it
    tops = {names["load_model"]: (model, rss(model)), names["alloc_io"]: (io, rss(io))}
    owners = [(model, True, names["load_model"]), (staging, True, names["alloc_io"]),
              (io, False, names["alloc_io"])]
    if with_lib:
        lib = t.new_vma("mwlib_phase", "release", 8 * MIB, lambda v: not v["path"])
        mapped[names["mwlib_phase"]] = (8 * MIB, 0)
        tops[names["mwlib_phase"]] = (lib, rss(lib))
        owners.append((lib, False, names["mwlib_phase"]))
    else:
        mapped[names["alloc_io"]] = (20 * MIB, 16 * MIB)
    return mapped, tops, owners


def phases_case(c, label, mw, wl, args, extra, mode, names, with_lib):
    """Run build/workloads/phases ARGS and check every phase against it."""
    tmp = tempfile.mkdtemp(prefix="mw-phases-")
    try:
        steps = None
        if "--mark" in args:
            steps = ["load_model", "alloc_io"] + (["mwlib_phase"] if with_lib else []) + ["release"]
        s, t = run_memwatch(c, label, mw, [os.path.join(wl, "phases")] + args, extra, mode, tmp, steps=steps)
        if s is None:
            return
        expected = [("start", None)] + [(names[ck], ck) for ck in
                                        ["load_model", "alloc_io"] + (["mwlib_phase"] if with_lib else []) + ["release"]]
        mapped, tops, owners = phases_expectations(t, with_lib, names)
        check_phases(c, label, s, t, expected, mode, mapped, tops, owners)
        check_live_mappings(c, label, s, t)
        p = {x["name"]: x for x in s.get("phases", [])}
        lm, rel = p.get(names["load_model"]), p.get(names["release"])
        if lm and rel:
            c.check(lm["faults"] >= 32, f"{label}: load_model faulted the model in ({lm['faults']} faults)")
            c.check(rel["faults"] < 64, f"{label}: release faulted (almost) nothing ({rel['faults']} faults)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- iterations ---------------------------------------------------------------------

def check_iterations(c, label, s, t, n, leak, before, last_ck):
    """@before(k): the checkpoint that holds the values at iteration k's
    marker (k from 1), or None; @last_ck the one holding the end of the last
    iteration."""
    first_ck, second_ck = before(1), before(2) if n > 1 else last_ck
    it = s.get("iterations")
    if not c.check(isinstance(it, dict), f"{label}: summary has \"iterations\""):
        return
    c.eq(it["count"], n, f"{label}: iterations.count")
    f = it["first"]
    # The first hit of a marker that cannot be emulated (arm64 steps most
    # instructions out of line) makes the kernel map its [uprobes] page:
    # memwatch's own, it starts the iteration (xol_cases: as for phases),
    # so the iteration grew by the rest.  Whether the page came is what
    # the program's own maps say.
    xol = t.uprobes(second_ck) - t.uprobes(first_ck)
    c.eq(f.get("observer_vm_bytes"), xol,
         f"{label}: first.observer_vm_bytes ([uprobes] in {second_ck}'s maps, not {first_ck}'s)")
    c.eq(f["vm_delta_bytes"], t.vm(second_ck) - t.vm(first_ck) - xol,
         f"{label}: first.vm_delta_bytes (VmSize {second_ck} - {first_ck}"
         f"{', less [uprobes]' if xol else ''})")
    c.near(f["rss_delta_bytes"], t.rss(second_ck) - t.rss(first_ck),
           f"{label}: first.rss_delta_bytes (VmRSS {second_ck} - {first_ck})", rss_tol(t.rss(second_ck)))
    c.check(f["faults"] >= 1, f"{label}: first iteration faulted ({f['faults']} faults)")
    want = t.ts[second_ck] - t.ts[first_ck]
    c.near(f["duration_ns"], want, f"{label}: first.duration_ns", time_tol(t, want))
    settled = it["settled_after"]
    if leak:
        c.check(1 <= settled < n, f"{label}: settled_after in 1..{n - 1} ({settled})")
    else:
        c.eq(settled, 1, f"{label}: settled_after")
    st = it["steady"]
    c.eq(st["count"], n - settled, f"{label}: steady.count")
    if 1 <= settled < n:
        begin = before(settled + 1)
        if begin and t.has(begin):
            c.eq(st["vm_delta_bytes"], t.vm(last_ck) - t.vm(begin),
                 f"{label}: steady.vm_delta_bytes (VmSize {last_ck} - {begin})")
            c.near(st["rss_delta_bytes"], t.rss(last_ck) - t.rss(begin),
                   f"{label}: steady.rss_delta_bytes (VmRSS {last_ck} - {begin})", rss_tol(t.rss(last_ck)))
    if leak:
        c.eq(st["vm_delta_bytes"], (it["count"] - settled) * 256 * KIB,
             f"{label}: steady.vm_delta_bytes is 256 KiB per steady iteration")
        c.check(st["faults"] >= st["count"], f"{label}: steady iterations fault ({st['faults']} faults)")
    else:
        c.eq(st["vm_delta_bytes"], 0, f"{label}: steady iterations add no VM")
        c.near(st["rss_delta_bytes"], 0, f"{label}: steady iterations add no RSS")
        c.check(st["faults"] <= st["count"], f"{label}: steady iterations (almost) never fault ({st['faults']} faults)")
    c.eq(st["verdict"], "growing" if leak else "flat", f"{label}: steady.verdict")


def iters_case(c, label, mw, wl, args, extra, mode, n, leak):
    tmp = tempfile.mkdtemp(prefix="mw-iters-")
    try:
        steps = ["iter%d" % k for k in range(1, n + 1)] if "--mark" in args else None
        s, t = run_memwatch(c, label, mw, [os.path.join(wl, "iters")] + args, extra, mode, tmp,
                            steps=steps, mark_iter=True)
        if s is None:
            return
        window = 64 * MIB + (256 * KIB if leak else 0)
        c.eq(t.vm("iter2") - t.vm("iter1") - (t.uprobes("iter2") - t.uprobes("iter1")), window,
             f"{label}: workload: first iteration maps its window (besides any [uprobes] page)")
        check_iterations(c, label, s, t, n, leak, lambda k: "iter%d" % k, "end")
        check_live_mappings(c, label, s, t)
        # No phase markers: one phase, "start", the whole trace.
        check_phases(c, label, s, t, [("start", None)], mode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def threads_case(c, label, mw, wl, mode, n):
    """tests/workloads/mtiter: worker threads pinned to every CPU fault in
    each iteration, copy-on-write faults (no RSS change) last, and wait on
    a barrier across each marker.  Every iteration's faults are the
    kernel's own count (minflt + majflt of the workload's /proc/self/stat
    at the checkpoints around it), not late by what a CPU held: whatever
    the process's threads did on other CPUs is in the marker's count."""
    tmp = tempfile.mkdtemp(prefix="mw-mtiter-")
    try:
        s, t = run_memwatch(c, label, mw, [os.path.join(wl, "mtiter"), str(n)], [], mode, tmp)
        if s is None:
            return
        events = [json.loads(x) for x in open(os.path.join(tmp, "out.json"))]
        its = {e["index"]: e for e in events if e.get("type") == "iteration"}
        bounds = ["iter%d" % k for k in range(1, n + 1)] + ["end"]
        c.eq(sorted(its), list(range(1, n)), f"{label}: an iteration line for 1..{n - 1}")
        for k, e in sorted(its.items()):
            a, b = bounds[k - 1], bounds[k]
            want = t.faults(b) - t.faults(a)
            c.check(want >= 8 * MIB // os.sysconf("SC_PAGE_SIZE"),
                    f"{label}: workload: iteration {k} faulted ({want}: a copy per page of 8 MiB at least)")
            c.eq(e["faults"], want, f"{label}: iteration {k}: faults (minflt+majflt {b} - {a})")
            c.eq(e["vm_delta_bytes"], t.vm(b) - t.vm(a), f"{label}: iteration {k}: vm_delta_bytes")
            c.near(e["rss_delta_bytes"], t.rss(b) - t.rss(a), f"{label}: iteration {k}: rss_delta_bytes",
                   rss_tol(t.rss(b)))
        it = s["iterations"]
        c.eq(it["count"], n, f"{label}: iterations.count")
        c.eq(it["first"]["faults"], t.faults("iter2") - t.faults("iter1"), f"{label}: first.faults")
        # Where it settled is not the point here (an iteration's RSS moves
        # by 64 KiB, the noise limit, now and then): the steady faults,
        # wherever they begin, are.
        settled = it["settled_after"]
        if 1 <= settled < n:
            begin = bounds[settled]
            c.eq(it["steady"]["faults"], t.faults("end") - t.faults(begin),
                 f"{label}: steady.faults (minflt+majflt end - {begin})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def faultkinds_case(c, label, mw, wl, mode):
    """tests/workloads/faultkinds: six iterations, one kind of fault each
    (first touch, refault after MADV_DONTNEED, copy-on-write after fork,
    file, file again, a private copy of file pages), over a region and a
    file of R pages (4 MiB over the kernel's page size; no THP).  Each
    iteration's faults are the kernel's count (minflt + majflt between the
    workload's checkpoints).  The first touch and the refault iterations
    take R of their kind, the copy-on-write one at least R, the file ones
    at least one; other kinds at most 32 (the program's own stack and
    checkpoint buffers); the faults that moved no counter are the rest (an
    arm64 core without hardware access flags takes one more per page).
    The region and the private file mapping carry R of their kinds;
    nothing is negative, and every mapping's kinds sum to its faults."""
    tmp = tempfile.mkdtemp(prefix="mw-faultkinds-")
    os.chmod(tmp, 0o755)
    try:
        s, t = run_memwatch(c, label, mw, [os.path.join(wl, "faultkinds")], [], mode, tmp)
        if s is None:
            return
        events = [json.loads(x) for x in open(os.path.join(tmp, "out.json"))]
        its = {e["index"]: e for e in events if e.get("type") == "iteration"}
        bounds = ["iter%d" % k for k in range(1, 7)] + ["end"]
        want = {1: "first_touch", 2: "refault", 3: "copy_on_write", 4: "file", 5: "file"}
        stray = 32
        kinds = ("first_touch", "refault", "file", "cow_file", "swap_in", "copy_on_write")
        region = 4 * MIB // os.sysconf("SC_PAGE_SIZE")
        for k, kind in want.items():
            e = its.get(k)
            if not c.check(e is not None, f"{label}: iteration {k} reported"):
                continue
            n = t.faults(bounds[k]) - t.faults(bounds[k - 1])
            fk = e["fault_kinds"]
            c.eq(e["faults"], n, f"{label}: iteration {k}: faults (minflt+majflt)")
            c.eq(sum(fk.get(x, -1) for x in kinds), e["faults"], f"{label}: iteration {k}: kinds sum to faults")
            others = sum(fk[x] for x in kinds if x not in (kind, "copy_on_write"))
            c.check(others <= stray, f"{label}: iteration {k}: other kinds {others} (at most {stray})")
            lo, hi = {"first_touch": (region, region + stray), "refault": (region, region + stray),
                      "copy_on_write": (region, n), "file": (1, n)}[kind]
            c.check(lo <= fk[kind] <= hi, f"{label}: iteration {k}: {kind} {fk[kind]} in [{lo}, {hi}]")
        ph = {p["name"]: p for p in s["phases"]}
        if c.check("kinds" in ph, f"{label}: phase kinds"):
            c.eq(ph["kinds"]["faults"], t.faults("end") - t.faults("kinds"), f"{label}: phase kinds: faults")
            cow_file = ph["kinds"]["fault_kinds"]["cow_file"]
            c.check(region <= cow_file <= region + stray,
                    f"{label}: iteration 6 (in phase kinds): cow_file {cow_file} in [{region}, {region + stray}]")
        anon = [m for m in s["mappings"] if m["kind"] == "anon" and int(m["end"], 16) - int(m["start"], 16) == 4 * MIB]
        priv = [m for m in s["mappings"] if m["path"].startswith(tmp) and m["perms"].startswith("rw")]
        if c.check(len(anon) == 1, f"{label}: the region's mapping ({len(anon)})"):
            fk = anon[0]["fault_kinds"]
            c.check(region <= fk["first_touch"] <= region + stray and region <= fk["refault"] <= region + stray,
                    f"{label}: region: a first touch and a refault per page ({fk['first_touch']}, "
                    f"{fk['refault']} of {region} pages; 5.10 placed 2 of another mapping's here)")
            c.check(fk["copy_on_write"] >= region,
                    f"{label}: region: a copy-on-write fault per page or more ({fk['copy_on_write']})")
        if c.check(len(priv) == 1, f"{label}: the private file mapping ({len(priv)})"):
            fk = priv[0]["fault_kinds"]
            c.eq(fk["cow_file"], region, f"{label}: private file mapping: a file copy per page")
            c.check(1 <= fk["file"] <= region, f"{label}: private file mapping: file faults ({fk['file']})")
        for m in s["mappings"]:
            c.check(all(v >= 0 for v in m["fault_kinds"].values()) and
                    sum(m["fault_kinds"].values()) == m["faults"],
                    f"{label}: mapping {m['start']}: kinds >= 0, summing to its faults")
        if mode == "cmd" and len(anon) == 1:
            # The text report says the same of the region.
            ck = os.path.join(tmp, "ck2")
            os.mkdir(ck)
            p = subprocess.run([mw, "--", os.path.join(wl, "faultkinds")], env=dict(os.environ, MW_CKPT_DIR=ck),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            text = p.stdout.decode(errors="replace").splitlines()
            sec = text[text.index("Faults by kind, in the mappings that took most") + 1:] \
                if "Faults by kind, in the mappings that took most" in text else []
            def kind_of(ln, words):
                m = re.search(words + r" (\d+)", ln)
                return int(m.group(1)) if m else -1
            row = [ln for ln in sec[:5] if " anon " in ln and " 4.0M:" in ln and
                   region <= kind_of(ln, "refault") <= region + stray]
            c.check(p.returncode == 0 and len(row) == 1 and
                    region <= kind_of(row[0], "first touch") <= region + stray,
                    f"{label}: text: the region's row of faults by kind ({row or sec[:5]})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def markself_case(c, label, mw, interp, script, vm_tol):
    """A Python or Node program marks its own phases and iterations through
    the session's socket (include/memwatch_mark.py, .js; MEMWATCH_CONTROL
    from `memwatch --`): no `memwatch mark`, no fork.  Each phase starts at
    the VM size and RSS the program read just before its mark: VM within
    @vm_tol (the interpreter may take an arena between the read and the
    mark; V8's own threads reserve and release 64 MiB at any moment: no
    VM check for Node), RSS within max(1%, 256 KiB) plus 1 MiB."""
    if not shutil.which(interp):
        print(f"    skip {label}: no {interp}")
        return
    tmp = tempfile.mkdtemp(prefix="mw-markself-")
    os.chmod(tmp, 0o755)
    try:
        jpath = os.path.join(tmp, "out.json")
        p = subprocess.run([mw, "-q", "-j", jpath, "--", shutil.which(interp),
                            os.path.join(ROOT, "tests", "workloads", script)],
                           env=dict(os.environ, MW_CKPT_DIR=tmp), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        c.eq(p.returncode, 0, f"{label}: exit status (3: a mark not answered ok)")
        s = summary_of(c, label, jpath)
        if s is None or not c.check(os.path.exists(os.path.join(tmp, "marks")),
                                    f"{label}: the program wrote what it read"):
            return
        seen = [x.split() for x in open(os.path.join(tmp, "marks"))]
        phases = {ph["name"]: ph for ph in s["phases"]}
        c.eq([ph["name"] for ph in s["phases"]], ["start"] + [x[0] for x in seen], f"{label}: phases")
        for name, vm, rss in seen:
            ph = phases.get(name, {})
            if vm_tol is not None:
                c.near(ph.get("vm_start_bytes", 0), int(vm), f"{label}: {name}: vm_start_bytes", vm_tol)
            c.near(ph.get("rss_start_bytes", 0), int(rss), f"{label}: {name}: rss_start_bytes",
                   rss_tol(int(rss)) + MIB)
        load = phases.get("load", {})
        c.check(load.get("rss_end_bytes", 0) - load.get("rss_start_bytes", 0) >= 63 * MIB,
                f"{label}: load: RSS grew by the 64 MiB it touched "
                f"({load.get('rss_end_bytes', 0) - load.get('rss_start_bytes', 0)})")
        c.eq(s["iterations"]["count"], 5, f"{label}: iterations.count")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mark_inside_case(c, label, mw):
    """`memwatch mark` run by the traced command marks its own session
    (MEMWATCH_CONTROL), and only it: a second session running beside it
    gets no marker."""
    tmp = tempfile.mkdtemp(prefix="mw-markin-")
    other = None
    try:
        other_json = os.path.join(tmp, "other.json")
        other = subprocess.Popen([mw, "-q", "-j", other_json, "--", "sleep", "600"],
                                 stderr=subprocess.DEVNULL)
        if not c.check(wait_for(lambda: os.path.exists(f"/run/memwatch/{other.pid}.sock"), ATTACH_S),
                       f"{label}: the other session listens"):
            return
        jpath = os.path.join(tmp, "out.json")
        p = subprocess.run([mw, "-q", "-j", jpath, "--", "/bin/sh", "-c",
                            f"{mw} mark inside && {mw} mark --iter && {mw} mark --iter"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        c.eq(p.returncode, 0, f"{label}: exit status ({p.stderr.decode(errors='replace').strip()[:200]})")
        s = summary_of(c, label, jpath)
        if s:
            c.eq([ph["name"] for ph in s["phases"]], ["start", "inside"], f"{label}: phases")
            c.eq(s["iterations"]["count"], 2, f"{label}: iterations.count")
        # It ends when its command does.
        for child in open(f"/proc/{other.pid}/task/{other.pid}/children").read().split():
            os.kill(int(child), signal.SIGTERM)
        other.wait(timeout=60)
        o = summary_of(c, label + " (the other session)", other_json)
        if o:
            c.eq([ph["name"] for ph in o["phases"]], ["start"], f"{label}: the other session has no marker")
    finally:
        if other and other.poll() is None:
            other.kill()
            other.wait()
        shutil.rmtree(tmp, ignore_errors=True)


SLOW_CLIENT = r"""
import os, socket, sys, time
def mark(line, delay):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["MEMWATCH_CONTROL"])
    time.sleep(delay)                   # the line comes late
    s.sendall(line)
    return s.recv(64)
slow = mark(b"phase slow\n", 1.0)
a = bytearray(8 << 20)                  # traced while the client waited
quick = mark(b"phase quick\n", 0)
sys.exit(0 if (slow, quick) == (b"ok\n", b"ok\n") else 3)
"""


def slow_client_case(c, label, mw):
    """A client whose line comes a second after it connected (Node writes it
    from a callback, which a garbage collection held back past the 200 ms
    memwatch used to wait, under qemu on 5.10) is answered, and tracing
    goes on meanwhile: both phases are there, with the 8 MiB between."""
    tmp = tempfile.mkdtemp(prefix="mw-slow-")
    try:
        jpath = os.path.join(tmp, "out.json")
        p = subprocess.run([mw, "-q", "-j", jpath, "--", "/usr/bin/python3", "-c", SLOW_CLIENT],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        c.eq(p.returncode, 0, f"{label}: both marks answered ok ({p.stderr.decode(errors='replace').strip()[:200]})")
        s = summary_of(c, label, jpath)
        if s:
            ph = {x["name"]: x for x in s["phases"]}
            c.eq([x["name"] for x in s["phases"]], ["start", "slow", "quick"], f"{label}: phases")
            if "slow" in ph:
                c.check(ph["slow"]["vm_end_bytes"] - ph["slow"]["vm_start_bytes"] >= 8 * MIB,
                        f"{label}: phase slow holds the 8 MiB mapped after it")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the demo --------------------------------------------------------------------

def demo_case(c, label, mw, wl, mode):
    """The demo marks itself with USDT: four phases, 21 iterations."""
    tmp = tempfile.mkdtemp(prefix="mw-demo-")
    try:
        s, t = run_memwatch(c, label, mw, [os.path.join(wl, "demo")], [], mode, tmp)
        if s is None:
            return
        expected = [("start", None), ("load_model", "start"), ("alloc_io", "loaded"),
                    ("inference", "io"), ("release", "steady")]
        model = t.new_vma("start", "loaded", 48 * MIB, lambda v: "mw-model-" in v["path"])
        window = t.new_vma("io", "first", 192 * MIB, lambda v: not v["path"])
        inp = t.new_vma("loaded", "io", 3 * MIB, lambda v: v["perms"] == "rw-s")
        first_maps = 192 * MIB + 4 * MIB + 256 * KIB
        mapped = {"load_model": (48 * MIB + 6 * MIB, 0), "alloc_io": (3 * MIB + 64 * KIB, 0),
                  "inference": (first_maps, 0),
                  "release": (0, 48 * MIB + 3 * MIB + 64 * KIB)}
        # What each phase's mapping holds when the phase ends, as smaps has it:
        # the window is touched one page in eight, 24 MiB with 4 KiB pages,
        # all 192 MiB where THP is "always" (Debian's kernels).
        tops = {"load_model": (model, model and model["rss"]),
                "inference": (window, window and window["rss"])}
        owners = [(model, True, "load_model"), (inp, True, "alloc_io"), (window, False, "inference")]
        check_phases(c, label, s, t, expected, mode, mapped, tops, owners)
        check_iterations(c, label, s, t, 21, False, {1: "io", 2: "first"}.get, "steady")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- bad arguments -------------------------------------------------------------------

def error_cases(c, mw, wl):
    phases = os.path.join(wl, "phases")
    for argv, what in ((["--phase-at", "nocolon"], "--phase-at without BINARY:SYMBOL"),
                       (["--iter", "nocolon"], "--iter without BINARY:SYMBOL")):
        p = subprocess.run([mw, "-q"] + argv + ["--", "/bin/true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        err = p.stderr.decode(errors="replace").strip()
        c.eq(p.returncode, 2, f"{what}: exit code")
        c.check(err.startswith("memwatch: "), f"{what}: says why ({err.splitlines()[0] if err else 'nothing'})")
    if "phase-at" in degraded(mw):
        return
    p = subprocess.run([mw, "-q", "--phase-at", phases + ":mw_no_such_function", "--", phases],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode(errors="replace").strip()
    c.check(p.returncode != 0 and "mw_no_such_function" in err,
            f"--phase-at with an unknown symbol fails and names it (exit {p.returncode}: {err[:120]!r})")


# ---- the library ----------------------------------------------------------------------

def library(c, wl, tmp):
    """build/workloads/libmwphase.so if the Makefile built it, else build it."""
    built = os.path.join(wl, "libmwphase.so")
    if os.path.exists(built) and os.path.getmtime(built) >= os.path.getmtime(LIB_SRC):
        return built
    out = os.path.join(tmp, "libmwphase.so")
    p = subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-g", "-Wall",
                        "-DMWLIB_SO", LIB_SRC, "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if not c.check(p.returncode == 0, "libmwphase.so builds: " + p.stderr.decode(errors="replace").strip()):
        return None
    return out


def run(c, mw, wl):
    helptext = subprocess.run([mw, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=30).stdout.decode(errors="replace")
    if not c.check("--phase-at" in helptext, "memwatch --help lists --phase-at"):
        return
    only = os.environ.get("MW_E2E_SUBCASE", "")
    tmp = tempfile.mkdtemp(prefix="mw-phaselib-")
    os.chmod(tmp, 0o755)
    try:
        lib = library(c, wl, tmp)
        ph = os.path.join(wl, "phases")
        it = os.path.join(wl, "iters")
        exe_at = ["--phase-at", ph + ":mw_load_model=load_model", "--phase-at", ph + ":mw_alloc_io",
                  "--phase-at", ph + ":mw_release=release"]
        exe_names = {"load_model": "load_model", "alloc_io": "mw_alloc_io", "release": "release"}
        same = {n: n for n in ("load_model", "alloc_io", "mwlib_phase", "release")}
        cases = [
            ("phase-at exe/cmd", lambda l: phases_case(c, l, mw, wl, [], exe_at, "cmd", exe_names, False)),
            ("phase-at exe/pid", lambda l: phases_case(c, l, mw, wl, [], exe_at, "pid", exe_names, False)),
            ("usdt/cmd", lambda l: phases_case(c, l, mw, wl, ["--usdt"], [], "cmd", same, False)),
            ("usdt/pid", lambda l: phases_case(c, l, mw, wl, ["--usdt"], [], "pid", same, False)),
            ("mark/cmd", lambda l: phases_case(c, l, mw, wl, ["--mark"], [], "cmd", same, False)),
            ("no markers/cmd", lambda l: no_markers_case(c, l, mw, wl)),
            ("iter call flat/cmd", lambda l: iters_case(c, l, mw, wl, ["20"], ["--iter", it + ":mw_infer"],
                                                        "cmd", 20, False)),
            ("iter call leak/cmd", lambda l: iters_case(c, l, mw, wl, ["20", "--leak"], ["--iter", it + ":mw_infer"],
                                                        "cmd", 20, True)),
            ("iter usdt flat/cmd", lambda l: iters_case(c, l, mw, wl, ["20", "--usdt"], [], "cmd", 20, False)),
            ("iter usdt leak/pid", lambda l: iters_case(c, l, mw, wl, ["20", "--usdt", "--leak"], [], "pid", 20, True)),
            ("iter mark/cmd", lambda l: iters_case(c, l, mw, wl, ["5", "--mark"], [], "cmd", 5, False)),
            ("iter socket/cmd", lambda l: iters_case(c, l, mw, wl, ["6", "--socket"], [], "cmd", 6, False)),
            ("mark self python/cmd", lambda l: markself_case(c, l, mw, "/usr/bin/python3", "markself.py", MIB)),
            ("mark self node/cmd", lambda l: markself_case(c, l, mw, "node", "markself.js", None)),
            ("mark inside/cmd", lambda l: mark_inside_case(c, l, mw)),
            ("mark slow client/cmd", lambda l: slow_client_case(c, l, mw)),
            ("iter threads/cmd", lambda l: threads_case(c, l, mw, wl, "cmd", 8)),
            ("iter threads/pid", lambda l: threads_case(c, l, mw, wl, "pid", 8)),
            ("fault kinds/cmd", lambda l: faultkinds_case(c, l, mw, wl, "cmd")),
            ("fault kinds/pid", lambda l: faultkinds_case(c, l, mw, wl, "pid")),
            ("demo usdt/cmd", lambda l: demo_case(c, l, mw, wl, "cmd")),
            ("errors", lambda l: error_cases(c, mw, wl)),
        ]
        if lib:
            lib_at = exe_at + ["--phase-at", lib + ":mwlib_phase=lib"]
            lib_names = dict(exe_names, mwlib_phase="lib")
            cases[2:2] = [
                ("phase-at dlopen lib/cmd", lambda l: phases_case(c, l, mw, wl, [lib], lib_at, "cmd", lib_names, True)),
                ("phase-at dlopen lib/pid", lambda l: phases_case(c, l, mw, wl, [lib], lib_at, "pid", lib_names, True)),
                ("usdt+lib/cmd", lambda l: phases_case(c, l, mw, wl, ["--usdt", lib], [], "cmd", same, True)),
                ("mark+lib/cmd", lambda l: phases_case(c, l, mw, wl, ["--mark", lib], [], "cmd", same, True)),
            ]
        # Uprobe markers need the attach cookie (5.15): where memwatch runs
        # without it, check that it says so instead.
        no_uprobes = "phase-at" in degraded(mw)
        if no_uprobes:
            check_refused(c, mw, "phase-at", exe_at, "--phase-at")
            check_refused(c, mw, "phase-at", ["--iter", it + ":mw_infer"], "--iter")
        for name, fn in cases:
            if only not in name:
                continue
            if no_uprobes and ("phase-at" in name or "iter call" in name):
                continue
            before, t0 = c.failed, time.time()
            fn("phases " + name)
            print(f"  {'ok  ' if c.failed == before else 'FAIL'} phases {name} ({time.time() - t0:.1f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def no_markers_case(c, label, mw, wl):
    """Without --phase-at the marker functions are plain calls: one phase."""
    tmp = tempfile.mkdtemp(prefix="mw-phases-")
    try:
        s, t = run_memwatch(c, label, mw, [os.path.join(wl, "phases")], [], "cmd", tmp)
        if s is None:
            return
        check_phases(c, label, s, t, [("start", None)], "cmd")
        # Mappings that were there when the trace began (at exec) are "(before)".
        odd = [f"{m['start']} {m['path']!r}: {m.get('phase')}" for m in s["mappings"] if m["kind"] != "folded" and
               m.get("phase") != ("start" if m.get("born_ns", 0) > 0 else "(before)")]
        c.check(not odd, f"{label}: mappings born while traced are of phase start, those at exec \"(before)\"" +
                "".join("\n        " + o for o in odd))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
