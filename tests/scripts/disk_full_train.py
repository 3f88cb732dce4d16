"""Trains examples/models.py's MLP on the CPU under pyprof: WARMUP steps (argv[2], default 0),
then waits until the collector has committed them to its database, then STEPS more (argv[1]),
and exits with EXIT (argv[3], default 0). test_disk_full.py runs it with too little disk to keep
it all; the wait makes sure that the first steps are in the file before the disk fills up."""

import os
import sqlite3
import sys
import time

import torch

import models
import pyprof

steps = int(sys.argv[1])
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 0
code = int(sys.argv[3]) if len(sys.argv) > 3 else 0
model, x, target = models.make("mlp")
pyprof.init(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def committed_ranges(path: str) -> int:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            # Ranges only: domain creations are written as soon as they happen.
            return con.execute("SELECT COUNT(*) FROM NVTX_EVENTS "
                               "WHERE eventType IN (59, 60)").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:  # not created yet, or being written
        return 0


if warmup:
    for _ in range(warmup):
        models.train_step(model, optimizer, x, target)
    database = os.environ["PYPROF_OUTPUT"] + ".sqlite"
    deadline = time.monotonic() + 120
    while committed_ranges(database) == 0:
        if time.monotonic() > deadline:
            sys.exit(f"the collector never committed the warm-up steps to {database}")
        time.sleep(0.1)
for _ in range(steps):
    models.train_step(model, optimizer, x, target)
sys.exit(code)
