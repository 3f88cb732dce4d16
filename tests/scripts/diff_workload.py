"""Training steps of an example model for tests/test_diff.py, optionally with a deliberate
slowdown in one module.

    pyprof profile -o NAME -- python tests/scripts/diff_workload.py --model lenet --steps 8 \\
        [--redo fc1 --times 4]

Each step runs inside the user range "step N" (pyprof.range), so parse finds the iterations.
`--redo ATTR [--times N]` makes the model's submodule ATTR compute its forward N times (default
2) and keep the last result: the regression of a redundant recomputation, the same op on the
same shapes called N times per step in that module, which `pyprof diff` must find there.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for path in (ROOT, os.path.join(ROOT, "examples")):
    if path not in sys.path:
        sys.path.insert(0, path)

import torch  # noqa: E402

import models  # noqa: E402
import pyprof  # noqa: E402


def redo_forward(module: torch.nn.Module, times: int) -> None:
    forward = module.forward

    def again(*args, **kwargs):
        for _ in range(times - 1):
            forward(*args, **kwargs)
        return forward(*args, **kwargs)

    module.forward = again


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=models.MODELS, default="lenet")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--redo", metavar="ATTR", help="submodule whose forward runs --times times")
    parser.add_argument("--times", type=int, default=2, help="with --redo (default 2)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: less noise from the other core's load
    model, x, target = models.make(args.model, args.batch)
    if args.redo:
        redo_forward(getattr(model, args.redo), args.times)
    if not pyprof.init(model=model):
        sys.exit("pyprof.init() found no NVTX tool: run under `pyprof profile`")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(args.steps):
        with pyprof.range(f"step {step}"):
            models.train_step(model, optimizer, x, target)


if __name__ == "__main__":
    main()
