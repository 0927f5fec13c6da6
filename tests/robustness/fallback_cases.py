"""Kernel features forced off with MEMWATCH_DISABLE, as an older or
differently built kernel would lack them.  What memwatch cannot do without
(user/capture/preflight.c): exactly one line on stderr naming the feature and the
Linux version that brought it, the documented exit code, and the command
never started.  Where a fallback exists it is taken and the output stays
right: rss_raw (the classic kmem:rss_stat tracepoint), page_fault (RSS
per process from rss_stat alone, with a one-line note), page_fault_tp and
fentry (the next way to see faults: fentry, then a kprobe on
handle_mm_fault, as arm64 has them) and syscall_tp (the
raw syscall tracepoints, with a one-line note), checked against
/proc like any end-to-end case, and the programs memwatch loaded show the
fallback was really in use."""
import json
import os
import shutil
import subprocess
import tempfile

import common

EXIT = {"perm": 3, "nobtf": 4, "tracefs": 5, "kernel": 9}

REQUIRED = [
    # MEMWATCH_DISABLE name, words the line must have, exit code
    ("tp_btf", ["tp_btf", "Linux 5.5"], EXIT["kernel"]),
    ("ringbuf", ["ring buffers", "Linux 5.8"], EXIT["kernel"]),
    ("btf", ["BTF", "CONFIG_DEBUG_INFO_BTF"], EXIT["nobtf"]),
    ("tracefs", ["tracefs", "mount"], EXIT["tracefs"]),
    ("root", ["CAP_BPF", "CAP_PERFMON"], EXIT["perm"]),
]


def required(c, mw, tmp):
    for name, words, code in REQUIRED:
        marker = os.path.join(tmp, "ran-" + name)
        p = subprocess.run([mw, "-q", "--", "touch", marker], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60,
                           env=dict(os.environ, MEMWATCH_DISABLE=name))
        lines = p.stderr.decode(errors="replace").strip().splitlines()
        c.eq(p.returncode, code, f"without {name}: exit code")
        c.check(len(lines) == 1 and lines[0].startswith("memwatch: ") and
                all(w in lines[0] for w in words),
                f"without {name}: one line naming {words} ({lines})")
        c.check(not os.path.exists(marker), f"without {name}: the command never ran")


# What the main BPF object needs and the compat one does without
# (user/capture/kernel.c): forced off, memwatch takes the compat object, which reads
# VMAs from mm->mm_rb; where the kernel keeps them in a maple tree (6.1+)
# instead it says so in one line, exit 9.
COMPAT_SWITCH = [
    ("task_storage", ["task storage", "Linux 5.11"]),
    ("task_btf", ["bpf_get_current_task_btf()", "Linux 5.11"]),
    ("find_vma", ["bpf_find_vma()", "Linux 5.17"]),
    ("bpf_loop", ["bpf_loop()", "Linux 5.17"]),
]


