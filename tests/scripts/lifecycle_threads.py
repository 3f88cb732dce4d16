"""Three Python threads run module forwards and cumsum [i+2,53] concurrently, each inside
user ranges "thread-<i>", after naming their OS thread "lc-worker-<i>".
Prints {"pid": ..., "threads": {i: native thread id}, "iterations": N}."""

import ctypes
import json
import os
import threading

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof
from models import MLP

ITERATIONS = 30
PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)

torch.manual_seed(0)
torch.set_num_threads(1)
models = [MLP() for _ in range(3)]
inputs = [torch.randn(4, 64) for _ in range(3)]
assert pyprof.init(models[0])
for m in models[1:]:
    pyprof.init(m)  # names the other models too
barrier = threading.Barrier(3)
native = {}


def work(i):
    libc.prctl(PR_SET_NAME, f"lc-worker-{i}".encode(), 0, 0, 0)
    native[i] = threading.get_native_id()
    x = inputs[i]
    barrier.wait()
    for _ in range(ITERATIONS):
        with pyprof.range(f"thread-{i}"):
            with torch.no_grad():
                models[i](x)
            torch.cumsum(torch.ones(i + 2, 53), dim=0)


threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"pid": os.getpid(), "threads": native, "iterations": ITERATIONS}), flush=True)
