"""Train one of the example models for a few steps with pyprof annotations on.

    pyprof profile -o lenet -- python examples/train.py --model lenet --steps 3
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

import pyprof  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--model", choices=models.MODELS, default="lenet")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--with-stack", action="store_true", help="record file:line call sites")
    args = parser.parse_args()

    torch.manual_seed(0)
    model, x, target = models.make(args.model, args.batch)
    pyprof.init(model=model, with_stack=args.with_stack)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(args.steps):
        with pyprof.range(f"step {step}", color="green"):
            loss = models.train_step(model, optimizer, x, target)
    print(f"{args.model}: {args.steps} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
