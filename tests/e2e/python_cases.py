"""--python: CPython 3.11, 3.12 and 3.13 frames in --stacks, on every
interpreter of those versions found here: Debian's /usr/bin/python3.X,
pyenv's builds (--enable-shared: the runtime in libpython), and the Debian
13 root of tests/debian13 (build/trixie-root: its python3.13 run by chroot,
its binaries read through /proc/PID/root).  Scripts written here allocate
at a known line (found in the script's own text, marked "# ALLOC"); the
report's stack for that mapping, the call-site ranking in the text, and the
folded stacks must name "script.py:LINE function", with the callers' lines
too, between the native frames.  A first inference (marked, in its own
phase) is attributed to the script's line, and the steady state after it
is not.  --no-python leaves them out; a recording reports them without the
process; an interpreter of another version or a free-threaded one says so
in one line and keeps native frames; PyTorch's first inference (in its own
phase) is attributed to the script's line."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2eutil import check_refused, debian13_root, degraded, torch_wanted  # noqa: E402

MIB = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIXIE = debian13_root() or os.path.join(ROOT, "build", "trixie-root")
PY = "/usr/bin/python3.11"
KNOWN = (11, 12, 13)


class Interp:
    """A CPython to run scripts with: argv (before the script), the host
    directory its scripts go to, and that directory as the process sees it
    (another under a chroot)."""

    def __init__(self, label, argv, minor, chroot=None):
        self.label, self.argv, self.minor, self.chroot = label, argv, minor, chroot

    def workdir(self, d):
        if not self.chroot:
            return d, d
        inner = tempfile.mkdtemp(prefix="mw-python-", dir=os.path.join(self.chroot, "var/tmp"))
        return inner, "/" + os.path.relpath(inner, self.chroot)

    def has(self, module):
        return subprocess.run(self.argv + ["-c", f"import {module}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=120).returncode == 0


def interpreters():
    """Every CPython memwatch knows that is here, once per kind."""
    found = []
    for m in KNOWN:
        if os.path.exists(f"/usr/bin/python3.{m}"):
            found.append(Interp(f"python3.{m}", [f"/usr/bin/python3.{m}"], m))
        env = sorted(glob.glob(f"/root/.pyenv/versions/3.{m}.*[0-9]/bin/python3.{m}"))
        if env:
            found.append(Interp(f"pyenv {env[-1].split('/')[-3]}", [env[-1]], m))
    if debian13_root():
        found.append(Interp("python3.13 in the Debian 13 root", ["chroot", TRIXIE,
                                                                 "/usr/bin/python3.13"], 13, TRIXIE))
    if os.environ.get("MW_GUEST") and found:
        # A matrix guest checks the kernel, not the interpreter: the
        # verifier checks every version's branch of the walk at load, and
        # what a walk reads of user memory is the same on every kernel.
        # One interpreter, Debian's (numpy, a first inference): 165 s of
        # TCG on 6.12-amd64 with all five, 102 s with two.  Not the Debian
        # 13 root, whose files come over the guest's 9p.
        found = [i for i in found if not i.chroot][:1]
    return found

BYTEARRAY = '''import sys


def make_buffer(n):
    buf = bytearray(n)  # ALLOC
    return buf


def main():
    b = make_buffer(48 << 20)  # CALL
    b[::4096] = b"x" * len(b[::4096])
    return len(b)


if __name__ == "__main__":
    main()
'''

NUMPY = '''import numpy as np


class Model:
    def weights(self, n):
        return np.ones(n, dtype=np.float64)  # ALLOC


def main():
    w = Model().weights(5 << 20)  # CALL
    return float(w.sum())


main()
'''

TORCH = '''import os
import subprocess
import sys

import torch
from torch import nn

MW = sys.argv[1]
SESSION = str(os.getppid())


def mark(*args):
    subprocess.run([MW, "mark", "--session", SESSION] + list(args), check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def build():
    layers, ch = [], 3
    for out in (32, 64, 128, 128):
        layers += [nn.Conv2d(ch, out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        ch = out
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 14 * 14, 10)).eval()


def infer(model, x):
    with torch.no_grad():
        return model(x)  # ALLOC


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build()
    x = torch.randn(1, 3, 224, 224)
    mark("first_inference")
    y = infer(model, x)  # CALL
    mark("rest")
    infer(model, x)
    print(int(y.argmax()))


main()
'''


FIRST = '''import os
import subprocess
import sys

import numpy as np

MW = sys.argv[1]
SESSION = str(os.getppid())
CACHE = {}


def mark(name):
    subprocess.run([MW, "mark", "--session", SESSION, name], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open("/proc/self/status") as f:
        vm = [ln.split()[1] for ln in f if ln.startswith("VmSize:")][0]
    print(name, int(vm) * 1024)


def workspace(n):
    if n not in CACHE:
        CACHE[n] = np.ones(n, dtype=np.float64)  # ALLOC
    return CACHE[n]


def infer(x):
    w = workspace(6 << 20)  # CALL
    return float(np.dot(x, w[:x.size]))


def main():
    x = np.ones(1024)
    mark("first_inference")
    infer(x)
    mark("steady")
    for _ in range(5):
        infer(x)
    mark("end")


main()
'''


SUBINTERP = '''import sys

if sys.version_info >= (3, 13):
    import _interpreters as interp
else:
    import _xxsubinterpreters as interp

SUB = "def sub_alloc(n):\\n    return bytearray(n)\\nx = sub_alloc(40 << 20)\\ndel x\\n"


def in_main(n):
    return bytearray(n)  # MAIN


def main():
    iid = interp.create()
    interp.run_string(iid, SUB)  # RUN
    return len(in_main(48 << 20))  # CALL


main()
'''


def line_of(src, tag):
    return [i + 1 for i, ln in enumerate(src.splitlines()) if ln.rstrip().endswith("# " + tag)][0]


def run_mw(mw, d, name, src, extra, args=(), timeout=180, interp=None, env=None):
    interp = interp or Interp("python3.11", [PY], 11)
    inner, seen = interp.workdir(d)
    with open(os.path.join(inner, name), "w") as f:
        f.write(src)
    js = os.path.join(d, name + ".json")
    fo = os.path.join(d, name + ".folded")
    for x in (js, fo):
        if os.path.exists(x):
            os.unlink(x)
    p = subprocess.run([mw, "--stacks", "-j", js, "--folded", fo] + extra +
                       ["--"] + interp.argv + [os.path.join(seen, name)] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    if interp.chroot:
        shutil.rmtree(inner, ignore_errors=True)
    lines = [json.loads(x) for x in open(js)] if os.path.exists(js) else [{}]
    folded = open(fo).read().splitlines() if os.path.exists(fo) else []
    return p, lines[-1], folded


def biggest_anon(s, at_least):
    ms = [m for m in s.get("mappings", []) if m["kind"] == "anon" and m["bytes"] >= at_least]
    return max(ms, key=lambda m: m["bytes"]) if ms else {}


def check_script(c, mw, d, what, name, src, size, func, caller, interp=None):
    alloc, call = line_of(src, "ALLOC"), line_of(src, "CALL")
    want, want_caller = f"{name}:{alloc} {func}", f"{name}:{call} {caller}"
    p, s, folded = run_mw(mw, d, name, src, [], interp=interp)
    c.eq(p.returncode, 0, f"{what}: exit status ({p.stderr.decode().strip()[-200:]})")
    c.check(b"Python frames are off" not in p.stderr,
            f"{what}: Python frames are on ({p.stderr.decode().strip()[-200:]})")
    m = biggest_anon(s, size)
    st = m.get("stack", [])
    c.check(want in st, f"{what}: the {size >> 20} MiB mapping's stack has '{want}' ({st})")
    c.check(want in st and want_caller in st and st.index(want_caller) == st.index(want) + 1,
            f"{what}: then its caller '{want_caller}' ({st})")
    text = p.stdout.decode()
    sites = text[text.find("Call sites"):]
    c.check(want in sites, f"{what}: the text report's call sites name '{want}'")
    heavy = [ln for ln in folded if want in ln.rsplit(" ", 1)[0].split(";") and
             int(ln.rsplit(" ", 1)[1]) >= size]
    c.check(len(heavy) >= 1, f"{what}: a folded stack with '{want}' weighs >= {size} bytes")
    return s, m


def check_merged(c, what, m, minor):
    """The Python frames stand where the interpreter ran them, between
    native frames: the allocator's below, the interpreter's entry above,
    named from the interpreter's own binary (python3.X or libpython3.X)."""
    st = m.get("stack", [])
    py = [i for i, f in enumerate(st) if re.match(r"\S+\.py:\d+ ", f)]
    mod = re.compile(r"(lib)?python3\.%d" % minor)
    below = py and any(mod.search(f) for f in st[:py[0]])
    above = py and any(mod.search(f) for f in st[py[-1] + 1:])
    c.check(bool(below and above),
            f"{what}: Python frames between the interpreter's native ones ({st[:14]})")
    c.check(not any("_PyEval_EvalFrameDefault" in f for f in st),
            f"{what}: the eval loop's frames are replaced by the script's")


