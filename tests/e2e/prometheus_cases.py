"""--listen: memwatch -a serves its metrics; a real Prometheus server (Debian's
`prometheus`) scrapes them every second, and its HTTP query API must show a
waiting workload's RSS and VM series (by pid label) with the values of the
workload's own /proc/PID/status.  The endpoint's text passes `promtool check
metrics` (the text format a plain GET gets) and Prometheus' own OpenMetrics
parser (what Prometheus asks for, checked through `promtool tsdb
create-blocks-from openmetrics`).  Also: a bad --listen address exits 2 with
one line, a port in use exits 7 with one line."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from e2eutil import KIB, parse_status as status_file, rss_tol as tol  # noqa: E402
from e2eutil import wait_for as poll  # noqa: E402

TOP = 100
OM_ACCEPT = ("application/openmetrics-text;version=1.0.0,"
             "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    return status_file(f"/proc/{pid}/status")


def proc_cgroup(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].rstrip("\n")
    return None


def get(url, accept=None, timeout=5):
    """(status, content type, body bytes); status 0 if nothing answered."""
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()
    except (urllib.error.URLError, OSError):
        return 0, "", b""


def wait_for(pred, timeout, step=0.2):
    """Prometheus answers over HTTP: ask five times a second, not more."""
    return poll(pred, timeout, step)


def one_line(err):
    return err.count("\n") == 1 and err.endswith("\n")


# ---- errors ------------------------------------------------------------------

def errors_case(c, mw):
    for bad in ("1.2.3:9464", "[::1]9464", "127.0.0.1:0", "localhost:http", "::1:9464"):
        p = subprocess.run([mw, "-a", "-q", "-d", "1", "--listen", bad], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        err = p.stderr.decode(errors="replace")
        c.eq(p.returncode, 2, f"--listen {bad}: exit status")
        c.check(one_line(err) and "--listen" in err, f"--listen {bad}: one line ({err.strip()!r})")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run([mw, "-a", "-q", "-d", "1", "--listen", f"127.0.0.1:{port}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode(errors="replace")
    c.eq(p.returncode, 7, "--listen on a port in use: exit status")
    c.check(one_line(err) and "in use" in err,
            f"--listen on a port in use: one clear line ({err.strip()!r})")


# ---- the endpoint itself ---------------------------------------------------------

def check_endpoint(c, url, tmp):
    """A plain GET: text 0.0.4, clean for promtool check metrics; with
    Prometheus' Accept: OpenMetrics, clean for Prometheus' OpenMetrics parser."""
    code, ctype, body = get(url)
    c.eq(code, 200, "GET /metrics: status")
    c.check(ctype.startswith("text/plain; version=0.0.4"), f"GET /metrics: content type {ctype}")
    p = subprocess.run(["promtool", "check", "metrics"], input=body, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    c.check(p.returncode == 0 and not p.stdout.strip(),
            f"promtool check metrics passes (exit {p.returncode}) " +
            p.stdout.decode(errors="replace").strip()[:500])

    code, ctype, body = get(url, OM_ACCEPT)
    c.eq(code, 200, "GET /metrics as OpenMetrics: status")
    c.check(ctype == "application/openmetrics-text; version=1.0.0; charset=utf-8",
            f"GET /metrics as OpenMetrics: content type {ctype}")
    text = body.decode("utf-8")      # raises if not UTF-8: a failure worth seeing
    c.check(text.endswith("\n# EOF\n"), "OpenMetrics: # EOF is the last line")
    # The importer needs a timestamp on each sample; it parses with
    # Prometheus' strict OpenMetrics parser.
    stamped = os.path.join(tmp, "om.txt")
    now = int(time.time())
    with open(stamped, "w") as f:
        for line in text.splitlines():
            f.write(line + ("\n" if line.startswith("#") else f" {now}\n"))
    blocks = tempfile.mkdtemp(prefix="blocks-", dir=tmp)
    p = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", stamped, blocks],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    c.check(p.returncode == 0, "Prometheus' OpenMetrics parser takes the endpoint's text" +
            ("" if p.returncode == 0 else ": " + p.stdout.decode(errors="replace").strip()[-300:]))

    code, _, _ = get(url.replace("/metrics", "/"))
    c.eq(code, 404, "GET /: not found")


# ---- Prometheus ----------------------------------------------------------------------

class Prometheus:
    def __init__(self, tmp, target):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: memwatch\n    static_configs:\n"
                    f"      - targets: ['{target}']\n")
        self.log = open(os.path.join(tmp, "prometheus.log"), "w+")
        self.p = subprocess.Popen(["prometheus", f"--config.file={cfg}",
                                   f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                                   f"--web.listen-address=127.0.0.1:{self.port}",
                                   "--log.level=warn"],
                                  stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self, timeout):
        return wait_for(lambda: self.p.poll() is not None or
                        get(self.url + "/-/ready")[0] == 200, timeout) and self.p.poll() is None

    def api(self, path, **params):
        code, _, body = get(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        if code != 200:
            return None
        r = json.loads(body)
        return r.get("data") if r.get("status") == "success" else None

    def query(self, q):
        """[(labels, float value)] of an instant query."""
        d = self.api("query", query=q)
        return [(r["metric"], float(r["value"][1])) for r in d["result"]] if d else []

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.seek(0)
        return self.log.read()


def wait_step(ck, name, timeout=60):
    idx = os.path.join(ck, "index")
    return wait_for(lambda: os.path.exists(idx) and name in open(idx).read().split(), timeout, 0.02)


def check_workload(c, prom, pid, ck):
    """The waiting workload's series against its own /proc/PID/status."""
    st = proc_status(pid)
    sel = f'{{pid="{pid}"}}'

    def rss_matches():
        got = prom.query(f"memwatch_process_rss_bytes{sel}")
        return len(got) == 3 and abs(sum(v for _, v in got) - st["VmRSS"]) <= tol(st["VmRSS"]) \
            and got
    got = wait_for(rss_matches, 30) or prom.query(f"memwatch_process_rss_bytes{sel}")
    c.eq(len(got), 3, f"Prometheus has the workload's RSS series, one per type (PID {pid})")
    c.near(int(sum(v for _, v in got)), st["VmRSS"], "Prometheus: RSS (sum of the types) vs VmRSS")
    by_type = {m.get("type"): v for m, v in got}
    for t, key in (("anon", "RssAnon"), ("file", "RssFile"), ("shmem", "RssShmem")):
        c.near(int(by_type.get(t, -1)), st[key], f"Prometheus: RSS type={t} vs {key}")
    labels = got[0][0] if got else {}
    c.eq(labels.get("comm"), "phases", "the series' comm label")
    c.eq(labels.get("cgroup"), proc_cgroup(pid), "the series' cgroup label")
    vm = prom.query(f"memwatch_process_vm_bytes{sel}")
    c.eq(int(vm[0][1]) if len(vm) == 1 else None, st["VmSize"], "Prometheus: VM vs VmSize")
    # At the checkpoint the workload wrote the same file.
    ckst = status_file(os.path.join(ck, "release.status"))
    c.near(int(sum(v for _, v in got)), ckst["VmRSS"], "Prometheus: RSS vs the checkpoint's VmRSS")


