"""Host-wide tracing: -a, --cgroup, several -p, -f, and `memwatch mark` steps.
Each workload's totals as memwatch reports them when it exits ("exit" lines)
must equal what the workload read from its own /proc/self/status at its final
checkpoint; a step must hold the growth between two checkpoints."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from device_cases import device_vm
from e2eutil import (SPLIT_RSS, parse_status as status, rss_tol as tol, smaps_rss,  # noqa: E402
                     status_slack)


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


class Host:
    """memwatch host-wide in the background, JSON to a file."""

    def __init__(self, mw, args, tmp):
        self.json = os.path.join(tmp, "host.json")
        self.err = open(os.path.join(tmp, "host.err"), "w+")
        self.p = subprocess.Popen([mw, "-q", "-j", self.json] + args, stdout=subprocess.DEVNULL,
                                  stderr=self.err)
        deadline = time.time() + 30
        while time.time() < deadline and not self.ready():
            time.sleep(0.05)

    def ready(self):
        self.err.seek(0)
        return "tracing" in self.err.read() or self.p.poll() is not None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        lines = []
        if os.path.exists(self.json):
            with open(self.json) as f:
                lines = [json.loads(x) for x in f]
        self.err.seek(0)
        return rc, lines, self.err.read()


def run_workload(wl, name, tmp, args=(), env_extra=None, prefix=()):
    ck = tempfile.mkdtemp(prefix=f"ck-{name}-", dir=tmp)
    env = dict(os.environ, MW_CKPT_DIR=ck, **(env_extra or {}))
    p = subprocess.Popen(list(prefix) + [os.path.join(wl, name)] + list(args), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, ck


def exit_of(lines, pid):
    ex = [o for o in lines if o.get("type") == "exit" and o.get("pid") == pid]
    return ex[-1] if ex else None


def check_exit(c, label, lines, pid, ck):
    """The exit line of pid against the workload's final checkpoint."""
    e = exit_of(lines, pid)
    if not c.check(e is not None, f"{label}: an exit line for PID {pid}"):
        return
    t = status(os.path.join(ck, "final.status"))
    c.eq(e["vm_bytes"], t["VmSize"], f"{label}: VM at exit")
    c.eq(e["vm_peak_bytes"], t["VmPeak"], f"{label}: VM peak")
    # status's counters are approximate on 6.2+ (status_slack()).
    # smaps walks the page tables: exact, where status may not be (before
    # 6.2 -a reports the mm's counters, as status does: docs/kernels.md).
    smaps = os.path.join(ck, "final.smaps")
    if os.path.exists(smaps) and not SPLIT_RSS:
        c.near(e["rss_bytes"], smaps_rss(smaps), f"{label}: RSS at exit (smaps)", tol(smaps_rss(smaps)))
    c.near(e["rss_bytes"], t["VmRSS"], f"{label}: RSS at exit", tol(t["VmRSS"]) + status_slack(3))
    c.near(e["rss_anon_bytes"], t["RssAnon"], f"{label}: RssAnon", tol(t["RssAnon"]) + status_slack(1))
    c.near(e["rss_file_bytes"], t["RssFile"], f"{label}: RssFile", tol(t["RssFile"]) + status_slack(1))
    c.near(e["rss_shmem_bytes"], t["RssShmem"], f"{label}: RssShmem",
           tol(t["RssShmem"]) + status_slack(1))
    c.near(e["rss_peak_bytes"], t["VmHWM"], f"{label}: RSS peak (VmHWM)",
           tol(t["VmHWM"]) + status_slack(3))
    c.eq((e["locked_bytes"], e["pinned_bytes"]), (t["VmLck"], t["VmPin"]),
         f"{label}: VmLck and VmPin")
    # Device VM (issue 27): the VMAs smaps shows as a driver's or a dma-buf's,
    # at the end, and the largest at a checkpoint.
    if os.path.exists(smaps):
        every = [os.path.join(ck, x) for x in os.listdir(ck) if x.endswith(".smaps")]
        c.eq((e["device_vm_bytes"], e["device_vm_peak_bytes"], e["device_vm_exact"]),
             (device_vm(smaps), max(device_vm(x) for x in every), True),
             f"{label}: device VM at exit, its peak, exact")
    c.eq(e.get("exit_status"), 0, f"{label}: exit status")


