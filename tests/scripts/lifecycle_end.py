"""One MLP train step under pyprof, then the program ends the way argv[1] says:
normal | exit3 | exception | sigint.  Prints {"pid": ..., "enabled": ...} first."""

import json
import os
import signal
import sys
import time

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof
from models import make, train_step

mode = sys.argv[1]
torch.manual_seed(0)
model, x, target = make("mlp")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
enabled = pyprof.init(model)
print(json.dumps({"pid": os.getpid(), "enabled": enabled}), flush=True)

train_step(model, optimizer, x, target)
torch.cumsum(torch.ones(5, 41), dim=1)  # sentinel: the last op before the end

if mode == "normal":
    pass
elif mode == "exit3":
    sys.exit(3)
elif mode == "exception":
    raise RuntimeError("lifecycle: deliberate failure")
elif mode == "sigint":
    os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt at the next bytecode
    time.sleep(60)
    print("SIGINT was not delivered", file=sys.stderr)
    sys.exit(99)
else:
    raise SystemExit(f"unknown mode {mode}")
