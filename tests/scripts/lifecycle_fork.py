"""pyprof.init(), ops, os.fork(): the child and the parent then run distinct ops.

  pre-fork (parent):  module ranges, tril [6,43], user range "pre" in domain "lifecycle-dom"
  child:              module ranges, cumsum [7,43], user range "child-only" (lifecycle-dom)
  parent after fork:  module ranges, cumprod [11,43], user range "parent-only" (lifecycle-dom)

Prints {"parent": pid, "child": pid, "status": wait status} at the end.
"""

import json
import os

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof
from models import make

# libgomp is not fork-safe: a child that uses OpenMP after the parent did hangs.
torch.set_num_threads(1)
torch.manual_seed(0)
model, x, _ = make("mlp")
assert pyprof.init(model)
with torch.no_grad():
    model(x)
torch.tril(torch.ones(6, 43))
with pyprof.range("pre", domain="lifecycle-dom"):
    pass

pid = os.fork()
if pid == 0:
    with torch.no_grad():
        model(x)
    torch.cumsum(torch.ones(7, 43), dim=0)
    with pyprof.range("child-only", domain="lifecycle-dom"):
        pass
    os._exit(0)

_, status = os.waitpid(pid, 0)
with torch.no_grad():
    model(x)
torch.cumprod(torch.ones(11, 43), dim=0)
with pyprof.range("parent-only", domain="lifecycle-dom"):
    pass
print(json.dumps({"parent": os.getpid(), "child": pid, "status": status}), flush=True)
