"""Least privilege.  Once attached, memwatch keeps only the capabilities the
rest of the run needs (user/capture/privs.c): CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH
and CAP_KILL, plus
CAP_BPF on kernels before 6.5 with unprivileged BPF disabled.  Checked in
/proc/<memwatch>/status while it traces: effective, permitted and bounding
sets are exactly that, nothing inheritable or ambient, no_new_privs set;
the command keeps the user's privileges.  Then why each one stays, and a
run with only CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE to start with."""
import os
import re
import shutil
import subprocess
import tempfile

import common

LEAST = ["setpriv", "--bounding-set=-all,+bpf,+perfmon,+sys_ptrace", "--inh-caps=-all"]
CAP = {"dac_read_search": 2, "kill": 5, "sys_ptrace": 19, "perfmon": 38, "bpf": 39}


def mask(names):
    return sum(1 << CAP[n] for n in names)


def bpf_checked_per_call():
    """Before 6.5, with unprivileged BPF off, every bpf() command checks
    CAP_BPF (not only loading): there memwatch keeps it."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    old = (int(m.group(1)), int(m.group(2))) < (6, 5)
    return old and common.read("/proc/sys/kernel/unprivileged_bpf_disabled").strip() not in ("", "0")


def retained(start):
    """The documented set, of what memwatch started with."""
    want = ["sys_ptrace", "dac_read_search", "kill"] + (["bpf"] if bpf_checked_per_call() else [])
    return [n for n in want if n in start]


def check_sets(c, label, pid, eff_prm, bnd):
    st = common.status_fields(pid)
    got = {k: int(st.get(k, "-1"), 16) for k in ("CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb")}
    c.eq(hex(got["CapEff"]), hex(mask(eff_prm)), f"{label}: CapEff is {'+'.join(eff_prm)}")
    c.eq(hex(got["CapPrm"]), hex(mask(eff_prm)), f"{label}: CapPrm is {'+'.join(eff_prm)}")
    c.eq(hex(got["CapBnd"]), hex(mask(bnd)), f"{label}: CapBnd is {'+'.join(bnd)}")
    c.check(got["CapInh"] == 0 and got["CapAmb"] == 0, f"{label}: nothing inheritable or ambient")
    c.eq(st.get("NoNewPrivs"), "1", f"{label}: no_new_privs")


def start(mw, args, errpath, prefix=()):
    err = open(errpath, "wb")
    p = subprocess.Popen(list(prefix) + [mw, "-v", "-q"] + args, stderr=err,
                         stdout=subprocess.DEVNULL)
    err.close()
    return p


def root_cmd(c, mw, tmp):
    """-- CMD as root: memwatch keeps the set; the command keeps everything."""
    errpath = os.path.join(tmp, "cmd.err")
    p = start(mw, ["--", "sleep", "30"], errpath)
    try:
        common.wait_stderr(p, errpath, "capabilities dropped")
        keep = retained(["sys_ptrace", "dac_read_search", "kill", "bpf"])
        check_sets(c, "-- CMD", p.pid, keep, keep)
        kid = common.children(p.pid)[0]
        mine = common.status_fields(os.getpid())
        st = common.status_fields(kid)
        c.eq(st.get("CapEff"), mine.get("CapEff"), "-- CMD: the command keeps the user's capabilities")
        c.eq(st.get("NoNewPrivs"), "0", "-- CMD: the command has no no_new_privs")
        c.check("warning" not in common.read(errpath), "-- CMD: no warning")
        os.kill(kid, 9)
        c.eq(p.wait(timeout=30), 128 + 9, "-- CMD: exit status after the command is killed")
    finally:
        common.kill_tree(p)


def root_pid(c, mw, tmp):
    errpath = os.path.join(tmp, "pid.err")
    target = subprocess.Popen(["sleep", "30"])
    p = start(mw, ["-p", str(target.pid)], errpath)
    try:
        common.wait_stderr(p, errpath, "tracing PID")
        keep = retained(["sys_ptrace", "dac_read_search", "kill", "bpf"])
        check_sets(c, "-p", p.pid, keep, keep)
        p.terminate()
        c.eq(p.wait(timeout=30), 0, "-p: exit status after SIGTERM")
    finally:
        for q in (p, target):
            if q.poll() is None:
                q.kill()
                q.wait()


def least_privilege(c, mw, wl, tmp):
    """Root's uid with only CAP_BPF and CAP_PERFMON (plus CAP_SYS_PTRACE):
    traces as well as with all; then keeps CAP_SYS_PTRACE.  Without
    CAP_SETPCAP the bounding set cannot shrink: no_new_privs stands in."""
    h = common.harness()
    given = ["bpf", "perfmon", "sys_ptrace"]
    caps = LEAST
    out = os.path.join(tmp, "lp.json")
    p = subprocess.run(caps + [mw, "-q", "-j", out, "--", os.path.join(wl, "anon")],
                       env=dict(os.environ, MW_CKPT_DIR=tmp), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    c.eq(p.returncode, 0, "only CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE: exit status")
    s = common.summary(out)
    if c.check(s is not None, "fewer capabilities: a summary"):
        final = h.parse_status(os.path.join(tmp, "final.status"))
        c.eq(s["totals"]["vm_bytes"], final["VmSize"], "fewer capabilities: VM size")
        c.near(s["totals"]["rss_bytes"], final["VmRSS"], "fewer capabilities: RSS")
        h.compare_mappings(c, s, tmp)
    errpath = os.path.join(tmp, "lp.err")
    q = start(mw, ["--", "sleep", "30"], errpath, prefix=caps)
    try:
        common.wait_stderr(q, errpath, "capabilities dropped")
        check_sets(c, "fewer capabilities", q.pid, retained(given), given)
        c.check("warning" not in common.read(errpath), "fewer capabilities: no warning")
    finally:
        common.kill_tree(q)


def kill_needed(c, mw, tmp):
    """CAP_KILL: SIGTERM still reaches a command that switched user."""
    errpath = os.path.join(tmp, "kill.err")
    p = start(mw, ["--", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                   "sleep", "30"], errpath)
    try:
        common.wait_stderr(p, errpath, "from its first instruction")
        common.wait_for(lambda: any(common.read(f"/proc/{k}/comm").strip() == "sleep"
                                    for k in common.children(p.pid)), 10, "the command to exec sleep")
        p.terminate()
        c.eq(p.wait(timeout=10), 128 + 15, "SIGTERM passed on to a command now run by nobody")
    finally:
        common.kill_tree(p)


def private_dir(c, mw, tmp, prefix=(), label="private directory"):
    """-p on another user's process, a file of its own mapped from a 0700
    directory: with CAP_DAC_READ_SEARCH memwatch looks the path up; started
    without it (prefix: setpriv), a path it may not look up is not taken for
    a deleted file either."""
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        c.check(False, "private directory: needs /usr/bin/python3")
        return
    d = os.path.join(tmp, "private" + str(len(prefix)))
    os.mkdir(d, 0o700)
    os.chown(d, 65534, 65534)
    os.chmod(tmp, 0o755)
    data = os.path.join(d, "data")
    script = (f"import mmap,time\nf=open({data!r},'wb+');f.write(b'x'*65536);f.flush()\n"
              "m=mmap.mmap(f.fileno(),65536);m[0];print('ready',flush=True)\n"
              "time.sleep(30)\n")
    target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               py, "-c", script], stdout=subprocess.PIPE)
    out = os.path.join(tmp, f"private{len(prefix)}.json")
    try:
        target.stdout.readline()
        p = subprocess.run(list(prefix) + [mw, "-q", "-d", "1", "-j", out, "-p", str(target.pid)],
                           stderr=subprocess.PIPE, timeout=60)
        c.eq(p.returncode, 0, f"{label}: exit status")
        s = common.summary(out)
        paths = [m["path"] for m in (s or {}).get("mappings", []) if "data" in m["path"]]
        c.eq(paths, [data], f"{label}: the mapped file, not '(deleted)'")
    finally:
        target.kill()
        target.wait()


def other_user(c, mw, wl, mode):
    """anon run by nobody, traced by root memwatch (-p, or -- CMD through
    setpriv): its /proc/PID/pagemap and auxv are 0400 and nobody's, so
    re-measuring per-mapping RSS needs CAP_DAC_READ_SEARCH, and reading its
    maps and smaps CAP_SYS_PTRACE.  Checked like an end-to-end case."""
    h = common.harness()
    ck = tempfile.mkdtemp(prefix="mw-caps-user-")
    out = tempfile.mkdtemp(prefix="mw-caps-user-out-")
    os.chown(ck, 65534, 65534)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", os.path.join(wl, "anon")]
    try:
        runner = h.run_cmd_mode if mode == "cmd" else h.run_pid_mode
        rc, err, jpath = runner(mw, argv, ck, out, [])
        c.eq(rc, 0, f"nobody's process, {mode}: exit status")
        s = common.summary(jpath)
        if c.check(s is not None and os.path.exists(os.path.join(ck, "final.status")),
                   f"nobody's process, {mode}: a summary and the workload's truth"):
            h.compare_totals(c, s, ck, mode, True)
            h.compare_mappings(c, s, ck)
    finally:
        shutil.rmtree(ck, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def other_user_least(c, mw, wl, tmp):
    """The same, memwatch started with only what tracing another user's
    process takes: CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH."""
    wrapper = os.path.join(tmp, "mw-least")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec setpriv --bounding-set=-all,+bpf,+perfmon,+sys_ptrace,"
                f"+dac_read_search --inh-caps=-all '{mw}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    other_user(c, wrapper, wl, "pid")


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-caps-")
    try:
        for label, fn in (("caps -- CMD", lambda: root_cmd(c, mw, tmp)),
                          ("caps -p", lambda: root_pid(c, mw, tmp)),
                          ("caps least privilege", lambda: least_privilege(c, mw, wl, tmp)),
                          ("caps CAP_KILL", lambda: kill_needed(c, mw, tmp)),
                          ("caps nobody's process -- CMD", lambda: other_user(c, mw, wl, "cmd")),
                          ("caps nobody's process -p", lambda: other_user(c, mw, wl, "pid")),
                          ("caps nobody's process, fewer capabilities",
                           lambda: other_user_least(c, mw, wl, tmp)),
                          ("caps private directory", lambda: private_dir(c, mw, tmp)),
                          ("caps private directory, fewer capabilities",
                           lambda: private_dir(c, mw, tmp, LEAST, "private directory, fewer capabilities"))):
            with common.subcase(c, label):
                fn()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