def check_bytearray(c, mw, d, interp):
    what = f"bytearray, {interp.label}"
    s, m = check_script(c, mw, d, what, "script.py", BYTEARRAY, 48 * MIB,
                        "make_buffer", "main", interp)
    alloc = line_of(BYTEARRAY, "ALLOC")
    # The site is the script's line, not libc's mmap nor the interpreter.
    c.check(m.get("call_site") == f"script.py:{alloc} make_buffer",
            f"{what}: the call site is the script's line ({m.get('call_site')})")
    check_merged(c, what, m, interp.minor)
    if interp.minor != 11 or interp.chroot:
        return
    p, s, folded = run_mw(mw, d, "script.py", BYTEARRAY, ["--no-python"], interp=interp)
    st = biggest_anon(s, 48 * MIB).get("stack", [])
    c.check(p.returncode == 0 and st and not any("script.py:" in f for f in st),
            f"--no-python: native frames only ({st})")


def check_slow_loop(c, mw, d, interp):
    """The interpreter is found at the program's start, not when the loop
    gets to the records that map it: with the loop held 300 ms behind (a
    loader unwinding its first stacks under load; CI once lost the race
    by a few milliseconds), the script's first allocation, made some 30
    ms after the exec, still has the script's frames.  Started directly
    (found as memwatch lets it go) and through env (found as the loop
    lets it go from its second exec)."""
    runs = [interp]
    if not interp.chroot:	# the chroot case execs twice already
        runs.append(Interp(f"env {interp.label}", ["env", "MW_PY=1"] + interp.argv, interp.minor))
    for i in runs:
        what = f"a loop 300 ms behind, {i.label}"
        p, s, _ = run_mw(mw, d, "script.py", BYTEARRAY, [], interp=i,
                         env={"MEMWATCH_TEST_LAG_MS": "300"})
        m = biggest_anon(s, 48 * MIB)
        c.check(p.returncode == 0 and m.get("call_site") ==
                f"script.py:{line_of(BYTEARRAY, 'ALLOC')} make_buffer",
                f"{what}: the 48 MiB mapping's call site is the script's line "
                f"({p.returncode}, {m.get('call_site')})")


