"""Triton's autotuning under pyprof, on the CPU (tests/test_compile.py): no Triton runs here, so
`CachingAutotuner.bench`, the call every autotuning path makes once per launch configuration,
is replaced before pyprof.init() by a stand-in that does in ATen ops what it does on a GPU:
copies the kernel's argument and runs the "kernel" on the copy a few times. pyprof wraps
whatever `bench` it finds, so the ranges it opens are those a GPU run gets.

Prints one JSON line: whether bench was wrapped, and pyprof.stats().
"""

import json
import types

import torch
import torch._dynamo  # noqa: F401  loaded: pyprof.init() prepares for torch.compile at once
from torch._inductor.runtime.triton_heuristics import CachingAutotuner


def stand_in_bench(self, launcher, x):
    copy = x.clone()
    for _ in range(3):
        copy.mul_(2)
    return 0.0


CachingAutotuner.bench = stand_in_bench

import pyprof  # noqa: E402

pyprof.init()
x = torch.ones(64)
y = x + 1  # the program's work, before the autotuning
autotuner = object.__new__(CachingAutotuner)
autotuner.inductor_meta = {"kernel_name": "triton_poi_fused_add_0"}
for config in ("XBLOCK: 128, num_warps: 4", "XBLOCK: 1024, num_warps: 8"):
    CachingAutotuner.bench(autotuner, types.SimpleNamespace(config=config), x)
z = y * 3  # and after it
print(json.dumps({"wrapped": getattr(CachingAutotuner.bench, "_pyprof_wrapped", False),
                  "pyprof": pyprof.stats()}))
