"""pyprof: NVTX annotations of every ATen op, module and user range, recorded by
`pyprof profile` (pyprof's own collector) or Nsight Systems.

    import pyprof
    pyprof.init()            # or pyprof.init(model=net, with_stack=True)

Importing pyprof is cheap: torch and the C++ extension load on first use of the API below, so
the `pyprof` command starts fast.
"""

__version__ = "0.1.0"
__all__ = ["init", "stop", "is_enabled", "range", "annotate", "mark", "stats"]


def __getattr__(name):
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("pyprof._api"), name)
    raise AttributeError(f"module 'pyprof' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
