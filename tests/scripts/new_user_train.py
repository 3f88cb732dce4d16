"""A new user's training script (tests/test_new_user.py, issue 38): a small CNN, Adam, a
DataLoader with 2 worker processes, and the natural loop

    for x, y in loader:
        with pyprof.range("step"):
            ...

so that fetching each batch happens between the step ranges. The dataset's __getitem__ sleeps,
as a decoding or augmenting dataset takes time, so that the main process waits for its workers.

    --steps N   training steps (default 8)
    --cut       then a last step whose range is never closed (the capture ends inside it)
    --stop      then pyprof.stop() and 2 more steps: ranges with no op recorded in them
    --eval N    in each step, N forward passes under torch.no_grad() besides the training one
Marks "epoch start" and "epoch end" with pyprof.mark.
"""

import argparse
import time

import lifecycle_common  # noqa: F401  (sys.path)
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import pyprof

BATCH = 8
ITEM_SECONDS = 0.04  # per item in a worker: 320 ms a batch, 160 ms with two workers


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.fc = nn.Linear(16 * 24 * 24, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


class SlowImages(Dataset):
    def __init__(self, n):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 1, 28, 28, generator=generator)
        self.y = torch.randint(0, 10, (n,), generator=generator)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(ITEM_SECONDS)
        return self.x[i], self.y[i]


def train_step(model, optimizer, x, y, evals=0):
    for _ in range(evals):
        with torch.no_grad():
            model(x)
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--cut", action="store_true")
    parser.add_argument("--stop", action="store_true")
    parser.add_argument("--eval", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = CNN()
    assert pyprof.init(model=model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    extra = 1 if args.cut else 2 if args.stop else 0
    loader = DataLoader(SlowImages(BATCH * (args.steps + extra)), batch_size=BATCH,
                        num_workers=2, multiprocessing_context="fork")
    batches = iter(loader)
    pyprof.mark("epoch start")
    for _ in range(args.steps):
        x, y = next(batches)
        with pyprof.range("step"):
            train_step(model, optimizer, x, y, args.eval)
    pyprof.mark("epoch end")
    if args.stop:
        pyprof.stop()
        for x, y in batches:
            with pyprof.range("step"):
                train_step(model, optimizer, x, y)
    if args.cut:
        x, y = next(batches)
        step = pyprof.range("step")
        step.__enter__()  # never left: the program ends inside the step
        model(x)
    del batches, loader


if __name__ == "__main__":
    main()
