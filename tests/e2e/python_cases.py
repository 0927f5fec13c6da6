"""--python: CPython 3.11 frames in --stacks.  Scripts written here allocate
at a known line (found in the script's own text, marked "# ALLOC"); the
report's stack for that mapping, the call-site ranking in the text, and the
folded stacks must name "script.py:LINE function", with the callers' lines
too.  --no-python leaves them out; a recording reports them without the
process; an interpreter of another version says so in one line and keeps
native frames; PyTorch's first inference (in its own phase) is attributed
to the script's line."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2eutil import check_refused, degraded, torch_wanted  # noqa: E402

MIB = 1 << 20
PY = "/usr/bin/python3.11"

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


def line_of(src, tag):
    return [i + 1 for i, ln in enumerate(src.splitlines()) if ln.rstrip().endswith("# " + tag)][0]


def run_mw(mw, d, name, src, extra, args=(), timeout=180):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(src)
    js = os.path.join(d, name + ".json")
    fo = os.path.join(d, name + ".folded")
    p = subprocess.run([mw, "--stacks", "-j", js, "--folded", fo] + extra +
                       ["--", PY, path] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    lines = [json.loads(x) for x in open(js)] if os.path.exists(js) else [{}]
    folded = open(fo).read().splitlines() if os.path.exists(fo) else []
    return p, lines[-1], folded


def biggest_anon(s, at_least):
    ms = [m for m in s.get("mappings", []) if m["kind"] == "anon" and m["bytes"] >= at_least]
    return max(ms, key=lambda m: m["bytes"]) if ms else {}


def check_script(c, mw, d, what, name, src, size, func, caller):
    alloc, call = line_of(src, "ALLOC"), line_of(src, "CALL")
    want, want_caller = f"{name}:{alloc} {func}", f"{name}:{call} {caller}"
    p, s, folded = run_mw(mw, d, name, src, [])
    c.eq(p.returncode, 0, f"{what}: exit status ({p.stderr.decode().strip()[-200:]})")
    c.check(b"Python frames are off" not in p.stderr, f"{what}: Python frames are on")
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


def check_bytearray(c, mw, d):
    s, m = check_script(c, mw, d, "bytearray", "script.py", BYTEARRAY, 48 * MIB,
                        "make_buffer", "main")
    alloc = line_of(BYTEARRAY, "ALLOC")
    # No frame-pointer native frames inside python3.11: the site is the
    # script's line, not libc's mmap nor the interpreter.
    c.check(m.get("call_site") == f"script.py:{alloc} make_buffer",
            f"bytearray: the call site is the script's line ({m.get('call_site')})")
    p, s, folded = run_mw(mw, d, "script.py", BYTEARRAY, ["--no-python"])
    st = biggest_anon(s, 48 * MIB).get("stack", [])
    c.check(p.returncode == 0 and st and not any("script.py:" in f for f in st),
            f"--no-python: native frames only ({st})")


def check_replay(c, mw, d):
    path = os.path.join(d, "script.py")
    rec, live, replay = (os.path.join(d, n) for n in ("py.mwrec", "live.json", "replay.json"))
    p = subprocess.run([mw, "record", "--stacks", "-o", rec, "-j", live, "--", PY, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 0, "record: exit status")
    p = subprocess.run([mw, "report", "-q", "-j", replay, rec], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    a = [json.loads(x) for x in open(live)][-1] if os.path.exists(live) else {}
    b = [json.loads(x) for x in open(replay)][-1] if os.path.exists(replay) else {}
    want = f"script.py:{line_of(BYTEARRAY, 'ALLOC')} make_buffer"
    c.check(p.returncode == 0 and a.get("stacks") == b.get("stacks") and
            want in json.dumps(b.get("stacks")),
            "the recording reports the same Python frames without the process")


def other_pythons():
    """CPython interpreters here that are not 3.11."""
    found = []
    for pat in ("/usr/bin/python3.[0-9]*", "/usr/local/bin/python3.[0-9]*",
                "/root/.pyenv/versions/*/bin/python3.[0-9]*"):
        for p in sorted(glob.glob(pat)):
            if re.search(r"python3\.(\d+)$", p) and not p.endswith("python3.11"):
                found.append(p)
    return found


def check_other_version(c, mw, d):
    others = other_pythons()
    if not others:
        print("    skip: no CPython other than 3.11 here")
        return
    py = others[-1]
    ver = re.search(r"python(3\.\d+)$", py).group(1)
    path = os.path.join(d, "other.py")
    with open(path, "w") as f:
        f.write(BYTEARRAY)
    js = os.path.join(d, "other.json")
    p = subprocess.run([mw, "--stacks", "-q", "-j", js, "--", py, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    err = [ln for ln in p.stderr.decode().splitlines() if "Python frames are off" in ln]
    c.eq(p.returncode, 0, f"{py}: the run goes on")
    c.check(len(err) == 1 and ver in err[0], f"{py}: one line says why Python frames are off ({err})")
    s = [json.loads(x) for x in open(js)][-1] if os.path.exists(js) else {}
    st = biggest_anon(s, 48 * MIB).get("stack", [])
    c.check(bool(st) and not any(".py:" in f for f in st), f"{py}: native frames only ({st[:3]})")


def check_shared_311(c, mw, d):
    """A 3.11 built --enable-shared (pyenv): _PyRuntime in libpython, found
    once it is mapped; its layout is checked and matches."""
    libs = [p for p in glob.glob("/root/.pyenv/versions/3.11*/bin/python3.11")]
    if not libs:
        print("    skip: no libpython 3.11 build here")
        return
    path = os.path.join(d, "shared.py")
    with open(path, "w") as f:
        f.write(BYTEARRAY)
    js = os.path.join(d, "shared.json")
    p = subprocess.run([mw, "--stacks", "-q", "-j", js, "--", libs[0], path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    s = [json.loads(x) for x in open(js)][-1] if os.path.exists(js) else {}
    st = biggest_anon(s, 48 * MIB).get("stack", [])
    want = f"shared.py:{line_of(BYTEARRAY, 'ALLOC')} make_buffer"
    c.check(p.returncode == 0 and want in st, f"{libs[0]}: '{want}' in the stack ({st[:4]})")


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
    if not os.path.exists(PY):
        print(f"    skip: no {PY}")
        return
    d = tempfile.mkdtemp(prefix="mw-python-")
    check_bytearray(c, mw, d)
    if subprocess.run([PY, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode == 0:
        check_script(c, mw, d, "numpy", "weights.py", NUMPY, 40 * MIB, "Model.weights", "main")
    check_replay(c, mw, d)
    check_other_version(c, mw, d)
    check_shared_311(c, mw, d)
    check_torch(c, mw, d)
    subprocess.run(["rm", "-rf", d])
