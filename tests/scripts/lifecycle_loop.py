"""Trains forever inside an open user range "lifecycle-forever" until killed.
argv[1]: a file to write os.getpid() into. Prints "ready" after the first step."""

import os
import sys

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof
from models import make, train_step

torch.manual_seed(0)
model, x, target = make("mlp")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
pyprof.init(model)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])

with pyprof.range("lifecycle-forever"):
    train_step(model, optimizer, x, target)
    torch.cumsum(torch.ones(5, 41), dim=1)
    print("ready", flush=True)
    while True:
        with pyprof.range("lifecycle-step"):
            train_step(model, optimizer, x, target)
