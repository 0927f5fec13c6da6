"""The observer's own page (issue 14): a uprobe hit that cannot emulate the
probed instruction steps it out of line, and the first such hit in a process
makes the kernel map its [uprobes] page (a page) right after memwatch's
marker has run.  A phase begun by that hit must start at the VmSize the
program sees as its first act (workloads/xol: each probed function reads
/proc/self/status first), and the page is memwatch's own (JSON "observer"),
not growth of the program's phase.

workloads/xol's entry_mov begins with mov %rdi,%rax, which no kernel
emulates: its first hit maps the page.  entry_push begins with push %rbp,
which x86 kernels emulate (since 4.15): no page there.  Whether the page was
mapped is what the program itself saw in /proc/self/maps, not assumed.
"""
import json
import os
import subprocess
import tempfile

from e2eutil import KIB, PAGE

CASES = [
    # name, the calls the program makes, the --phase-at functions
    ("mov-first", ["mov", "push", "mov"], ["entry_mov=mov", "entry_push=push"]),
    ("push-only", ["push", "push"], ["entry_push=push"]),
    ("push-then-mov", ["push", "mov", "mov"], ["entry_mov=mov", "entry_push=push"]),
]


def run_one(c, mw, wl, name, calls, specs):
    exe = os.path.join(wl, "xol")
    fd, jpath = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        argv = [mw, "-q", "-j", jpath]
        for s in specs:
            argv += ["--phase-at", f"{exe}:{s}"]
        p = subprocess.run(argv + ["--", exe] + calls, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if not c.eq(p.returncode, 0, f"{name}: memwatch exit status"):
            print("        stderr: " + p.stderr.decode(errors="replace").strip())
            return
        seen = [line.split() for line in p.stdout.decode().splitlines()]
        with open(jpath) as f:
            s = [json.loads(x) for x in f if x.strip()][-1]
    finally:
        os.unlink(jpath)
    phases = s["phases"][1:]		# after "start": one per call
    if not c.eq(len(phases), len(seen), f"{name}: one phase per probed call"):
        return
    mapped_at = None
    for i, (ph, (fn, vm_kb, _rss_kb, upr)) in enumerate(zip(phases, seen)):
        c.eq(ph["vm_start_bytes"], int(vm_kb) * KIB,
             f"{name}: call {i + 1} ({fn}): phase {ph['name']} starts at the VmSize "
             f"the program read first")
        if upr == "1" and mapped_at is None:
            mapped_at = i
    obs = s.get("observer")
    if mapped_at is None:
        c.check(obs is None, f"{name}: no [uprobes] page in the program's maps, none "
                f"reported as memwatch's ({obs})")
    else:
        c.check(obs is not None and obs["vm_bytes"] == PAGE and
                obs["phase"] == phases[mapped_at]["name"] and
                phases[mapped_at]["observer_vm_bytes"] == PAGE,
                f"{name}: the [uprobes] page is memwatch's own, counted in the boundary "
                f"of call {mapped_at + 1} ({obs})")
    grew = [(ph["name"], m["path"]) for ph in s["phases"] for m in ph["top_mappings"]
            if m["path"] == "[uprobes]"]
    c.check(not grew, f"{name}: [uprobes] is no phase's growth {grew}")
    live = [m for m in s["mappings"] if m["path"] == "[uprobes]" and not m["unmapped"]]
    c.check(len(live) == (mapped_at is not None),
            f"{name}: the mappings list [uprobes] as the process has it ({len(live)})")


def run(c, mw, wl):
    for name, calls, specs in CASES:
        failed = c.case_failed
        run_one(c, mw, wl, name, calls, specs)
        print(f"  {'ok  ' if c.case_failed == failed else 'FAIL'} uprobes-page/{name}")
