"""pandas DataFrames and Parquet files of prof's per-record table and reports (docs/dataframes.md).

    import pyprof
    records = pyprof.read_dict("net.dict")          # one row per record, every prof column
    ops = pyprof.read_report("net.dict", "op")      # a report's table
    modules = pyprof.read_report("trace.json.gz", "module", depth=2)

The numbers come from the C++ tool (`pyprof-prof --json`), so a frame holds exactly what
`pyprof prof` prints; this module only types its JSON Lines. Input that is not a net.dict (a
pyprof database, an nsys or nvprof export, a torch.profiler trace) goes through `pyprof-parse`
first, into a temporary file.

pandas and pyarrow are imported on first use, never by `import pyprof`: a training script that
calls pyprof.init() pays nothing for them.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings

from pyprof._tools import MISSING, OTHER, ProfError, input_kind, run_checked

__all__ = ["read_dict", "read_report", "ProfError", "ProfWarning", "RECORD_COLUMNS"]

# prof's per-record columns (prof/table.cpp all_columns(), docs/prof.md §2) in their order, with
# the type each has in a frame and a Parquet file: "int" (int64), "float" (float64) or "str".
# `seq` is written by prof's JSON as a string (PyProf's column was text); it is always an
# integer or `-`, so it is typed as one here.
RECORD_COLUMNS: dict[str, str] = {
    "idx": "int", "seq": "int", "altseq": "str", "tid": "int", "layer": "str", "trace": "str",
    "dir": "str", "sub": "int", "mod": "str", "op": "str", "kernel": "str", "params": "str",
    "sil": "int", "tc": "int", "device": "int", "stream": "int", "grid": "str", "block": "str",
    "flops": "int", "bytes": "int", "duration": "int", "counted_ns": "int", "tflops": "float",
    "gbps": "float", "ai": "float", "tc_eligible": "int", "module": "str", "dtype": "str",
    "shapes": "str", "family": "str", "op_flops": "int", "op_bytes": "int", "flag": "str",
    "step": "int", "selected": "int", "flops_dense": "int", "op_flops_dense": "int",
}


class ProfWarning(UserWarning):
    """A warning pyprof-prof printed (records above device peak, impossible times, ...)."""


def missing_dependency(what: str, exc: ImportError) -> ImportError:
    return ImportError(f"{what} needs pandas and pyarrow ({exc}); install them with "
                       f"pip install 'pyprof[report]' (docs/install.md)")


def _require_pyarrow(what: str):
    try:
        import pyarrow
    except ImportError as exc:
        raise missing_dependency(what, exc) from exc
    return pyarrow


def _require_pandas(what: str):
    try:
        import pandas
    except ImportError as exc:
        raise missing_dependency(what, exc) from exc
    _require_pyarrow(what)
    return pandas


# ---- running the tools --------------------------------------------------------------------

def option_args(options: dict) -> list[str]:
    """Keyword options as prof's command-line options: depth=2 -> --depth 2, no_tf32=True ->
    --no-tf32, peaks="h100.json" -> --peaks h100.json; False and None leave an option out."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(map(str, value))]
        else:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def _prof_json(path, args: list[str], workdir: str) -> str:
    """Runs parse (when `path` is not a net.dict) and pyprof-prof with `args` and `-o` a file in
    `workdir`; returns that file's path. prof's warnings become ProfWarning."""
    path = os.fspath(path)
    kind = input_kind(path)
    if kind == MISSING:
        raise FileNotFoundError(f"{path}: no such file")
    if kind == OTHER:
        parsed = os.path.join(workdir, "net.dict")
        run_checked("pyprof-parse", [path, "-o", parsed])
        path = parsed
    out = os.path.join(workdir, "prof.json")
    err = run_checked("pyprof-prof", [*args, "-o", out, path])
    for line in err.splitlines():
        if "warning:" in line:
            warnings.warn(line, ProfWarning, stacklevel=3)
    return out


# ---- JSON Lines -> Arrow tables -------------------------------------------------------------

def _arrow_type(pa, kind: str):
    return {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}[kind]


def records_schema(columns: list[str] | None = None):
    """The Arrow schema of prof's per-record table (all columns, or `columns` in that order)."""
    pa = _require_pyarrow("the records schema")
    keys = list(RECORD_COLUMNS) if columns is None else columns
    for key in keys:
        if key not in RECORD_COLUMNS:
            raise ValueError(f"unknown column '{key}' (columns: {','.join(RECORD_COLUMNS)})")
    return pa.schema([pa.field(key, _arrow_type(pa, RECORD_COLUMNS[key])) for key in keys])


