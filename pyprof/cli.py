"""The `pyprof` command: a thin front that hands each subcommand to its C++ tool."""

import os
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
  diff      compare two profiles per iteration, op, module and kernel with a
            significance test and a verdict per row; --fail-above PCT gates CI
            (exit 3) (pyprof diff BASE NEW [--formats text,csv,json]
            [-o PREFIX] [--fail-above PCT])

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
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [f"pyprof {name.removeprefix('pyprof-')}"] + args)
    return 1  # not reached


def _is_dict(path: str) -> bool:
    """Whether `path` is a net.dict (its first line is parse's header), not a DB or a trace."""
    try:
        with open(path, "rb") as f:
            return f.read(16).startswith(b'{"pyprof_dict"')
    except OSError:
        return False  # pyprof-parse names the problem


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
    import subprocess
    import tempfile

    takes_value = {"-o", "--output", "--format", "--source-label"}
    inputs = [args[i] for i in _input_positions(args, takes_value)]
    if len(inputs) != 1 or any(a in ("-h", "--help") for a in args) or _is_dict(inputs[0]):
        return run_tool("pyprof-export", args)
    if not os.path.exists(inputs[0]):
        print(f"pyprof export: error: cannot open {inputs[0]}: no such file", file=sys.stderr)
        return 1
    if (status := _run_missing_tool("pyprof-parse", "pyprof-export")) is not None:
        return status
    with tempfile.TemporaryDirectory(prefix="pyprof-export-") as tmp:
        dict_path = os.path.join(tmp, "net.dict")
        parsed = subprocess.run([tool_path("pyprof-parse"), "--ranges", "-q", inputs[0],
                                 "-o", dict_path])
        if parsed.returncode != 0:
            print(f"pyprof export: error: {inputs[0]}: pyprof parse could not read it (above)",
                  file=sys.stderr)
            return 1 if parsed.returncode != 2 else 2
        rest = [dict_path if a == inputs[0] else a for a in args]
        return subprocess.run([tool_path("pyprof-export"), *rest,
                               "--source-label", inputs[0]]).returncode


def diff(args: list[str]) -> int:
    """`pyprof diff BASE NEW`: pyprof-diff on two net.dicts; a database or trace given instead is
    parsed into a temporary net.dict first (docs/diff.md)."""
    import subprocess
    import tempfile

    takes_value = {"-o", "--output", "--report", "--formats", "--top", "--iterations",
                   "--base-iterations", "--new-iterations", "--alpha", "--min-change",
                   "--min-share", "--depth", "--fail-above", "--fail-step-above",
                   "--base-label", "--new-label"}
    positions = _input_positions(args, takes_value)
    if (any(a in ("-h", "--help") for a in args) or len(positions) != 2
            or all(_is_dict(args[i]) for i in positions)):
        return run_tool("pyprof-diff", args)
    if (status := _run_missing_tool("pyprof-parse", "pyprof-diff")) is not None:
        return status
    rest = list(args)
    with tempfile.TemporaryDirectory(prefix="pyprof-diff-") as tmp:
        for side, i in zip(("base", "new"), positions):
            if _is_dict(args[i]):
                continue
            dict_path = os.path.join(tmp, f"{side}.dict")
            parsed = subprocess.run([tool_path("pyprof-parse"), "-q", args[i], "-o", dict_path])
            if parsed.returncode != 0:
                print(f"pyprof diff: error: {side} {args[i]}: pyprof parse failed",
                      file=sys.stderr)
                return 1 if parsed.returncode != 2 else 2
            rest[i] = dict_path
            rest += [f"--{side}-label", args[i]]
        return subprocess.run([tool_path("pyprof-diff")] + rest).returncode


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
