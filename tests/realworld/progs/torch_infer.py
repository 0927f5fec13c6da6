"""torch_infer — a small CNN's inference loop on 2 threads (PyTorch, CPU),
for tests/realworld.

Usage: /usr/bin/python3 torch_infer.py [SECONDS]   (0 or none: until killed)
Prints "ready" once the model has run once.  With MW_RW_CKPT=DIR it writes
DIR/final.status and DIR/final.smaps as its last act (rwckpt.py).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rwckpt  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

torch.set_num_threads(2)
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
    nn.Flatten(), nn.Linear(64 * 16, 128), nn.ReLU(), nn.Linear(128, 10),
).eval()
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 0
batches = [8, 16, 32, 4]
with torch.no_grad():
    model(torch.randn(8, 3, 64, 64))
    print("ready", flush=True)
    end = time.monotonic() + secs
    i = 0
    while not secs or time.monotonic() < end:
        x = torch.randn(batches[i % len(batches)], 3, 64, 64)
        y = model(x)
        y.argmax(1).sum().item()
        i += 1
rwckpt.final()
