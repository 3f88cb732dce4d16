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

# json, shutil, subprocess, tempfile and pyarrow are imported where used: every `pyprof prof`
# command line passes through handles(), and most are exec'ed to pyprof-prof untouched.

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
    """The options this front needs from prof's command line; the rest pass through."""

    VALUE_OPTIONS = {"-o": "output", "--output": "output", "--formats": "formats",
                     "-c": "columns", "--columns": "columns", "--report": "report",
                     "-w": "width", "--width": "width", "--top": "top", "--depth": "depth",
                     "--peaks": "peaks", "--iterations": "iterations", "-j": "jobs",
                     "--jobs": "jobs", "--op-models": "op_models"}
    REMOVED = ("output", "formats", "jobs")  # this front sets them for the tool

    def __init__(self, args: list[str]):
        self.values: dict[str, str] = {}
        self.parquet = self.csv = self.json = False
        self.rest: list[str] = []     # prof's arguments, inputs included
        self.inputs: list[str] = []   # the inputs alone
        self.options: list[str] = []  # the options alone
        i = 0
        while i < len(args):
            arg = args[i]
            name, value, used = self._match(arg, args[i + 1] if i + 1 < len(args) else None)
            if arg == "--":
                self.rest += args[i:]
                self.inputs += args[i + 1:]
                break
            if arg == "--parquet":
                self.parquet = True
            elif name is not None:
                if value is None:
                    raise UsageError(f"{arg} needs a value")
                self.values[name] = value
                if name not in self.REMOVED:
                    self.rest += args[i:i + used]
                    self.options += args[i:i + used]
            else:
                self.csv |= arg == "--csv"
                self.json |= arg == "--json"
                self.rest.append(arg)
                if arg.startswith("-") and arg != "-":
                    self.options.append(arg)
                else:
                    self.inputs.append(arg)
            i += used

    def _match(self, arg: str, following: str | None):
        """(name, value, arguments used) for a value option, else (None, None, 1)."""
        if arg in self.VALUE_OPTIONS:
            return self.VALUE_OPTIONS[arg], following, 2
        for option, name in self.VALUE_OPTIONS.items():
            if option.startswith("--") and arg.startswith(option + "="):
                return name, arg[len(option) + 1:], 1
            if not option.startswith("--") and arg.startswith(option) and len(arg) > 2:
                return name, arg[2:], 1
        return None, None, 1


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
        from pyprof import _files

        for _, destination in self.moves:  # every one checked before any is moved
            _files.check_not_an_input(destination, self.inputs)
        for staged, destination in self.moves:
            _files.place(staged, destination)

    def abort(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def _run_prof(args: list[str]) -> int:
    from pyprof import _signals
    from pyprof.cli import flush_standard_streams, missing_tool, tool_path

    path = tool_path("pyprof-prof")
    if why := missing_tool(path):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    flush_standard_streams()
    res = _signals.run([path, *args])
    if res.returncode < 0:
        print(f"pyprof prof: error: pyprof-prof was killed by signal {-res.returncode}",
              file=sys.stderr)
        return 1
    return res.returncode


def write_table(table, path: str, metadata: dict) -> None:
    import json

    import pyarrow.parquet as pq

    meta = dict(table.schema.metadata or {})
    meta[b"pyprof"] = json.dumps(metadata).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


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
    write_table(frames.records_table(json_path, keys), staged,
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
        write_table(frames.report_file_table(f"{prefix}.{report}.json"), staged,
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
    options = [a for a in opts.options if a != "--parquet"]
    # -c and --report are set per run by the dataset writer.
    options = _without(options, ("-c", "--columns", "--report"))
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


def _without(options: list[str], names: tuple) -> list[str]:
    """options less the value options `names` (as `-c X`, `-cX`, `--columns=X`)."""
    out, skip = [], False
    for arg in options:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not any(arg.startswith(n + "=") or (not n.startswith("--") and arg.startswith(n))
                     for n in names):
            out.append(arg)
    return out


def prof_command(args: list[str]) -> int:
    """`pyprof prof ARGS` when handles(ARGS): Parquet output, or help."""
    options = args[:args.index("--")] if "--" in args else args
    if "-h" in options or "--help" in options:
        from pyprof.cli import tool_path

        path = tool_path("pyprof-prof")
        status = _run_prof(["--help"]) if os.access(path, os.X_OK) else 0
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
    from pyprof import _files

    inputs = [*opts.inputs, opts.values.get("peaks")]
    _files.check_not_an_input(output, inputs)  # raised to the front: `pyprof prof: error: ...`
    try:
        staging = _Staging(output, inputs)
    except OSError as exc:
        print(f"pyprof prof: error: writing {output} failed: {exc}", file=sys.stderr)
        return 1
    try:
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
