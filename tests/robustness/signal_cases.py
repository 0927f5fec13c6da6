"""memwatch itself interrupted.  Killed with SIGKILL while tracing: none of
its BPF programs stays loaded or linked (its own, by the IDs in its fdinfo:
other memwatch runs may be loaded at the same time), and the command it
traced is not left stopped: it runs on and finishes with its own status.
SIGINT, SIGTERM, SIGHUP: the report is written; in -- CMD mode the signal
reaches the command and memwatch exits as it did; a second signal ends the
trace at once.  A closed stdout: exit 7 with one line, not a crash, and the
JSON file still complete."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import common

WORK = ["sh", "-c", "sleep 1.5; exit 3"]      # finishes by itself, status 3


def libc_uprobe():
    """--phase-at on the shell's libc malloc: a uprobe link among the
    programs killed memwatch leaves behind."""
    out = subprocess.run(["ldd", "/bin/sh"], stdout=subprocess.PIPE, timeout=10).stdout.decode()
    libc = [w for w in out.split() if w.startswith("/") and "libc.so" in w]
    return ["--phase-at", libc[0] + ":malloc"] if libc else []


def gone(ids, link_ids, timeout=5):
    """Programs are freed once their last descriptor closes, a little later."""
    end = time.time() + timeout
    left = common.attached_anywhere(ids, link_ids)
    while left and time.time() < end:
        time.sleep(0.1)
        left = common.attached_anywhere(ids, link_ids)
    return left


def sigkill_cmd(c, mw, tmp):
    errpath = os.path.join(tmp, "kill.err")
    with common.subreaper():
        with open(errpath, "wb") as err:
            p = subprocess.Popen([mw, "-v", "-q"] + libc_uprobe() + ["--"] + WORK, stderr=err)
        try:
            common.wait_stderr(p, errpath, "from its first instruction")
            ours, links = common.prog_ids(p.pid), common.links(p.pid)
            kid = common.children(p.pid)[0]
            p.kill()
            p.wait()
            c.check(len(ours) >= 5 and "perf" in links.values() and "raw_tracepoint" in links.values(),
                    f"SIGKILL -- CMD: memwatch had {len(ours)} programs, {len(links)} links, a uprobe among them")
            left = gone(ours, links)
            c.check(not left, f"SIGKILL -- CMD: none of its programs or links left ({sorted(left)})")
            state = common.proc_state(kid)
            c.check(state not in ("t", "T"), f"SIGKILL -- CMD: the command is not left stopped ({state!r})")
            _, status = os.waitpid(kid, 0)
            c.check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3,
                    f"SIGKILL -- CMD: the command finishes with its own status (wait status {status:#x})")
        finally:
            common.kill_tree(p)


def sigkill_pid(c, mw, tmp):
    errpath = os.path.join(tmp, "killp.err")
    target = subprocess.Popen(WORK)
    with open(errpath, "wb") as err:
        p = subprocess.Popen([mw, "-q", "-p", str(target.pid)], stderr=err)
    try:
        common.wait_stderr(p, errpath, "tracing PID")
        ours, links = common.prog_ids(p.pid), common.links(p.pid)
        p.kill()
        p.wait()
        left = gone(ours, links)
        c.check(len(ours) >= 5 and len(links) >= 5 and not left,
                f"SIGKILL -p: its {len(ours)} programs and {len(links)} links are gone ({sorted(left)})")
        state = common.proc_state(target.pid)
        c.check(state not in ("t", "T"), f"SIGKILL -p: the process is not left stopped ({state!r})")
        c.eq(target.wait(timeout=10), 3, "SIGKILL -p: the process finishes with its own status")
    finally:
        for q in (p, target):
            if q.poll() is None:
                q.kill()
                q.wait()


def report_written(c, label, jpath, tpath):
    s = common.summary(jpath)
    c.check(s is not None, f"{label}: the JSON summary is written")
    text = common.read(tpath)
    c.check(text.startswith("memwatch: PID ") and "VM size" in text,
            f"{label}: the text report is written")
    return s


def stop_pid_mode(c, mw, tmp, sig):
    """-p: the signal ends the trace; the process runs on, untouched."""
    label = f"{signal.Signals(sig).name} -p"
    j, t, errpath = (os.path.join(tmp, f"{sig}.{x}") for x in ("json", "txt", "err"))
    target = subprocess.Popen(["sleep", "30"])
    with open(errpath, "wb") as err:
        p = subprocess.Popen([mw, "-j", j, "-o", t, "-p", str(target.pid)], stderr=err)
    try:
        common.wait_stderr(p, errpath, "tracing PID")
        p.send_signal(sig)
        c.eq(p.wait(timeout=30), 0, f"{label}: exit status")
        s = report_written(c, label, j, t)
        c.check(s is not None and not s["exited"], f"{label}: the report says it was still running")
        c.check(target.poll() is None and common.proc_state(target.pid) not in ("t", "T"),
                f"{label}: the process runs on, not stopped")
    finally:
        for q in (p, target):
            if q.poll() is None:
                q.kill()
                q.wait()


def stop_cmd_mode(c, mw, tmp, sig):
    """-- CMD: the command gets the signal (SIGINT as from a terminal: the
    whole process group) and memwatch reports how it ended."""
    label = f"{signal.Signals(sig).name} -- CMD"
    j, t, errpath = (os.path.join(tmp, f"c{sig}.{x}") for x in ("json", "txt", "err"))
    with open(errpath, "wb") as err:
        p = subprocess.Popen([mw, "-v", "-j", j, "-o", t, "--", "sleep", "30"], stderr=err,
                             start_new_session=True)
    try:
        common.wait_stderr(p, errpath, "from its first instruction")
        if sig == signal.SIGINT:
            os.killpg(p.pid, sig)
        else:
            p.send_signal(sig)
        c.eq(p.wait(timeout=30), 128 + sig, f"{label}: exit status 128+N, as the command's")
        s = report_written(c, label, j, t)
        c.check(s is not None and s.get("exit_signal") == sig, f"{label}: the report says it was killed by it")
        c.check(f"killed by signal {int(sig)}" in common.read(t), f"{label}: so does the text")
    finally:
        common.kill_tree(p)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def second_signal(c, mw, tmp):
    """A command that ignores SIGTERM: the second SIGTERM ends the trace now."""
    j, t, errpath = (os.path.join(tmp, f"twice.{x}") for x in ("json", "txt", "err"))
    with open(errpath, "wb") as err:
        p = subprocess.Popen([mw, "-v", "-j", j, "-o", t, "--", "sh", "-c", "trap '' TERM; exec sleep 30"],
                             stderr=err)
    kids = []
    try:
        common.wait_stderr(p, errpath, "from its first instruction")
        # The command ignores SIGTERM only once its shell has run 'trap'
        # and exec'd sleep: signal it before that and it dies of the first.
        deadline = time.time() + 10
        while time.time() < deadline and not any(comm(k) == "sleep" for k in common.children(p.pid)):
            time.sleep(0.01)
        kids = common.children(p.pid)
        p.terminate()
        time.sleep(0.3)
        c.check(p.poll() is None, "SIGTERM twice: the first one is passed on, the trace goes on")
        t0 = time.time()
        p.terminate()
        rc = p.wait(timeout=10)
        c.check(time.time() - t0 < 2, f"SIGTERM twice: the second ends it at once ({time.time() - t0:.2f} s)")
        c.eq(rc, 0, "SIGTERM twice: exit status")
        s = report_written(c, "SIGTERM twice", j, t)
        c.check(s is not None and not s["exited"], "SIGTERM twice: the report says it was still running")
    finally:
        common.kill_tree(p)
        for kid in kids:           # left running, detached: ours to end
            try:
                os.kill(kid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def closed_stdout(c, mw, wl, tmp):
    """The reader of stdout went away: no SIGPIPE death, exit 7 with one
    line, the JSON file complete.  `memwatch ... | head -c 0` too."""
    for label, args in (("text", ["-j", os.path.join(tmp, "pipe.json")]),
                        ("JSON", ["-q", "-j", "-"])):
        p = subprocess.Popen([mw] + args + ["--", os.path.join(wl, "anon")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()            # nobody reads it, from the start
        err = p.stderr.read().decode(errors="replace").strip().splitlines()
        rc = p.wait(timeout=60)
        c.eq(rc, 7, f"closed stdout ({label} there): exit status")
        c.check(len(err) == 1 and "stdout" in err[0] and "Broken pipe" in err[0],
                f"closed stdout ({label} there): one line says so ({err})")
    c.check(common.summary(os.path.join(tmp, "pipe.json")) is not None,
            "closed stdout: the JSON file is complete")
    p = subprocess.run(["bash", "-c", f"'{mw}' -- '{os.path.join(wl, 'anon')}' | head -c 0; "
                        "exit ${PIPESTATUS[0]}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    c.eq(p.returncode, 7, "| head -c 0: exit status")
    c.check(p.stderr.count(b"\n") == 1 and b"Broken pipe" in p.stderr,
            f"| head -c 0: one line says so ({p.stderr.decode(errors='replace').strip()})")


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-signals-")
    try:
        cases = [("signals SIGKILL -- CMD", lambda: sigkill_cmd(c, mw, tmp)),
                 ("signals SIGKILL -p", lambda: sigkill_pid(c, mw, tmp))]
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            cases.append((f"signals {sig.name} -p", lambda sig=sig: stop_pid_mode(c, mw, tmp, sig)))
            cases.append((f"signals {sig.name} -- CMD", lambda sig=sig: stop_cmd_mode(c, mw, tmp, sig)))
        cases += [("signals SIGTERM twice", lambda: second_signal(c, mw, tmp)),
                  ("signals closed stdout", lambda: closed_stdout(c, mw, wl, tmp))]
        for label, fn in cases:
            with common.subcase(c, label):
                fn()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