def records_table(json_path: str, columns: list[str] | None = None):
    """prof's `--json` records (JSON Lines) as an Arrow table typed by RECORD_COLUMNS."""
    pa = _require_pyarrow("reading prof's records")
    schema = records_schema(columns)
    if os.path.getsize(json_path) == 0:
        return schema.empty_table()
    import pyarrow.json as pa_json

    # seq arrives as a JSON string: read as one, then cast.
    as_written = pa.schema([pa.field(f.name, pa.string()) if f.name == "seq" else f
                            for f in schema])
    try:
        table = pa_json.read_json(
            json_path,
            read_options=pa_json.ReadOptions(block_size=16 << 20),
            parse_options=pa_json.ParseOptions(explicit_schema=as_written,
                                               unexpected_field_behavior="error"))
    except pa.ArrowInvalid:
        # A line longer than a block (names of megabytes) or anything else Arrow's reader
        # refuses: the json module reads what Arrow cannot.
        return _records_table_by_json(json_path, schema)
    if "seq" in table.column_names:
        table = table.set_column(table.column_names.index("seq"), "seq",
                                 table.column("seq").cast(pa.int64()))
    return table.select(schema.names).cast(schema)


def _records_table_by_json(json_path: str, schema):
    pa = _require_pyarrow("reading prof's records")
    values: dict[str, list] = {name: [] for name in schema.names}
    with open(json_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            for name, column in values.items():
                v = row.get(name)
                if name == "seq" and v is not None:
                    v = int(v)
                column.append(v)
    return pa.table({name: pa.array(column, type=schema.field(name).type)
                     for name, column in values.items()}, schema=schema)


def report_rows(json_path: str) -> list[dict]:
    """A report JSON file's rows (docs/prof.md §3, "JSON"), each with its report and table ids
    first ("report", "table"), in the order prof wrote them."""
    from pyprof import _reports

    return [{"report": t.report, "table": t.id, **row}
            for t in _reports.read_file(json_path) for row in t.rows]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def column_kind(values: list) -> str:
    """A column's type from its JSON values: numeric when every value is a number or null and at
    least one is a number; int when every number is."""
    numbers = [v for v in values if _is_number(v)]
    if not numbers or any(not _is_number(v) and v is not None for v in values):
        return "str"
    return "int" if all(isinstance(v, int) for v in numbers) else "float"


def column_kinds(tables: list, rows: list[dict]) -> dict[str, str]:
    """The type of each column of `tables` (pyprof._reports.Table) in a frame or a Parquet file,
    decided from their units (pyprof._units): text (and per-row) columns are strings, a
    quantity's column int64 or float64 by its values in `rows`; a column that is text in one
    table and a number in another is a string. The ids are strings."""
    from pyprof._units import NUMERIC_UNITS

    numeric: dict[str, bool] = {}
    for t in tables:
        for c in t.columns:
            numeric[c] = numeric.get(c, True) and t.units.get(c) in NUMERIC_UNITS
    kinds = {"report": "str", "table": "str", "unit": "str"}
    for c, is_numeric in numeric.items():
        if not is_numeric:
            kinds[c] = "str"
            continue
        numbers = [row.get(c) for row in rows if _is_number(row.get(c))]
        kinds[c] = "int" if all(isinstance(v, int) for v in numbers) else "float"
    return kinds


def rows_table(rows: list[dict], keys: list[str], kinds: dict | None = None):
    """Report rows (dicts from prof's report JSON) as an Arrow table with columns `keys`, each
    typed by `kinds` (column_kinds), else by column_kind; a numeric column's other values (the
    text JSON gives a quantity it has no number for, "inf") become nulls."""
    pa = _require_pyarrow("reading prof's reports")
    arrays = {}
    for key in keys:
        values = [row.get(key) for row in rows]
        kind = kinds[key] if kinds and key in kinds else column_kind(values)
        if kind == "str":
            cells = [None if v is None else v if isinstance(v, str) else json.dumps(v)
                     for v in values]
        else:
            cells = [v if _is_number(v) else None for v in values]
        arrays[key] = pa.array(cells, type=_arrow_type(pa, kind))
    return pa.table(arrays) if keys else pa.table({"report": pa.array([], pa.string())})


def ordered_keys(rows: list[dict], skip=()) -> list[str]:
    keys: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key not in skip:
                keys.setdefault(key)
    return list(keys)


def table_arrow(table):
    """One report table (pyprof._reports.Table) as an Arrow table of its columns, typed by their
    units (column_kinds); a per-row table keeps each row's unit in column `unit`."""
    keys = (["unit"] if "per-row" in table.units.values() else []) + table.columns
    return rows_table(table.rows, keys, column_kinds([table], table.rows))


def report_file_table(json_path: str):
    """A report's JSON Lines as one Arrow table for a Parquet file: its `report` and `table` ids
    first, then the union of the tables' columns (null where a table has none), typed by their
    units."""
    from pyprof import _reports

    tables = _reports.read_file(json_path)
    rows = [{"report": t.report, "table": t.id, **row} for t in tables for row in t.rows]
    keys = ["report", "table"]
    if any("per-row" in t.units.values() for t in tables):
        keys.append("unit")
    for t in tables:
        keys += [c for c in t.columns if c not in keys]
    return rows_table(rows, keys, column_kinds(tables, rows))


def write_table(table, path: str, metadata: dict) -> None:
    """An Arrow table as a Parquet file, `metadata` (what it is: pyprof's version, the table,
    the report, the rank) as JSON under the schema's `pyprof` key (docs/dataframes.md)."""
    import pyarrow.parquet as pq

    meta = dict(table.schema.metadata or {})
    meta[b"pyprof"] = json.dumps(metadata).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


# ---- Arrow -> pandas --------------------------------------------------------------------------

def to_frame(table):
    """An Arrow table as a DataFrame: int64/float64 columns stay numpy int64/float64 when they
    have no nulls and become pandas' nullable Int64/Float64 (nulls as pd.NA) when they do;
    text is the `string` dtype."""
    pd = _require_pandas("a DataFrame")
    pa = _require_pyarrow("a DataFrame")
    mapping = {pa.int64(): pd.Int64Dtype(), pa.float64(): pd.Float64Dtype(),
               pa.string(): pd.StringDtype()}
    frame = table.to_pandas(types_mapper=mapping.get)
    for name, column in zip(table.column_names, table.columns):
        if column.null_count == 0 and len(column) > 0:
            if pa.types.is_int64(column.type):
                frame[name] = frame[name].astype("int64")
            elif pa.types.is_float64(column.type):
                frame[name] = frame[name].astype("float64")
    return frame


# ---- the API ------------------------------------------------------------------------------

def read_dict(path, **options):
    """One row per record as prof sees it: every column of `pyprof prof --json -c all
    --all-records` (docs/dataframes.md lists them with their types and units). Every record of
    the profile, also those prof's iteration selection leaves out of its reports (the warm-up
    step, the time between steps): `selected` says which are in them (1) and which not (0);
    `records[records.selected == 1]` sums to the reports' totals.

    path: a net.dict, or anything `pyprof parse` reads (parsed first into a temporary file).
    options: pyprof-prof options, e.g. no_tf32=True (--no-tf32), peaks="h100.json",
    iterations="2:5"; all_records=False keeps the selected records alone.
    Raises ProfError with the tool's message when parse or prof fails.
    """
    _require_pandas("pyprof.read_dict")
    options = {"all_records": True, **options}
    with tempfile.TemporaryDirectory(prefix="pyprof-frames-") as workdir:
        out = _prof_json(path, ["--json", "-c", "all", *option_args(options)], workdir)
        frame = to_frame(records_table(out))
    frame.attrs["source"] = os.fspath(path)
    return frame


def read_report(path, name: str, **options):
    """A prof report (`pyprof prof --report NAME --formats json`) as a DataFrame, or, for a
    report made of several tables, a dict {table id: DataFrame} ("steps", "steady_state").

    path: a net.dict, or anything `pyprof parse` reads. name: one report (summary, op,
    instance, kernel, module, tc, ...; `pyprof prof --help` lists them). options: pyprof-prof
    options, e.g. depth=2, no_tf32=True, peaks="h100.json". A frame's attrs hold its ids
    ("report", "table"), its "title" and each column's unit ("units": {"Total(ns)": "ns",
    ...}, docs/dataframes.md). A column of a quantity is int64 or float64 (nullable where it
    has nulls), text is a string; a table without rows still has its columns.
    Raises ProfError with the tool's message when parse or prof fails.
    """
    _require_pandas("pyprof.read_report")
    if not isinstance(name, str) or not name or "," in name:
        raise ValueError(f"read_report takes one report name, not {name!r}")
    from pyprof import _reports

    with tempfile.TemporaryDirectory(prefix="pyprof-frames-") as workdir:
        out = _prof_json(path, ["--report", name, "--formats", "json", *option_args(options)],
                         workdir)
        tables = _reports.read_file(out)
    frames = {}
    for table in tables:
        frame = to_frame(table_arrow(table))
        frame.attrs.update(report=table.report, table=table.id, title=table.title,
                           units=dict(table.units), source=os.fspath(path))
        frames[table.id] = frame
    if len(frames) == 1:
        return next(iter(frames.values()))
    return frames
