"""The traced process misbehaving, in -- CMD and -p modes, checked against
its own /proc like the end-to-end cases (VM exact, RSS within 1% or 256
KiB, every mapping).  It starts and ends hundreds of threads
(workloads/threadstorm): no thread's exit ends the trace, the totals stay
exact.  It execs another program mid-trace: the report is that program's,
exact, and says an exec happened.  It is killed with SIGKILL mid-trace: the
report is complete up to that moment, exact against the last checkpoint,
and says it was killed by signal 9."""
import os
import shutil
import signal
import subprocess
import tempfile

import common


def threadstorm(c, mw, mode):
    common.harness().run_case(c, mw, "threadstorm", ["threadstorm", "400", "16"], mode, True)


def check_against(c, label, s, ck, mode, checkpoint):
    """Totals and mappings against checkpoint (copied to final.*, which
    the harness compares with)."""
    h = common.harness()
    if checkpoint != "final":
        for ext in ("status", "stat", "maps", "smaps"):
            shutil.copy(os.path.join(ck, f"{checkpoint}.{ext}"), os.path.join(ck, f"final.{ext}"))
    # Hundreds of threads come and go between checkpoints: their stacks make
    # a peak the lazy VmHWM may never record (KERNEL-NOTES 5).
    h.compare_totals(c, s, ck, mode, True, peak_slack=1 << 20)
    h.compare_mappings(c, s, ck)


def start_traced(mw, mode, argv, ck, out, env_extra, wrapper_go=False):
    """memwatch on argv: -- CMD, or -p on argv started first (held by a
    shell until ck/go0 exists when wrapper_go, for an exec to come later;
    else by the workload's own MW_WAIT_GO).  Returns (memwatch, target)."""
    env = dict(os.environ, MW_CKPT_DIR=ck, **env_extra)
    errpath = os.path.join(ck, "mw.err")
    args = [mw, "-j", out + ".json", "-o", out + ".txt"]
    if mode == "cmd":
        with open(errpath, "wb") as err:
            return subprocess.Popen(args + ["--"] + argv, env=env, stderr=err), None
    if wrapper_go:
        target = subprocess.Popen(["sh", "-c", 'while [ ! -e "$1/go0" ]; do sleep 0.01; done; '
                                   'shift; exec "$@"', "sh", ck] + argv, env=env)
    else:
        target = subprocess.Popen(argv, env=dict(env, MW_WAIT_GO="1"))
        common.wait_for(lambda: os.path.exists(os.path.join(ck, "ready")), 20, "workload ready")
    with open(errpath, "wb") as err:
        p = subprocess.Popen(args + ["-p", str(target.pid)], env=env, stderr=err)
    common.wait_stderr(p, errpath, "tracing PID")
    open(os.path.join(ck, "go0" if wrapper_go else "go"), "w").close()
    return p, target


def execs(c, mw, wl, mode, ck):
    """A shell that execs the anon workload once traced."""
    label = f"exec/{mode}"
    out = os.path.join(ck, "out")
    anon = os.path.join(wl, "anon")
    argv = ["sh", "-c", 'exec "$0"', anon] if mode == "cmd" else [anon]
    p, target = start_traced(mw, mode, argv, ck, out, {}, wrapper_go=True)
    try:
        c.eq(p.wait(timeout=120), 0, f"{label}: exit status")
    finally:
        if target:
            target.wait(timeout=30)
    s = common.summary(out + ".json")
    if not c.check(s is not None, f"{label}: a summary"):
        return
    c.eq((s["comm"], s["execs"]), ("anon", 1), f"{label}: the program exec'd, one exec")
    c.check("(anon) after 1 exec, exited with status 0" in common.read(out + ".txt"),
            f"{label}: the text report says so")
    check_against(c, label, s, ck, mode, "final")


def killed(c, mw, wl, mode, ck):
    """threadstorm, SIGKILLed while it waits at its 'stormed' checkpoint."""
    label = f"SIGKILL/{mode}"
    out = os.path.join(ck, "out")
    argv = [os.path.join(wl, "threadstorm"), "200", "16"]
    p, target = start_traced(mw, mode, argv, ck, out, {"MW_STEPS": "1"})
    try:
        index = os.path.join(ck, "index")
        common.wait_for(lambda: "stormed" in common.read(index), 60, "the stormed checkpoint")
        victim = target.pid if target else common.children(p.pid)[0]
        os.kill(victim, signal.SIGKILL)
        rc = p.wait(timeout=60)
        c.eq(rc, 128 + 9 if mode == "cmd" else 0, f"{label}: memwatch's exit status")
    finally:
        common.kill_tree(p)
        if target:
            target.wait(timeout=30)
    s = common.summary(out + ".json")
    if not c.check(s is not None, f"{label}: a complete report"):
        return
    c.check(s["exited"] and s.get("exit_signal") == 9, f"{label}: the summary says killed by 9")
    c.check("killed by signal 9" in common.read(out + ".txt"), f"{label}: so does the text")
    check_against(c, label, s, ck, mode, "stormed")


def run(c, mw, wl):
    cases = []
    for mode in ("cmd", "pid"):
        cases += [(f"targets threadstorm/{mode}", lambda m=mode, ck=None: threadstorm(c, mw, m)),
                  (f"targets exec/{mode}", lambda m=mode, ck=None: execs(c, mw, wl, m, ck)),
                  (f"targets SIGKILL/{mode}", lambda m=mode, ck=None: killed(c, mw, wl, m, ck))]
    for label, fn in cases:
        ck = tempfile.mkdtemp(prefix="mw-targets-")
        try:
            with common.subcase(c, label):
                fn(ck=ck)
        finally:
            shutil.rmtree(ck, ignore_errors=True)
