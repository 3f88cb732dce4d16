"""init()/stop() semantics. argv[1] == "tool": under `pyprof profile`; "notool": plain python.

tool:   init twice -> forward + cumsum [3,47]; stop -> forward + cumprod [5,47];
        init again -> forward + flip [4,47]. Prints the return values and is_enabled() states.
notool: init twice, a train step; prints the return values and pyprof.stats().
"""

import json
import sys

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof
from models import make, train_step

torch.manual_seed(0)
model, x, target = make("mlp")
out = {}
if sys.argv[1] == "tool":
    out["init1"] = pyprof.init(model)
    out["init2"] = pyprof.init(model)
    out["enabled1"] = pyprof.is_enabled()
    with torch.no_grad():
        model(x)
    torch.cumsum(torch.ones(3, 47), dim=0)
    pyprof.stop()
    pyprof.stop()  # a second stop is harmless
    out["enabled2"] = pyprof.is_enabled()
    with torch.no_grad():
        model(x)
    torch.cumprod(torch.ones(5, 47), dim=0)
    out["init3"] = pyprof.init()
    out["enabled3"] = pyprof.is_enabled()
    with torch.no_grad():
        model(x)
    torch.flip(torch.ones(4, 47), [0])
    out["stats"] = pyprof.stats()
else:
    out["init1"] = pyprof.init(model)
    out["init2"] = pyprof.init()
    out["enabled"] = pyprof.is_enabled()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_step(model, optimizer, x, target)
    out["stats"] = pyprof.stats()
print(json.dumps(out), flush=True)
