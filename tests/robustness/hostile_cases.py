"""Hostile names: files and a comm with newlines, quotes, backslashes, escape
sequences and bytes that are not UTF-8.  Every JSON line must parse with a
real parser, the text report must carry no terminal control bytes, and
names that are valid UTF-8 must come out as /proc has them."""
import json
import os
import shutil
import subprocess
import tempfile

import common


def run(c, mw, wl):
    harness = common.harness()
    ck = tempfile.mkdtemp(prefix="mw-hostile-ck-")
    files = tempfile.mkdtemp(prefix="mw-hostile-\x1b[1m-")
    out = os.path.join(ck, "out.json")
    env = dict(os.environ, MW_CKPT_DIR=ck)
    try:
        p = subprocess.run([mw, "-m", "100", "-j", out, "--", os.path.join(wl, "hostile"), files],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        c.eq(p.returncode, 0, "hostile names: exit status")
        lines = []
        with open(out, "rb") as f:
            for raw in f:
                try:
                    lines.append(json.loads(raw.decode("utf-8")))
                except (ValueError, UnicodeDecodeError) as e:
                    c.check(False, f"JSON line is valid UTF-8 JSON: {e}")
        c.check(bool(lines) and lines[-1]["type"] == "summary", "hostile names: JSON parses")
        text = p.stdout
        bad = [b for b in set(text) if (b < 0x20 and b not in (0x0a,)) or b == 0x7f]
        c.check(not bad, f"text report has no control bytes ({sorted(bad)})")
        if not lines:
            return
        s = lines[-1]
        got = {m["path"] for m in s["mappings"] if not m["unmapped"]}
        truth = harness.parse_maps(os.path.join(ck, "final.maps"))
        want = set()
        for v in truth:
            if not v["path"].startswith(files):
                continue
            try:
                want.add(v["path"].encode("utf-8", "surrogateescape").decode("utf-8"))
            except UnicodeDecodeError:
                continue        # not UTF-8: JSON cannot carry it as is
        missing = want - got
        c.check(len(want) >= 6 and not missing,
                f"UTF-8 names equal /proc's ({len(want)} files)" +
                "".join("\n        missing " + repr(m) for m in sorted(missing)))
        c.check("\x1b" in s["comm"] or "?" in s["comm"] or s["comm"],
                f"comm with control bytes reported ({s['comm']!r})")
    finally:
        shutil.rmtree(ck, ignore_errors=True)
        shutil.rmtree(files, ignore_errors=True)
