"""What the end-to-end case modules share: units, the RSS tolerance, the
/proc/PID/status and smaps parsers, the checkpoints' times, waiting for a
condition, and what memwatch says of the kernel it runs on."""
import json
import os
import re
import subprocess
import tempfile
import time
import traceback

KIB = 1024
MIB = 1024 * KIB


# ---- every JSON memwatch writes, audited as the tests read it -----------------
#
# A mapping's RSS is a whole number of pages and never negative (issue 26:
# an unmapped mapping split in two once carried +1408 and -1408 bytes).
# Every test reads memwatch's JSON with json.loads(); the runners (e2e,
# robustness, realworld) import this module first, so each mapping of
# each output they read is checked here, and audit_check() makes the sum
# one check at the end of the run.
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
AUDIT = {"outputs": 0, "mappings": 0, "bad": []}
_json_loads = json.loads
_RSS_FIELDS = ("rss_bytes", "rss_anon_bytes", "rss_file_bytes", "rss_shmem_bytes", "swap_bytes")


def _reader():
    """The test that is reading: the innermost *_cases.py frame."""
    for fr in reversed(traceback.extract_stack()):
        if fr.filename.endswith("_cases.py"):
            return f"{os.path.basename(fr.filename)}:{fr.name}"
    return "?"


def _audit(obj, who=""):
    if isinstance(obj, dict):
        maps = obj.get("mappings")
        if isinstance(maps, list) and maps and isinstance(maps[0], dict) and "rss_bytes" in maps[0]:
            AUDIT["outputs"] += 1
            for m in maps:
                AUDIT["mappings"] += 1
                bad = {k: m[k] for k in _RSS_FIELDS
                       if isinstance(m.get(k), int) and (m[k] < 0 or m[k] % PAGE_BYTES)}
                if bad and len(AUDIT["bad"]) < 20:
                    AUDIT["bad"].append(f"{m.get('start')} {m.get('kind')} {m.get('path')!r} "
                                        f"{bad} [{_reader()} {who}]")
        for v in obj.values():
            if isinstance(v, (dict, list)):
                _audit(v, who)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                _audit(v, who)


def _audited_loads(s, *args, **kwargs):
    obj = _json_loads(s, *args, **kwargs)
    # An offender names the test that read it and the process it is about.
    who = ""
    if isinstance(obj, dict) and "pid" in obj:
        who = f"{obj.get('comm')} pid {obj.get('pid')}"
    _audit(obj, who)
    return obj


json.loads = _audited_loads


def audit_check(c):
    """One check: no mapping in any JSON read so far had negative or
    partial-page RSS (the first offenders are named)."""
    c.check(not AUDIT["bad"],
            f"every mapping's RSS in whole pages, never negative ({AUDIT['mappings']} mappings "
            f"in {AUDIT['outputs']} outputs{': ' + '; '.join(AUDIT['bad']) if AUDIT['bad'] else ''})")


# How long a test waits for memwatch to attach.  Natively 0.2 s; under qemu's
# TCG (tests/kernels) 5.10's verifier alone takes ~10 s, more when the host
# is busy.  Only a failing run waits this long.
ATTACH_S = 60


