"""--stacks and --folded: who mapped it.  The stacks workload maps each
mapping from its own function and touches it from another, so the report must
name them; folded stacks must add up to the totals the report gives; a
stripped build must still give binary+offset inside the right function."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2eutil import check_refused, degraded, smaps_vmas  # noqa: E402

MIB = 1 << 20
FOLDED_LINE = re.compile(r"^[^;\n]+(;[^;\n]+)* \d+$")


def trace(c, mw, wl, d, binary, extra, what):
    out = os.path.join(d, f"{binary}.json")
    env = dict(os.environ, MW_CKPT_DIR=d)
    p = subprocess.run([mw, "--stacks", "-j", out] + extra + ["--", os.path.join(wl, binary)],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 0, f"{what}: exit status ({p.stderr.decode().strip()[:200]})")
    lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else [{}]
    return lines[-1], p.stdout.decode()


def mapping_of(summary, size):
    ms = [m for m in summary.get("mappings", []) if m["bytes"] == size and m["kind"] == "anon"]
    return ms[0] if len(ms) == 1 else {}


def folded(path):
    """Lines, and (stack, bytes) pairs: stacks may repeat (same names)."""
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    return lines, [(ln.rsplit(" ", 1)[0], int(ln.rsplit(" ", 1)[1])) for ln in lines if " " in ln]


def weight_of(stacks, func):
    """Bytes of the folded lines with func among their frames."""
    return sum(w for s, w in stacks if func in s.split(";"))


def symbol_range(binary, name):
    out = subprocess.run(["nm", "-S", binary], stdout=subprocess.PIPE, timeout=30).stdout.decode()
    for ln in out.splitlines():
        f = ln.split()
        if len(f) == 4 and f[3] == name:
            return int(f[0], 16), int(f[0], 16) + int(f[1], 16)
    return 0, 0


def check_named(c, s, text):
    win = mapping_of(s, 16 * MIB)
    # The three 1 MiB tables merge into one VMA, or two where ASLR left
    # no room: whichever, they are all load_tables'.
    tabs = [m for m in s.get("mappings", []) if m["kind"] == "anon" and
            m.get("call_site", "").startswith("load_tables+")]
    c.check(win.get("call_site", "").startswith("map_window+"),
            f"the 16 MiB window's call site is map_window ({win.get('call_site')})")
    c.check("stacks.c:" in win.get("call_site", ""), "with -g the call site has file:line")
    st = win.get("stack", [])
    c.check(any("(libc.so" in f for f in st[:1]), f"its innermost frame is libc's mmap ({st[:1]})")
    c.check([f.split("+")[0] for f in st[1:3]] == ["map_window", "main"],
            f"then map_window, called from main ({st[1:3]})")
    c.check(win.get("first_touch", "").startswith("touch_window+"),
            f"its first touch is touch_window ({win.get('first_touch')})")
    c.check(any(f.startswith("main+") for f in win.get("first_touch_stack", [])),
            "touch_window's caller (main) is in the first-touch stack: the leaf is unwound")
    c.eq(sum(m["bytes"] for m in tabs), 3 * MIB, "the mappings made by load_tables: 3 MiB")
    c.check(bool(tabs) and all(m.get("first_touch", "").startswith("fill_table+") for m in tabs),
            f"their first touch is fill_table ({[m.get('first_touch') for m in tabs]})")
    top = s.get("stacks", {}).get("by_vm", [{}])[0].get("site", "")
    c.check(top.startswith("map_window+"), f"the top call site by VM is map_window ({top})")
    c.check("Call sites" in text and "map_window" in text, "the text report lists call sites")


def check_folded(c, s, d, by):
    lines, stacks = folded(os.path.join(d, f"{by}.folded"))
    c.check(bool(lines) and all(FOLDED_LINE.match(ln) for ln in lines),
            f"--folded-by {by}: every line is 'frame;...;frame bytes' ({len(lines)} lines)")
    c.check(all(ln.startswith("stacks;") for ln in lines), f"--folded-by {by}: rooted at the command")
    total = sum(w for _, w in stacks)
    if by == "vm":
        c.eq(total, s["totals"]["mapped_bytes"], "folded VM sums to the VM mapped")
        c.eq(weight_of(stacks, "map_window"), 16 * MIB, "folded VM of map_window")
        c.eq(weight_of(stacks, "load_tables"), 3 * MIB, "folded VM of load_tables")
    else:
        c.eq(total, s["stacks"]["rss_faulted_bytes"], "folded RSS sums to the RSS faulted in")
        # 4 MiB touched: what that made resident (THP "always" makes it
        # more where the window is not 2 MiB-aligned) is smaps' to say.
        win = mapping_of(s, 16 * MIB)
        want = [v["rss"] for v in smaps_vmas(os.path.join(d, "final.smaps"))
                if win and v["start"] == int(win["start"], 16)]
        want = want[0] if len(want) == 1 else None
        c.eq(weight_of(stacks, "map_window"), want, "folded RSS of map_window (its smaps Rss)")
        c.eq(weight_of(stacks, "load_tables"), 3 * MIB, "folded RSS of load_tables")


def check_stripped(c, mw, wl, d):
    s, _ = trace(c, mw, wl, d, "stacks-stripped", [], "stripped")
    site = mapping_of(s, 16 * MIB).get("call_site", "")
    m = re.fullmatch(r"stacks-stripped\+0x([0-9a-f]+)", site)
    c.check(bool(m), f"stripped: the call site is binary+offset ({site})")
    lo, hi = symbol_range(os.path.join(wl, "stacks"), "map_window")
    off = int(m.group(1), 16) if m else -1
    c.check(lo <= off < hi, f"stripped: the offset {off:#x} is inside map_window [{lo:#x}, {hi:#x})")


def check_replay(c, mw, wl, d):
    rec, live, replay = (os.path.join(d, n) for n in ("s.mwrec", "live.json", "replay.json"))
    env = dict(os.environ, MW_CKPT_DIR=d)
    p = subprocess.run([mw, "record", "--stacks", "-o", rec, "-j", live, "--",
                        os.path.join(wl, "stacks")], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 0, "record --stacks: exit status")
    p = subprocess.run([mw, "report", "-q", "-j", replay, rec], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    a = [json.loads(x) for x in open(live)][-1] if os.path.exists(live) else {}
    b = [json.loads(x) for x in open(replay)][-1] if os.path.exists(replay) else {}
    c.check(p.returncode == 0 and a.get("stacks") == b.get("stacks") and bool(a.get("stacks")),
            "the recording replays to the same call sites (symbols travel in it)")


def run(c, mw, wl):
    if "stacks" in degraded(mw):
        check_refused(c, mw, "stacks", ["--stacks"], "--stacks")
        return
    d = tempfile.mkdtemp(prefix="mw-stacks-")
    s, text = trace(c, mw, wl, d, "stacks", ["--folded", os.path.join(d, "vm.folded")], "--stacks")
    check_named(c, s, text)
    check_folded(c, s, d, "vm")
    s, _ = trace(c, mw, wl, d, "stacks",
                 ["--folded", os.path.join(d, "rss.folded"), "--folded-by", "rss"], "rss")
    check_folded(c, s, d, "rss")
    check_stripped(c, mw, wl, d)
    check_replay(c, mw, wl, d)
    subprocess.run(["rm", "-rf", d])