def check_server_side(c, prom, mwpid):
    """What Prometheus made of the scrapes: healthy, OpenMetrics (units and
    the info type came through), bounded series, totals that add up."""
    t = prom.api("targets") or {}
    act = t.get("activeTargets", [])
    c.check(len(act) == 1 and act[0].get("health") == "up" and not act[0].get("lastError"),
            f"Prometheus: the target is up, no scrape error "
            f"({[(a.get('health'), a.get('lastError')) for a in act]})")
    md = prom.api("metadata") or {}
    rss = md.get("memwatch_process_rss_bytes", [{}])[0]
    c.check(rss.get("type") == "gauge" and rss.get("unit") == "bytes",
            f"Prometheus read OpenMetrics: memwatch_process_rss_bytes is a gauge in bytes ({rss})")
    ph = md.get("memwatch_phase", [{}])[0]
    c.eq(ph.get("type"), "info", "Prometheus read OpenMetrics: memwatch_phase is an info")
    n = prom.query("count(memwatch_process_vm_bytes)")
    c.check(n and 1 <= n[0][1] <= TOP + 1, f"at most --top {TOP} processes + other ({n})")
    other = prom.query('memwatch_process_vm_bytes{comm="other",pid=""}')
    c.eq(len(other), 1, "one series for the other processes")
    d = prom.query("sum(memwatch_process_rss_bytes) - sum(memwatch_cgroup_rss_bytes)")
    c.check(len(d) == 1 and d[0][1] == 0,
            f"per-process and per-cgroup RSS series add up to the same total ({d})")
    with open("/proc/meminfo") as f:
        total = int(next(x for x in f if x.startswith("MemTotal:")).split()[1]) * KIB
    q = prom.query("memwatch_host_memory_total_bytes")
    c.eq(int(q[0][1]) if q else None, total, "memwatch_host_memory_total_bytes is MemTotal")
    q = prom.query("memwatch_events_total")
    c.check(q and q[0][1] > 0, f"memwatch_events_total counts ({q})")
    q = prom.query("memwatch_loader_rss_bytes")
    st = proc_status(mwpid)
    c.check(q and 0 < q[0][1] <= 2 * st["VmHWM"], f"memwatch_loader_rss_bytes is memwatch's ({q})")