def check_first(c, mw, d, interp):
    """A first inference that sets up a 48 MiB workspace, then a steady
    state that reuses it: the first phase's top call site by VM is the
    script's line and its caller; the steady phase grows by none of it."""
    what = f"first inference, {interp.label}"
    alloc, call = line_of(FIRST, "ALLOC"), line_of(FIRST, "CALL")
    p, s, _ = run_mw(mw, d, "first.py", FIRST, [], args=[os.path.abspath(mw)], interp=interp)
    c.eq(p.returncode, 0, f"{what}: exit status ({p.stderr.decode().strip()[-200:]})")
    ph = {x.get("name"): x for x in s.get("phases", [])}
    first, steady = ph.get("first_inference", {}), ph.get("steady", {})
    sites = first.get("call_sites", {}).get("by_vm", [])
    top = sites[0] if sites else {}
    st = top.get("stack", [])
    c.check(f"first.py:{alloc} workspace" in st and f"first.py:{call} infer" in st,
            f"{what}: the phase's top call site by VM is first.py:{alloc} from first.py:{call} "
            f"({top.get('site')}: {st[:12]})")
    # The script's VmSize just after each mark.
    vm = dict((ln.split()[0], int(ln.split()[1])) for ln in p.stdout.decode().splitlines()
              if re.match(r"^(first_inference|steady|end) \d+$", ln))
    for name, nxt in (("first_inference", "steady"), ("steady", "end")):
        x = ph.get(name, {})
        got = (x.get("vm_start_bytes"), x.get("vm_end_bytes"))
        c.check(name in vm and nxt in vm and got == (vm[name], vm[nxt]),
                f"{what}: phase {name}'s VM runs from the script's VmSize at its mark to the "
                f"next's ({got} against {vm.get(name)}, {vm.get(nxt)})")
    c.check(first.get("vm_end_bytes", 0) - first.get("vm_start_bytes", 0) >= 48 * MIB and
            steady.get("vm_end_bytes", 1) == steady.get("vm_start_bytes"),
            f"{what}: the first inference maps the 48 MiB workspace, the steady state nothing")


