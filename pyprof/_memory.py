"""Memory capture under `pyprof profile` (docs/formats.md §2.2).

`pyprof.init(memory=True)` (the default; `PYPROF_MEMORY=0` or `init(memory=False)` turns it
off) puts pyprof's reporter into torch's per-thread memory-reporting slot on every thread that
runs an op (csrc/annotate/memory_capture.h): each allocation and free of the CPU allocator and
of the CUDA caching allocator then reaches the collector, which writes it to
PYPROF_MEMORY_EVENTS on the clock and with the thread ids of the NVTX ranges.

This module is the Python side: the switch, the status the collector records
(META_DATA_CAPTURE PYPROF_MEMORY_CAPTURE), the device facts a later report needs to say how far
the batch could grow (PYPROF_MEMORY_DEVICES, at init and at stop or exit), and the step aside
that lets torch.profiler start: torch keeps one profiler per thread in that slot and refuses to
start where the slot is taken, so torch.autograd.profiler's enable functions are wrapped to take
pyprof's reporter out of the calling thread's slot first (it comes back at the first op after
torch.profiler stops). While torch.profiler runs, that thread's allocations go to it only: one
line says so, and the ops run so are counted (memory_ops_unseen).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

import torch

ENV = "PYPROF_MEMORY"
_STATUS_ON = "on"

_warned_profiler = False  # the one line about torch.profiler taking the slot was printed


def enabled_by_default() -> bool:
    """PYPROF_MEMORY: on unless set to 0/off/false/no (an empty value means the default)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "1", "on", "true", "yes"):
        return True
    if value in ("0", "off", "false", "no"):
        return False
    raise ValueError(f"{ENV}={value!r}: expected 1/on or 0/off")


def start(extension, enabled: bool, why_off: str) -> None:
    """Turns memory capture on (or records that it is off, and why) for the collector."""
    if not enabled:
        extension.report_memory_capture("off: " + why_off)
        return
    why_not = extension.install_memory_capture()
    if why_not:
        print(f"pyprof: note: memory capture is off: {why_not}", file=sys.stderr)
        extension.report_memory_capture("off: " + why_not)
        return
    extension.report_memory_capture(_STATUS_ON)
    _watch_profiler_enable(extension)
    record_devices("init")


def stop(extension) -> None:
    if extension.memory_capture_installed():
        record_devices("stop")
        extension.uninstall_memory_capture()


def finish(extension) -> None:
    """Before the collector finalizes (exit, os._exit): the device facts now, one line if
    another profiler held some thread's slot without pyprof having said so, and capture off, so
    that the frees of the interpreter's teardown are neither recorded after the database is
    closed nor make torch warn about blocks it never saw allocated."""
    if not extension.memory_capture_installed():
        return
    record_devices("exit")
    unseen = extension.stats().get("memory_ops_unseen", 0)
    if unseen and not _warned_profiler:
        print(f"pyprof: note: {unseen} ops ran while another profiler (torch.profiler, "
              "emit_nvtx) held torch's memory reporting on their thread: their allocations are "
              "not in pyprof's capture (docs/formats.md §2.2)", file=sys.stderr)
    extension.uninstall_memory_capture()


# --- torch.profiler ------------------------------------------------------------------------

_ENABLE_FUNCTIONS = (
    ("torch.autograd.profiler", "_enable_profiler"),
    ("torch.autograd", "_enable_profiler"),
    ("torch.autograd.profiler_legacy", "_enable_profiler_legacy"),
    ("torch.autograd", "_enable_profiler_legacy"),
)


def _step_aside(extension) -> None:
    global _warned_profiler
    result = extension.memory_step_aside()
    if result == 1 and not _warned_profiler:
        _warned_profiler = True
        print("pyprof: note: torch.profiler starts on this thread, and torch reports a thread's "
              "allocations to one profiler only: until it stops, this thread's allocations (and "
              "its backward's) go to torch.profiler, not into pyprof's capture (counted as "
              "memory_ops_unseen; docs/formats.md §2.2)", file=sys.stderr)
    elif result < 0:
        print("pyprof: warning: pyprof's memory reporter cannot leave this thread's profiler "
              "slot (other thread-local debug info sits above it), so torch.profiler will "
              "refuse to start here; run with PYPROF_MEMORY=0 (docs/formats.md §2.2)",
              file=sys.stderr)


