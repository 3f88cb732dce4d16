"""`pyprof prof --parquet` and `--formats ...,parquet`: prof's tables as Parquet files.

The C++ tool computes everything and writes JSON; this module turns that JSON into typed Arrow
tables (pyprof/frames.py) and writes them with pyarrow. The `pyprof prof` command comes here
only when Parquet is asked for (or for --help, to list the Parquet options); everything else is
exec'ed to pyprof-prof as before.

    pyprof prof --parquet -o net.parquet net.dict               # the records, every column
    pyprof prof --parquet -c op,flops,duration -o some.parquet net.dict
    pyprof prof --report op,module --formats csv,parquet -o out/net
        # out/net.op.csv, out/net.module.csv, out/net.op.parquet, out/net.module.parquet

Files are complete or absent, as prof's own (docs/prof.md): everything is written under a
hidden temporary folder beside the output, and renamed into place only when every file of the
command was written; on any failure nothing is left.
"""

from __future__ import annotations

import os
import sys

from pyprof import _files, _tools

# shutil, tempfile and pyarrow are imported where used: every `pyprof prof` command line
# passes through handles(), and most are exec'ed to pyprof-prof untouched.

PARQUET_HELP = """Parquet (pyprof's Python front, needs pyarrow: pip install 'pyprof[report]'):
  --parquet               the per-record table as a Parquet file (needs -o
                          FILE); every column unless -c says which
  --formats ...,parquet   reports also (or only) as PREFIX.REPORT.parquet (needs
                          -o PREFIX)
  --parquet -o DIR [--report R,...|all] [-j N] RANK.dict... | FOLDER
                          several ranks: a dataset partitioned by rank,
                          DIR/records/rank=R/part-0.parquet,
                          DIR/ranks/rank=R/..., DIR/rank_steps/,
                          DIR/REPORT/rank=R/...; N ranks at a
                          time (default: the cores); read it with DuckDB,
                          pyarrow, Spark, Dask
  Column names are the JSON keys; numbers are int64/float64, `na`/`-` are nulls
  (docs/dataframes.md).
"""


class UsageError(Exception):
    pass


def _split(value: str) -> list[str]:
    return [part for part in value.split(",") if part]


