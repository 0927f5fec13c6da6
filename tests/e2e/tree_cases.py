"""memwatch -f: a full report per process of the tree.

Each process writes its own /proc copy at its end (workloads/forktree, a
Python multiprocessing worker): every process's totals, mappings, phases
and iterations in memwatch's JSON equal its own copy, as a single traced
process's do.  A fork storm under a small --max-procs keeps memwatch's
memory bounded and counts every process it did not model.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import __main__ as e2e
from e2eutil import SPLIT_RSS, parse_status, rss_tol, smaps_rss, status_slack

PY = "/usr/bin/python3"


def pid_of(ckdir):
    with open(os.path.join(ckdir, "final.status")) as f:
        for line in f:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    return -1


def lines_of(path):
    try:
        return [json.loads(x) for x in open(path)]
    except (OSError, ValueError):
        return []


def forktree_case(c, mw, wl, tmp):
    """A parent, two forked children and one that execs: each against its own
    final checkpoint, its phases and iterations against its checkpoints."""
    ck = tempfile.mkdtemp(prefix="ck-tree-", dir=tmp)
    out = os.path.join(tmp, "tree.json")
    bin_ = os.path.join(wl, "forktree")
    p = subprocess.run([mw, "-f", "-q", "-j", out,
                        "--phase-at", f"{bin_}:ft_work=work", "--phase-at", f"{bin_}:ft_after=after",
                        "--iter", f"{bin_}:ft_iter", "--", bin_, "3"],
                       env=dict(os.environ, MW_CKPT_DIR=ck), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    c.eq(p.returncode, 0, f"forktree: exit status ({p.stderr.decode(errors='replace').strip()[-300:]})")
    lines = lines_of(out)
    dirs = {"parent": ck, "child0": os.path.join(ck, "child0"),
            "child1": os.path.join(ck, "child1"), "execed": os.path.join(ck, "execed")}
    if not c.check(all(os.path.exists(os.path.join(d, "final.status")) for d in dirs.values()),
                   "forktree: every process reached its final checkpoint"):
        return
    pids = {k: pid_of(d) for k, d in dirs.items()}
    summaries = {o["pid"]: o for o in lines if o.get("type") == "summary"}
    tree = [o for o in lines if o.get("type") == "tree"]
    c.check(len(tree) == 1 and tree[0]["processes"] == 4 and tree[0]["models"] == 4,
            f"forktree: one tree line, 4 processes with a model ({tree[0] if tree else None})")
    rows = {r["pid"]: r for r in (tree[0]["rows"] if tree else [])}
    for who, d in dirs.items():
        s = summaries.get(pids[who])
        if not c.check(s is not None, f"forktree {who}: a summary line for PID {pids[who]}"):
            continue
        e2e.compare_totals(c, s, d, "cmd", True)
        e2e.compare_mappings(c, s, d)
        final = parse_status(os.path.join(d, "final.status"))
        r = rows.get(pids[who], {})
        c.check(r.get("ppid") == (pids["parent"] if who != "parent" else 0) and
                r.get("vm_end_bytes") == final["VmSize"] and r.get("exit_status") == 0,
                f"forktree {who}: its row in the tree ({r})")
        phases = {ph["name"]: ph for ph in s.get("phases", [])}
        its = [o for o in lines if o.get("type") == "iteration" and o.get("pid") == pids[who]]
        if who.startswith("child"):
            forked = parse_status(os.path.join(d, "forked.status"))
            worked = parse_status(os.path.join(d, "worked.status"))
            w = phases.get("work", {})
            # The first hit maps the kernel's [uprobes] page: the phase
            # starts with it (phase_cases.py).
            c.eq((w.get("vm_start_bytes"), w.get("vm_end_bytes")),
                 (forked["VmSize"] + w.get("observer_vm_bytes", 0), final["VmSize"]),
                 f"forktree {who}: phase work's VM")
            c.eq(sum(i["vm_delta_bytes"] for i in its), final["VmSize"] - worked["VmSize"],
                 f"forktree {who}: its iterations' VM growth ({len(its)} lines)")
            want = smaps_rss(os.path.join(d, "final.smaps")) - smaps_rss(os.path.join(d, "worked.smaps"))
            c.near(sum(i["rss_delta_bytes"] for i in its), want,
                   f"forktree {who}: its iterations' RSS growth", rss_tol(want) + status_slack(3))
        elif who == "parent":
            loaded = parse_status(os.path.join(d, "loaded.status"))
            a = phases.get("after", {})
            c.eq((a.get("vm_start_bytes"), a.get("vm_end_bytes")),
                 (loaded["VmSize"] + a.get("observer_vm_bytes", 0), final["VmSize"]),
                 "forktree parent: phase after's VM")
            c.check(not its and "work" not in phases,
                    "forktree parent: no child's phase or iteration lands in it")
        else:
            c.check("work" in phases, f"forktree execed: its phase work ({sorted(phases)})")
    shutil.rmtree(ck, ignore_errors=True)


# A process's /proc copy at its end, as ckpt.c's "final".
DUMP = r'''
import os, sys, time

def dump(d):
    os.makedirs(d, exist_ok=True)
    for n in ("status", "smaps"):
        with open(f"/proc/self/{n}") as f:
            data = f.read()
        with open(os.path.join(d, "final." + n), "w") as f:
            f.write(data)
    with open(os.path.join(d, "index"), "w") as f:
        f.write("final 0\n")
'''

MP_SCRIPT = DUMP + r'''
import multiprocessing as mp

def work(i, d):
    buf = bytearray((8 + 4 * i) << 20)      # its own anonymous memory
    for k in range(0, len(buf), 4096):
        buf[k] = 1
    dump(os.path.join(d, f"w{i}"))
    sys.stdout.flush()
    os._exit(0)

if __name__ == "__main__":
    d = sys.argv[1]
    mp.set_start_method("fork")
    big = bytearray(16 << 20)
    ps = [mp.Process(target=work, args=(i, d)) for i in range(3)]
    for p in ps: p.start()
    for p in ps: p.join()
    dump(os.path.join(d, "parent"))
'''


def multiprocessing_case(c, mw, wl, tmp):
    """Python multiprocessing (fork): a report per worker, each worker's and
    the parent's RSS against their own /proc."""
    if not os.path.exists(PY):
        print("    skip multiprocessing: no " + PY)
        return
    d = tempfile.mkdtemp(prefix="ck-mp-", dir=tmp)
    script = os.path.join(tmp, "mp.py")
    with open(script, "w") as f:
        f.write(MP_SCRIPT)
    out = os.path.join(tmp, "mp.json")
    p = subprocess.run([mw, "-f", "-q", "-j", out, "--", PY, script, d],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    c.eq(p.returncode, 0, f"multiprocessing: exit status ({p.stderr.decode(errors='replace').strip()[-300:]})")
    summaries = {o["pid"]: o for o in lines_of(out) if o.get("type") == "summary"}
    for who in ("w0", "w1", "w2", "parent"):
        ck = os.path.join(d, who)
        if not c.check(os.path.exists(os.path.join(ck, "final.status")),
                       f"multiprocessing {who}: it wrote its /proc copy"):
            continue
        s = summaries.get(pid_of(ck))
        if not c.check(s is not None, f"multiprocessing {who}: a summary line for PID {pid_of(ck)}"):
            continue
        final = parse_status(os.path.join(ck, "final.status"))
        t = s["totals"]
        sm = smaps_rss(os.path.join(ck, "final.smaps"))
        # Python frees a little on its way out after the copy (os._exit
        # in the workers: nothing; the parent's interpreter: its modules).
        c.eq(t["vm_peak_bytes"], final["VmPeak"], f"multiprocessing {who}: VM peak")
        # Before 6.2 VmHWM is taken from the mm's counters alone, without
        # what the threads' caches held then (KERNEL-NOTES 5): memwatch's
        # exact peak may lie above it; smaps at the end is a floor too.
        hwm = max(final["VmHWM"], sm) if SPLIT_RSS else final["VmHWM"]
        got = t["rss_peak_bytes"]
        above = (1 << 20) if SPLIT_RSS else 0
        c.check(hwm - rss_tol(hwm) - status_slack(3) <= got <= hwm + rss_tol(hwm) + above +
                status_slack(3), f"multiprocessing {who}: RSS peak: memwatch {got}, VmHWM {hwm}"
                f"{' (and up to 1 MiB above: caches)' if above else ''}")
        if who != "parent":
            c.eq(t["vm_bytes"], final["VmSize"], f"multiprocessing {who}: VM at its end")
            c.near(t["rss_bytes"], sm, f"multiprocessing {who}: RSS at its end (smaps)")
            e2e.compare_mappings(c, s, ck)
    shutil.rmtree(d, ignore_errors=True)


PID_SCRIPT = DUMP + r'''
d = sys.argv[1]
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        while not os.path.exists(os.path.join(d, "go")):
            time.sleep(0.01)
        buf = bytearray((6 + 2 * i) << 20)
        for k in range(0, len(buf), 4096):
            buf[k] = 1
        dump(os.path.join(d, f"c{i}"))
        os._exit(0)
    kids.append(pid)
open(os.path.join(d, "ready"), "w").close()
for k in kids:
    os.waitpid(k, 0)
dump(os.path.join(d, "parent"))
'''


def pid_case(c, mw, wl, tmp):
    """-f -p PID: the children it has when tracing starts are its tree too,
    each with a model, its VM and RSS at its end against its own /proc."""
    if not os.path.exists(PY):
        print("    skip -f -p: no " + PY)
        return
    d = tempfile.mkdtemp(prefix="ck-fp-", dir=tmp)
    script = os.path.join(tmp, "fp.py")
    with open(script, "w") as f:
        f.write(PID_SCRIPT)
    w = subprocess.Popen([PY, script, d])
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(d, "ready")) and time.time() < deadline:
        time.sleep(0.02)
    out = os.path.join(tmp, "fp.json")
    err = open(os.path.join(tmp, "fp.err"), "w+")
    m = subprocess.Popen([mw, "-f", "-q", "-j", out, "-p", str(w.pid)],
                         stdout=subprocess.DEVNULL, stderr=err)
    # Until it traces (start-up takes seconds under qemu's TCG).
    deadline = time.time() + 120
    while time.time() < deadline and m.poll() is None:
        err.seek(0)
        if "tracing" in err.read():
            break
        time.sleep(0.05)
    open(os.path.join(d, "go"), "w").close()
    w.wait(timeout=120)
    try:
        rc = m.wait(timeout=60)
    except subprocess.TimeoutExpired:
        m.kill()
        rc = m.wait()
    err.seek(0)
    c.eq(rc, 0, f"-f -p: exit status ({err.read().strip()[-300:]})")
    lines = lines_of(out)
    tree = [o for o in lines if o.get("type") == "tree"]
    c.check(len(tree) == 1 and tree[0]["processes"] == 3 and tree[0]["models"] == 3,
            f"-f -p: the parent and its two children, a model each ({tree[0] if tree else None})")
    summaries = {o["pid"]: o for o in lines if o.get("type") == "summary"}
    for who in ("c0", "c1"):
        ck = os.path.join(d, who)
        if not c.check(os.path.exists(os.path.join(ck, "final.status")),
                       f"-f -p {who}: it wrote its /proc copy"):
            continue
        s = summaries.get(pid_of(ck))
        if not c.check(s is not None, f"-f -p {who}: a summary line for PID {pid_of(ck)}"):
            continue
        final = parse_status(os.path.join(ck, "final.status"))
        c.eq(s["totals"]["vm_bytes"], final["VmSize"], f"-f -p {who}: VM at its end")
        c.near(s["totals"]["rss_bytes"], smaps_rss(os.path.join(ck, "final.smaps")),
               f"-f -p {who}: RSS at its end (smaps)")
        e2e.compare_mappings(c, s, ck)
    shutil.rmtree(d, ignore_errors=True)


