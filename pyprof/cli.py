"""The `pyprof` command: a thin front that hands each subcommand to its C++ tool."""

import os
import sys
import tempfile
import threading

from pyprof import _signals, _tools

USAGE = """usage: pyprof <command> [options]
       pyprof --version

commands:
  profile   run a program; record its NVTX ranges and, on a GPU, its CUDA
            activity into NAME.sqlite (pyprof profile -o NAME [--force]
            [--delay S] [--duration S] [--capture-range cudaProfilerApi]
            [--no-cuda-trace] -- CMD ...; pyprof's options before the command);
            with --report, then NAME.dict, the summary and NAME.html
  parse     attribute every kernel to its op, module and direction; JSON Lines
            out (pyprof parse DB [-o FILE]; also python -m pyprof.parse DB)
  prof      FLOPs, bytes, Tensor Core use per kernel or op, and reports
            (pyprof prof [--csv|--json|--parquet|-w N] [-c COLS]
            [--report op,module,...|all] [--formats text,csv,json,parquet]
            [--iterations A:B|all] [--op-models FILE] [--flop-registry MODULE]
            INPUT; a net.dict, or anything parse reads)
  report    one self-contained HTML page: headline figures, roofline, time
            breakdowns, sortable tables (pyprof report INPUT [-o net.html]
            [--peaks FILE])
  export    a Chrome / Perfetto trace of ops, modules, user ranges, marks,
            kernels and their flows (pyprof export [--format chrome|perfetto]
            net.dict|DB|TRACE -o trace.json[.gz])
  flop-table
            the FLOPs of the calls of ops pyprof has no model of, from the
            formulas a library registers with torch.utils.flop_counter, as a
            file for prof/diff/export --flop-table (pyprof flop-table
            --flop-registry MODULE INPUT -o TABLE)
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


def _parsed_first(command: str, tool: str, args: list[str], ranges: bool = False,
                  labels: tuple[str, ...] = ()) -> int:
    """`pyprof COMMAND ARGS` where COMMAND's tool reads net.dicts: every input that is not one
    (a database or a trace: _tools.input_kind OTHER) is parsed first into a temporary net.dict,
    which the tool reads instead; the others (net.dicts, folders, streams: the tool names any
    problem) are handed over as they are; a file that does not exist is named here, one message
    for every command. The user's inputs are protected here, since the tool sees only the
    temporaries. `labels`: the tool's hidden options naming each parsed input in its messages
    (one per input, in order: `--base-label` says `base: ...`); without them the temporaries'
    paths in the tool's messages are replaced by the inputs' names."""
    try:
        split = _tools.split_arguments(tool, args)
    except _tools.OptionsUnavailable as exc:
        print(f"pyprof {command}: error: {exc}", file=sys.stderr)
        return 1
    counted = not labels or len(split.inputs) == len(labels)  # else the tool says: usage
    if split.has("--help") or not counted:
        return _tools.exec_tool(tool, args)
    for n, i in enumerate(split.inputs):
        if args[i] != "-" and not os.path.lexists(args[i]):
            role = f"{labels[n].strip('-').removesuffix('-label')}: " if len(labels) > 1 else ""
            print(f"pyprof {command}: error: {role}cannot open {args[i]}: no such file",
                  file=sys.stderr)
            return 1
    parsed = inputs_to_parse(tool, args, split)
    if not parsed:
        return _tools.exec_tool(tool, args)
    if why := _tools.first_missing("pyprof-parse", tool):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    _tools.check_output_not_input(split.values.get("--output"), split.input_paths())
    rest = list(args)
    with tempfile.TemporaryDirectory(prefix=f"pyprof-{command}-") as tmp:
        temporaries = {}
        for n, i in enumerate(parsed):
            dict_path = os.path.join(tmp, f"input{n}.dict")
            if (status := _tools.parse_into(args[i], dict_path, command, ranges)) != 0:
                return status
            rest[i] = dict_path
            temporaries[dict_path] = args[i]
        if labels:
            for i in parsed:
                rest += [labels[split.inputs.index(i)], args[i]]
            return _tools.run_tool(tool, rest, command)
        return _run_naming_inputs(tool, rest, command, temporaries)


def inputs_to_parse(tool: str, args: list[str], split: _tools.Arguments | None = None
                    ) -> list[int]:
    """The positions in `args` (the tool's command line) of the inputs to parse first: the
    inputs (never an option's value, by the tool's own option list) that are not net.dicts."""
    split = split or _tools.split_arguments(tool, args)
    return [i for i in split.inputs if _tools.input_kind(args[i]) == _tools.OTHER]


def _run_naming_inputs(tool: str, args: list[str], command: str,
                       temporaries: dict[str, str]) -> int:
    """Runs `tool` with its messages passed on as they come, line by line, each temporary
    net.dict's path in them replaced by the name of the input it was parsed from."""
    _tools.flush_standard_streams()
    read_end, write_end = os.pipe()

    def relay():
        with os.fdopen(read_end, "rb") as messages:
            for line in messages:
                text = line.decode("utf-8", "replace")
                for temporary, name in temporaries.items():
                    text = text.replace(temporary, name)
                if sys.stderr is not None:  # closed (`2>&-`): the messages go nowhere
                    sys.stderr.write(text)
                    sys.stderr.flush()

    relaying = threading.Thread(target=relay, daemon=True)
    relaying.start()
    try:
        res = _signals.run([_tools.tool_path(tool), *args], stderr=write_end)
    finally:
        os.close(write_end)  # the child has ended: the relay reads to the end
        relaying.join()
    return _tools.exit_status(res.returncode, command, tool)


def prof(args: list[str]) -> int:
    """`pyprof prof`: pyprof-prof on net.dicts; a database or trace given instead is parsed
    first (docs/prof.md); Parquet output goes through pyprof/parquet.py; `--flop-registry`
    through pyprof/flop_registry.py, which then runs this tool with its table."""
    from pyprof import flop_registry, parquet  # light: torch and pyarrow load when needed

    try:
        modules, args = flop_registry.take_modules(args)
    except flop_registry.UsageError as exc:
        print(f"pyprof prof: error: {exc}", file=sys.stderr)
        return 2
    if modules:
        return flop_registry.prof_command(args, modules, _run_naming_inputs)
    if parquet.handles(args):
        return parquet.prof_command(args)
    return _parsed_first("prof", "pyprof-prof", args)


def export(args: list[str]) -> int:
    """`pyprof export`: pyprof-export on a net.dict; anything else is parsed (with --ranges)
    into a temporary net.dict first (docs/export.md)."""
    return _parsed_first("export", "pyprof-export", args, ranges=True,
                         labels=("--source-label",))


def diff(args: list[str]) -> int:
    """`pyprof diff BASE NEW`: pyprof-diff on two net.dicts; a database or trace given instead is
    parsed into a temporary net.dict first (docs/diff.md)."""
    return _parsed_first("diff", "pyprof-diff", args, labels=("--base-label", "--new-label"))


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
    lines.append(f"package: {_tools.PKG_DIR}")
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
    return _tools.run_front(command, lambda: _command(command, rest))


def _command(command: str, rest: list[str]) -> int:
    if command == "profile":
        from pyprof import profile_chain

        return profile_chain.profile_command(rest)
    if command == "parse":
        return _tools.exec_tool("pyprof-parse", rest)
    if command == "prof":
        return prof(rest)
    if command == "report":
        from pyprof.report import main as report_main

        return report_main(rest)
    if command == "export":
        return export(rest)
    if command == "diff":
        return diff(rest)
    if command == "flop-table":
        from pyprof import flop_registry

        return flop_registry.flop_table_command(rest)
    if command == "peak":
        from pyprof import peak

        return peak.main(rest)
    print(f"pyprof: error: unknown command '{command}'\n\n{USAGE}", file=sys.stderr, end="")
    return 2


if __name__ == "__main__":
    sys.exit(main())