def _watch_profiler_enable(extension) -> None:
    """Wraps each of torch's profiler-enable functions once, in the modules that call them."""
    import importlib

    for module_name, name in _ENABLE_FUNCTIONS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        original = getattr(module, name, None)
        if original is None or getattr(original, "__pyprof_steps_aside__", False):
            continue
        setattr(module, name, _stepping_aside(original, extension))


def _stepping_aside(original, extension):
    @functools.wraps(original)
    def enable(*args, **kwargs):
        _step_aside(extension)
        return original(*args, **kwargs)

    enable.__pyprof_steps_aside__ = True
    return enable


# --- device facts --------------------------------------------------------------------------

class _Device(ctypes.Structure):
    """pyprof_memory_device (csrc/collect/pyprof_collect.h)."""

    _fields_ = [(name, ctypes.c_uint32 if name == "struct_size" else
                 ctypes.c_int32 if name in ("device_type", "device_index") else ctypes.c_int64)
                for name in ("struct_size", "device_type", "device_index", "total_memory",
                             "free_memory", "allocator_limit", "allocated", "reserved",
                             "peak_allocated", "peak_reserved", "alloc_retries", "ooms")]


_CPU, _CUDA = 0, 1  # c10::DeviceType


def _collector_device_function():
    path = os.environ.get("NVTX_INJECTION64_PATH")
    if not path:
        return None
    try:
        collector = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        function = collector.pyprof_collect_memory_device
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.POINTER(_Device), ctypes.c_char_p]
    function.restype = ctypes.c_int
    return function


def _meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (empty where there is none)."""
    values = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, rest = line.partition(":")
                fields = rest.split()
                if fields and fields[0].isdigit():
                    values[name] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    except OSError:
        pass
    return values


def device_facts() -> list[dict]:
    """The host's memory, and for each CUDA device this process has used, what the caching
    allocator and the driver say (never initialising CUDA itself). Bytes; -1 unknown."""
    meminfo = _meminfo()
    devices = [{"device_type": _CPU, "device_index": -1,
                "total_memory": meminfo.get("MemTotal", -1),
                "free_memory": meminfo.get("MemAvailable", -1)}]
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available() or not cuda.is_initialized():
        return devices
    for index in range(cuda.device_count()):
        stats = cuda.memory_stats(index)
        peak_reserved = stats.get("reserved_bytes.all.peak", 0)
        if not peak_reserved and index != cuda.current_device():
            continue  # never used here: reading it would create a context on it
        total = cuda.get_device_properties(index).total_memory
        free, _ = cuda.mem_get_info(index)
        limit = -1
        fraction = getattr(cuda, "get_per_process_memory_fraction", None)
        if fraction is not None:
            value = fraction(index)
            if 0 < value < 1:
                limit = int(total * value)
        devices.append({
            "device_type": _CUDA, "device_index": index, "total_memory": total,
            "free_memory": free, "allocator_limit": limit,
            "allocated": stats.get("allocated_bytes.all.current", -1),
            "reserved": stats.get("reserved_bytes.all.current", -1),
            "peak_allocated": stats.get("allocated_bytes.all.peak", -1),
            "peak_reserved": peak_reserved,
            "alloc_retries": stats.get("num_alloc_retries", -1),
            "ooms": stats.get("num_ooms", -1),
        })
    return devices


def record_devices(moment: str) -> None:
    """Sends device_facts() to the collector as PYPROF_MEMORY_DEVICES rows."""
    function = _collector_device_function()
    if function is None:
        return
    try:
        facts = device_facts()
    except Exception as exc:  # a CUDA query failing must not end the program's run
        print(f"pyprof: warning: device memory facts not recorded: {exc}", file=sys.stderr)
        return
    for fact in facts:
        row = _Device(struct_size=ctypes.sizeof(_Device))
        for name, _ in _Device._fields_[1:]:
            setattr(row, name, int(fact.get(name, -1)))
        function(ctypes.byref(row), moment.encode())
