"""Device memory (issue 27): what a driver maps into the process itself,
page frame by page frame (VM_PFNMAP) or page by page (VM_MIXEDMAP), told
from the VMA's flags.  workloads/devmaps maps a BPF array created
BPF_F_MMAPABLE and an io_uring's rings (vm_insert_page(s) on 6.x, the
kernel counts their pages in RSS when it inserts them; remap_pfn_range
before 6.5: no RSS), where vgem loads (the matrix's guests) a dumb buffer
through its node and its dma-buf, then unmaps the array.  The truth is the program's
own smaps at each phase's end: which VMAs carry "pf" or "mm" in VmFlags,
their sizes and Rss."""
import json
import os
import re
import subprocess
import tempfile

from e2eutil import parse_status, smaps_vmas


def expected_kind(v):
    """The device sub-kind memwatch should give a VMA, from its VmFlags."""
    if v["path"].startswith("/dmabuf:"):
        return "dmabuf"
    # A GEM buffer's shmem file mapped directly (5.10's vgem dma-buf).
    if v["path"] == "/drm mm object (deleted)":
        return "gem"
    if "pf" in v["flags"]:
        return "pfn_io" if "io" in v["flags"] else "pfn"
    if "mm" in v["flags"]:
        return "mixed"
    # A device node; not /dev/shm's files, nor /dev/zero (a private mapping
    # is anonymous memory, a shared one "/dev/zero (deleted)", shmem).
    p = v["path"]
    if p.startswith("/dev/") and not p.startswith(("/dev/shm/", "/dev/zero")) and \
            not p.endswith(" (deleted)"):
        return "char"
    return None


def device_vmas(path):
    # Kernel-installed mappings ([vvar] is VM_PFNMAP too) keep their kind.
    return [v for v in smaps_vmas(path)
            if expected_kind(v) and not v["path"].startswith("[")]


def device_vm(path):
    return sum(v["end"] - v["start"] for v in device_vmas(path))


