"""torch.profiler in a program that `pyprof profile` records.

CUPTI serves one client per process, and the first one keeps it. pyprof's collector takes CUPTI
when CUDA initialises (the driver loads it through CUDA_INJECTION64_PATH), before any
torch.profiler can start; Kineto's later subscription fails, and torch.profiler records CPU ops
only. Kineto's own warning says that CUPTI failed, not why or what to do, so pyprof.init() wraps
the call through which torch.profiler prepares Kineto: when it asks for CUDA activity, the
collector (pyprof_collect_cupti_request) prints one line saying that pyprof holds CUPTI and that
`pyprof profile --no-cuda-trace` leaves it to torch.profiler. When torch.profiler got CUPTI
first, the collector names it in its own line. docs/install.md, "Beside other CUDA tools".
"""

from __future__ import annotations

import ctypes
import os

import torch
from torch.autograd import profiler as _autograd_profiler

_TOOL = b"torch.profiler"
_original_prepare = None  # torch.autograd.profiler._prepare_profiler before the wrapper


def _collector_request():
    """The collector's pyprof_collect_cupti_request, from the NVTX injection library this
    process already loaded; None when that is not pyprof's collector (Nsight Systems')."""
    path = os.environ.get("NVTX_INJECTION64_PATH")
    if not path:
        return None
    try:
        library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        request = library.pyprof_collect_cupti_request
    except (OSError, AttributeError):
        return None
    request.argtypes = [ctypes.c_char_p]
    request.restype = ctypes.c_int
    return request


def _prepare_profiler_announced(config, activities, *args, **kwargs):
    if torch.profiler.ProfilerActivity.CUDA in activities:
        request = _collector_request()
        if request is not None:
            request(_TOOL)
    return _original_prepare(config, activities, *args, **kwargs)


def watch_torch_profiler() -> None:
    """Wraps torch.autograd.profiler._prepare_profiler, which torch.profiler.profile and
    torch.autograd.profiler.profile call with the Kineto activities they will record. Once."""
    global _original_prepare
    current = getattr(_autograd_profiler, "_prepare_profiler", None)
    if current is None or current is _prepare_profiler_announced:
        return
    _original_prepare = current
    _autograd_profiler._prepare_profiler = _prepare_profiler_announced
