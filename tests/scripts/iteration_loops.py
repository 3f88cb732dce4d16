"""Loops of an example model, each shaped for one of parse's iteration rules, for
tests/test_parse_iterations.py.

    pyprof profile -o NAME -- python tests/scripts/iteration_loops.py --loop LOOP --steps N

LOOP:
  step       training steps, each inside pyprof.range("step") (unnumbered): the user_range rule
  batch      training steps, each inside pyprof.range(f"batch_{i}"): only --step-range batch
  optimizer  training steps with no range around them: the optimizer_step rule (SGD's step
             scope, Optimizer.step#SGD.step)
  forward    forward-only calls under torch.no_grad: the module_forward rule
  once       one forward call (inference with one outer range): no iterations
  profiler   training steps under torch.profiler with a schedule (CPU activity), prof.step()
             after each: its ProfilerStep#N RecordFunction ranges, the profiler_step rule
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


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loop", choices=("step", "batch", "optimizer", "forward", "once", "profiler"),
                        required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--model", choices=models.MODELS, default="mlp")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model, x, target = models.make(args.model, 4)
    pyprof.init(model=model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.loop in ("forward", "once"):
        with torch.no_grad():
            for _ in range(1 if args.loop == "once" else args.steps):
                model(x)
    elif args.loop == "profiler":
        from torch.profiler import ProfilerActivity, profile, schedule
        with profile(activities=[ProfilerActivity.CPU],
                     schedule=schedule(wait=0, warmup=0, active=args.steps),
                     on_trace_ready=lambda prof: None) as prof:
            for _ in range(args.steps):
                models.train_step(model, optimizer, x, target)
                prof.step()
    else:
        for i in range(args.steps):
            if args.loop == "step":
                with pyprof.range("step"):
                    models.train_step(model, optimizer, x, target)
            elif args.loop == "batch":
                with pyprof.range(f"batch_{i}"):
                    models.train_step(model, optimizer, x, target)
            else:
                models.train_step(model, optimizer, x, target)
    print(f"{args.loop}: done")


if __name__ == "__main__":
    main()
