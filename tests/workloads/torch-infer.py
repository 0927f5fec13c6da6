#!/usr/bin/python3
"""A first PyTorch inference for --stacks (tests/e2e/stack_cases.py).

    memwatch --stacks -- /usr/bin/python3 tests/workloads/torch-infer.py

Debian's python3-torch, CPU only, one thread (no OpenMP pool, whose
threads' malloc arenas would be the largest mappings), random weights: a
two-layer CNN on a 1x3x512x512 input, whose first activation (1x32x512x512
float, 32 MiB) is the largest block the inference allocates.  Phases by
`memwatch mark` (MEMWATCH names the binary; the session is the parent):
"load" while the model is built, "infer" for the one inference, "done"
after.  With MW_CKPT_DIR set it writes there, after the inference,
infer.maps (its /proc/self/maps) and infer.json: {"largest": bytes of the
biggest activation}."""
import json
import os
import subprocess

import torch
from torch import nn

MW = os.environ.get("MEMWATCH", "memwatch")
SESSION = str(os.getppid())
OUT = os.environ.get("MW_CKPT_DIR")


def mark(name):
    subprocess.run([MW, "mark", "--session", SESSION, name], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    mark("load")
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 8, 3, padding=1)).eval()
    x = torch.randn(1, 3, 512, 512)
    mark("infer")
    with torch.no_grad():
        y = model(x)
    largest = 1 * 32 * 512 * 512 * 4
    if OUT:
        with open("/proc/self/maps") as f, open(os.path.join(OUT, "infer.maps"), "w") as o:
            o.write(f.read())
        with open(os.path.join(OUT, "infer.json"), "w") as o:
            json.dump({"largest": largest}, o)
    mark("done")
    del y


if __name__ == "__main__":
    main()
