"""--svg FILE: the timeline of a trace.  The phases workload is traced with
--svg and -j and no -i (so samples come at the default 10 ms), its phases
named from outside with `memwatch mark` while it waits at each boundary, so
the run is long enough for several samples; the SVG must be well-formed XML
(xmllint), name every phase the JSON names, mark the peaks, and render in
headless Chromium to a PNG that shows the VM line and the RSS areas.  Also:
the USDT phases, a recording replayed with `memwatch report --svg`, no text
rows without -i, and an unwritable --svg path."""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

from e2eutil import wait_for  # noqa: E402

STEPS = ("load_model", "alloc_io", "release")
PAUSE = 0.35		# seconds the workload waits at each boundary
VM_RGB = (0xc0, 0x39, 0x2b)	# user/output/report_svg.c C_VM
ANON_RGB = (0x4e, 0x79, 0xa7)	# C_ANON, drawn at 0.85 opacity on the bands


def read_json(path):
    try:
        return [json.loads(x) for x in open(path)]
    except (OSError, ValueError):
        return []


def svg_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def xml_escape(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


# ---- PNG: enough of a decoder to look at Chromium's screenshot --------------------

def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA non-interlaced
    PNG, or None."""
    try:
        data = open(path, "rb").read()
    except OSError:
        return None
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, idat, hdr = 8, b"", None
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if not hdr or hdr[2] != 8 or hdr[3] not in (2, 6) or hdr[6] != 0:
        return None
    w, h, bpp = hdr[0], hdr[1], 3 if hdr[3] == 2 else 4
    raw = zlib.decompress(idat)
    stride, rows, prev = w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 0xff
            elif ft == 2:
                line[i] = (line[i] + b) & 0xff
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xff
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def near(px, rgb, tol):
    return all(abs(p - q) <= tol for p, q in zip(px, rgb))


def render(c, label, svg, tmp):
    """Headless Chromium screenshots the SVG: exit 0, a PNG of the window's
    size showing the VM line and the anon area."""
    png = os.path.join(tmp, label + ".png")
    if os.environ.get("MW_E2E_RENDER", "1") == "0":
        print(f"    skip {label}: rendering (MW_E2E_RENDER=0)")
        return
    chromium = shutil.which("chromium")
    if not c.check(chromium is not None, f"{label}: chromium is installed (scripts/setup.sh)"):
        return
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--user-data-dir=" + os.path.join(tmp, "chromium-profile"),
           "--screenshot=" + png, "--window-size=1100,600", "file://" + svg]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=90)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    c.eq(rc, 0, f"{label}: chromium --headless --screenshot exit status")
    ok = c.check(os.path.exists(png) and os.path.getsize(png) > 0,
                 f"{label}: chromium wrote a non-empty PNG")
    img = png_pixels(png) if ok else None
    if not c.check(img is not None, f"{label}: the screenshot is an 8-bit RGB(A) PNG"):
        return
    w, h, rows = img
    c.eq((w, h), (1100, 600), f"{label}: screenshot size")
    flat = [px for row in rows for px in row]
    vm = sum(near(px, VM_RGB, 40) for px in flat)
    anon = sum(near(px, ANON_RGB, 40) for px in flat)
    c.check(vm > 300, f"{label}: the screenshot shows the VM line ({vm} red pixels)")
    c.check(anon > 1000, f"{label}: the screenshot shows the RSS anon area ({anon} blue pixels)")


def check_svg(c, label, svg_path, summary, tmp):
    """Well-formed, self-contained, every phase named, the peaks marked."""
    xmllint = shutil.which("xmllint")
    if c.check(xmllint is not None, f"{label}: xmllint is installed (scripts/setup.sh)"):
        p = subprocess.run([xmllint, "--noout", svg_path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        c.eq(p.returncode, 0, f"{label}: xmllint --noout ({p.stderr.decode(errors='replace')[:200]})")
    text = svg_text(svg_path)
    c.check(text.startswith("<?xml") and "<svg xmlns=\"http://www.w3.org/2000/svg\"" in text
            and "viewBox=" in text and text.rstrip().endswith("</svg>"),
            f"{label}: an SVG document with its namespace and viewBox")
    c.check("<script" not in text and "href" not in text and "@import" not in text,
            f"{label}: no script, no external reference")
    names = [ph["name"] for ph in (summary or {}).get("phases", [])]
    missing = [n for n in names if f">{xml_escape(n)}</text>" not in text]
    c.check(names and not missing, f"{label}: every phase of the JSON is named in the SVG "
            f"({len(names)} phases, missing {missing})")
    for what in ("VM peak ", "RSS peak "):
        c.check(re.search(">" + what + r"[0-9.]+ (B|KiB|MiB|GiB)</text>", text) is not None,
                f"{label}: the {what.strip()} is labelled")
    # A device VM line only where there is device memory (device_cases.py).
    dev = (summary or {}).get("totals", {}).get("device_vm_peak_bytes", 0)
    c.eq(('id="device-vm"' in text, "VM device" in text), (dev > 0, dev > 0),
         f"{label}: a device VM line and its legend only with device VM ({dev} bytes)")
    return text, names


def marked_run(c, mw, wl, tmp):
    """phases --mark under --svg -j (no -i): `memwatch mark` names each phase
    while the workload waits at its boundary."""
    ck = os.path.join(tmp, "ck")
    os.mkdir(ck)
    svg, js = os.path.join(tmp, "marked.svg"), os.path.join(tmp, "marked.json")
    env = dict(os.environ, MW_CKPT_DIR=ck, MW_STEPS="1")
    index = os.path.join(ck, "index")
    mwp = subprocess.Popen([mw, "--svg", svg, "-j", js, "--", os.path.join(wl, "phases"), "--mark"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for step in STEPS:
            def reached():
                return os.path.exists(index) and step in open(index).read().split()
            if not c.check(wait_for(lambda: reached() or mwp.poll() is not None, 30) and reached(),
                           f"marked: the workload reached {step}"):
                break
            p = subprocess.run([mw, "mark", "--session", str(mwp.pid), step],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
            c.eq(p.returncode, 0, f"marked: memwatch mark {step}: exit status")
            time.sleep(PAUSE)
            open(os.path.join(ck, step + ".go"), "w").close()
        out, _ = mwp.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        mwp.kill()
        out, _ = mwp.communicate()
    c.eq(mwp.returncode, 0, "marked: exit status")
    return out.decode(errors="replace"), svg, js


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-svg-")
    try:
        stdout, svg, js = marked_run(c, mw, wl, tmp)
        lines = read_json(js)
        summary = lines[-1] if lines and lines[-1].get("type") == "summary" else None
        c.check(summary is not None, "marked: the JSON ends with its summary")
        samples = [o for o in lines if o.get("type") == "sample"]
        c.check(len(samples) >= 50, f"marked: samples without -i, every 10 ms ({len(samples)} "
                f"over {len(STEPS) * PAUSE:.2f}+ s)")
        gaps = sorted(b["ts_ns"] - a["ts_ns"] for a, b in zip(samples, samples[1:]))
        c.check(bool(gaps) and 5e6 < gaps[len(gaps) // 2] < 20e6,
                "marked: default samples come about 10 ms apart in the first seconds "
                f"(median {gaps[len(gaps) // 2] / 1e6 if gaps else 0:.1f} ms)")
        c.check(not re.search(r"^\s+secs\s+VM\s+\+VM", stdout, re.M) and "Phases" in stdout,
                "marked: the text report, without a row per sample (no -i)")
        text, names = check_svg(c, "marked", svg, summary, tmp)
        c.eq(names, ["start"] + list(STEPS), "marked: the phases memwatch mark named")
        render(c, "marked", svg, tmp)

        # USDT phases, and the same trace recorded, then replayed to an SVG.
        rec, svg2, svg3 = (os.path.join(tmp, x) for x in ("usdt.rec", "usdt.svg", "replay.svg"))
        js2 = os.path.join(tmp, "usdt.json")
        p = subprocess.run([mw, "record", "-o", rec, "--svg", svg2, "-j", js2, "--",
                            os.path.join(wl, "phases"), "--usdt"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        c.eq(p.returncode, 0, "usdt: record --svg: exit status")
        lines = read_json(js2)
        summary = lines[-1] if lines else None
        text2, names2 = check_svg(c, "usdt", svg2, summary, tmp)
        c.eq(names2, ["start"] + list(STEPS), "usdt: the USDT phases")
        p = subprocess.run([mw, "report", rec, "--svg", svg3, "-q"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        c.eq(p.returncode, 0, "replay: report --svg: exit status")
        text3, _ = check_svg(c, "replay", svg3, summary, tmp)
        strip = re.compile(r"\(PID \d+\)")
        c.check(text3 and strip.sub("", text3) == strip.sub("", text2),
                "replay: the replayed SVG is the recorded trace's, byte for byte (PID aside)")

        # An unwritable path (a directory), and a symlink (O_NOFOLLOW): exit 7, before tracing.
        link = os.path.join(tmp, "link.svg")
        os.symlink(os.path.join(tmp, "target.svg"), link)
        for what, path in (("a directory", tmp), ("a symlink", link)):
            p = subprocess.run([mw, "-q", "--svg", path, "--", "/bin/true"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            err = p.stderr.decode(errors="replace")
            c.check(p.returncode == 7 and err.startswith("memwatch: cannot write"),
                    f"--svg to {what}: exit 7, says why (got {p.returncode}: {err.strip()[:80]})")
        c.check(not os.path.exists(os.path.join(tmp, "target.svg")),
                "--svg through a symlink writes nothing")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
