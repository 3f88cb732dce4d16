"""Training steps of one example model recorded twice at once: by pyprof (under `pyprof
profile`) and by torch.profiler (Kineto), for tests/test_kineto_vs_pyprof.py.

    pyprof profile -o NAME -- python tests/scripts/kineto_and_pyprof_steps.py \\
        --model lenet --trace NAME.trace.json

Both tools watch the same ops through RecordFunction (pyprof's global callback and Kineto's),
so every op call of the compared steps is one record in each. The compared steps run inside
the user range COMPARED, which lets the test pick pyprof's records of exactly those steps; the
torch.profiler window opens and closes just around the same steps.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for path in (ROOT, os.path.join(ROOT, "examples")):
    if path not in sys.path:
        sys.path.insert(0, path)

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import models  # noqa: E402
import pyprof  # noqa: E402

COMPARED = "compared steps"  # the pyprof.range around the steps both tools record


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=models.MODELS, required=True)
    parser.add_argument("--trace", required=True, help="torch.profiler Chrome trace to write")
    parser.add_argument("--steps", type=int, default=1, help="compared steps (after a warm-up)")
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    # One intra-op thread: every op of a step runs on the main thread in both recordings, and
    # the test may compare them in start order without untangling worker threads.
    torch.set_num_threads(1)
    model, x, target = models.make(args.model, args.batch)
    if not pyprof.init(model=model):
        sys.exit("pyprof.init() found no NVTX tool: run under `pyprof profile`")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # Warm-up: the first step allocates the optimizer's momentum buffers and runs one-time
    # paths (lazy inits, kernel selection); the compared steps are then steady-state steps.
    models.train_step(model, optimizer, x, target)

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True,
                 with_modules=True) as prof:
        with pyprof.range(COMPARED):
            for _ in range(args.steps):
                models.train_step(model, optimizer, x, target)
    prof.export_chrome_trace(args.trace)


if __name__ == "__main__":
    main()