def scrape_case(c, mw, wl, tmp):
    port = free_port()
    errpath = os.path.join(tmp, "memwatch.err")
    err = open(errpath, "w+")
    mwp = subprocess.Popen([mw, "-a", "-i", "1", "--top", str(TOP),
                            "--listen", f"127.0.0.1:{port}"],
                           stdout=subprocess.DEVNULL, stderr=err)
    prom = wl_p = None
    try:
        wait_for(lambda: mwp.poll() is not None or "tracing" in open(errpath).read(), 30)
        url = f"http://127.0.0.1:{port}/metrics"
        if not c.check(wait_for(lambda: get(url)[0] == 200, 15), "memwatch serves /metrics"):
            return
        check_endpoint(c, url, tmp)

        prom = Prometheus(tmp, f"127.0.0.1:{port}")
        if not c.check(prom.ready(60), "Prometheus starts"):
            return
        ck = tempfile.mkdtemp(prefix="ck-prom-", dir=tmp)
        env = dict(os.environ, MW_CKPT_DIR=ck, MW_STEPS="1")
        wl_p = subprocess.Popen([os.path.join(wl, "phases"), "--mark"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name in ("load_model", "alloc_io"):
            wait_step(ck, name)
            open(os.path.join(ck, name + ".go"), "w").close()
        if not c.check(wait_step(ck, "release"), "the workload waits at its release step"):
            return
        # It holds the 32 MiB model (file) and 4 MiB of shared I/O memory now.
        r = subprocess.run([mw, "mark", "--session", str(mwp.pid), "prom-e2e"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        c.eq(r.returncode, 0, f"memwatch mark: exit status ({r.stderr.decode().strip()})")
        check_workload(c, prom, wl_p.pid, ck)
        ph = wait_for(lambda: prom.query('memwatch_phase_info{phase="prom-e2e"}'), 15)
        c.check(ph and ph[0][1] == 1, f"Prometheus shows the phase memwatch mark started ({ph})")
        check_server_side(c, prom, mwp.pid)
        open(os.path.join(ck, "release.go"), "w").close()
        wl_p.wait(timeout=60)
        check_endpoint(c, url, tmp)      # again, with the host as it is now
    finally:
        if wl_p and wl_p.poll() is None:
            wl_p.kill()
            wl_p.wait()
        log = prom.stop() if prom else ""
        if mwp.poll() is None:
            mwp.send_signal(signal.SIGINT)
        try:
            rc = mwp.wait(timeout=60)
        except subprocess.TimeoutExpired:
            mwp.kill()
            rc = mwp.wait()
        err.seek(0)
        text = err.read()
        c.eq(rc, 0, f"memwatch -a --listen: exit status ({text.strip()[-300:]})")
        if c.case_failed and log.strip():
            print("        prometheus: " + log.strip()[-1000:].replace("\n", "\n        "))


def run(c, mw, wl):
    tmp = tempfile.mkdtemp(prefix="mw-prom-")
    try:
        errors_case(c, mw)
        if not c.check(shutil.which("prometheus") and shutil.which("promtool"),
                       "prometheus and promtool are installed (scripts/setup.sh)"):
            return
        scrape_case(c, mw, wl, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