def handles(args: list[str]) -> bool:
    """True when `pyprof prof ARGS` asks for Parquet (or for help, which lists it)."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("--parquet", "-h", "--help"):
            return True
        if arg == "--formats" and i + 1 < len(args) and "parquet" in _split(args[i + 1]):
            return True
        if arg.startswith("--formats=") and "parquet" in _split(arg[len("--formats="):]):
            return True
    return False


class _Args:
    """The options this front needs from prof's command line, split by pyprof-prof's own list
    of options (pyprof/_tools.py); the rest pass through."""

    OWN_VALUES = {"-j": "--jobs", "--jobs": "--jobs"}  # this front's: ranks run at a time
    REMOVED = ("--output", "--formats", "--jobs", "--parquet")  # this front sets them for the tool

    def __init__(self, args: list[str]):
        self.split = _tools.split_arguments("pyprof-prof", args, self.OWN_VALUES)
        if self.split.missing_value is not None:
            raise UsageError(f"{self.split.missing_value} needs a value")
        # Keyed by the long name without its dashes: "output", "columns", "jobs", ...
        self.values = {name.lstrip("-"): v for name, v in self.split.values.items()}
        self.parquet = self.split.has("--parquet")
        self.csv = self.split.has("--csv")
        self.json = self.split.has("--json")
        self.rest = self.split.without(*self.REMOVED)  # prof's arguments, inputs included
        self.inputs = self.split.input_paths()          # the inputs alone

    def options(self, *also_removed: str) -> list[str]:
        """The options alone (no inputs), less REMOVED and `also_removed` (long names)."""
        dropped = set(self.REMOVED) | set(also_removed) | {"--"}
        return [word for start, end, name in self.split.spans if name not in dropped
                for word in self.split.args[start:end]]


class _Staging:
    """Files written under a hidden temporary folder beside their destination, put into place
    together by commit() (pyprof/_files.py: renamed over regular files, written into devices and
    FIFOs); abort() (or an exception) leaves nothing."""

    def __init__(self, destination: str, inputs: list[str]):
        self.inputs = inputs  # what no destination may be
        import tempfile

        folder = os.path.dirname(os.path.realpath(destination)) or "."
        base = os.path.basename(destination) or "out"
        try:
            self.folder = tempfile.mkdtemp(prefix=f".{base}.", dir=folder)
        except OSError as exc:
            raise OSError(f"cannot write in {folder}: {exc.strerror or exc}") from exc
        self.moves: list[tuple[str, str]] = []

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def keep(self, staged: str, destination: str) -> None:
        self.moves.append((staged, destination))

    def commit(self) -> None:
        for _, destination in self.moves:  # every one checked before any is moved
            _files.check_not_an_input(destination, self.inputs)
        for staged, destination in self.moves:
            _files.place(staged, destination)

    def abort(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def _run_prof(args: list[str]) -> int:
    return _tools.run_tool("pyprof-prof", args, "prof")


def _parse_inputs(opts: _Args, staging: _Staging) -> int:
    """An input that is not a net.dict (a database, a trace) parsed first, into the staging
    folder, as `pyprof prof` does without Parquet (pyprof/cli.py); prof reads that instead."""
    parsed = {}
    for n, i in enumerate(opts.split.inputs):
        if _tools.input_kind(opts.split.args[i]) == _tools.OTHER:
            parsed[i] = staging.path(f"input{n}.dict")
            if (status := _tools.parse_into(opts.split.args[i], parsed[i], "prof")) != 0:
                return status
    opts.rest = opts.split.without(*opts.REMOVED, replace=parsed)
    return 0


def _records(opts: _Args, staging: _Staging) -> int:
    from pyprof import __version__, frames

    columns = opts.values.get("columns", "all")
    keys = None if columns == "all" else _split(columns)
    if keys is not None and len(set(keys)) != len(keys):
        raise UsageError(f"-c {columns}: a column is named twice (a Parquet file needs "
                         "distinct column names)")
    json_path = staging.path("records.json")
    tool_args = [*opts.rest, "--json", "-o", json_path]
    if "columns" not in opts.values:
        tool_args[:0] = ["-c", "all"]
    status = _run_prof(tool_args)
    if status != 0:
        return status
    staged = staging.path("records.parquet")
    frames.write_table(frames.records_table(json_path, keys), staged,
                {"pyprof": __version__, "table": "records"})
    staging.keep(staged, opts.values["output"])
    return 0


def _reports(opts: _Args, staging: _Staging) -> int:
    from pyprof import __version__, frames

    formats = _split(opts.values["formats"])
    reports = _split(opts.values.get("report", ""))
    others = [f for f in formats if f != "parquet"]
    # Per-report files (PREFIX.REPORT.FORMAT) are what prof writes for two or more formats: the
    # JSON that Parquet is made from is asked for beside the user's formats, and `text` is
    # added (and dropped) when JSON alone would otherwise go to one file.
    run_formats = others + ([] if "json" in others else ["json"])
    if len(run_formats) == 1:
        run_formats.append("text")
    prefix = staging.path("p")
    status = _run_prof([*opts.rest, "--formats", ",".join(run_formats), "-o", prefix])
    if status != 0:
        return status
    output = opts.values["output"]
    for report in reports:
        staged = f"{prefix}.{report}.parquet"
        frames.write_table(frames.report_file_table(f"{prefix}.{report}.json"), staged,
                    {"pyprof": __version__, "table": "report", "report": report})
        staging.keep(staged, f"{output}.{report}.parquet")
        for fmt in others:
            staging.keep(f"{prefix}.{report}.{fmt}", f"{output}.{report}.{fmt}")
    return 0


def _dataset(opts: _Args) -> int:
    """--parquet with several inputs or a folder: a dataset partitioned by rank."""
    from pyprof import rank_dataset

    if opts.csv or opts.json or "width" in opts.values or "formats" in opts.values:
        raise UsageError("--parquet with several inputs writes a dataset folder; --csv, --json, "
                         "-w and --formats do not apply")
    output = opts.values.get("output")
    if not output or output == "-":
        raise UsageError("--parquet with several inputs needs -o DIR (the dataset's folder)")
    columns = opts.values.get("columns", "all")
    keys = None if columns == "all" else _split(columns)
    if keys is not None and len(set(keys)) != len(keys):
        raise UsageError(f"-c {columns}: a column is named twice")
    jobs = opts.values.get("jobs", "0")
    if not jobs.isdigit():
        raise UsageError(f"-j {jobs}: not a number of parallel runs")
    jobs = int(jobs) or os.cpu_count() or 1
    options = opts.options("--columns", "--report")  # set per run by the dataset writer
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        print(f"pyprof prof: error: Parquet output needs pyarrow ({exc}); install it with "
              "pip install 'pyprof[report]' (docs/install.md)", file=sys.stderr)
        return 1
    try:
        return rank_dataset.write(opts.inputs, output, options, keys,
                                  _split(opts.values.get("report", "")), jobs)
    except rank_dataset.DatasetError as exc:
        print(f"pyprof prof: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"pyprof prof: error: writing {output} failed: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    except Exception as exc:  # pyarrow's errors (ArrowInvalid, ...): named, never a traceback
        print(f"pyprof prof: error: writing {output} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1


def prof_command(args: list[str]) -> int:
    """`pyprof prof ARGS` when handles(ARGS): Parquet output, or help."""
    options = args[:args.index("--")] if "--" in args else args
    if "-h" in options or "--help" in options:
        built = not _tools.missing_tool(_tools.tool_path("pyprof-prof"))
        status = _run_prof(["--help"]) if built else 0
        print(PARQUET_HELP, end="")
        return status
    try:
        opts = _Args(args)
        from pyprof import rank_dataset

        if opts.parquet and rank_dataset.wanted(opts.inputs):
            return _dataset(opts)
        if "jobs" in opts.values:
            raise UsageError("-j applies to --parquet with several inputs (a dataset)")
        formats = _split(opts.values.get("formats", ""))
        reports = "parquet" in formats
        if opts.parquet and reports:
            raise UsageError("--parquet is the per-record table; for reports use "
                             "--formats parquet")
        if opts.parquet and (opts.csv or opts.json or "width" in opts.values):
            raise UsageError("--parquet, --csv, --json and -w are mutually exclusive")
        if opts.parquet and "report" in opts.values:
            raise UsageError("--parquet writes the per-record table; with --report use "
                             "--formats ...,parquet")
        if reports and not _split(opts.values.get("report", "")):
            raise UsageError("--formats applies to --report")
        if not opts.values.get("output"):
            raise UsageError("--parquet needs -o FILE (a Parquet file is not written to a "
                             "terminal or pipe)" if opts.parquet else
                             "--formats parquet needs -o PREFIX (files PREFIX.REPORT.parquet)")
        if opts.values["output"] == "-":
            raise UsageError("-o -: a Parquet file is not written to standard output; name a file")
        unknown = [f for f in formats if f not in ("text", "csv", "json", "parquet")]
        if unknown:
            raise UsageError(f"unknown format '{unknown[0]}' (formats: text, csv, json, parquet)")
    except UsageError as exc:
        print(f"pyprof prof: error: {exc}\nRun with --help for usage.", file=sys.stderr)
        return 2
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        print(f"pyprof prof: error: Parquet output needs pyarrow ({exc}); install it with "
              "pip install 'pyprof[report]' (docs/install.md)", file=sys.stderr)
        return 1
    output = opts.values["output"]
    inputs = [*opts.inputs, opts.values.get("peaks")]
    _files.check_not_an_input(output, inputs)  # raised to the front: `pyprof prof: error: ...`
    try:
        staging = _Staging(output, inputs)
    except OSError as exc:
        print(f"pyprof prof: error: writing {output} failed: {exc}", file=sys.stderr)
        return 1
    try:
        status = _parse_inputs(opts, staging)
        if status == 0:
            status = _records(opts, staging) if opts.parquet else _reports(opts, staging)
        if status == 0:
            staging.commit()
        return status
    except UsageError as exc:
        print(f"pyprof prof: error: {exc}\nRun with --help for usage.", file=sys.stderr)
        return 2
    except _files.FileError as exc:
        print(f"pyprof prof: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, ImportError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"pyprof prof: error: writing {output} failed: {reason}", file=sys.stderr)
        return 1
    except Exception as exc:  # pyarrow's errors (ArrowInvalid, ...): named, never a traceback
        print(f"pyprof prof: error: writing {output} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1
    finally:
        staging.abort()
