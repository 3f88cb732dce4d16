"""The `pyprof` command: a thin front that hands each subcommand to its C++ tool."""

import os
import stat
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))

USAGE = """usage: pyprof <command> [options]
       pyprof --version

commands:
  profile   run a program; record its NVTX ranges and, on a GPU, its CUDA
            activity into NAME.sqlite (pyprof profile -o NAME [--force]
            [--delay S] [--duration S] [--capture-range cudaProfilerApi]
            [--no-cuda-trace] -- CMD ...; pyprof's options before the command)
  parse     attribute every kernel to its op, module and direction; JSON Lines
            out (pyprof parse DB [-o FILE]; also python -m pyprof.parse DB)
  prof      FLOPs, bytes, Tensor Core use per kernel or op, and reports
            (pyprof prof [--csv|--json|--parquet|-w N] [-c COLS]
            [--report op,module,...|all] [--formats text,csv,json,parquet]
            [--iterations A:B|all] net.dict)
  report    one self-contained HTML page: headline figures, roofline, time
            breakdowns, sortable tables (pyprof report INPUT [-o net.html]
            [--peaks FILE])
  export    a Chrome / Perfetto trace of ops, modules, user ranges, marks,
            kernels and their flows (pyprof export [--format chrome|perfetto]
            net.dict|DB|TRACE -o trace.json[.gz])
  peak      measure this machine's matmul FLOP/s per dtype and its copy
            bandwidth; -o FILE writes a peaks file for --peaks
            (pyprof peak [-o FILE] [--device cpu|cuda[:N]])
  diff      compare two profiles per iteration (or per call: fixed-length
            captures), op, module and kernel with a significance test and a
            verdict per row; --fail-above PCT gates CI (exit 3; 4: refused,
            nothing could be tested) (pyprof diff BASE NEW
            [--formats text,csv,json] [-o PREFIX] [--fail-above PCT])

Run `pyprof <command> --help` for the options of one command.
"""


def tool_path(name: str) -> str:
    """Path of one of the package's C++ executables (installed under pyprof/bin)."""
    return os.path.join(_PKG_DIR, "bin", name)


def collector_path() -> str:
    """Path of the NVTX injection library that `pyprof profile` loads into the program."""
    return os.path.join(_PKG_DIR, "lib", "libpyprof_collect.so")


def missing_tool(path: str) -> str | None:
    """Why the C++ executable at `path` cannot run (None when it can): one message for every
    front that runs the tools."""
    if os.access(path, os.X_OK):
        return None
    return (f"{path} is missing: the C++ part of pyprof is not built "
            "(run `pip install --no-build-isolation .`)")


def run_tool(name: str, args: list[str]) -> int:
    path = tool_path(name)
    if why := missing_tool(path):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    flush_standard_streams()
    os.execv(path, [f"pyprof {name.removeprefix('pyprof-')}"] + args)
    return 1  # not reached


