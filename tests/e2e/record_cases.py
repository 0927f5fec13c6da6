"""memwatch record / memwatch report: a saved stream replays to the very
same report, and damaged recordings are refused with exit code 10."""
import json
import os
import subprocess
import tempfile


def run(c, mw, wl):
    d = tempfile.mkdtemp(prefix="mw-rec-")
    rec, live, replay = (os.path.join(d, n) for n in ("r.mwrec", "live.json", "replay.json"))
    env = dict(os.environ, MW_CKPT_DIR=d)
    p = subprocess.run([mw, "record", "-o", rec, "-j", live, "--", os.path.join(wl, "threads")],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    c.eq(p.returncode, 0, "record: exit status")
    c.check(b"wrote" in p.stderr, "record: says what it wrote")
    p = subprocess.run([mw, "report", "-q", "-j", replay, rec], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    c.eq(p.returncode, 0, "report: exit status")
    a = [json.loads(x) for x in open(live)]
    b = [json.loads(x) for x in open(replay)] if os.path.exists(replay) else []
    # The kernel traced on is the live session's to say (a recording does
    # not carry it yet): the rest must be the same.
    c.check(bool(a) and "kernel" in a[-1] and "kernel" not in (b[-1] if b else {}),
            "the live summary says which kernel, the replay does not claim one")
    if a:
        a[-1].pop("kernel", None)
    c.check(a == b, "report of the recording equals the live report, line for line")
    # Replay needs neither root nor BPF.
    os.chmod(rec, 0o644)
    os.chmod(d, 0o755)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        mw, "report", "-q", "-j", "-", rec], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    lines = p.stdout.decode().splitlines()
    c.check(p.returncode == 0 and bool(lines) and json.loads(lines[-1]) == a[-1],
            "report works unprivileged")
    size = os.path.getsize(rec)
    with open(rec, "rb") as f:
        data = f.read()
    for name, blob in (("truncated", data[:size - 3]), ("other version", data[:8] + b"\x63" + data[9:]),
                       ("not a recording", b"hello world\n" * 10)):
        bad = os.path.join(d, "bad.mwrec")
        with open(bad, "wb") as f:
            f.write(blob)
        p = subprocess.run([mw, "report", "-q", bad], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        err = p.stderr.decode().strip()
        c.eq(p.returncode, 10, f"report of a {name} recording: exit code")
        c.check(err.startswith("memwatch: "), f"report of a {name} recording: says why ({err})")
    subprocess.run(["rm", "-rf", d])
