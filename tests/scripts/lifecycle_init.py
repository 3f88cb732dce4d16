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


class Boom(torch.nn.Module):
    """A module whose forward raises what it is given."""

    def forward(self, exc):
        torch.neg(torch.ones(2, 47))
        raise exc


if sys.argv[1] == "tool":
    original_call = torch.nn.Module.__call__
    out["init1"] = pyprof.init(model)
    out["init2"] = pyprof.init(model)
    out["enabled1"] = pyprof.is_enabled()
    with torch.no_grad():
        model(x)
    torch.cumsum(torch.ones(3, 47), dim=0)
    # Module ranges come from a wrapper of Module.__call__, not from global module hooks (which
    # push every module call off torch's fast path); a module that raises still closes its range.
    module_hooks = torch.nn.modules.module
    out["call_wrapped"] = torch.nn.Module.__call__ is not original_call
    out["global_hooks"] = (len(module_hooks._global_forward_pre_hooks)
                           + len(module_hooks._global_forward_hooks))
    for exc in (ValueError("boom"), KeyboardInterrupt()):
        try:
            Boom()(exc)
        except (ValueError, KeyboardInterrupt):
            pass
    pyprof.stop()
    out["call_restored"] = torch.nn.Module.__call__ is original_call
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
