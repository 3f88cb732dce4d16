"""One training step of a small Conv2d + Linear net under torch.autocast on the CPU (bfloat16),
annotated by pyprof. The shapes are chosen for hand-checked costs (tests/test_autocast.py): the
convolution's 12 output channels are a multiple of 4 (fp32/TF32 Tensor Core alignment) but not
of 8 (fp16/bf16).

    pyprof profile -o NAME -- python tests/scripts/autocast_step.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

import pyprof  # noqa: E402


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(8, 12, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(12 * 8 * 8, 12))
    x = torch.randn(8, 8, 8, 8)  # needs no gradient: autocast's cast of it creates no node
    if not pyprof.init(model=net):
        sys.exit("pyprof.init() found no NVTX tool: run under `pyprof profile`")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = net(x).float().sum()
    loss.backward()


if __name__ == "__main__":
    main()