def flush_standard_streams() -> None:
    """Flushes standard output and error before a child writes to them; a closed one
    (`pyprof prof net.dict >&-`: Python makes it None) is left to the child to report."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def _is_dict(path: str) -> bool:
    """Whether `path` is a net.dict (its first line is parse's header), not a DB or a trace.
    A FIFO or a device is not opened here (that would consume it, or wait for a writer): it is
    taken for a net.dict, read once by the dict's tool, which says what is wrong with it."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return not stat.S_ISDIR(os.stat(path).st_mode)
        with open(path, "rb") as f:
            return f.read(16).startswith(b'{"pyprof_dict"')
    except (OSError, ValueError):
        return False  # pyprof-parse names the problem


def _output_of(args: list[str]) -> str | None:
    """The value of -o / --output among a command's arguments, or None."""
    for i, arg in enumerate(args):
        if arg in ("-o", "--output") and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--output="):
            return arg[len("--output="):]
        if arg.startswith("-o") and len(arg) > 2:
            return arg[2:]
    return None


def _input_positions(args: list[str], takes_value: set[str]) -> list[int]:
    """Where the inputs are among a tool's arguments: neither an option nor an option's value."""
    return [i for i, a in enumerate(args)
            if not a.startswith("-") and (i == 0 or args[i - 1] not in takes_value)]


def _run_missing_tool(*names: str) -> int | None:
    """run_tool()'s message and status for the first of the tools that is not built; None
    when all are."""
    for name in names:
        if not os.access(tool_path(name), os.X_OK):
            return run_tool(name, [])  # says what is missing
    return None


def export(args: list[str]) -> int:
    """`pyprof export`: pyprof-export on a net.dict; anything else is parsed (with --ranges)
    into a temporary net.dict first (docs/export.md)."""
    import tempfile

    from pyprof import _files, _signals

    takes_value = {"-o", "--output", "--format", "--source-label"}
    inputs = [args[i] for i in _input_positions(args, takes_value)]
    if len(inputs) != 1 or any(a in ("-h", "--help") for a in args) or _is_dict(inputs[0]):
        return run_tool("pyprof-export", args)
    if not os.path.exists(inputs[0]):
        print(f"pyprof export: error: cannot open {inputs[0]}: no such file", file=sys.stderr)
        return 1
    if (status := _run_missing_tool("pyprof-parse", "pyprof-export")) is not None:
        return status
    # pyprof-export sees only the temporary net.dict: the input is protected here.
    _files.check_not_an_input(_output_of(args) or "", inputs)
    with tempfile.TemporaryDirectory(prefix="pyprof-export-") as tmp:
        dict_path = os.path.join(tmp, "net.dict")
        parsed = _signals.run([tool_path("pyprof-parse"), "--ranges", "-q", inputs[0],
                               "-o", dict_path])
        if parsed.returncode != 0:
            print(f"pyprof export: error: {inputs[0]}: pyprof parse could not read it (above)",
                  file=sys.stderr)
            return 1 if parsed.returncode != 2 else 2
        rest = [dict_path if a == inputs[0] else a for a in args]
        return _signals.run([tool_path("pyprof-export"), *rest,
                             "--source-label", inputs[0]]).returncode


def diff(args: list[str]) -> int:
    """`pyprof diff BASE NEW`: pyprof-diff on two net.dicts; a database or trace given instead is
    parsed into a temporary net.dict first (docs/diff.md)."""
    import tempfile

    from pyprof import _files, _signals

    takes_value = {"-o", "--output", "--report", "--formats", "--top", "--iterations",
                   "--base-iterations", "--new-iterations", "--alpha", "--min-change",
                   "--min-share", "--depth", "--fail-above", "--fail-step-above",
                   "--basis", "--base-label", "--new-label"}
    positions = _input_positions(args, takes_value)
    if (any(a in ("-h", "--help") for a in args) or len(positions) != 2
            or all(_is_dict(args[i]) for i in positions)):
        return run_tool("pyprof-diff", args)
    if (status := _run_missing_tool("pyprof-parse", "pyprof-diff")) is not None:
        return status
    # pyprof-diff sees only the temporary net.dicts: the inputs are protected here.
    _files.check_not_an_input(_output_of(args) or "", [args[i] for i in positions])
    rest = list(args)
    with tempfile.TemporaryDirectory(prefix="pyprof-diff-") as tmp:
        for side, i in zip(("base", "new"), positions):
            if _is_dict(args[i]):
                continue
            dict_path = os.path.join(tmp, f"{side}.dict")
            parsed = _signals.run([tool_path("pyprof-parse"), "-q", args[i], "-o", dict_path])
            if parsed.returncode != 0:
                print(f"pyprof diff: error: {side} {args[i]}: pyprof parse failed",
                      file=sys.stderr)
                return 1 if parsed.returncode != 2 else 2
            rest[i] = dict_path
            rest += [f"--{side}-label", args[i]]
        return _signals.run([tool_path("pyprof-diff")] + rest).returncode


def version_text() -> str:
    """pyprof's version and what its C++ parts were built against (no torch import: fast)."""
    from pyprof import __version__
    from pyprof._torch_support import build_info

    lines = [f"pyprof {__version__}"]
    built = build_info()
    if built is None:
        lines.append("C++ parts: not built for this Python (pip install --no-build-isolation .)")
    else:
        cupti = int(built.CUPTI_API_VERSION or 0)
        lines.append(f"built against torch {built.TORCH_VERSION} (as C++"
                     f"{built.EXTENSION_CXX_STANDARD}), "
                     f"Python {built.PYTHON}, CUPTI headers {cupti // 10000}.{cupti // 100 % 100}"
                     f" (API {cupti}), {built.CXX_COMPILER}")
    lines.append(f"package: {_PKG_DIR}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if argv else 2
    if argv[0] in ("-V", "--version", "version"):
        print(version_text(), end="")
        return 0
    command, rest = argv[0], argv[1:]
    from pyprof import _files, _signals

    # What runs in Python below ends on a signal without a traceback or a file left behind
    # (pyprof/_signals.py); the commands exec'ed to a C++ tool get their handlers reset by exec.
    _signals.end_on_signals()
    try:
        return _command(command, rest)
    except KeyboardInterrupt:
        print(f"pyprof {command}: interrupted", file=sys.stderr)
        return 128 + 2
    except _signals.Ended as ended:
        _signals.end_by(ended.signum)
        return 128 + ended.signum  # not reached
    except _files.FileError as exc:
        print(f"pyprof {command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # Standard output's reader went away (`pyprof report ... | head -0`): end quietly, with
        # the status the C++ tools give (128 + SIGPIPE), and nothing left to flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13


def _command(command: str, rest: list[str]) -> int:
    if command == "profile":
        return run_tool("pyprof-profile", rest)
    if command == "parse":
        return run_tool("pyprof-parse", rest)
    if command == "prof":
        from pyprof import parquet  # light: pyarrow is imported only when Parquet is asked for

        if parquet.handles(rest):
            return parquet.prof_command(rest)
        return run_tool("pyprof-prof", rest)
    if command == "report":
        from pyprof.report import main as report_main

        return report_main(rest)
    if command == "export":
        return export(rest)
    if command == "diff":
        return diff(rest)
    if command == "peak":
        from pyprof import peak

        return peak.main(rest)
    print(f"pyprof: error: unknown command '{command}'\n\n{USAGE}", file=sys.stderr, end="")
    return 2


if __name__ == "__main__":
    sys.exit(main())