def all_case(c, mw, wl, tmp):
    """-a: workloads started after memwatch, short-lived ones, a fork+exec."""
    h = Host(mw, ["-a"], tmp)
    runs = []
    # devmaps: it ends with 1 MiB locked (VmLck)
    for name in ("anon", "file", "shm", "threads", "forkexec", "devmaps"):
        p, ck = run_workload(wl, name, tmp)
        p.wait(timeout=120)
        runs.append((name, p.pid, ck))
    shorts = [subprocess.Popen(["/bin/true"]) for _ in range(20)]
    for p in shorts:
        p.wait()
    failing = subprocess.Popen(["/bin/sh", "-c", "exit 3"])
    failing.wait()
    time.sleep(0.3)
    rc, lines, err = h.stop()
    c.eq(rc, 0, f"-a: exit status ({err.strip()[:200]})")
    for name, pid, ck in runs:
        check_exit(c, f"-a {name}", lines, pid, ck)
    got = [exit_of(lines, p.pid) for p in shorts]
    c.check(all(e is not None and e["comm"] == "true" and e.get("exit_status") == 0 for e in got),
            f"-a: all 20 short-lived /bin/true have exit lines "
            f"({sum(e is not None for e in got)})")
    e = exit_of(lines, failing.pid)
    c.check(e is not None and e.get("exit_status") == 3, "-a: an exit status of 3 is reported")
    summary = [o for o in lines if o.get("type") == "step"]
    c.check(bool(summary) and summary[-1].get("exited", 0) >= 26,
            "-a: the closing step counts the exits")
    c.check(all(o.get("lost_events", 0) == 0 for o in summary), "-a: no events lost")


