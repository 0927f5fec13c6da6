"""Failures a user can cause: each must give one clear line on stderr and its
own exit code (user/util.h, docs/usage.md's table).  (memwatch killed outright:
signal_cases.py; with few capabilities: caps_cases.py.)"""
import os
import subprocess
import tempfile

EXIT = {"usage": 2, "perm": 3, "nopid": 6, "output": 7, "noexec": 126, "notfound": 127}


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