def compat_switch(c, mw, tmp):
    for name, words in COMPAT_SWITCH:
        out = os.path.join(tmp, "compat-" + name + ".json")
        p = subprocess.run([mw, "-q", "-j", out, "--", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=600,
                           env=dict(os.environ, MEMWATCH_DISABLE=name))
        lines = p.stderr.decode(errors="replace").strip().splitlines()
        if p.returncode == 0:
            with open(out) as f:
                k = json.loads(f.read().splitlines()[-1]).get("kernel", {})
            c.eq(k.get("bpf_object"), "compat", f"without {name}: the compat object traces")
        else:
            c.check(p.returncode == EXIT["kernel"] and len(lines) == 1 and
                    all(w in lines[0] for w in words + ["maple tree"]),
                    f"without {name}: the compat object, or one line saying why not "
                    f"(exit {p.returncode}: {lines})")


def programs_in_use(mw, disable, tmp):
    """Names of the BPF programs memwatch holds while tracing."""
    errpath = os.path.join(tmp, "progs.err")
    with open(errpath, "wb") as err:
        p = subprocess.Popen([mw, "-v", "-q", "--", "sleep", "30"], stderr=err,
                             env=dict(os.environ, MEMWATCH_DISABLE=disable))
    try:
        common.wait_stderr(p, errpath, "from its first instruction")
        ids = common.prog_ids(p.pid)
        names = {q["name"] for q in common.bpftool("prog") if q["id"] in ids}
        return names, common.read(errpath)
    finally:
        common.kill_tree(p)


def exact_with(c, mw, disable, modes):
    """The end-to-end anon case, both modes, with features off."""
    h = common.harness()
    old = os.environ.get("MEMWATCH_DISABLE")
    os.environ["MEMWATCH_DISABLE"] = disable
    try:
        for mode in modes:
            before = getattr(c, "case_failed", 0)
            h.run_case(c, mw, "anon", ["anon"], mode, True)
            if getattr(c, "case_failed", 0) != before:
                print(f"    (the failures above: {disable} off, anon/{mode})")
    finally:
        if old is None:
            del os.environ["MEMWATCH_DISABLE"]
        else:
            os.environ["MEMWATCH_DISABLE"] = old


def rss_raw(c, mw, tmp):
    names, _ = programs_in_use(mw, "rss_raw", tmp)
    c.check("rss_stat" in names and "rss_stat_raw" not in names,
            f"rss_raw off: the classic rss_stat program is the one loaded ({sorted(names)})")
    exact_with(c, mw, "rss_raw", ("cmd", "pid"))


FAULT_PROGRAMS = {"exceptions:page_fault_user": "page_fault_user",
                  "fentry/handle_mm_fault": "mm_fault_fentry",
                  "kprobe/handle_mm_fault": "mm_fault_kprobe"}


def fault_hook(mw, disable):
    """The page-fault hook `memwatch --version` names with disable."""
    p = subprocess.run([mw, "--version"], stdout=subprocess.PIPE, timeout=120,
                       env=dict(os.environ, MEMWATCH_DISABLE=disable))
    for ln in p.stdout.decode().splitlines():
        if ln.strip().startswith("page faults:"):
            return ln.split(":", 1)[1].split("(")[0].strip()
    return None


def page_fault(c, mw, tmp):
    names, err = programs_in_use(mw, "page_fault", tmp)
    c.check(not any(n in FAULT_PROGRAMS.values() or n.startswith("page_fault")
                    for n in names),
            f"page_fault off: no page-fault program loaded ({sorted(names)})")
    notes = [ln for ln in err.splitlines() if "note:" in ln]
    c.check(len(notes) == 1 and "no page-fault hook" in notes[0] and
            "handle_mm_fault" in notes[0],
            f"page_fault off: one note saying what it costs ({notes})")
    exact_with(c, mw, "page_fault", ("cmd", "pid"))


def fault_hooks(c, mw, tmp):
    """Each way memwatch sees page faults, as a kernel without the ones
    before it has them (arm64: no exceptions tracepoint; its 6.1: no fentry
    trampoline): the hook --version names is the program loaded, and the
    counts stay exact (the e2e check: faults equal /proc's minflt+majflt).
    A way this kernel lacks ends in the next, down to none."""
    for disable in ("", "page_fault_tp", "page_fault_tp,fentry"):
        hook = fault_hook(mw, disable)
        label = disable or "nothing"
        c.check(hook in FAULT_PROGRAMS or hook == "none",
                f"{label} off: --version names the hook ({hook})")
        names, err = programs_in_use(mw, disable, tmp)
        loaded = sorted(n for n in names if n in FAULT_PROGRAMS.values())
        want = [FAULT_PROGRAMS[hook]] if hook in FAULT_PROGRAMS else []
        c.eq(loaded, want, f"{label} off: the fault program loaded is {hook}'s")
        if disable and hook != "none":
            exact_with(c, mw, disable, ("cmd", "pid"))


GETPPID_CALLS = 200000


def syscall_runs(mw, disable, tmp):
    """(names of the programs memwatch loaded, runs of its sys_enter program
    while another process, not traced, makes GETPPID_CALLS getppid() calls,
    memwatch's stderr), with kernel.bpf_stats_enabled on for the count."""
    errpath = os.path.join(tmp, "sys.err")
    with open(errpath, "wb") as err:
        p = subprocess.Popen([mw, "-v", "-q", "--", "sleep", "30"], stderr=err,
                             env=dict(os.environ, MEMWATCH_DISABLE=disable))
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    old = common.read(stats).strip()
    try:
        common.wait_stderr(p, errpath, "from its first instruction")
        ids = common.prog_ids(p.pid)

        def runs():
            return {q["name"]: q.get("run_cnt", 0) for q in common.bpftool("prog")
                    if q["id"] in ids}
        with open(stats, "w") as f:
            f.write("1")
        before = runs()
        subprocess.run(["/usr/bin/python3", "-c", "import os\nfor _ in range(%d): os.getppid()"
                        % GETPPID_CALLS], check=True, timeout=120)
        after = runs()
        enter = [n for n in after if n.startswith("sys_enter")]
        n = sum(after[k] - before.get(k, 0) for k in enter)
        return set(after), n, common.read(errpath)
    finally:
        with open(stats, "w") as f:
            f.write(old)
        common.kill_tree(p)


def syscall_tp(c, mw, tmp):
    """Per-call syscall tracepoints: an untraced process's getppid() runs no
    memwatch program; without them (MEMWATCH_DISABLE=syscall_tp, as a kernel
    without CONFIG_FTRACE_SYSCALLS) each runs the raw filter, memwatch says
    so in one line, and the numbers stay exact."""
    names, n, _ = syscall_runs(mw, "", tmp)
    c.check("sys_enter_tp" in names and "sys_exit_tp" in names and
            "sys_enter_raw" not in names,
            f"the per-call syscall programs are the ones loaded ({sorted(names)})")
    c.check(n < GETPPID_CALLS // 10,
            f"{GETPPID_CALLS} getppid() calls elsewhere ran memwatch's sys_enter "
            f"{n} times (other processes' memory calls only)")
    names, n, err = syscall_runs(mw, "syscall_tp", tmp)
    c.check("sys_enter_raw" in names and "sys_enter_tp" not in names,
            f"syscall_tp off: the raw syscall programs are the ones loaded ({sorted(names)})")
    c.check(n >= GETPPID_CALLS,
            f"syscall_tp off: the raw filter ran for each of {GETPPID_CALLS} getppid() "
            f"calls ({n} runs)")
    notes = [ln for ln in err.splitlines() if "degraded on Linux" in ln]
    c.check(len(notes) == 1 and "syscall-filter" in notes[0],
            f"syscall_tp off: one line naming the degraded feature ({notes})")
    exact_with(c, mw, "syscall_tp", ("cmd", "pid"))
    # A kernel that has them but refuses the attach (Debian's 6.12 with
    # only CAP_BPF and CAP_PERFMON): the raw ones, said in one line.
    names, n, err = syscall_runs(mw, "syscall_tp_attach", tmp)
    c.check("sys_enter_raw" in names and "sys_enter_tp" not in names,
            f"syscall_tp attach refused: the raw syscall programs ({sorted(names)})")
    notes = [ln for ln in err.splitlines() if "degraded on Linux" in ln]
    c.check(len(notes) == 1 and "syscall-filter" in notes[0],
            f"syscall_tp attach refused: one line naming the degraded feature ({notes})")


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-fallback-")
    try:
        for label, fn in (("fallbacks required features", lambda: required(c, mw, tmp)),
                          ("fallbacks compat object", lambda: compat_switch(c, mw, tmp)),
                          ("fallbacks rss_raw", lambda: rss_raw(c, mw, tmp)),
                          ("fallbacks page_fault", lambda: page_fault(c, mw, tmp)),
                          ("fallbacks fault hooks", lambda: fault_hooks(c, mw, tmp)),
                          ("fallbacks syscall_tp", lambda: syscall_tp(c, mw, tmp))):
            with common.subcase(c, label):
                fn()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