def check_subinterp(c, mw, d, interp):
    """3.12+: a sub-interpreter (its own GIL and thread states) run from the
    main one by the same thread.  Its allocation is named from its own
    frames; back in the main interpreter, the sub-interpreter's idle thread
    state (found first: the newest interpreter heads the list) is passed
    over, and the main one's frames name the next allocation (the first,
    freed, does not merge with it)."""
    what = f"sub-interpreter, {interp.label}"
    p, s, _ = run_mw(mw, d, "sub.py", SUBINTERP, [], interp=interp)
    c.eq(p.returncode, 0, f"{what}: exit status ({p.stderr.decode().strip()[-200:]})")
    ms = s.get("mappings", [])
    sub = [m for m in ms if m["bytes"] >= 40 * MIB and m["bytes"] < 44 * MIB]
    main = [m for m in ms if m["bytes"] >= 48 * MIB and m["bytes"] < 49 * MIB]
    st = sub[0].get("stack", []) if sub else []
    c.check(bool(sub) and sub[0].get("call_site") == "<string>:2 sub_alloc" and
            "<string>:3 <module>" in st,
            f"{what}: the sub-interpreter's 40 MiB is <string>:2 sub_alloc, from <string>:3 "
            f"({sub[0].get('call_site') if sub else None}: {st[:12]})")
    want = f"sub.py:{line_of(SUBINTERP, 'MAIN')} in_main"
    caller = f"sub.py:{line_of(SUBINTERP, 'CALL')} main"
    st = main[0].get("stack", []) if main else []
    c.check(bool(main) and main[0].get("call_site") == want and caller in st,
            f"{what}: then the main interpreter's 48 MiB is {want}, from {caller} "
            f"({main[0].get('call_site') if main else None}: {st[:12]})")


