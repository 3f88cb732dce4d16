"""A training loop with nothing that marks its iterations, for tests/test_diff_windows.py: no
step ranges, no nn.Module (so no module ranges), no torch.optim (so no optimizer scopes), run
for a fixed time and captured in a fixed-length window:

    pyprof profile --delay 9 --duration 1.5 -o NAME -- \\
        python tests/scripts/window_workload.py --until EPOCH [--exponent 2.5]

parse finds no iterations in such a capture; `pyprof diff` must compare two of them per
iteration (the repeating op sequence) or per call. Each iteration logs a statistic of the hidden
activations, their mean power (squares by default), outside autograd; `--exponent 2.5` slows
that one op per call (aten::pow with the exponent 2.0 multiplies, with 2.5 it calls pow: about
25x slower on the 2-core development VM) without changing any shape, op or call count, nor the
backward: the regression of one op, per call.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import torch  # noqa: E402

import pyprof  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.5, help="how long the loop runs")
    parser.add_argument("--until", type=float, metavar="EPOCH",
                        help="run the loop until this time (seconds since the epoch) instead: "
                             "past the end of a --delay/--duration window however long "
                             "importing torch took")
    parser.add_argument("--exponent", type=float, default=2.0, help="the activation's power")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: less noise from the other core's load
    # The matmuls carry most of the time, ~10 ms an iteration: an op of a few µs that a shared
    # machine stalls once for milliseconds moves its mean per iteration by more than any
    # regression, and below 0.1% of the busy time it stays out of the typical change.
    x = torch.randn(128, 512)
    target = torch.randn(128, 16)
    w1 = (0.05 * torch.randn(512, 1024)).requires_grad_()
    w2 = (0.05 * torch.randn(1024, 16)).requires_grad_()
    if not pyprof.init():
        sys.exit("pyprof.init() found no NVTX tool: run under `pyprof profile`")
    deadline = time.monotonic() + (args.seconds if args.until is None
                                   else max(0.0, args.until - time.time()))
    while time.monotonic() < deadline:
        hidden = (x @ w1).relu()
        with torch.no_grad():  # a statistic the loop logs: the activations' mean power
            activity = hidden.pow(args.exponent).mean()  # noqa: F841
        loss = torch.nn.functional.mse_loss(hidden @ w2, target)
        loss.backward()
        with torch.no_grad():
            for w in (w1, w2):
                w.sub_(w.grad, alpha=1e-3)
                w.grad = None


if __name__ == "__main__":
    main()
