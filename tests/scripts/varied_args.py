"""Ops whose arguments differ in every way a marker can tell apart, each called a few times, so
that interned markers (docs/formats.md §1.1, interned form) are registered and then reused:
shapes and strides (views, transposes, channels-last), dtypes, ints vs bools vs floats of the
same value, lists vs tuples, strings, None, complex and non-finite scalars, an opaque argument
(a Generator), and shapes that change every step (a loop that never repeats).
Run under `pyprof profile`; prints pyprof.stats().
"""

import json
import math

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof

torch.manual_seed(0)
pyprof.init()
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(4 * 6 * 6, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for step in range(4):
    with pyprof.range(f"step {step}"):
        x = torch.randn(2, 3, 8, 8)
        if step % 2:
            x = x.contiguous(memory_format=torch.channels_last)  # same shape, other strides
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = torch.arange(12.0).reshape(3, 4)
        t.t().contiguous()                      # a transposed view's strides
        t.sum(dim=[0, 1])                       # int list
        t.sum(dim=(0, 1))                       # the same as a tuple
        torch.full((2,), 1)                     # int scalar
        torch.full((2,), True)                  # bool scalar of the same value
        torch.full((2,), 1.0)                   # float scalar of the same value
        torch.full((2,), 1.5)
        t.add(1)                                # a wrapped-number tensor
        t.mul(math.inf)                         # non-finite float
        t.to(torch.float16)                     # dtype argument
        t.to(torch.float64)
        torch.full((2, 2), complex(1, 2))       # complex scalar
        torch.nn.functional.pad(t, (1, 1), mode="constant", value=0.5)
        torch.nn.functional.pad(t, (1, 1), mode="reflect")  # string argument
        torch.einsum("ij,jk->ik", t, t.t())     # string + tensor list
        torch.einsum("ij,kj->ik", t, t)
        torch.cat([t, t, t], dim=0)             # tensor list
        torch.zeros(step + 1, 3)                # shape that changes every step
        torch.ones(2, step + 2, dtype=torch.int32)
        torch.empty(0)                          # empty tensor
        torch.tensor(7).item()                  # 0-dim tensor
        t.clamp(min=None, max=3.0)              # None argument
        torch.randn(3, 3, generator=torch.Generator().manual_seed(step))  # opaque Generator
print(json.dumps(pyprof.stats()), flush=True)
