"""A custom op pyprof has no model of, for tests/test_user_op_models.py.

    pyprof profile -o NAME -- python tests/scripts/user_op_models.py
    python tests/scripts/user_op_models.py --torch-profiler TRACE.json

Registers mylib::fused_gate(Tensor x, Tensor w, int repeats) -> Tensor with torch.library on
the CPU (y = x @ w, then `repeats` times y = y * sigmoid(y)) and calls it STEPS times on
x [8, 32] and w [32, 16] float32 with repeats 3.
"""

import argparse

import torch

LIB = torch.library.Library("mylib", "DEF")
LIB.define("fused_gate(Tensor x, Tensor w, int repeats) -> Tensor")


def fused_gate(x, w, repeats):
    y = x @ w
    for _ in range(repeats):
        y = y * torch.sigmoid(y)
    return y


LIB.impl("fused_gate", fused_gate, "CPU")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch-profiler", metavar="TRACE")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    x, w = torch.randn(8, 32), torch.randn(32, 16)

    def run():
        for _ in range(args.steps):
            torch.ops.mylib.fused_gate(x, w, 3)

    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            run()
        prof.export_chrome_trace(args.torch_profiler)
    else:
        import pyprof
        pyprof.init()
        run()


if __name__ == "__main__":
    main()
