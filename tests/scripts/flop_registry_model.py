"""A tiny model calling tests/flop_registry_ops.py's custom ops, for tests/test_flop_registry.py.

    pyprof profile -o NAME -- python tests/scripts/flop_registry_model.py
    python tests/scripts/flop_registry_model.py --torch-profiler TRACE.json

STEPS steps of: a Linear [4, 32] -> [4, 32], flopreg::gated_mm with w [32, 16] (and, on every
other step, with a batch of 8), flopreg::no_meta, flopreg::plain and flopreg::broken.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import flop_registry_ops  # noqa: E402,F401  (registers the ops)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(32, 32)
        self.w = torch.nn.Parameter(torch.randn(32, 16))

    def forward(self, x, broken: bool = True):
        y = torch.ops.flopreg.gated_mm(self.fc(x), self.w, 0.5)
        y = torch.ops.flopreg.no_meta(y, 3)
        y = torch.ops.flopreg.plain(y)
        # FlopCounterMode, the tests' oracle, stops at a formula that raises: it runs without.
        return torch.ops.flopreg.broken(y) if broken else y


def run(steps: int = 2, broken: bool = True) -> None:
    model = Model()
    with torch.no_grad():
        for step in range(steps):
            model(torch.randn(4 if step % 2 == 0 else 8, 32), broken)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch-profiler", metavar="TRACE")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            run(args.steps)
        prof.export_chrome_trace(args.torch_profiler)
    else:
        import pyprof
        pyprof.init()
        run(args.steps)


if __name__ == "__main__":
    main()