def check_replay(c, mw, d, interp):
    inner, seen = interp.workdir(d)
    with open(os.path.join(inner, "script.py"), "w") as f:
        f.write(BYTEARRAY)
    rec, live, replay = (os.path.join(d, n) for n in ("py.mwrec", "live.json", "replay.json"))
    p = subprocess.run([mw, "record", "--stacks", "-o", rec, "-j", live, "--"] + interp.argv +
                       [os.path.join(seen, "script.py")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 0, f"record, {interp.label}: exit status")
    p = subprocess.run([mw, "report", "-q", "-j", replay, rec], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    a = [json.loads(x) for x in open(live)][-1] if os.path.exists(live) else {}
    b = [json.loads(x) for x in open(replay)][-1] if os.path.exists(replay) else {}
    want = f"script.py:{line_of(BYTEARRAY, 'ALLOC')} make_buffer"
    c.check(p.returncode == 0 and a.get("stacks") == b.get("stacks") and
            want in json.dumps(b.get("stacks")),
            f"record, {interp.label}: the recording reports the same Python frames without "
            "the process")
    if interp.chroot:
        shutil.rmtree(inner, ignore_errors=True)


def refused_pythons():
    """CPython interpreters here that memwatch does not know: another
    version (pyenv's 3.10 and older), or a free-threaded build (3.13t)."""
    found = []
    for pat in ("/usr/bin/python3.[0-9]*", "/usr/local/bin/python3.[0-9]*",
                "/root/.pyenv/versions/*/bin/python3.[0-9]*",
                os.path.join(TRIXIE, "usr/bin/python3.1[3-9]t")):
        for p in sorted(glob.glob(pat)):
            m = re.search(r"python3\.(\d+)(t?)$", p)
            if m and (int(m.group(1)) not in KNOWN or m.group(2)):
                found.append((p, f"3.{m.group(1)}", bool(m.group(2))))
    return found


def check_refused_versions(c, mw, d, wl):
    others = refused_pythons()
    # The newest of another version, and a free-threaded one if there is one.
    pick = [o for o in others if not o[2]][-1:] + [o for o in others if o[2]][-1:]
    fake = os.path.join(wl, "fakepython")
    if not any(o[2] for o in others) and os.path.exists(fake):
        # No free-threaded build here (Debian 13 has none): one in name and
        # symbols (workloads/fakepython.c).
        shutil.copy(fake, os.path.join(d, "python3.13t"))
        pick.append((os.path.join(d, "python3.13t"), "3.13", True))
    for py, ver, nogil in pick:
        script = [] if py.startswith(d) else ["other.py"]	# the fake takes none
        argv, inner, seen = [py], d, d
        if py.startswith(TRIXIE):
            interp = Interp("", ["chroot", TRIXIE, "/" + os.path.relpath(py, TRIXIE)], 0, TRIXIE)
            argv = interp.argv
            inner, seen = interp.workdir(d)
        with open(os.path.join(inner, "other.py"), "w") as f:
            f.write(BYTEARRAY)
        js = os.path.join(d, "other.json")
        p = subprocess.run([mw, "--stacks", "-q", "-j", js, "--"] + argv +
                           [os.path.join(seen, x) for x in script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        err = [ln for ln in p.stderr.decode().splitlines() if "Python frames are off" in ln]
        c.eq(p.returncode, 0, f"{py}: the run goes on")
        why = "free-threaded" if nogil else ver
        c.check(len(err) == 1 and why in err[0] and "3.11, 3.12, 3.13" in err[0],
                f"{py}: one line says why Python frames are off, and what memwatch knows ({err})")
        s = [json.loads(x) for x in open(js)][-1] if os.path.exists(js) else {}
        st = biggest_anon(s, 48 * MIB).get("stack", [])
        c.check(bool(st) and not any(".py:" in f for f in st), f"{py}: native frames only ({st[:3]})")


def check_torch(c, mw, d):
    if not torch_wanted(PY):
        return
    alloc, call = line_of(TORCH, "ALLOC"), line_of(TORCH, "CALL")
    p, s, folded = run_mw(mw, d, "infer.py", TORCH, [], args=[os.path.abspath(mw)], timeout=600)
    c.eq(p.returncode, 0, f"torch: exit status ({p.stderr.decode().strip()[-200:]})")
    ph = [x for x in s.get("phases", []) if x.get("name") == "first_inference"]
    sites = ph[0].get("call_sites", {}).get("by_vm", []) if ph else []
    top = sites[0] if sites else {}
    st = top.get("stack", [])
    c.check(f"infer.py:{alloc} infer" in st and f"infer.py:{call} main" in st,
            f"torch: the first inference's top call site by VM comes from infer.py:{alloc} "
            f"and infer.py:{call} ({top.get('site')}: {st})")
    c.check(any(f"infer.py:{alloc} infer" in ln and "Conv2d._conv_forward" in ln for ln in folded),
            "torch: folded stacks run from the script's line through torch's Conv2d")


def run(c, mw, wl):
    if "stacks" in degraded(mw):
        check_refused(c, mw, "stacks", ["--stacks"], "--stacks")
        return
    interps = interpreters()
    print(f"    CPython here: {', '.join(i.label for i in interps) or 'none'}")
    if not interps:
        print("    skip: no CPython 3.11, 3.12 or 3.13")
        return
    d = tempfile.mkdtemp(prefix="mw-python-")
    for interp in interps:
        check_bytearray(c, mw, d, interp)
        check_slow_loop(c, mw, d, interp)
        check_replay(c, mw, d, interp)
        if interp.minor >= 12:
            check_subinterp(c, mw, d, interp)
        if interp.has("numpy"):
            check_script(c, mw, d, f"numpy, {interp.label}", "weights.py", NUMPY, 40 * MIB,
                         "Model.weights", "main", interp)
            if not interp.chroot:	# memwatch mark: this root's memwatch
                check_first(c, mw, d, interp)
    check_refused_versions(c, mw, d, wl)
    if os.path.exists(PY):
        check_torch(c, mw, d)
    subprocess.run(["rm", "-rf", d])
