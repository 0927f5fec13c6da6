# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A ResNet-like CNN of about 10 M parameters, exported to ONNX with Debian's
# python3-torch (1.13, no onnx package needed): OUT (default model.onnx).
import sys

import torch
import torch.nn as nn


def block(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


net = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
                    block(64, 64, 1), block(64, 128, 2), block(128, 256, 2), block(256, 512, 2), block(512, 512, 1),
                    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)).eval()
print(sum(p.numel() for p in net.parameters()), "parameters")
torch.onnx.export(net, torch.randn(1, 3, 224, 224), sys.argv[1] if len(sys.argv) > 1 else "model.onnx", input_names=["input"],
                  output_names=["output"], opset_version=13)
