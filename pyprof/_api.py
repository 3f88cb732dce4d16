"""The annotation API behind `pyprof.init()`, `pyprof.range()`, ... (see pyprof/__init__.py).

The work happens in C++ (`pyprof._C`, a RecordFunction callback); this module only wires it up
and adds the two things that must come from Python: nn.Module ranges and user ranges.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import threading
import weakref

import torch  # loads libtorch before our extension needs it


def _load_extension():
    """pyprof._C, or an ImportError that says why it does not load and what to do."""
    try:
        from pyprof import _C as extension
    except ImportError as exc:
        raise ImportError(extension_load_advice(str(exc), torch.__version__)) from exc
    return extension


def extension_load_advice(error: str, running_torch: str) -> str:
    """The message for a pyprof._C that fails to import (a C++ extension is tied to the torch
    it was compiled against: an upgraded torch is the usual cause)."""
    from pyprof._torch_support import build_info

    info = build_info()
    if info is None:
        return (f"pyprof's C++ extension is not built ({error}). Build it against this "
                f"torch: pip install --no-build-isolation . (docs/install.md)")
    built = info.TORCH_VERSION
    if built != running_torch:
        return (f"pyprof._C was built against torch {built} but this is torch {running_torch}, "
                f"and it does not load ({error}). Rebuild pyprof against this torch: "
                f"pip install --no-build-isolation --force-reinstall --no-deps . "
                f"(docs/install.md)")
    return f"pyprof._C does not load ({error}); it was built against this torch ({built})."


_C = _load_extension()

from pyprof import _memory  # noqa: E402 (needs the extension loaded)

__all__ = ["init", "stop", "is_enabled", "range", "annotate", "mark", "stats"]

_lock = threading.Lock()
_enabled = False
_warned_no_tool = False
_shutdown_registered = False
# id(module) -> (registered marker handle, path) of every module named so far. The module
# ranges are pushed and popped in C++ (csrc/annotate/module_ranges.cpp), which keeps its own
# id -> handle table; a finalizer drops both entries when the module dies, before its id can be
# reused.
_module_markers: dict[int, tuple[int, str]] = {}
_real_os_exit = os._exit


def init(model: torch.nn.Module | None = None, *, with_stack: bool = False,
         recompile: bool = False, memory: bool | None = None) -> bool:
    """Start annotating. Returns True when ranges are being recorded.

    model: names module ranges by their dotted path in this model ("Net.layer1.0.conv1").
        Without it, the first module called with no module around it is taken as the root.
    with_stack: add the user's file:line call site to each op called from Python. It takes
        the GIL on each such op (about +0.6 us per op, docs/benchmarks.md): off by default.
    recompile: when torch.compile has already compiled graphs (init() called after the
        compiled model's first call), reset Dynamo's caches so that each graph is compiled
        again, under pyprof, on its next call: its kernels then are records with their ATen
        nodes (docs/compile.md, "init() after the first compiled call"). Without it, pyprof
        says once that those graphs' kernels are not costed, and how to fix it.
    memory: record every allocation and free of torch's CPU allocator and CUDA caching
        allocator, with the allocator's totals, for the memory reports (docs/formats.md §2.2).
        None (the default) reads PYPROF_MEMORY (on unless 0/off). Under `pyprof profile`
        only; torch.profiler in the same program takes a thread's allocations while it runs.

    Without an NVTX tool attached (no `pyprof profile`, no Nsight Systems) this says so once
    and installs nothing, so the program runs at full speed. Calling init() again is a no-op
    (except that a `model` given later is named).
    """
    global _enabled, _warned_no_tool, _shutdown_registered
    with _lock:
        if _enabled:
            if model is not None:
                _name_module_tree(model, type(model).__name__)
            return True
        why_no_memory = "pyprof.init(memory=False)"
        if memory is None:
            memory = _memory.enabled_by_default()
            why_no_memory = f"{_memory.ENV}={os.environ.get(_memory.ENV)}"
        if not _C.tool_attached():
            if not _warned_no_tool:
                _warned_no_tool = True
                print("pyprof: no NVTX tool is attached, so nothing is recorded; run the "
                      "program under `pyprof profile -o NAME -- ...` or `nsys profile -t nvtx`",
                      file=sys.stderr)
            return False
        framework = [os.path.dirname(torch.__file__) + os.sep,
                     os.path.dirname(os.path.abspath(__file__)) + os.sep]
        if model is not None:
            _name_module_tree(model, type(model).__name__)
        _C.install(with_stack=with_stack, framework_prefixes=framework,
                   intern_markers=_markers_interned())
        _memory.start(_C, memory, why_no_memory)
        _C.set_module_namer(_name_new_module)
        _install_module_ranges()
        _prepare_for_torch_compile()
        _check_compiled_before_init(recompile)
        _wrap_os_exit()
        # torch.profiler asking for CUDA activity while pyprof holds CUPTI: one line says so.
        from . import _torch_profiler
        _torch_profiler.watch_torch_profiler()
        if not _shutdown_registered:
            # A KeyboardInterrupt that ends the program makes Python kill itself with SIGINT
            # after finalizing, which skips the collector's C atexit handler: finish the
            # database from Python's atexit instead (it runs before that).
            atexit.register(_C.collector_shutdown)
            # Registered after it, so they run before it: the flags the program trained with,
            # and the devices' memory at the end.
            atexit.register(_memory.finish, _C)
            atexit.register(_record_settings)
            _shutdown_registered = True
        _enabled = True
        _record_settings()
        return True


# Module ranges come from a wrapper of nn.Module.__call__, not from global forward hooks: any
# global hook makes every module call take the slow path of Module._call_impl (~9 us a call on
# the 2-core VM of docs/benchmarks.md §1.2); the wrapper costs one Python call and leaves that
# fast path alone. Code that captured Module.__call__ before init() (FX keeps the original for
# its tracer) calls the original: no ranges there, as with hooks.
_original_module_call = None  # what Module.__call__ was when the wrapper went in


def _module_call_with_range(self, *args, **kwargs):
    _C.module_pre_hook(self, args)
    try:
        return _original_module_call(self, *args, **kwargs)
    finally:
        _C.module_post_hook(self, args, None)


def _install_module_ranges() -> None:
    global _original_module_call
    if torch.nn.Module.__call__ is not _module_call_with_range:
        _original_module_call = torch.nn.Module.__call__
        torch.nn.Module.__call__ = _module_call_with_range


def _remove_module_ranges() -> None:
    if torch.nn.Module.__call__ is _module_call_with_range:
        torch.nn.Module.__call__ = _original_module_call


_dynamo_callbacks_registered = False


def _prepare_for_torch_compile() -> None:
    """torch.compile under pyprof (docs/compile.md): the module-range wrapper is hidden from
    Dynamo, and Inductor's C++ kernels open a RecordFunction each, so that they are records of
    their own. Neither imports Dynamo or Inductor (seconds): Dynamo's callbacks are registered
    now if it is loaded, else on the first torch.compile call; Inductor's setting goes through
    its environment variable if its config is not loaded yet (a value the user set is kept)."""
    if "torch._dynamo" in sys.modules:
        _hide_module_ranges_from_dynamo()
    elif not getattr(torch.compile, "__pyprof_wrapped__", False):
        original = torch.compile

        @functools.wraps(original)
        def compile(*args, **kwargs):
            _hide_module_ranges_from_dynamo()
            return original(*args, **kwargs)

        compile.__pyprof_wrapped__ = True
        torch.compile = compile
    inductor_config = sys.modules.get("torch._inductor.config")
    if inductor_config is not None:
        if os.environ.get("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE") != "0":
            inductor_config.cpp.enable_kernel_profile = True
    else:
        os.environ.setdefault("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE", "1")


_compiled_before_init = 0  # graphs torch.compile had compiled when init() ran
_recompiled_at_init = False  # init(recompile=True) reset them: they compile again under pyprof


def _check_compiled_before_init(recompile: bool) -> None:
    """Graphs Dynamo compiled before init() were compiled without pyprof's settings: Inductor's
    C++ kernels open no RecordFunction (on the CPU their time is CompiledFunction's own), and no
    kernel carries the ATen nodes it computes (on a GPU, Triton kernels without a FLOP model).
    Their extern calls (GEMMs, attention) are ATen ops and are recorded as ever. Said once, with
    the fix; the count goes into the capture (the settings mark, `compiled_before_init`), where
    prof's summary shows it. With `recompile`, Dynamo's caches are reset so that each graph
    compiles again under pyprof on its next call."""
    global _compiled_before_init, _recompiled_at_init, _dynamo_callbacks_registered
    if "torch._dynamo" not in sys.modules:
        return  # nothing can have been compiled
    try:
        from torch._dynamo.utils import counters
        graphs = int(counters["stats"]["unique_graphs"])
    except Exception:  # a torch whose Dynamo keeps no such counter: nothing to say
        return
    if graphs <= 0:
        return
    _compiled_before_init = graphs
    if recompile:
        _recompiled_at_init = True
        torch._dynamo.reset()
        # reset() also clears Dynamo's compile callbacks, pyprof's among them.
        _dynamo_callbacks_registered = False
        _hide_module_ranges_from_dynamo()
        print(f"pyprof: note: torch.compile had compiled {graphs} graph(s) before pyprof.init(); "
              "recompile=True reset Dynamo's caches: each compiles again, under pyprof, on its "
              "next call (that call's step includes the compile)", file=sys.stderr)
        return
    print(f"pyprof: warning: torch.compile had compiled {graphs} graph(s) before pyprof.init(): "
          "their Inductor kernels are not costed (CPU: not recorded at all, their time is "
          "CompiledFunction's; GPU: no FLOP model). Call pyprof.init() before the first call of "
          "the compiled model, or pyprof.init(recompile=True) to compile them again under "
          "pyprof (docs/compile.md)", file=sys.stderr)


def _hide_module_ranges_from_dynamo() -> None:
    """Dynamo inlines nn.Module.__call__; pyprof's wrapper of it calls C functions Dynamo
    cannot trace, so each module call would become a graph break and the model would run (and
    be profiled) differently from the one the user compiles. While Dynamo compiles, the
    original Module.__call__ is put back, and the wrapper when it ends: compiled regions have no
    module ranges of their own (their records carry the module that called them), eager code
    keeps them."""
    global _dynamo_callbacks_registered
    if _dynamo_callbacks_registered:
        return
    try:
        from torch._dynamo.callback import CallbackTrigger as callback_trigger
        from torch._dynamo.callback import callback_handler
    except ImportError:  # a torch without Dynamo, or one that moved its callbacks
        return

    # The compile's own ops (tracing on fake tensors, thousands of them) are not the program's
    # work: annotation pauses on the compiling thread, and the compile shows as the time of the
    # Dynamo range that holds it.
    # A CUDA graph's recording (another trigger) runs real kernels: it stays annotated.
    compiling = {getattr(callback_trigger, name, None) for name in ("DYNAMO", "LAZY_BACKWARD")}

    def on_start(args=None):
        if args is not None and getattr(args, "callback_trigger", None) not in compiling:
            return
        with _lock:
            if _enabled:
                _remove_module_ranges()
        _C.pause_annotation(True)

    def on_end(args=None):
        if args is not None and getattr(args, "callback_trigger", None) not in compiling:
            return
        _C.pause_annotation(False)
        with _lock:
            if _enabled:
                _install_module_ranges()

    callback_handler.register_start_callback(on_start)
    callback_handler.register_end_callback(on_end)
    _dynamo_callbacks_registered = True
    # The wrapper of Module.__call__ also runs between compiled regions (a graph break's eager
    # code calling a module), where Dynamo would try to compile its frame and break on the C
    # calls: its frame is skipped, the module's own frames below it are still compiled.
    try:
        from torch._dynamo.eval_frame import skip_code

        skip_code(_module_call_with_range.__code__)
    except ImportError:
        pass

    from . import _compile_kernels

    def send(message: str) -> None:
        if _enabled:
            _C.mark(message, 0, "pyprof")

    def push_autotune(text: str) -> bool:
        if not _enabled:
            return False
        _C.push_range(text, 0, _C.AUTOTUNE_DOMAIN)
        return True

    def pop_autotune() -> None:
        _C.pop_range(_C.AUTOTUNE_DOMAIN)

    if not _compile_kernels.install(send, push_autotune, pop_autotune):
        print("pyprof: warning: this torch's Inductor has no provenance tracking: compiled "
              "kernels keep no FLOP model (docs/compile.md)", file=sys.stderr)


def _markers_interned() -> bool:
    """PYPROF_MARKERS: `interned` (the default: each distinct op marker is registered once and
    pushed by handle; docs/formats.md §1.1, interned form) or `text` (every call sends its full
    marker)."""
    value = os.environ.get("PYPROF_MARKERS", "interned").strip().lower() or "interned"
    if value not in ("interned", "text"):
        raise ValueError(f"PYPROF_MARKERS={value!r}: expected 'interned' or 'text'")
    return value == "interned"


def stop() -> None:
    """Stop annotating (ops and modules); init() may be called again later."""
    global _enabled
    with _lock:
        if not _enabled:
            return
        _record_settings()
        _memory.stop(_C)
        _C.uninstall()
        _remove_module_ranges()
        _enabled = False


def is_enabled() -> bool:
    return _enabled


def torch_settings() -> dict:
    """The torch flags that decide which kernels run (cuDNN autotuning, TF32, determinism),
    as pyprof records them (docs/formats.md §1.4)."""
    backends = torch.backends
    settings = {
        "torch": torch.__version__,
        "cudnn.benchmark": bool(backends.cudnn.benchmark),
        "cudnn.deterministic": bool(backends.cudnn.deterministic),
        "cudnn.allow_tf32": bool(backends.cudnn.allow_tf32),
        "cudnn.enabled": bool(backends.cudnn.enabled),
        "cuda.matmul.allow_tf32": bool(backends.cuda.matmul.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "num_threads": torch.get_num_threads(),
    }
    if _compiled_before_init and not _recompiled_at_init:
        # Not a flag, but what the reports must say about this capture's compiled kernels.
        settings["compiled_before_init"] = _compiled_before_init
    return settings


def _record_settings() -> None:
    """A settings mark in the pyprof domain: parse keeps the last one in the net.dict header
    (`torch_settings`), where advice reads cudnn.benchmark and TF32. Written at init(), at
    stop() and at exit, since a program often sets its flags after init()."""
    try:
        message = json.dumps({"v": _C.MARKER_SCHEMA_VERSION, "settings": torch_settings()},
                             separators=(",", ":"))
        _C.mark(message, 0, "pyprof")
    except Exception as exc:  # a flag some torch lacks must not end the program's run
        print(f"pyprof: warning: torch settings not recorded: {exc}", file=sys.stderr)


def stats() -> dict:
    """Counters of the annotation layer: ops annotated (`ops_annotated`), of them pushed by
    handle (`interned`), distinct markers registered (`markers_registered`), ops sent as text
    although interning was on (`not_interned`: a thread's 32 MiB of distinct markers spent, or
    a seq beyond 2**32), the bytes of the text markers sent (`message_bytes`), and the ops left
    out while torch.compile compiled (`paused`: its tracing on fake tensors, docs/compile.md);
    and of torch.compile's kernels (docs/compile.md): graphs whose kernels were marked
    (`compiled_graphs`), kernels marked (`compiled_kernels`), the nodes they compute
    (`compiled_nodes`), nodes the metadata named but the graph lacked (`compiled_nodes_missing`),
    graphs whose metadata could not be read (`compiled_graphs_unreadable`) and kernel marks made
    smaller to fit the collector's 64 KiB (`compiled_kernels_cut`: strides and outputs left
    out, then nodes, which leaves that kernel unmodelled), and calls of graphs with symbolic
    sizes that sent their sizes (`compiled_calls`: dynamic shapes), and launch configurations
    Triton's autotuner timed inside a `pyprof.autotune` range (`compiled_autotune_benchmarks`;
    GPU only), and the graphs torch.compile had compiled before init() (`compiled_before_init`,
    docs/compile.md); and of memory capture (docs/formats.md §2.2): threads whose allocations
    it records (`memory_threads`), ops run while another profiler (torch.profiler) held torch's
    memory reporting on their thread (`memory_ops_unseen`) or while other thread-local debug
    info kept pyprof's reporter out (`memory_ops_blocked`), and the times pyprof stepped aside
    for torch.profiler (`memory_step_asides`)."""
    out = dict(_C.stats())
    from . import _compile_kernels
    for key, value in _compile_kernels.stats.items():
        out["compiled_" + key] = value
    out["compiled_before_init"] = _compiled_before_init
    return out


# --- module ranges ------------------------------------------------------------------------

def _register_module(module: torch.nn.Module, path: str) -> tuple[int, str]:
    message = json.dumps({"v": _C.MARKER_SCHEMA_VERSION, "module": path,
                          "type": type(module).__name__}, separators=(",", ":"))
    entry = (_C.register_marker_string(message), path)
    key = id(module)
    _module_markers[key] = entry
    _C.set_module_marker(module, entry[0])
    weakref.finalize(module, _forget_module, key)
    return entry


def _forget_module(key: int) -> None:
    _module_markers.pop(key, None)
    _C.forget_module(key)


def _name_module_tree(root: torch.nn.Module, root_name: str) -> None:
    orig = getattr(root, "_orig_mod", None)
    if type(root).__name__ == "OptimizedModule" and isinstance(orig, torch.nn.Module):
        # torch.compile's wrapper: named as the model it wraps, whose modules keep their paths
        # (MLP.fc1, not OptimizedModule._orig_mod.fc1).
        if root_name == type(root).__name__:
            root_name = type(orig).__name__
        if id(root) not in _module_markers:
            _register_module(root, root_name)
        root = orig
    # A module shared by two parents keeps the first name it was given.
    for path, module in root.named_modules(prefix=root_name):
        if id(module) not in _module_markers:
            _register_module(module, path)


def _name_new_module(module: torch.nn.Module, parent: torch.nn.Module | None) -> int:
    """Called by the C++ pre-hook for a module seen for the first time; returns its handle."""
    if parent is None:
        # The first module called with no module around it: the root of a model.
        _name_module_tree(module, type(module).__name__)
        return _module_markers[id(module)][0]
    # Not part of a known model (created on the fly): name it by class nesting.
    parent_path = _module_markers[id(parent)][1]
    return _register_module(module, f"{parent_path}.{type(module).__name__}")[0]


def _wrap_os_exit() -> None:
    # os._exit skips atexit, so the collector would never finish its database; DataLoader and
    # multiprocessing workers end this way.
    if getattr(os._exit, "__pyprof_wrapped__", False):
        return

    def _exit(code):
        try:
            if _enabled:
                _record_settings()
                _memory.finish(_C)
            _C.collector_shutdown()
        finally:
            _real_os_exit(code)

    _exit.__pyprof_wrapped__ = True
    os._exit = _exit


# --- user ranges ---------------------------------------------------------------------------

_COLORS = {
    "green": 0xFF76B900, "blue": 0xFF0000FF, "yellow": 0xFFFFFF00, "purple": 0xFF800080,
    "rapids": 0xFF7400FF, "cyan": 0xFF00FFFF, "red": 0xFFFF0000, "white": 0xFFFFFFFF,
    "darkgreen": 0xFF006400, "orange": 0xFFFFA500, "black": 0xFF000000, "grey": 0xFF808080,
    "gray": 0xFF808080,
}


def _argb(color) -> int:
    if color is None:
        return 0
    if isinstance(color, int):
        return color & 0xFFFFFFFF
    try:
        return _COLORS[color.lower()]
    except KeyError:
        raise ValueError(f"unknown color {color!r}; use one of {sorted(_COLORS)} or an ARGB int")


class range:  # noqa: A001 - mirrors nvtx.annotate / torch.cuda.nvtx.range
    """A user range: `with pyprof.range("step"):` or `@pyprof.range("step")`.

    message: the range's text; color: a name ("green", ...) or an ARGB int; domain: an NVTX
    domain name (default: NVTX's default domain, as the `nvtx` package does).
    """

    def __init__(self, message: str | None = None, color=None, domain: str | None = None):
        self.message = message
        self.argb = _argb(color)
        self.domain = domain or ""

    def __enter__(self):
        _C.push_range(str(self.message), self.argb, self.domain)
        return self

    def __exit__(self, *exc):
        _C.pop_range(self.domain)
        return False

    def __call__(self, fn):
        message = self.message if self.message is not None else fn.__qualname__
        argb, domain = self.argb, self.domain

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            _C.push_range(message, argb, domain)
            try:
                return fn(*args, **kwargs)
            finally:
                _C.pop_range(domain)

        return wrapper


def annotate(message=None, color=None, domain: str | None = None):
    """Decorator (or context manager) like `nvtx.annotate`: the range is named after the
    function unless `message` is given. Usable bare: `@pyprof.annotate`."""
    if callable(message):
        return range(None, color, domain)(message)
    return range(message, color, domain)


def mark(message: str, color=None, domain: str | None = None) -> None:
    """An instantaneous NVTX marker."""
    _C.mark(str(message), _argb(color), domain or "")
