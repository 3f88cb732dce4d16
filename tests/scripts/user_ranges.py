"""Exercises pyprof's user-range API (run under `pyprof profile` by tests/test_user_ranges.py)."""
import lifecycle_common  # noqa: F401  (sys.path setup)
import torch

import pyprof

pyprof.init()


@pyprof.annotate
def bare_decorated():
    return torch.ones(3).sum()


@pyprof.annotate("load batch", color="blue", domain="data")
def loader():
    return torch.zeros(2, 2) + 1


@pyprof.range("raises")
def raises():
    torch.ones(1).neg()
    raise RuntimeError("boom")


with pyprof.range("outer", color=0x80112233):
    bare_decorated()
    loader()
    with pyprof.annotate("inner as context manager"):
        torch.arange(4).cumsum(0)
    try:
        raises()
    except RuntimeError:
        pass
    pyprof.mark("checkpoint", color="red")
    pyprof.mark("named-domain mark", domain="data")
try:
    pyprof.range("bad", color="not-a-color")
except ValueError as e:
    print("ValueError:", e)