def rss_tol(truth):
    """Tolerance the brief sets for RSS: 1% or 256 KiB, whichever is larger."""
    return max(truth // 100, 256 * KIB)


def stat_faults(path):
    """minflt + majflt of a /proc/PID/stat copy: every thread's faults,
    those that have exited included (not the children's)."""
    text = open(path).read()
    f = text[text.rindex(")") + 2:].split()
    return int(f[7]) + int(f[9])


def parse_status(path):
    """The kB fields of a /proc/PID/status copy, in bytes."""
    out = {}
    with open(path) as f:
        for line in f:
            key, _, val = line.partition(":")
            val = val.strip()
            if val.endswith(" kB"):
                out[key] = int(val[:-3]) * KIB
    return out


def wait_for(pred, timeout, step=0.005):
    """Poll pred until it gives something true, and return that; or None
    when timeout seconds pass."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def _release():
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2)))


# Before 6.2 (f1a7941243c1, "mm: convert mm's rss stats into percpu_counter")
# a task's own faults count in caches in the task, folded into the mm's
# counters every 64 faults: /proc/PID/status shows the mm's counters alone,
# behind the truth by what the caches hold; smaps walks the page tables and
# is exact.  memwatch reports the exact value (docs/kernels.md).
SPLIT_RSS = _release() < (6, 2)


PAGE = os.sysconf("SC_PAGE_SIZE")


def _pmd_size():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 2 * MIB


# A huge page (PMD): what one write can make resident under THP "always",
# 2 MiB with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB.
PMD = _pmd_size()


def status_slack(counters):
    """How far /proc/PID/status's RSS figures may stand from the truth on
    6.2+: each of its counters is a percpu_counter read without summing the
    CPUs' parts (percpu_counter_read_positive()), and each CPU holds back
    less than percpu_counter_batch = max(32, 2 * CPUs) pages of it.  With 2
    CPUs, 64 pages a counter: 256 KiB of 4 KiB pages, 1 MiB of 16 KiB ones,
    past the brief's 256 KiB.  VmRSS and VmHWM sum @counters of them.
    memwatch sums the parts (exact, as smaps); before 6.2 status_lag()
    covers the per-task caches instead."""
    if SPLIT_RSS:
        return 0
    n = os.cpu_count() or 1
    return counters * n * max(32, 2 * n) * PAGE


def smaps_vmas(path):
    """The VMAs of a copy of /proc/PID/smaps (or maps: rss 0), each as
    {start, end, perms, path, rss, flags} with rss in bytes and flags the
    set of VmFlags' two-letter names."""
    vmas = []
    with open(path, errors="surrogateescape") as f:
        for line in f:
            head = line.rstrip("\n").split(None, 5)
            if len(head) >= 5 and "-" in head[0] and len(head[1]) == 4:
                start, end = (int(x, 16) for x in head[0].split("-"))
                vmas.append({"start": start, "end": end, "perms": head[1], "rss": 0,
                             "path": head[5].strip() if len(head) > 5 else "",
                             "flags": set()})
            elif vmas and head and head[0] == "Rss:":
                vmas[-1]["rss"] = int(head[1]) * KIB
            elif vmas and head and head[0] == "VmFlags:":
                vmas[-1]["flags"] = set(line.split()[1:])
    return vmas


def smaps_rss(path):
    """Sum of Rss over a copy of /proc/PID/smaps, in bytes: the resident
    pages as the page tables have them."""
    return sum(v["rss"] for v in smaps_vmas(path))


def ckpt_times(ckdir):
    """{checkpoint: CLOCK_MONOTONIC ns} from a checkpoint directory's index."""
    ts = {}
    with open(os.path.join(ckdir, "index")) as f:
        for line in f:
            name, ns = line.split()
            ts[name] = int(ns)
    return ts


def status_lag(status, smaps_path):
    """How far a checkpoint's status VmRSS is behind its smaps (SPLIT_RSS
    kernels; 0 elsewhere): the slack its per-counter readings need."""
    if not SPLIT_RSS:
        return 0
    return max(0, smaps_rss(smaps_path) - status["VmRSS"])


_DEGRADED = None


def degraded(mw):
    """The features memwatch runs degraded on this kernel, as its JSON
    summary's "kernel" says (user/capture/kernel.c): {name: why}."""
    global _DEGRADED
    if _DEGRADED is None:
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            subprocess.run([mw, "-q", "-j", path, "--", "/bin/true"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
            with open(path) as f:
                lines = [json.loads(x) for x in f if x.strip()]
            k = lines[-1].get("kernel", {}) if lines else {}
            _DEGRADED = {d["feature"]: d["why"] for d in k.get("degraded", [])}
        except (OSError, ValueError, subprocess.SubprocessError):
            _DEGRADED = {}
        finally:
            os.unlink(path)
    return _DEGRADED


def torch_wanted(py="/usr/bin/python3"):
    """Whether the PyTorch cases run: @py has Debian's python3-torch
    (found without importing it, which takes minutes under TCG) and
    MW_E2E_TORCH is not 0.  The kernel matrix's quick suite sets it to 0:
    what PyTorch checks of a kernel, the C++ and Python cases check in a
    fraction of the time, and the full suite on 6.12 keeps it."""
    if os.environ.get("MW_E2E_TORCH", "1") == "0":
        print("    skip PyTorch: MW_E2E_TORCH=0")
        return False
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    if subprocess.run([py, "-c", probe], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL, timeout=120).returncode:
        print(f"    skip PyTorch: {py} has no torch (python3-torch)")
        return False
    return True


def check_refused(c, mw, feature, argv, what):
    """Where @feature runs degraded, memwatch refuses @argv: exit 9 and a
    last stderr line naming what the kernel lacks; the command never runs."""
    p = subprocess.run([mw, "-q"] + argv + ["--", "/bin/true"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    lines = p.stderr.decode(errors="replace").strip().splitlines()
    c.check(p.returncode == 9 and lines and lines[-1].startswith("memwatch: ") and "Linux" in lines[-1],
            f"{what}: refused where {feature} is degraded (exit {p.returncode}: {lines[-1:]})")


_ELF_MACHINE = {"x86_64": 62, "aarch64": 183}


def debian13_root():
    """build/trixie-root (tests/debian13/run root) if it is there, complete
    and of this machine's architecture (the kernel matrix's arm64 guests
    see the x86-64 root through the shared tree), else None."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build", "trixie-root")
    try:
        with open(os.path.join(root, "usr/bin/python3.13"), "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    want = _ELF_MACHINE.get(os.uname().machine)
    if not os.path.exists(root + ".stamp") or head[:4] != b"\x7fELF" or \
            int.from_bytes(head[18:20], "little") != want:
        return None
    return root
