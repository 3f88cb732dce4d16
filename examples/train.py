"""Train one of the example models for a few steps with pyprof annotations on.

    pyprof profile -o lenet -- python examples/train.py --model lenet --steps 3

On a GPU (docs/gpu-validation.md):

    pyprof profile -o net -- python examples/train.py --model resnet_block --device cuda
    python examples/train.py --model transformer --device cuda --size large --steps 13 --time-steps
    pyprof profile -o win --capture-range cudaProfilerApi -- \\
        python examples/train.py --device cuda --steps 4 --profiler-range
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

import pyprof  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--model", choices=models.MODELS, default="lenet")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=None,
                        help="batch size (default 8; with --size large: per model, "
                             "see models.LARGE)")
    parser.add_argument("--with-stack", action="store_true", help="record file:line call sites")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--size", choices=("small", "large"), default="small",
                        help="small: the CPU-sized model (default); large: GPU-sized "
                             "(lenet, resnet_block, transformer)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="steps before --profiler-range's window and left out of --time-steps "
                             "(default 1)")
    parser.add_argument("--profiler-range", action="store_true",
                        help="run the steps after the warm-up between torch.cuda.profiler.start() "
                             "and stop() (--device cuda only)")
    parser.add_argument("--time-steps", action="store_true",
                        help="print one JSON line with the time of every step after the warm-up "
                             "(synchronizing the GPU before and after each step)")
    args = parser.parse_args()
    if args.size == "large" and args.model not in models.LARGE:
        parser.error(f"--size large is defined for {', '.join(models.LARGE)}")
    if args.batch is None:
        args.batch = models.large_batch(args.model) if args.size == "large" else 8
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False")
    if args.profiler_range and args.device != "cuda":
        parser.error("--profiler-range needs --device cuda")
    if (args.profiler_range or args.time_steps) and not 0 <= args.warmup < args.steps:
        parser.error("--profiler-range and --time-steps need 0 <= --warmup < --steps")
    cuda = args.device == "cuda"

    torch.manual_seed(0)
    model, x, target = models.make(args.model, args.batch, size=args.size)
    pyprof.init(model=model, with_stack=args.with_stack)
    if cuda:
        # After init, so that the host-to-device copies are recorded as ops too.
        model.to(args.device)
        x, target = x.to(args.device), target.to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step_ms = []
    for step in range(args.steps):
        in_window = step >= args.warmup
        if args.profiler_range and step == args.warmup:
            torch.cuda.synchronize()  # the warm-up's kernels end before the window opens
            torch.cuda.profiler.start()
        if cuda and args.time_steps:
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        with pyprof.range(f"step {step}", color="green"):
            loss = models.train_step(model, optimizer, x, target)
        if cuda and args.time_steps:
            torch.cuda.synchronize()
        if args.time_steps and in_window:
            step_ms.append((time.perf_counter_ns() - t0) / 1e6)
    if args.profiler_range:
        torch.cuda.synchronize()  # every kernel of the window ends inside it
        torch.cuda.profiler.stop()
    if args.time_steps:
        print(json.dumps({"step_ms": step_ms, "median_ms": statistics.median(step_ms),
                          "model": args.model, "size": args.size, "batch": args.batch,
                          "device": args.device, "warmup": args.warmup}), flush=True)
    print(f"{args.model}: {args.steps} steps, final loss {loss.item():.4f}")
    if cuda:
        torch.cuda.synchronize()  # every kernel has ended before the program exits


if __name__ == "__main__":
    main()
