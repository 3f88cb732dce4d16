"""A data-parallel training run on CPU with gloo, for the multi-rank tests (issue 16).

    torchrun --nproc-per-node 2 tests/scripts/ddp_ranks.py [--steps 4] [--slow-rank 1]
        [--slow-step 2] [--slow-ms 300]

Each step ("step N" user range) is a DDP forward/backward/SGD step of a small MLP followed by
collectives of known sizes (the tests check the message sizes parse and prof report):
  all_reduce      of 4096 float32 (16,384 bytes)
  all_gather_into_tensor of 1024 float32 per rank (4,096 bytes in, world x that out)
  reduce_scatter_tensor  of world x 512 float32 in (world x 2,048 bytes), 512 out
  broadcast       of 256 int64 (2,048 bytes) from rank 0
`--slow-rank R --slow-step S` makes rank R compute `--slow-ms` longer in step S (a sleep inside
the forward, where the other ranks then wait for it in DDP's gradient all-reduce): the
straggler the ranks report must name.
Collectives the backend lacks are skipped and said on standard output as `skipped NAME`.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

import pyprof

SIZES = {"all_reduce": 4096, "all_gather": 1024, "reduce_scatter": 512, "broadcast": 256}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 10)
        self.slow_ms = 0.0

    def forward(self, x):
        if self.slow_ms:
            time.sleep(self.slow_ms / 1000)  # this rank computes longer this step
        return self.fc2(torch.relu(self.fc1(x)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-step", type=int, default=-1)
    ap.add_argument("--slow-ms", type=float, default=300.0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = Net()
    pyprof.init(net)
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
    skipped = set()

    def collective(name, fn):
        if name in skipped:
            return
        try:
            fn()
        except (RuntimeError, NotImplementedError, ValueError) as e:  # backend lacks it
            skipped.add(name)
            print(f"skipped {name}: {str(e).splitlines()[0][:120]}", flush=True)

    for step in range(args.steps):
        with pyprof.range(f"step {step}"):
            net.slow_ms = args.slow_ms if (rank, step) == (args.slow_rank, args.slow_step) else 0
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            t = torch.full((SIZES["all_reduce"],), float(rank))
            collective("all_reduce", lambda: dist.all_reduce(t))
            part = torch.full((SIZES["all_gather"],), float(rank))
            out = torch.empty(world * SIZES["all_gather"])
            collective("all_gather", lambda: dist.all_gather_into_tensor(out, part))
            big = torch.ones(world * SIZES["reduce_scatter"])
            res = torch.empty(SIZES["reduce_scatter"])
            collective("reduce_scatter", lambda: dist.reduce_scatter_tensor(res, big))
            b = torch.arange(SIZES["broadcast"], dtype=torch.int64)
            collective("broadcast", lambda: dist.broadcast(b, src=0))
    dist.barrier()
    print(json.dumps({"rank": rank, "world": world, "skipped": sorted(skipped)}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
