"""Histograms (--hist, "histograms" in the JSON) on build/workloads/sizes,
which maps known numbers of known sizes in two USDT phases, touches known
fractions and unmaps some after known times (see tests/workloads/sizes.c).

The dynamic loader and libc map too, in the first phase ("start"), so exact
counts are asserted for the phases after it; the whole-trace histograms
must be the sum of the phases'.  Sub-cases: -- CMD with the text report
(--hist all, 80 columns), -p PID, and a recording replayed by `memwatch
report` (the same histograms, no BPF); bad --hist lists are refused.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from e2eutil import ATTACH_S, KIB, MIB, PAGE, ckpt_times, wait_for  # noqa: E402

# What sizes.c does in each phase, by log2 bucket (its low bound).
SIZES = {"alloc": {4096: 7, 65536: 5, 1048576: 3, 8388608: 2},
         "churn": {16384: 9, 131072: 4, 33554432: 1}}
# Its mappings, (length asked, bytes written from the start, count), by
# phase (touch() writes a byte a 4 KiB step: whole pages of any size).
WRITES = {"alloc": [(6 * KIB, 4 * KIB, 7), (96 * KIB, 0, 5), (12 * MIB, 1536 * KIB, 1),
                    (12 * MIB, 12 * MIB, 1), (1536 * KIB, 1536 * KIB, 3)],
          "churn": [(24 * KIB, 24 * KIB, 9), (200 * KIB, 4 * KIB, 4), (48 * MIB, 6 * MIB, 1)]}


def pages(n):
    """n bytes in whole pages of this machine's size."""
    return -(-n // PAGE) * PAGE


def bucket(pct):
    return 0 if pct == 0 else 1 << (pct.bit_length() - 1)


def touched_buckets(phase):
    """Peak RSS / size in percent, by log2 bucket, of the mappings a phase
    created: the kernel maps whole pages (with 4 KiB pages a 6 KiB mapping
    written in its first 4 KiB is half resident, with 16 KiB ones whole)."""
    out = {}
    for size, written, n in WRITES[phase]:
        b = bucket(min(100, pages(written) * 100 // pages(size)))
        out[b] = out.get(b, 0) + n
    return out
# Lifetimes (us), by the phase of the unmap: churn unmaps the 3 x 1.5 MiB
# of alloc after its 80 ms pause, and 9 x 24 KiB right after touching them.
LONG_LOW, LONG_COUNT = 65536, 3
SHORT_BELOW, SHORT_COUNT = 16384, 9   # under 16 ms even if descheduled
LONG_MS = 80


def as_dict(arr):
    """[{"low","high","count"}] -> {low: count}, zero counts dropped."""
    return {e["low"]: e["count"] for e in arr if e["count"]}


def well_formed(c, label, arr):
    """Every histogram array: objects of low, high, count; log2 slots in
    order with none missing between the first and the last."""
    ok = isinstance(arr, list) and all(set(e) == {"low", "high", "count"} for e in arr)
    for e in arr if ok else ():
        lo, hi = e["low"], e["high"]
        ok &= (lo == 0 and hi == 0) or (lo & (lo - 1) == 0 and hi == 2 * lo - 1)
    for a, b in zip(arr, arr[1:]) if ok else ():
        ok &= b["low"] == a["high"] + 1
    ok &= not arr or (arr[0]["count"] > 0 and arr[-1]["count"] > 0)
    return c.check(ok, f"{label}: well-formed log2 histogram {arr if not ok else ''}")


def summary(path):
    try:
        lines = [json.loads(x) for x in open(path, "rb")]
    except (OSError, ValueError):
        return None
    return lines[-1] if lines and lines[-1].get("type") == "summary" else None


# ---- the workload's own truth ---------------------------------------------------

def parse_maps(path):
    vmas = []
    with open(path) as f:
        for line in f:
            head = line.split(None, 5)
            start, end = (int(x, 16) for x in head[0].split("-"))
            vmas.append((start, end, head[1], head[5].strip() if len(head) > 5 else ""))
    return vmas


def longest_us(ckdir):
    """How long anything made in phase alloc can have lived, as the workload
    measured it: from its "alloc" checkpoint to its last (under emulation a
    sleep of 80 ms can take 140)."""
    ts = ckpt_times(ckdir)
    return (max(ts.values()) - ts["alloc"]) // 1000


def check_workload(c, label, ckdir):
    """The workload did what sizes.c says: the shared anonymous VMAs that
    appeared in each phase, by size (whole pages: 6 KiB asked is 8 KiB
    mapped with 4 KiB pages, 16 KiB with 16 KiB ones)."""
    maps = {n: set(parse_maps(os.path.join(ckdir, n + ".maps"))) for n in ("alloc", "churn", "final")}

    def new_shared(a, b):
        sizes = {}
        for v in maps[b] - maps[a]:
            if v[2] == "rw-s":
                sizes[v[1] - v[0]] = sizes.get(v[1] - v[0], 0) + 1
        return sizes
    c.eq(new_shared("alloc", "churn"), {pages(6 * KIB): 7, pages(96 * KIB): 5, 12 * MIB: 2,
                                        1536 * KIB: 3},
         f"{label}: workload: shared VMAs new in alloc, by size")
    c.eq(new_shared("churn", "final"), {pages(200 * KIB): 4, 48 * MIB: 1},
         f"{label}: workload: shared VMAs new in churn and still there, by size")


# ---- the JSON -----------------------------------------------------------------------

def check_json(c, label, s, ckdir):
    h = s.get("histograms")
    keys = {"mmap_size_bytes", "lifetime_us", "touched_percent",
            "iteration_rss_growth_bytes", "iteration_vm_growth_bytes"}
    if not c.check(isinstance(h, dict) and keys <= set(h), f"{label}: summary has \"histograms\" with {sorted(keys)}"):
        return
    for k in sorted(keys):
        well_formed(c, f"{label}: histograms.{k}", h[k])
    phases = s.get("phases", [])
    names = [p.get("name") for p in phases]
    if not c.eq(names, ["start", "alloc", "churn"], f"{label}: phases"):
        return
    ph = {p["name"]: p.get("histograms") or {} for p in phases}
    for name in names:
        for k in ("mmap_size_bytes", "lifetime_us", "touched_percent"):
            if c.check(k in ph[name], f"{label}: phase {name}: histograms.{k}"):
                well_formed(c, f"{label}: phase {name}: histograms.{k}", ph[name][k])
            else:
                return
    # Exactly what the workload did, call by call.
    for name in ("alloc", "churn"):
        c.eq(as_dict(ph[name]["mmap_size_bytes"]), SIZES[name],
             f"{label}: phase {name}: mmap sizes by bucket")
        c.eq(as_dict(ph[name]["touched_percent"]), touched_buckets(name),
             f"{label}: phase {name}: touched percent by bucket (by creating phase)")
    c.eq(as_dict(ph["alloc"]["lifetime_us"]), {}, f"{label}: phase alloc: nothing unmapped, no lifetimes")
    life = as_dict(ph["churn"]["lifetime_us"])
    c.eq(sum(n for lo, n in life.items() if lo >= LONG_LOW), LONG_COUNT,
         f"{label}: phase churn: the 1.5 MiB mappings lived {LONG_MS} ms or more ({life})")
    c.eq(sum(n for lo, n in life.items() if lo < SHORT_BELOW), SHORT_COUNT,
         f"{label}: phase churn: the 24 KiB ones lived under {SHORT_BELOW} us ({life})")
    c.eq(sum(life.values()), LONG_COUNT + SHORT_COUNT, f"{label}: phase churn: lifetimes counted")
    # The whole trace is the sum of its phases.
    for k in ("mmap_size_bytes", "lifetime_us", "touched_percent"):
        total = {}
        for name in names:
            for lo, n in as_dict(ph[name][k]).items():
                total[lo] = total.get(lo, 0) + n
        c.eq(as_dict(h[k]), total, f"{label}: histograms.{k} is the sum of the phases'")
    c.eq(sum(as_dict(h["mmap_size_bytes"]).values()), s["totals"]["mmap_calls"],
         f"{label}: one mmap size per mmap call")
    check_against_mappings(c, label, s, ph, longest_us(ckdir))


def pct_bucket(m):
    return bucket(min(100, m["rss_peak_bytes"] * 100 // m["bytes"]))


def check_against_mappings(c, label, s, ph, longest):
    """The touched buckets hold the known mappings: recomputed from each
    mapping's own rss_peak_bytes / bytes in "mappings"."""
    maps = [m for m in s["mappings"] if m.get("kind") != "folded"]
    for name in ("alloc", "churn"):
        # As memwatch counts: not the kernel's own ([uprobes], [vdso]...),
        # not PROT_NONE reservations.
        mine = [m for m in maps if m.get("phase") == name and m["bytes"] > 0 and m["perms"][:3] != "---"
                and m["kind"] not in ("vdso", "vvar", "vsyscall", "special")]
        got = {}
        for m in mine:
            got[pct_bucket(m)] = got.get(pct_bucket(m), 0) + 1
        c.eq(got, as_dict(ph[name]["touched_percent"]),
             f"{label}: phase {name}: touched buckets agree with its mappings' peak RSS / size")
    window = [m for m in maps if m["bytes"] == 48 * MIB and m.get("phase") == "churn"]
    if c.check(len(window) == 1, f"{label}: the 48 MiB window is in the mappings"):
        c.eq(window[0]["rss_peak_bytes"] * 100 // window[0]["bytes"], 12,
             f"{label}: the 48 MiB window is 12% touched")
    mids = [m for m in maps if m["bytes"] == 1536 * KIB and m["unmapped"] and m.get("phase") == "alloc"]
    if c.eq(len(mids), 3, f"{label}: the three 1.5 MiB mappings are unmapped"):
        us = sorted((m["died_ns"] - m["born_ns"]) // 1000 for m in mids)
        c.check(all(LONG_MS * 1000 <= u <= longest for u in us),
                f"{label}: their born_ns..died_ns: the {LONG_MS} ms pause, at most the "
                f"{longest} us from checkpoint alloc to final ({us} us)")


# ---- the text ------------------------------------------------------------------------

ROW = re.compile(r"^ *(\d+) -> (\d+) *: (\d+) +\|([* ]*)\|$")


def text_blocks(text):
    """{title: {low: count}} for every histogram in the text, and the
    histogram section's lines (from the first histogram title to the
    mappings table)."""
    lines = text.splitlines()
    try:
        first = next(i for i, ln in enumerate(lines) if ln.startswith("mmap sizes asked"))
    except StopIteration:
        return {}, []
    end = next((i for i, ln in enumerate(lines) if ln.startswith("Mappings at the end")), len(lines))
    section = lines[first:end]
    blocks, title = {}, None
    for i, ln in enumerate(section):
        m = ROW.match(ln)
        if m and title is not None:
            blocks[title][int(m.group(1))] = (int(m.group(3)), len(m.group(4)), m.group(4).count("*"))
        elif i + 1 < len(section) and "distribution" in section[i + 1]:
            title = ln.strip()
            blocks[title] = {}
    return blocks, section


def check_text(c, label, text):
    blocks, section = text_blocks(text)
    if not c.check(bool(section), f"{label}: --hist all prints the histograms"):
        return
    wide = [ln for ln in section if len(ln) > 80]
    c.check(not wide, f"{label}: histogram section fits 80 columns {wide[:2]}")
    for title, want in (("mmap sizes in phase alloc: 17 calls", SIZES["alloc"]),
                        ("mmap sizes in phase churn: 14 calls", SIZES["churn"]),
                        ("made in phase alloc: 17", touched_buckets("alloc")),
                        ("made in phase churn: 14", touched_buckets("churn"))):
        rows = blocks.get(title)
        if not c.check(rows is not None, f"{label}: text has \"{title}\""):
            continue
        c.eq({lo: r[0] for lo, r in rows.items() if r[0]}, want, f"{label}: text \"{title}\" counts")
        top = max(r[0] for r in rows.values())
        c.check(all(r[1] == 40 and r[2] == r[0] * 40 // top for r in rows.values()),
                f"{label}: text \"{title}\": 40-column bars, stars scaled to the largest count")
    c.check(any(t.startswith("unmapped in phase churn: 12") for t in blocks),
            f"{label}: text has the lifetimes of churn")
    c.check("Lifetimes, mmap to munmap" in text and "Touched, peak RSS / size" in text,
            f"{label}: text has the lifetime and touched titles")
    i = next((k for k, ln in enumerate(section) if ln.startswith("Largest mappings touched under 25%")), None)
    if c.check(i is not None and i + 2 < len(section), f"{label}: text lists the mappings touched under 25%"):
        row = section[i + 2].split()
        c.check(row[2:5] == ["48.0", "MiB", "6.0"] and "12%" in row and "churn" in row,
                f"{label}: the 48 MiB window, 12% touched, is listed first ({section[i + 2]!r})")


# ---- runs ------------------------------------------------------------------------------

def cmd_case(c, mw, wl, tmp):
    label = "hist/cmd"
    ckdir, jpath = os.path.join(tmp, "ck"), os.path.join(tmp, "out.json")
    os.mkdir(ckdir)
    p = subprocess.run([mw, "--hist", "all", "-j", jpath, "--", os.path.join(wl, "sizes")],
                       env=dict(os.environ, MW_CKPT_DIR=ckdir), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if not c.eq(p.returncode, 0, f"{label}: exit status"):
        print("        stderr: " + p.stderr.decode(errors="replace").strip())
    s = summary(jpath)
    if not c.check(s is not None and os.path.exists(os.path.join(ckdir, "final.maps")),
                   f"{label}: summary written, workload reached its end"):
        return
    check_workload(c, label, ckdir)
    check_json(c, label, s, ckdir)
    check_text(c, label, p.stdout.decode(errors="replace"))


def pid_case(c, mw, wl, tmp):
    """-p PID: attached while the workload waits; what was there before
    counts in no histogram, the rest as under -- CMD."""
    label = "hist/pid"
    ckdir, jpath, errpath = (os.path.join(tmp, n) for n in ("ckp", "pid.json", "pid.err"))
    os.mkdir(ckdir)
    env = dict(os.environ, MW_CKPT_DIR=ckdir, MW_WAIT_GO="1")
    wl_p = subprocess.Popen([os.path.join(wl, "sizes")], env=env)
    mw_p = None
    try:
        if not c.check(wait_for(lambda: os.path.exists(os.path.join(ckdir, "ready")), 10),
                       f"{label}: workload ready"):
            return
        with open(errpath, "wb") as err:
            mw_p = subprocess.Popen([mw, "-q", "-j", jpath, "-p", str(wl_p.pid)], stderr=err)
        wait_for(lambda: b"tracing PID" in open(errpath, "rb").read() or mw_p.poll() is not None, ATTACH_S)
        open(os.path.join(ckdir, "go"), "w").close()
        wl_p.wait(timeout=120)
        c.eq(mw_p.wait(timeout=60), 0, f"{label}: exit status")
    finally:
        for q in (wl_p, mw_p):
            if q and q.poll() is None:
                q.kill()
                q.wait()
    s = summary(jpath)
    if c.check(s is not None, f"{label}: summary written"):
        check_json(c, label, s, ckdir)
        start = as_dict(next(p for p in s["phases"] if p["name"] == "start")["histograms"]["touched_percent"])
        c.eq(start, {}, f"{label}: nothing there before the attach counts as touched")


def record_case(c, mw, wl, tmp):
    """The histograms are the analysis's: a recording replays to the same."""
    label = "hist/record"
    ckdir, rec, live, replay = (os.path.join(tmp, n) for n in ("ckr", "r.mwrec", "live.json", "replay.json"))
    os.mkdir(ckdir)
    p = subprocess.run([mw, "record", "-q", "-o", rec, "-j", live, "--", os.path.join(wl, "sizes")],
                       env=dict(os.environ, MW_CKPT_DIR=ckdir), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 0, f"{label}: record exit status")
    p = subprocess.run([mw, "report", "--hist", "size,touch", "-j", replay, rec],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    c.eq(p.returncode, 0, f"{label}: report exit status")
    a, b = summary(live), summary(replay)
    if not c.check(a is not None and b is not None, f"{label}: both summaries written"):
        return
    c.check(a["histograms"] == b["histograms"] and
            [x["histograms"] for x in a["phases"]] == [x["histograms"] for x in b["phases"]],
            f"{label}: report of the recording has the same histograms as the live run")
    check_json(c, label, b, ckdir)
    text = p.stdout.decode(errors="replace")
    c.check("mmap sizes asked" in text and "Touched, peak RSS" in text and "Lifetimes" not in text,
            f"{label}: --hist size,touch prints those two and not lifetimes")
    p = subprocess.run([mw, "report", rec], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    text = p.stdout.decode(errors="replace")
    c.check(p.returncode == 0 and "memwatch: PID" in text and "mmap sizes asked" not in text and
            "Touched, peak RSS" not in text, f"{label}: no --hist: no size or touched histograms")


def bad_lists(c, mw):
    for arg in ("bogus", "", "size,", "size,,life", "Size"):
        p = subprocess.run([mw, "--hist", arg, "--", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        err = p.stderr.decode(errors="replace").strip()
        c.check(p.returncode == 2 and err.startswith("memwatch: invalid --hist"),
                f"--hist {arg!r}: exit 2 with a reason ({p.returncode}, {err!r})")


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-hist-")
    try:
        bad_lists(c, mw)
        cmd_case(c, mw, wl, tmp)
        pid_case(c, mw, wl, tmp)
        record_case(c, mw, wl, tmp)
    except subprocess.TimeoutExpired as e:
        c.check(False, f"hist: ran: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
