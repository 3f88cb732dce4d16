"""pyprof: NVTX annotations of every ATen op, module and user range, recorded by
`pyprof profile` (pyprof's own collector) or Nsight Systems.

    import pyprof
    pyprof.init()            # or pyprof.init(model=net, with_stack=True)

    records = pyprof.read_dict("net.dict")          # prof's table as a pandas DataFrame
    ops = pyprof.read_report("net.dict", "op")      # a report (docs/dataframes.md)

Importing pyprof is cheap: torch and the C++ extension load on first use of the API below, and
pandas and pyarrow on first use of read_dict/read_report, so the `pyprof` command starts fast
and pyprof.init() pays nothing for the DataFrame API.
"""

__version__ = "0.1.0"
_MODULE_OF = {
    "init": "pyprof._api", "stop": "pyprof._api", "is_enabled": "pyprof._api",
    "range": "pyprof._api", "annotate": "pyprof._api", "mark": "pyprof._api",
    "stats": "pyprof._api", "torch_settings": "pyprof._api",
    "read_dict": "pyprof.frames", "read_report": "pyprof.frames",
    "ProfError": "pyprof.frames", "ProfWarning": "pyprof.frames",
}
__all__ = list(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        import importlib

        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module 'pyprof' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
