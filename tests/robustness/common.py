"""What the robustness cases share: the end-to-end harness (Checks, the
/proc parsers, run_case), a line per sub-case, memwatch's own BPF programs,
and waiting for memwatch to reach a point of its run."""
import contextlib
import ctypes
import glob
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
E2E_RUN = os.path.join(ROOT, "tests", "e2e", "run")

_harness = None


def harness():
    """tests/e2e/run as a module (it has no .py suffix)."""
    global _harness
    if _harness is None:
        loader = importlib.machinery.SourceFileLoader("e2e_run", E2E_RUN)
        mod = importlib.util.module_from_spec(importlib.util.spec_from_loader("e2e_run", loader))
        loader.exec_module(mod)
        _harness = mod
    return _harness


@contextlib.contextmanager
def subcase(c, label):
    """One "  ok   LABEL (s)" line per sub-case; an exception is a failure
    of that sub-case, not of the suite."""
    before = c.failed
    t0 = time.time()
    try:
        yield
    except (RuntimeError, OSError, ValueError, KeyError, IndexError,
            subprocess.TimeoutExpired) as e:
        c.check(False, f"{label} ran: {e!r}")
    print(f"  {'ok  ' if c.failed == before else 'FAIL'} {label} ({time.time() - t0:.1f} s)")


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.01)
    raise RuntimeError("timed out waiting for " + what)


def read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return b"" if "b" in mode else ""


def wait_stderr(p, errpath, text, timeout=60):  # tests/e2e/e2eutil.py: ATTACH_S
    """Until memwatch (Popen p, stderr to errpath) has said text, or died."""
    wait_for(lambda: text in read(errpath) or p.poll() is not None, timeout, repr(text))
    if text not in read(errpath):
        raise RuntimeError(f"memwatch exited ({p.returncode}) before saying {text!r}: "
                           + read(errpath).strip())


def prog_ids(pid):
    """IDs of the BPF programs process pid holds open (its fdinfo)."""
    ids = set()
    for fdinfo in glob.glob(f"/proc/{pid}/fdinfo/*"):
        for line in read(fdinfo).splitlines():
            if line.startswith("prog_id:"):
                ids.add(int(line.split()[1]))
    return ids


def links(pid):
    """{link id: link type} of the BPF links process pid holds open."""
    out = {}
    for fdinfo in glob.glob(f"/proc/{pid}/fdinfo/*"):
        f = dict(line.split(":", 1) for line in read(fdinfo).splitlines() if ":" in line)
        if "link_id" in f:
            out[int(f["link_id"])] = f.get("link_type", "").strip()
    return out


def bpftool(what):
    """`bpftool -j WHAT show` as a list."""
    out = subprocess.run(["bpftool", "-j", what, "show"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=30).stdout.decode()
    return json.loads(out or "[]")


def attached_anywhere(prog_ids, link_ids=()):
    """Of these programs and links, those the kernel still has: programs
    loaded or behind a link, links still there."""
    loaded = {p["id"] for p in bpftool("prog")}
    all_links = bpftool("link")
    linked = {ln.get("prog_id") for ln in all_links}
    left = {f"prog {i}" for i in prog_ids & (loaded | linked)}
    return left | {f"link {ln['id']}" for ln in all_links if ln.get("id") in set(link_ids)}


def proc_state(pid):
    """The state letter in /proc/PID/stat ('' if gone)."""
    stat = read(f"/proc/{pid}/stat")
    return stat[stat.rfind(")") + 2:][:1] if stat else ""


def children(pid):
    return [int(x) for x in read(f"/proc/{pid}/task/{pid}/children").split()]


def kill_tree(p):
    """SIGKILL memwatch (a Popen) and the command it started, and reap."""
    for kid in children(p.pid):
        try:
            os.kill(kid, 9)
        except OSError:
            pass
    if p.poll() is None:
        p.kill()
    p.wait()


def status_fields(pid):
    out = {}
    for line in read(f"/proc/{pid}/status").splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


@contextlib.contextmanager
def subreaper():
    """Orphans of our children become ours while inside, so a command left
    behind by a killed memwatch can be waited for."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)      # PR_SET_CHILD_SUBREAPER
    try:
        yield
    finally:
        libc.prctl(36, 0, 0, 0, 0)


def summary(path):
    """The last JSON line, if every line parses."""
    lines = [json.loads(x) for x in read(path, "rb").splitlines() if x.strip()]
    return lines[-1] if lines and lines[-1].get("type") == "summary" else None
