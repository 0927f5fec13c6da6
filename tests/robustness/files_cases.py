"""Files memwatch creates as root.  Outputs (-j, -o, record -o): a symlink
planted at the path is refused (exit 7, one line that says so), dangling or
not, and what it points to is neither written nor created; new files get
0644 (reports) and 0600 (recordings).  The control socket's directory
/run/memwatch: a symlink, a file or another user's directory there is
refused and left as it was (tracing goes on, without 'memwatch mark'), a
directory of root's with loose modes is tightened to 0700; 'memwatch mark'
will not use a directory others could have filled.  The /run cases run in
a private mount namespace with its own /run, so no other memwatch on the
machine is disturbed."""
import os
import shutil
import stat
import subprocess
import tempfile

import common

EXIT_OUTPUT = 7
EXIT_NOSESSION = 12


def one_line(c, label, err, words):
    lines = err.decode(errors="replace").strip().splitlines()
    c.check(len(lines) == 1 and lines[0].startswith("memwatch: ") and
            all(w in lines[0] for w in words),
            f"{label}: one line naming {words} ({lines})")


def planted_symlink(c, mw, tmp, label, argv_for, dangling):
    tag = label.replace(" ", "") + ("-dangling" if dangling else "")
    target = os.path.join(tmp, "target" + tag)
    link = os.path.join(tmp, "link" + tag)
    if not dangling:
        with open(target, "w") as f:
            f.write("precious\n")
    os.symlink(target, link)
    what = f"{label} {'dangling ' if dangling else ''}symlink"
    p = subprocess.run([mw] + argv_for(link) + ["--", "true"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    c.eq(p.returncode, EXIT_OUTPUT, f"{what}: exit status")
    one_line(c, what, p.stderr, [link, "symbolic link"])
    if dangling:
        c.check(not os.path.lexists(target), f"{what}: its target is not created")
    else:
        c.eq(common.read(target), "precious\n", f"{what}: its target is untouched")
    c.check(os.path.islink(link), f"{what}: the link itself stays")


def output_symlinks(c, mw, tmp):
    for label, argv_for in (("-j", lambda p: ["-q", "-j", p]),
                            ("-o", lambda p: ["-o", p]),
                            ("record -o", lambda p: ["record", "-o", p])):
        for dangling in (False, True):
            planted_symlink(c, mw, tmp, label, argv_for, dangling)


def modes(c, mw, tmp):
    j, o, r = (os.path.join(tmp, n) for n in ("m.json", "m.txt", "m.rec"))
    old = os.umask(0o022)
    try:
        p1 = subprocess.run([mw, "-j", j, "-o", o, "--", "true"], stderr=subprocess.PIPE, timeout=60)
        p2 = subprocess.run([mw, "record", "-o", r, "--", "true"], stderr=subprocess.PIPE, timeout=60)
    finally:
        os.umask(old)
    c.check(p1.returncode == 0 and p2.returncode == 0, "outputs written")
    for path, want in ((j, 0o644), (o, 0o644), (r, 0o600)):
        got = stat.S_IMODE(os.stat(path).st_mode)
        c.eq(oct(got), oct(want), f"mode of a new {os.path.basename(path)}")


def in_private_run(mw, script):
    """Run a shell script with a fresh tmpfs on /run in a mount namespace of
    its own; $MW is memwatch.  Returns (rc, stdout, stderr)."""
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                        "mount -t tmpfs -o mode=0755 mw-run /run\n" + script],
                       env=dict(os.environ, MW=mw), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def refused_dir(c, mw, tmp, label, plant, victim_check):
    """plant: shell lines that put something at /run/memwatch.  memwatch must
    trace anyway, warn once, and leave it be."""
    rc, out, err = in_private_run(mw, plant + """
"$MW" -q -- true 2>"$T/err" && echo "rc=0" || echo "rc=$?"
echo "kind=$(stat -c %F /run/memwatch)"
""".replace("$T", tmp))
    c.check("rc=0" in out, f"/run/memwatch {label}: memwatch traces anyway ({out.strip()} {err.strip()})")
    werr = common.read(os.path.join(tmp, "err"))
    lines = werr.strip().splitlines()
    c.check(len(lines) == 1 and "warning" in lines[0] and "/run/memwatch" in lines[0],
            f"/run/memwatch {label}: one warning line ({lines})")
    victim_check(out)


def control_dir(c, mw, tmp):
    victim = os.path.join(tmp, "victim")
    os.mkdir(victim, 0o755)

    def victim_untouched(_out):
        c.eq(oct(stat.S_IMODE(os.stat(victim).st_mode)), oct(0o755),
             "/run/memwatch symlink: the directory it points to keeps its mode")
        c.eq(os.listdir(victim), [], "/run/memwatch symlink: nothing created where it points")

    refused_dir(c, mw, tmp, "a symlink", f"ln -s {victim} /run/memwatch\n", victim_untouched)
    refused_dir(c, mw, tmp, "a file", "echo x >/run/memwatch\n",
                lambda out: c.check("kind=regular file" in out, "/run/memwatch file: left as it was"))
    rc, out, err = in_private_run(mw, """
mkdir -m 0777 /run/memwatch && chown 65534:65534 /run/memwatch
"$MW" -q -- true 2>"$T/err" && echo "rc=0" || echo "rc=$?"
echo "after=$(stat -c '%a %u' /run/memwatch) entries=$(ls -A /run/memwatch | wc -l)"
""".replace("$T", tmp))
    c.check("rc=0" in out, f"/run/memwatch of another user: memwatch traces anyway ({out.strip()})")
    c.check("after=777 65534 entries=0" in out,
            f"/run/memwatch of another user: not used, not changed ({out.strip()})")
    lines = common.read(os.path.join(tmp, "err")).strip().splitlines()
    c.check(len(lines) == 1 and "another user" in lines[0],
            f"/run/memwatch of another user: one warning line ({lines})")
    # Root's own, too open: tightened, then used.  mark --session finds it.
    rc, out, err = in_private_run(mw, """
mkdir -m 0777 /run/memwatch
"$MW" -q -- sleep 2 2>"$T/err" & mw=$!
i=0; while [ ! -S /run/memwatch/$mw.sock ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
echo "mode=$(stat -c %a /run/memwatch)"
"$MW" mark --session $mw loose && echo "mark=ok" || echo "mark=$?"
wait $mw
""".replace("$T", tmp))
    c.check("mode=700" in out, f"/run/memwatch of root, mode 0777: tightened to 0700 ({out.strip()})")
    c.check("mark=ok" in out, f"/run/memwatch of root, mode 0777: then 'memwatch mark' works ({out.strip()} {err.strip()})")
    c.eq(common.read(os.path.join(tmp, "err")), "", "/run/memwatch tightened: nothing to warn about")


def mark_client(c, mw, tmp):
    """'memwatch mark' reads the directory only if only root could have
    filled it: a symlink or a directory others may write is refused."""
    for label, plant in (("a symlink", f"mkdir -m 0700 {tmp}/socks; ln -s {tmp}/socks /run/memwatch"),
                         ("world-writable", "mkdir -m 0777 /run/memwatch; chmod 0777 /run/memwatch")):
        rc, out, err = in_private_run(mw, plant + """
"$MW" mark x 2>"$T/err" && echo "rc=0" || echo "rc=$?"
""".replace("$T", tmp))
        c.check(f"rc={EXIT_NOSESSION}" in out, f"mark with /run/memwatch {label}: exit {EXIT_NOSESSION} ({out.strip()})")
        one_line(c, f"mark with /run/memwatch {label}", common.read(os.path.join(tmp, "err"), "rb"),
                 ["/run/memwatch", "not using it"])


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-files-")
    try:
        for label, fn in (("files output symlinks", lambda: output_symlinks(c, mw, tmp)),
                          ("files modes", lambda: modes(c, mw, tmp)),
                          ("files /run/memwatch", lambda: control_dir(c, mw, tmp)),
                          ("files mark client", lambda: mark_client(c, mw, tmp))):
            with common.subcase(c, label):
                fn()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
