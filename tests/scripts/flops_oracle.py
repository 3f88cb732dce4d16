"""One training step of an example model, measured twice: first by
torch.utils.flop_counter.FlopCounterMode (written to OUT.json), then under pyprof annotation
inside the user range "measured" (so the test can pick exactly those op records).

    pyprof profile -o NAME -- python tests/scripts/flops_oracle.py MODEL OUT.json
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import models  # noqa: E402
import pyprof  # noqa: E402


def step(model, x, target):
    model.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), target)
    loss.backward()


def main(name: str, out: str):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model, x, target = models.make(name, batch=4)
    step(model, x, target)  # warm-up: lazy initialisation stays out of both measurements
    with FlopCounterMode(display=False) as counter:
        step(model, x, target)
    counts = {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}
    with open(out, "w") as f:
        json.dump({"total": int(counter.get_total_flops()), "ops": counts}, f)
    if not pyprof.init(model=model):
        raise SystemExit("pyprof.init() found no NVTX tool: run me under `pyprof profile`")
    with pyprof.range("measured"):
        step(model, x, target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