def cgroup_case(c, mw, wl, tmp):
    """--cgroup: only the processes in a cgroup the test makes."""
    mnt = cgroup2_mount()
    if not c.check(mnt is not None, "--cgroup: a cgroup2 hierarchy is mounted"):
        return
    cg = os.path.join(mnt, f"mw-e2e-{os.getpid()}")
    os.makedirs(cg, exist_ok=True)
    try:
        h = Host(mw, ["--cgroup", cg], tmp)
        inside, ck_in = run_workload(wl, "anon", tmp,
                                     prefix=("/bin/sh", "-c",
                                             f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh"))
        outside, _ = run_workload(wl, "file", tmp)
        inside.wait(timeout=120)
        outside.wait(timeout=120)
        time.sleep(0.2)
        rc, lines, err = h.stop()
        c.eq(rc, 0, f"--cgroup: exit status ({err.strip()[:200]})")
        check_exit(c, "--cgroup inside", lines, inside.pid, ck_in)
        e = exit_of(lines, inside.pid)
        c.check(e is not None and e["cgroup"] == "/" + os.path.basename(cg),
                f"--cgroup: the process is named with its cgroup ({e and e['cgroup']})")
        c.check(exit_of(lines, outside.pid) is None,
                "--cgroup: a process outside the cgroup is not traced")
        others = [o for o in lines if o.get("type") == "exit" and o["pid"] != inside.pid]
        c.check(not others, f"--cgroup: nothing else exits in it ({len(others)})")
    finally:
        try:
            os.rmdir(cg)
        except OSError:
            pass


def pids_follow_case(c, mw, wl, tmp):
    """-p A -p B: two waiting workloads; -f --by process -- CMD: a shell and
    its children, host-wide totals."""
    a, ck_a = run_workload(wl, "anon", tmp, env_extra={"MW_WAIT_GO": "1"})
    b, ck_b = run_workload(wl, "brk", tmp, env_extra={"MW_WAIT_GO": "1"})
    for ck in (ck_a, ck_b):
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(ck, "ready")) and time.time() < deadline:
            time.sleep(0.02)
    h = Host(mw, ["-p", str(a.pid), "-p", str(b.pid)], tmp)
    for ck in (ck_a, ck_b):
        open(os.path.join(ck, "go"), "w").close()
    a.wait(timeout=120)
    b.wait(timeout=120)
    time.sleep(0.2)
    rc, lines, err = h.stop()
    c.eq(rc, 0, f"-p -p: exit status ({err.strip()[:200]})")
    check_exit(c, "-p anon", lines, a.pid, ck_a)
    check_exit(c, "-p brk", lines, b.pid, ck_b)

    ck = tempfile.mkdtemp(prefix="ck-follow-", dir=tmp)
    out = os.path.join(tmp, "follow.json")
    env = dict(os.environ, MW_CKPT_DIR=ck)
    script = f'{wl}/anon & echo $! > {ck}/child.pid; wait; exit 5'
    p = subprocess.run([mw, "-q", "-f", "--by", "process", "-j", out, "--", "/bin/sh", "-c", script], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 5, "-f -- CMD: exits with the command's status")
    lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
    child = int(open(os.path.join(ck, "child.pid")).read()) if \
        os.path.exists(os.path.join(ck, "child.pid")) else -1
    check_exit(c, "-f child", lines, child, ck)
    shells = [o for o in lines if o.get("type") == "exit" and o["comm"] == "sh"]
    c.check(len(shells) == 1 and shells[0].get("exit_status") == 5,
            "-f: the shell's own exit line, status 5")


def steps_case(c, mw, wl, tmp):
    """memwatch mark steps (phases --mark waits at each boundary): each step
    holds what the workload grew in it, to the byte for VM."""
    h = Host(mw, ["-a"], tmp)
    p, ck = run_workload(wl, "phases", tmp, args=("--mark",), env_extra={"MW_STEPS": "1"})
    names = ("load_model", "alloc_io", "release")
    for name in names:
        deadline = time.time() + 60
        while time.time() < deadline and not (
                os.path.exists(os.path.join(ck, "index")) and
                name in open(os.path.join(ck, "index")).read().split()):
            time.sleep(0.01)
        r = subprocess.run([mw, "mark", "--session", str(h.p.pid), name],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        c.eq(r.returncode, 0, f"mark {name}: exit status ({r.stderr.decode().strip()})")
        open(os.path.join(ck, name + ".go"), "w").close()
    p.wait(timeout=120)
    rc, lines, err = h.stop()
    c.eq(rc, 0, f"steps: exit status ({err.strip()[:200]})")
    by_name = {o["name"]: o for o in lines if o.get("type") == "step"}
    c.check(set(by_name) == {"start", *names}, f"steps: a line per step ({sorted(by_name)})")
    t = {n: status(os.path.join(ck, n + ".status")) for n in names + ("final",)}
    rel = by_name.get("release", {})
    c.check(p.pid in [e["pid"] for e in rel.get("exits", [])],
            "step release: the workload exited in it, and it says so")
    for step, a, b in (("load_model", "load_model", "alloc_io"),
                       ("alloc_io", "alloc_io", "release")):
        row = [r for r in by_name.get(step, {}).get("top", []) if r["pid"] == p.pid]
        if not c.check(len(row) == 1, f"step {step}: the workload is in its table"):
            continue
        c.eq(row[0]["vm_growth_bytes"], t[b]["VmSize"] - t[a]["VmSize"], f"step {step}: VM growth")
        want = t[b]["VmRSS"] - t[a]["VmRSS"]
        c.near(row[0]["rss_growth_bytes"], want, f"step {step}: RSS growth", tol(abs(want)))
        c.check("mem_available_change_bytes" in by_name[step],
                f"step {step}: the host's MemAvailable change")
    total = status("/proc/meminfo").get("MemTotal")
    c.check(all(o["mem_total_bytes"] == total for o in by_name.values()),
            f"steps: MemTotal equals /proc/meminfo's ({total})")
    for o in by_name.values():
        c.check(0 < o["mem_available_bytes"] <= total and
                o["mem_available_bytes"] - o["mem_available_change_bytes"] <= total,
                f"step {o['name']}: MemAvailable and where it began lie within MemTotal")


def errors_case(c, mw, wl, tmp):
    """What a user can get wrong host-wide: one line and its exit code."""
    for args, code, what in ((["--cgroup", "/no/such/cgroup", "-d", "1"], 6, "a missing cgroup"),
                             (["-a", "--stacks", "-d", "1"], 2, "-a with --stacks"),
                             (["-a", "--cgroup", "x", "-d", "1"], 2, "-a with --cgroup"),
                             (["-f", "-d", "1"], 2, "-f with nothing to follow")):
        p = subprocess.run([mw, "-q"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        err = p.stderr.decode()
        c.eq(p.returncode, code, f"{what}: exit status")
        c.check(err.count("\n") == 1 and err.startswith("memwatch: "),
                f"{what}: one line on stderr ({err.strip()[:120]})")


# Podman as this kind of machine allows it: cgroups v1 and v2 side by side
# and no systemd (crun refuses the hybrid; runc and the cgroupfs manager
# work), and no CAP_SYS_RESOURCE to raise rlimits.
PODMAN_RUN = ["run", "-d", "--runtime", "runc", "--network", "none",
              "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def podman_rootfs(tmp):
    """A root file system of busybox alone, for --rootfs: no image, no
    registry."""
    root = os.path.join(tmp, "rootfs")
    for d in ("bin", "proc", "sys", "dev", "tmp", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for tool in ("sh", "head", "tr", "sleep", "cat"):
        if not os.path.lexists(os.path.join(root, "bin", tool)):
            os.symlink("busybox", os.path.join(root, "bin", tool))
    return root


def pids_in_cgroup_of(cid):
    """The processes whose cgroup v2 path names container cid."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cgroup") as f:
                v2 = [x for x in f.read().splitlines() if x.startswith("0::")]
        except OSError:
            continue
        if v2 and cid in v2[0] and "conmon" not in v2[0]:
            pids.append(int(d))
    return pids


def containers_case(c, mw, wl, tmp):
    """-a names containers as their users named them (issue 28): two podman
    containers of busybox, a shell holding 12 and 24 MB in a variable and
    its sleep.  Paused
    (the freezer stops every process), each container's cgroup in the JSON
    says its name, engine and id, and its RSS equals the sum of its
    processes' VmRSS; after podman rm, their exit lines carry the name."""
    podman = shutil.which("podman")
    if os.environ.get("MW_GUEST"):
        print("    skip containers: in a matrix guest (no container runtime there)")
        return
    if not c.check(podman is not None, "containers: podman is installed (scripts/setup.sh)"):
        return
    root = podman_rootfs(tmp)
    h = Host(mw, ["-a", "-i", "0.5", "--by", "container"], tmp)
    names = [f"mw-e2e-{os.getpid()}-{x}" for x in ("a", "b")]
    ids = {}
    try:
        for i, n in enumerate(names):
            # The shell stays (no exec of its last command) with x, and
            # sleep as its child: two processes.
            script = (f'x=$(head -c {12 * (i + 1)}000000 /dev/zero | tr "\\0" a); '
                      'sleep 120; echo ${#x}')
            p = subprocess.run([podman] + PODMAN_RUN + ["--name", n, "--rootfs", root,
                                                        "/bin/sh", "-c", script],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            if not c.eq(p.returncode, 0, f"containers: podman run {n} "
                        f"({p.stderr.decode(errors='replace').strip()[-300:]})"):
                return
            ids[n] = p.stdout.decode().split()[-1]
        # Until each has taken its memory and sleeps: its shell's RSS over
        # 12 MB, its pipeline gone, sleep there (two processes).
        # A process of the pipeline can exit between the cgroup's listing
        # and the read of its status: it counts nothing then.
        def rss_of(pid):
            try:
                return status(f"/proc/{pid}/status").get("VmRSS", 0)
            except OSError:
                return 0
        deadline = time.time() + 60
        while time.time() < deadline:
            rss = {n: sum(rss_of(p) for p in pids_in_cgroup_of(ids[n])) for n in names}
            if all(rss[n] > 12_000_000 * (i + 1) and len(pids_in_cgroup_of(ids[n])) == 2
                   for i, n in enumerate(names)):
                break
            time.sleep(0.2)
        c.check(time.time() < deadline, f"containers: both took their memory ({rss})")
        for n in names:
            subprocess.run([podman, "pause", n], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        want = {n: {p: status(f"/proc/{p}/status").get("VmRSS", 0)
                    for p in pids_in_cgroup_of(ids[n])} for n in names}
        # The interval lines written while both are paused: after this
        # one, before podman rm (a line during its teardown shows less).
        first = len(open(h.json).readlines())
        time.sleep(1.5)
        last = len(open(h.json).readlines())
        for n in names:
            subprocess.run([podman, "rm", "-f", n], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        time.sleep(2)		# gone for more than MW_HCT_GONE_NS: their ends
    finally:
        rc, lines, err = h.stop()
        subprocess.run([podman, "rm", "-f"] + names, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
    c.eq(rc, 0, f"containers: memwatch exit status ({err.strip()[:200]})")
    frames = [o for o in lines[first:last] if o.get("type") == "interval"]
    for n in names:
        cgs = [g for o in frames for g in o.get("cgroups", []) if g.get("container") == n]
        if not c.check(cgs, f"containers: {n} named in the cgroups of the interval lines"):
            continue
        g = cgs[-1]		# the last before podman rm: paused
        c.eq((g["container_engine"], g["container_id"]), ("podman", ids[n]),
             f"containers: {n}: engine and id")
        total = sum(want[n].values())
        c.near(g["rss_bytes"], total, f"containers: {n}: RSS of its cgroup, paused, is its "
               f"processes' VmRSS ({len(want[n])} processes)", tol(total) + status_slack(3))
        ex = [o for o in lines if o.get("type") == "exit" and o["pid"] in want[n]]
        c.check(len(ex) == len(want[n]) and all(o.get("container") == n for o in ex),
                f"containers: {n}: an exit line per process, each naming it "
                f"({[(o['pid'], o.get('container')) for o in ex]})")
        # --by container: a row per container, its RSS its processes'.
        rows = [r for o in frames for r in o.get("containers", []) if r.get("container") == n and
                not r.get("container_monitor")]
        if c.check(rows, f"containers: {n} has a row in the interval lines' containers"):
            paused = [r for r in rows if r["processes"] == len(want[n])]
            c.check(paused and abs(paused[-1]["rss_bytes"] - total) <= tol(total) + status_slack(3),
                    f"containers: {n}: its row's RSS, paused, is its processes' VmRSS "
                    f"({paused[-1]['rss_bytes'] if paused else None} vs {total})")
        # Its end, once: after podman rm, none of its processes is left.
        ends = [o for o in lines if o.get("type") == "container_exit" and o.get("container") == n
                and not o.get("container_monitor")]
        if c.check(len(ends) == 1, f"containers: {n}: one container_exit line ({len(ends)})"):
            e = ends[0]
            # Its shell's $(head | tr) ran a subshell and two more.
            c.check(e["container_id"] == ids[n] and e["processes_peak"] >= len(want[n]) and
                    e["rss_peak_bytes"] >= total - tol(total) - status_slack(3),
                    f"containers: {n}: its end has its id, its processes ({e['processes_peak']}) "
                    f"and an RSS peak at least what it held paused ({e['rss_peak_bytes']} vs {total})")


def container_steps_case(c, mw, wl, tmp):
    """The seed's container benchmark: memwatch mark create-1 / destroy-1
    around podman run and podman rm; per step, the container's RSS growth
    (its processes' VmRSS at the mark), and after destroy what it gave back
    against the host's MemAvailable change."""
    podman = shutil.which("podman")
    if os.environ.get("MW_GUEST") or podman is None:
        print("    skip container steps: no container runtime here")
        return
    root = podman_rootfs(tmp)
    h = Host(mw, ["-a", "--by", "container"], tmp)
    n = f"mw-e2e-{os.getpid()}-steps"
    rss = 0

    def mark(name):
        r = subprocess.run([mw, "mark", "--session", str(h.p.pid), name],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        c.eq(r.returncode, 0, f"container steps: mark {name} ({r.stderr.decode().strip()})")

    try:
        mark("create-1")
        script = 'x=$(head -c 32000000 /dev/zero | tr "\\0" a); sleep 120; echo ${#x}'
        p = subprocess.run([podman] + PODMAN_RUN + ["--name", n, "--rootfs", root,
                                                    "/bin/sh", "-c", script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if not c.eq(p.returncode, 0, "container steps: podman run"):
            return
        cid = p.stdout.decode().split()[-1]
        deadline = time.time() + 60
        while time.time() < deadline:
            rss = sum(status(f"/proc/{q}/status").get("VmRSS", 0) for q in pids_in_cgroup_of(cid))
            if rss > 32_000_000 and len(pids_in_cgroup_of(cid)) == 2:
                break
            time.sleep(0.2)
        subprocess.run([podman, "pause", n], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        rss = sum(status(f"/proc/{q}/status").get("VmRSS", 0) for q in pids_in_cgroup_of(cid))
        mark("destroy-1")
        subprocess.run([podman, "rm", "-f", n], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
        time.sleep(1.5)
        mark("end")
    finally:
        rc, lines, err = h.stop()
        subprocess.run([podman, "rm", "-f", n], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
    c.eq(rc, 0, f"container steps: memwatch exit status ({err.strip()[:200]})")
    steps = {o["name"]: o for o in lines if o.get("type") == "step"}

    def row(step):
        r = [x for x in steps.get(step, {}).get("containers", [])
             if x.get("container") == n and not x.get("container_monitor")]
        return r[0] if len(r) == 1 else None

    cr, dr = row("create-1"), row("destroy-1")
    if c.check(cr is not None, "container steps: create-1 has the container's row"):
        c.near(cr["rss_growth_bytes"], rss, "container steps: create-1: its RSS growth is its "
               "processes' VmRSS at the mark", tol(rss) + status_slack(3))
    if c.check(dr is not None, "container steps: destroy-1 has the container's row"):
        c.check(dr["rss_bytes"] == 0 and dr["processes"] == 0 and
                abs(dr["rss_growth_bytes"] + rss) <= tol(rss) + status_slack(3),
                f"container steps: destroy-1: it holds nothing and gave back what it held "
                f"({dr['rss_growth_bytes']} vs -{rss})")
    d = steps.get("destroy-1", {})
    if c.check("not_returned_bytes" in d, "container steps: destroy-1 says what was not returned"):
        back = max(d["mem_available_change_bytes"], 0)
        c.eq(d["not_returned_bytes"], max(d["rss_released_bytes"] - back, 0),
             "container steps: not returned = released RSS less MemAvailable's rise")
        # Net of every traced process: others grow meanwhile (a busy host).
        c.eq(d["rss_released_bytes"], max(-d["rss_growth_bytes"], 0),
             "container steps: released is the traced RSS's fall")


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-host-")
    try:
        all_case(c, mw, wl, tmp)
        cgroup_case(c, mw, wl, tmp)
        pids_follow_case(c, mw, wl, tmp)
        steps_case(c, mw, wl, tmp)
        errors_case(c, mw, wl, tmp)
        containers_case(c, mw, wl, tmp)
        container_steps_case(c, mw, wl, tmp)
    finally:
        subprocess.run(["rm", "-rf", tmp])