def window_case(c, mw, wl, tmp):
    """devmaps iters: the first of 6 iterations maps a 16 MiB BPF array
    (and, where vgem is, an 8 MiB buffer); the finding
    first_iteration_device_window names them with the device VM that smaps
    shows born between the checkpoints "it1" and "it2", and no later
    iteration maps more."""
    ck = os.path.join(tmp, "ckw")
    os.mkdir(ck)
    out = os.path.join(tmp, "w.json")
    p = subprocess.run([mw, "-q", "-j", out, "--", os.path.join(wl, "devmaps"), "iters"],
                       env=dict(os.environ, MW_CKPT_DIR=ck), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if not c.eq(p.returncode, 0, "window: memwatch exit status"):
        return
    s = json.loads(open(out).readlines()[-1])
    f = [x for x in s["findings"] if x["kind"] == "first_iteration_device_window"]
    if not c.eq(len(f), 1, f"window: a first_iteration_device_window finding "
                f"({[x['kind'] for x in s['findings']]})"):
        return
    f = f[0]
    born = {v["start"]: v for v in device_vmas(os.path.join(ck, "it2.smaps"))}
    for v in device_vmas(os.path.join(ck, "it1.smaps")):
        born.pop(v["start"], None)
    c.eq(f["numbers"]["first_device_vm_bytes"], sum(v["end"] - v["start"] for v in born.values()),
         "window: first_device_vm_bytes (device VMAs in smaps at it2, not at it1)")
    c.eq(f["numbers"]["later_device_vm_bytes"], 0, "window: the later iterations map none")
    c.eq({int(m["start"], 16): m["value"] for m in f["mappings"]},
         {st: v["end"] - v["start"] for st, v in born.items()},
         "window: it names each of them with its size")
    c.check("reuse" in f["summary"] and "device memory" in f["summary"],
            f"window: the summary ({f['summary'][:100]})")
    # The BPF array's pages are the kernel's, inserted at mmap: first_touch_cost
    # counts them as a driver's, not as faults.
    t = [x for x in s["findings"] if x["kind"] == "first_touch_cost"]
    want = sum(v["rss"] for v in born.values())
    if want and c.eq(len(t), 1, "window: a first_touch_cost finding"):
        c.eq(t[0]["numbers"]["device_rss_bytes"], want,
             "window: first_touch_cost: RSS of device mappings born in it1 (smaps at it2)")
        c.check("inserted by a driver" in t[0]["summary"],
                f"window: first_touch_cost says so ({t[0]['summary'][-120:]})")


def pin_case(c, s, ck, skipped, ends):
    """VmLck and VmPin (issue 27): each phase's start, end and peak, and
    the totals, equal to the program's own status at its checkpoints.
    "pin" registers 2 MiB with an io_uring (untraced: read at the next
    marker) and locks 4 MiB, then unlocks 3 (peak: checkpoint "pin_peak");
    "unmap" unregisters and unlocks the rest."""
    st = {n: parse_status(os.path.join(ck, n + ".status"))
          for n in list(ends.values()) + ["pin_peak"]}
    starts = {v: k for k, v in ends.items()}
    for ph in s["phases"]:
        name = ph["name"]
        if name not in ends:
            continue
        end = st[ends[name]]
        for key, field in (("VmLck", "locked"), ("VmPin", "pinned")):
            c.eq(ph[f"{field}_end_bytes"], end[key],
                 f"pin: phase {name}: {key} at its end (status at \"{ends[name]}\")")
            if name in starts:
                c.eq(ph[f"{field}_start_bytes"], st[name][key],
                     f"pin: phase {name}: {key} at its start (status at \"{name}\")")
    ph = {p["name"]: p for p in s["phases"]}
    if not c.check("pin" in ph, "pin: the phase \"pin\""):
        return
    peak = st["pin_peak"]
    c.eq(ph["pin"]["locked_peak_bytes"], peak["VmLck"],
         "pin: phase pin: VmLck peak (status at \"pin_peak\", between two traced calls)")
    c.eq(ph["pin"]["pinned_peak_bytes"], max(st["pin"]["VmPin"], st["drm"]["VmPin"]),
         "pin: phase pin: VmPin peak (at its end)")
    grew = st["drm"]["VmPin"] - st["pin"]["VmPin"]
    if "pin" in skipped:
        print("    skip pin: io_uring refused to register a buffer here")
    else:
        c.eq(grew, 2 << 20, "pin: the registered 2 MiB shows in the program's VmPin")
        # Faulted in by io_uring_register, outside any page fault: the
        # mapping is measured again, and holds it at the end.
        buf = int(open(os.path.join(ck, "pinbuf")).read().split()[0], 16)
        v = [v for v in smaps_vmas(os.path.join(ck, "final.smaps"))
             if v["start"] <= buf < v["end"]]
        m = [m for m in s["mappings"] if int(m["start"], 16) <= buf < int(m["end"], 16)
             and not m["unmapped"]]
        if c.check(len(v) == 1 and len(m) == 1, "pin: the registered buffer's mapping"):
            c.eq(m[0]["rss_bytes"], v[0]["rss"],
                 "pin: the registered buffer's RSS, faulted in by io_uring_register (smaps)")
            c.eq(v[0]["rss"], 2 << 20, "pin: io_uring_register faulted in all 2 MiB")
            g = [g for g in ph["pin"]["top_mappings"] if int(g["start"], 16) == v[0]["start"]]
            c.check(len(g) == 1 and g[0]["rss_delta_bytes"] == 2 << 20,
                    f"pin: and in the phase that faulted it in, ended by a socket mark "
                    f"({[(g['path'], g['rss_delta_bytes']) for g in g]})")
    # The finding: "pin" alone rises by 4 MiB or more (--threshold).
    f = [x for x in s["findings"] if x["kind"] == "locked_or_pinned"]
    if c.eq(len(f), 1, "pin: a locked_or_pinned finding"):
        n = f[0]["numbers"]
        c.eq((n["phases"], n["locked_grown_bytes"], n["pinned_grown_bytes"]),
             (1, peak["VmLck"] - st["pin"]["VmLck"], grew),
             "pin: the finding's phase, locked and pinned growth (status)")
        c.eq((n["locked_end_bytes"], n["pinned_end_bytes"]),
             (st["final"]["VmLck"], st["final"]["VmPin"]), "pin: the finding's end values")
        c.check("the most in \"pin\"" in f[0]["summary"], f"pin: it names the phase "
                f"({f[0]['summary'][:100]})")
    t = s["totals"]
    c.eq(t["locked_bytes"], st["final"]["VmLck"], "pin: VmLck at the end")
    c.eq(t["pinned_bytes"], st["final"]["VmPin"], "pin: VmPin at the end")
    c.eq(t["locked_peak_bytes"], max(x["VmLck"] for x in st.values()),
         "pin: VmLck peak (the highest at a checkpoint)")
    c.eq(t["pinned_peak_bytes"], max(x["VmPin"] for x in st.values()),
         "pin: VmPin peak (the highest at a checkpoint)")


def svg_points(svg, attr):
    m = re.search(r'<path ' + attr + r'[^>]* d="([^"]*)"', svg)
    return [tuple(map(float, x.split())) for x in re.findall(r"[ML]([-\d.]+ [-\d.]+)", m[1])] \
        if m else []


def svg_case(c, svg):
    """--svg: device VM as a dashed line of its own, under the VM line at
    every point (the two share the points and the scale), above zero where
    the BPF array is mapped."""
    dev = svg_points(svg, 'id="device-vm"')
    vm = svg_points(svg, 'fill="none" stroke="#c0392b"')
    if not c.check(len(dev) > 2 and len(dev) == len(vm),
                   f"svg: a device VM line beside the VM line ({len(dev)}, {len(vm)} points)"):
        return
    c.check("VM device" in svg, "svg: the legend names it")
    base = dev[0][1]
    c.check(min(y for _, y in dev) < base - 1, "svg: the line rises with the BPF array")
    c.check(all(d[0] == v[0] and d[1] >= v[1] - 0.05 for d, v in zip(dev, vm)),
            "svg: device VM is never above VM")


def late_walk_case(c, mw, wl, tmp):
    """A call's VMAs read late: with MEMWATCH_DISABLE=exit_walk every call's
    walk at its exit fails as when bpf_find_vma finds the mm locked
    (khugepaged, a writer waiting: seen under load in the 6.12 guest), and
    the process's next marker or call that can unmap reads them (rewalk).  Each phase
    still ends with the device VM smaps shows; without the re-read every
    phase said 0."""
    ck = os.path.join(tmp, "ckl")
    os.mkdir(ck)
    out = os.path.join(tmp, "l.json")
    p = subprocess.run([mw, "-q", "-j", out, "--", os.path.join(wl, "devmaps")],
                       env=dict(os.environ, MW_CKPT_DIR=ck, MEMWATCH_DISABLE="exit_walk"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if not c.eq(p.returncode, 0, "late walk: memwatch exit status"):
        return
    s = json.loads(open(out).readlines()[-1])
    ends = {"bpfmap": "ring", "ring": "pin", "pin": "drm", "drm": "unmap", "unmap": "final"}
    got = {ph["name"]: ph["device_vm_end_bytes"] for ph in s["phases"] if ph["name"] in ends}
    c.eq(got, {n: device_vm(os.path.join(ck, e + ".smaps")) for n, e in ends.items()},
         "late walk: device VM at each phase's end (smaps)")
    c.check(s["totals"]["rewalk_calls"] > 0,
            f"late walk: the VMAs were read late ({s['totals']['rewalk_calls']} times)")


def run(c, mw, wl):
    # vgem, udmabuf, and the drivers of the guests' virtio GPU and (x86)
    # standard VGA: in the kernel matrix's guests (this machine loads no
    # modules); the system DMA heap is built into 6.12.  Not 5.10's
    # bochs-drm (the module is "bochs" from 5.12): its 16 faults of TTM's
    # prefaulted VRAM got 1 MiB of anonymous RSS that smaps places elsewhere
    # (the process's total is exact); open in issue 27's note.
    for mod in ("vgem", "udmabuf", "virtio_gpu", "bochs"):
        subprocess.run(["modprobe", mod], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, "ck")
        os.mkdir(ck)
        out = os.path.join(tmp, "s.json")
        svg = os.path.join(tmp, "s.svg")
        p = subprocess.run([mw, "--threshold", "pinned-bytes=4M", "-j", out, "--svg", svg, "--",
                            os.path.join(wl, "devmaps")],
                           env=dict(os.environ, MW_CKPT_DIR=ck), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if not c.eq(p.returncode, 0, "devmaps: memwatch exit status"):
            print("        stderr: " + p.stderr.decode(errors="replace").strip()[-600:])
            return
        s = json.loads(open(out).readlines()[-1])
        text = p.stdout.decode(errors="replace")
        skipped = open(os.path.join(ck, "skipped")).read().split() \
            if os.path.exists(os.path.join(ck, "skipped")) else []
        optional = {"drm": "vgem's buffers (no vgem node here)",
                     "heap": "the DMA heap's buffer (no /dev/dma_heap/system here)",
                     "udmabuf": "a udmabuf (no /dev/udmabuf here)",
                     "devmem": "/dev/mem (none here, or not x86-64)"}
        c.check(not [x for x in skipped if x not in optional],
                f"devmaps: the BPF array and the io_uring were made ({skipped})")
        for x in skipped:
            if x in optional:
                print("    skip devmaps: " + optional[x])
        sm = {n: os.path.join(ck, n + ".smaps")
              for n in ("bpfmap", "ring", "pin", "drm", "unmap", "final")}
        c.check(device_vm(sm["unmap"]) > device_vm(sm["bpfmap"]),
                f"devmaps: smaps shows device mappings ({device_vm(sm['unmap'])} bytes "
                f"at \"unmap\")")
        # A phase ends at the next one's checkpoint (the last at "final").
        ends = {"start": "bpfmap", "bpfmap": "ring", "ring": "pin", "pin": "drm",
                "drm": "unmap", "unmap": "final"}
        for ph in s["phases"]:
            if ph["name"] in ends:
                c.eq(ph["device_vm_end_bytes"], device_vm(sm[ends[ph["name"]]]),
                     f"devmaps: phase {ph['name']}: device VM at its end (smaps at "
                     f"\"{ends[ph['name']]}\")")
        pin_case(c, s, ck, skipped, ends)
        t = s["totals"]
        c.eq(t["device_vm_bytes"], device_vm(sm["final"]), "devmaps: device VM at the end")
        c.eq(t["device_vm_peak_bytes"], max(device_vm(x) for x in sm.values()),
             "devmaps: device VM peak (the largest at a checkpoint)")
        maps = {int(m["start"], 16): m for m in s["mappings"] if not m["unmapped"]}
        gone = {int(m["start"], 16): m for m in s["mappings"] if m["unmapped"]}
        for v in device_vmas(sm["final"]):
            m = maps.get(v["start"])
            if c.check(m is not None, f"devmaps: {v['path']} at {v['start']:#x} in the JSON"):
                c.eq((m["kind"], m["device"]), ("device", expected_kind(v)),
                     f"devmaps: {v['path']}: kind and sub-kind (VmFlags {sorted(v['flags'])})")
                c.eq(m["rss_bytes"], v["rss"], f"devmaps: {v['path']}: RSS (smaps)")
        arr = [v for v in device_vmas(sm["unmap"]) if v["path"] == "anon_inode:bpf-map"]
        if c.check(len(arr) == 1, "devmaps: the BPF array in smaps at \"unmap\""):
            m = gone.get(arr[0]["start"])
            if c.check(m is not None, "devmaps: the unmapped BPF array in the JSON"):
                c.eq((m["kind"], m["device"]), ("device", expected_kind(arr[0])),
                     "devmaps: the BPF array: kind and sub-kind")
                c.eq(m["rss_peak_bytes"], arr[0]["rss"], "devmaps: the BPF array: RSS peak "
                     "(smaps at \"unmap\")")
        if "drm" not in skipped:
            # Through the node: a device mapping on every kernel.  Through the
            # dma-buf: /dmabuf: and VM_PFNMAP on 6.x; 5.10's vgem maps the
            # buffer's shmem file instead, plain pages: sub-kind "gem" (each
            # checked against smaps above).
            drm = [v for v in device_vmas(sm["unmap"]) if v["path"].startswith("/dev/dri/") and
                   v["end"] - v["start"] == 8 << 20]
            buf = [v for v in device_vmas(sm["unmap"]) if v["end"] - v["start"] == 8 << 20 and
                   not v["path"].startswith("/dev/dri/")]
            c.check(len(drm) == 1 and len(buf) == 1,
                    f"devmaps: vgem's buffer mapped through the node and its dma-buf, "
                    f"both device mappings "
                    f"({[(v['path'], sorted(v['flags'])) for v in drm + buf]})")
        # Other DRM drivers' dumb buffers (virtio-gpu, bochs): 3 MiB through
        # the node each, and through its dma-buf where the driver exports
        # one: device mappings, as smaps says which (RSS: checked above).
        cards = open(os.path.join(ck, "cards")).read().split("\n") \
            if os.path.exists(os.path.join(ck, "cards")) else []
        exports = [v for v in device_vmas(sm["final"]) if v["path"].startswith("/dmabuf:") and
                   v["end"] - v["start"] == 3 << 20]
        c.eq(len(exports), sum(x.split()[2] == "1" for x in cards if x),
             "devmaps: a 3 MiB dma-buf mapping for each card's export")
        for card, drv, _ in (x.split() for x in cards if x):
            v = [v for v in smaps_vmas(sm["unmap"]) if v["path"] == "/dev/dri/" + card]
            m = [maps.get(x["start"]) for x in v]
            c.check(len(v) == 1 and v[0]["end"] - v[0]["start"] == 3 << 20 and
                    m[0] is not None and m[0]["kind"] == "device" and
                    m[0]["device"] == expected_kind(v[0]),
                    f"devmaps: {drv}'s dumb buffer through /dev/dri/{card}: kind device, "
                    f"{[(x['path'], sorted(x['flags']), x['rss']) for x in v]} "
                    f"{[(x['kind'], x['device']) for x in m if x]}")
        print(f"    devmaps: other DRM drivers mapped: {[x.split()[1] for x in cards if x] or 'none'}"
              f", {len(exports)} through their dma-buf")
        # The DMA heap's 4 MiB and udmabuf's 2 MiB: dma-bufs, mapped to the end
        # (each mapping's kind and RSS against smaps: checked above).
        for what, size in (("heap", 4 << 20), ("udmabuf", 2 << 20)):
            if what in skipped:
                continue
            v = [v for v in device_vmas(sm["final"])
                 if v["path"].startswith("/dmabuf:") and v["end"] - v["start"] == size]
            m = [maps.get(x["start"]) for x in v]
            c.check(len(v) == 1 and m[0] is not None and m[0]["device"] == "dmabuf",
                    f"devmaps: {what}: a {size >> 20} MiB dma-buf mapping, kind dmabuf "
                    f"({[(x['path'], sorted(x['flags']), x['rss']) for x in v]})")
        if "devmem" not in skipped:
            v = [v for v in device_vmas(sm["final"]) if v["path"] == "/dev/mem"]
            m = [maps.get(x["start"]) for x in v]
            c.check(len(v) == 1 and m[0] is not None and m[0]["device"] == "pfn_io" and
                    m[0]["rss_bytes"] == 0 == v[0]["rss"],
                    f"devmaps: /dev/mem: kind pfn_io, no RSS "
                    f"({[(x['path'], sorted(x['flags']), x['rss']) for x in v]})")
        vvar = [m for m in s["mappings"] if m["path"] == "[vvar]"]
        c.check(all(m["kind"] == "vvar" for m in vvar),
                f"devmaps: [vvar] (VM_PFNMAP too) stays vvar ({[m['kind'] for m in vvar]})")
        line = [x for x in text.splitlines() if x.strip().startswith("device ")]
        c.check(len(line) == 1, f"devmaps: the text report's device VM line ({line})")
        svg_case(c, open(svg).read() if os.path.exists(svg) else "")
        window_case(c, mw, wl, tmp)
        late_walk_case(c, mw, wl, tmp)
