"""Failures a user can cause: each must give one clear line on stderr and its
own exit code (user/util.h, README's table), and leave nothing attached."""
import os
import subprocess
import tempfile

EXIT = {"usage": 2, "perm": 3, "nopid": 6, "output": 7, "noexec": 126, "notfound": 127}


OUR_PROGS = {"page_fault_user", "page_fault_kernel", "rss_stat", "sys_enter_raw",
             "sys_exit_raw", "sched_process_exec", "sched_process_exit", "mark_uprobe",
             "rss_stat_raw"}


def memwatch_links():
    """IDs of memwatch's BPF programs loaded right now.  Compared before and
    after the error cases: any new one is left behind by a memwatch that has
    exited (run the suite alone: another memwatch running counts too)."""
    import json
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10).stdout.decode()
        progs = json.loads(out or "[]")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return set()
    return {p["id"] for p in progs if p.get("name") in OUR_PROGS}


def expect(c, mw, argv, code, what, user=None, env=None):
    cmd = [mw] + argv
    if user:
        cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all"] + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=env)
    err = p.stderr.decode(errors="replace").strip().splitlines()
    c.eq(p.returncode, code, f"{what}: exit code")
    c.check(len(err) >= 1 and err[0].startswith("memwatch: "),
            f"{what}: says why on stderr ({err[0] if err else 'nothing'})")


def run(c, mw, wl):
    before = memwatch_links()
    expect(c, mw, ["--no-such-option"], EXIT["usage"], "unknown option")
    expect(c, mw, ["-p", "abc"], EXIT["usage"], "malformed PID")
    expect(c, mw, ["-p", "-5"], EXIT["usage"], "negative PID")
    expect(c, mw, ["-p", "0"], EXIT["usage"], "PID 0")
    expect(c, mw, ["-d", "0", "-p", "1"], EXIT["usage"], "zero duration")
    expect(c, mw, [], EXIT["usage"], "nothing to trace")
    expect(c, mw, ["-p", "1", "--", "true"], EXIT["usage"], "both -p and a command")
    expect(c, mw, ["--ringbuf-size", "5000", "-p", "1"], EXIT["usage"], "ring buffer not a power of two")
    expect(c, mw, ["-p", "4194304"], EXIT["nopid"], "nonexistent PID")
    expect(c, mw, ["-p", "2"], EXIT["nopid"], "kernel thread (kthreadd)")
    # memwatch's own PID: the shell execs memwatch, keeping its PID.
    p = subprocess.run(["sh", "-c", f"exec {mw} -p $$"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    c.eq(p.returncode, EXIT["nopid"], "memwatch's own PID: exit code")
    zombie = subprocess.Popen(["sh", "-c", "sleep 0.1 & exec sleep 30"])
    try:
        # A zombie: the child sleep exits, its parent (exec'd sleep 30) never reaps.
        import time
        time.sleep(0.5)
        kids = open(f"/proc/{zombie.pid}/task/{zombie.pid}/children").read().split()
        if kids:
            expect(c, mw, ["-p", kids[0]], EXIT["nopid"], "zombie PID")
    finally:
        zombie.kill()
        zombie.wait()
    expect(c, mw, ["-q", "--", "/nonexistent/cmd"], EXIT["notfound"], "command not found")
    with tempfile.NamedTemporaryFile(delete=False) as f:
        notexec = f.name
    try:
        expect(c, mw, ["-q", "--", notexec], EXIT["noexec"], "command not executable")
    finally:
        os.unlink(notexec)
    expect(c, mw, ["-j", "/nonexistent-dir/out.json", "--", "true"], EXIT["output"],
           "unwritable JSON path")
    expect(c, mw, ["-p", "1"], EXIT["perm"], "not root", user=65534)
    # A command's exit status passes through, as with time(1).
    p = subprocess.run([mw, "-q", "--", "sh", "-c", "exit 7"], timeout=60)
    c.eq(p.returncode, 7, "command's exit status passes through")
    p = subprocess.run([mw, "-q", "--", "sh", "-c", "kill -TERM $$"], timeout=60)
    c.eq(p.returncode, 128 + 15, "command killed by a signal: 128+N")
    # Killed outright, memwatch leaves nothing attached: links are file
    # descriptors, and the kernel closes them with the process.  Its own
    # programs (from its fdinfo) must be gone once it is.
    import time
    import glob
    sleeper = subprocess.Popen(["sleep", "30"])
    mwp = subprocess.Popen([mw, "-q", "-p", str(sleeper.pid)], stderr=subprocess.PIPE)
    ours = set()
    deadline = time.time() + 20
    while time.time() < deadline and len(ours) < 5:
        time.sleep(0.05)
        for fdinfo in glob.glob(f"/proc/{mwp.pid}/fdinfo/*"):
            try:
                for line in open(fdinfo):
                    if line.startswith("prog_id:"):
                        ours.add(int(line.split()[1]))
            except OSError:
                pass
    c.check(len(ours) >= 5, f"memwatch -p attached ({len(ours)} programs)")
    mwp.kill()
    mwp.wait()
    sleeper.kill()
    sleeper.wait()
    time.sleep(0.5)
    left = memwatch_links() & ours
    c.check(not left, f"no BPF programs left loaded after SIGKILL ({sorted(left)})")
    run_least_privilege(c, mw, wl)


def run_least_privilege(c, mw, wl):
    """Root's uid with only CAP_BPF and CAP_PERFMON (plus CAP_SYS_PTRACE for
    -p on a process it did not start): memwatch traces as well as with all."""
    import json
    import tempfile
    d = tempfile.mkdtemp(prefix="mw-caps-")
    out = os.path.join(d, "out.json")
    caps = ["setpriv", "--bounding-set=-all,+bpf,+perfmon,+sys_ptrace", "--inh-caps=-all"]
    p = subprocess.run(caps + [mw, "-q", "-j", out, "--", os.path.join(wl, "anon")],
                       env=dict(os.environ, MW_CKPT_DIR=d), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    c.eq(p.returncode, 0, "only CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE: exit status")
    if p.returncode == 0:
        s = [json.loads(x) for x in open(out)][-1]
        status = {}
        for line in open(os.path.join(d, "final.status")):
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                status[k] = int(v.split()[0]) * 1024
        c.eq(s["totals"]["vm_bytes"], status["VmSize"], "with fewer capabilities: VM size")
    subprocess.run(["rm", "-rf", d])
