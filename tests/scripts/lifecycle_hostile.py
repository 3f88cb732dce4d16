"""Hostile inputs: odd names, a 300-element int list, huge messages, non-finite floats.
Prints the strings it used as JSON (ASCII-escaped) so the test compares exactly."""

import json

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof

NAME = "名前 é \"q\" \\ \n\t\x01\x1f\x7f end"
BIG_ASCII = "BIG:" + "A" * 200_000
BIG_UTF8 = "BIG2:" + "é" * 100_000  # 200 KB; odd prefix so a byte cut would split a character

assert pyprof.init()
with torch.autograd.profiler.record_function(NAME):
    torch.ones(2).sum()
with pyprof.range(NAME):
    pass
with pyprof.range(NAME, domain="lifecycle-dom"):
    pass
pyprof.mark(NAME)

x = torch.zeros(1)
x.reshape([1] * 300)
x.view([1] * 300)

with pyprof.range(BIG_ASCII):
    pass
with pyprof.range(BIG_UTF8):
    pass

torch.full((2,), float("inf"))
torch.full((3,), float("-inf"))
torch.full((4,), float("nan"))
with pyprof.range("after-big"):
    pass
print(json.dumps({"name": NAME, "big_ascii": BIG_ASCII, "big_utf8": BIG_UTF8}), flush=True)