def storm_case(c, mw, wl, tmp):
    """stress-ng --fork under -f --max-procs 4: at most 4 models at once, the
    rest totals, every process counted, memwatch's own peak RSS bounded."""
    sng = shutil.which("stress-ng")
    if not sng:
        print("    skip fork storm: no stress-ng")
        return
    out = os.path.join(tmp, "storm.json")
    ops = 600 if os.environ.get("MW_GUEST") else 3000	# TCG: each fork stops twice
    m = subprocess.Popen([mw, "-f", "--max-procs", "4", "-q", "-j", out, "--", sng, "--fork", "2",
                          "--fork-ops", str(ops), "--metrics-brief", "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    hwm = 0
    while m.poll() is None:
        try:
            hwm = max(hwm, parse_status(f"/proc/{m.pid}/status").get("VmHWM", 0))
        except OSError:
            pass
        time.sleep(0.05)
    err = m.stderr.read().decode(errors="replace")
    c.eq(m.returncode, 0, f"fork storm: exit status ({err.strip()[-300:]})")
    tree = [o for o in lines_of(out) if o.get("type") == "tree"]
    if not c.check(len(tree) == 1, "fork storm: one tree line"):
        return
    t = tree[0]
    c.check(t["processes"] >= ops, f"fork storm: every fork is a process of the tree ({t['processes']})")
    c.check(t["max_live_models"] <= 4 and t["models"] + t["totals_only"] == t["processes"],
            f"fork storm: at most 4 models at once, the rest totals "
            f"(models {t['models']}, totals {t['totals_only']}, most at once {t['max_live_models']})")
    c.eq(len(t["rows"]) + t["rows_left_out"], t["processes"], "fork storm: every process has a row or is counted")
    tot = [r for r in t["rows"] if not r["model"]]
    known = [r for r in tot if r["known"]]
    c.check(known and all(r["vm_peak_bytes"] > 0 and r["rss_peak_bytes"] > 0 for r in known),
            "fork storm: the totals-only rows carry /proc's peaks")
    # One killed (SIGKILL) may skip its exit stop: counted, never made up.
    unknown = sum(1 for r in tot if not r["known"])
    c.check(t["totals_unknown"] == unknown if not t["rows_left_out"] else
            t["totals_unknown"] >= unknown,
            f"fork storm: the totals never read are counted ({t['totals_unknown']}, {unknown} rows)")
    summaries = sum(1 for o in lines_of(out) if o.get("type") == "summary")
    c.eq(summaries, t["models"], "fork storm: a summary per model")
    # ASan's quarantine alone keeps 256 MiB of what was freed.
    bound = (1024 if "ASAN_OPTIONS" in os.environ else 256) << 20
    c.check(0 < hwm <= bound, f"fork storm: memwatch's peak RSS {hwm >> 20} MiB "
            f"(at most {bound >> 20})")
    print(f"    fork storm: {t['processes']} processes, {t['models']} models, memwatch's VmHWM "
          f"{hwm >> 20} MiB")


def errors_case(c, mw, wl, tmp):
    """-f's reports are per process: what draws one is refused, one line."""
    for args, what in ((["-f", "--svg", os.path.join(tmp, "x.svg"), "--", "/bin/true"], "-f with --svg"),
                       (["--top", "3", "--", "/bin/true"], "--top without -f"),
                       (["record", "-q", "-f", "-o", os.path.join(tmp, "x.rec"), "--", "/bin/true"],
                        "record -f")):
        argv = [mw] + (args if args[0] == "record" else ["-q"] + args)
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        err = p.stderr.decode()
        c.eq(p.returncode, 2, f"{what}: exit status")
        c.check(err.count("\n") == 1 and err.startswith("memwatch: "),
                f"{what}: one line on stderr ({err.strip()[:120]})")


def exec_case(c, mw, wl, tmp):
    """A traced process that execs (no -f): the new program's totals and
    mappings against its own /proc.  Before the exec fix the new mm's first
    event zeroed every counter: 5.10 lost the new program's first 65 file
    pages and its 9 argument pages for good (bpf/task.bpf.h)."""
    ck = tempfile.mkdtemp(prefix="ck-exec-", dir=tmp)
    out = os.path.join(tmp, "exec.json")
    p = subprocess.run([mw, "-q", "-j", out, "--", "/bin/sh", "-c", f"exec {wl}/anon"],
                       env=dict(os.environ, MW_CKPT_DIR=ck), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    c.eq(p.returncode, 0, f"exec: exit status ({p.stderr.decode(errors='replace').strip()[-300:]})")
    s = [o for o in lines_of(out) if o.get("type") == "summary"]
    if c.check(len(s) == 1 and os.path.exists(os.path.join(ck, "final.status")),
               "exec: a summary, and the workload's final checkpoint"):
        # "pid": the faults before the exec are the shell's, in /proc's count too.
        e2e.compare_totals(c, s[0], ck, "pid", True)
        e2e.compare_mappings(c, s[0], ck)
    shutil.rmtree(ck, ignore_errors=True)


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-tree-")
    try:
        errors_case(c, mw, wl, tmp)
        exec_case(c, mw, wl, tmp)
        forktree_case(c, mw, wl, tmp)
        multiprocessing_case(c, mw, wl, tmp)
        pid_case(c, mw, wl, tmp)
        storm_case(c, mw, wl, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
