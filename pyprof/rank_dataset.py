"""`pyprof prof --parquet -o DIR RANK.dict... | FOLDER`: many ranks' records and reports as one
Parquet dataset, partitioned by rank (docs/dataframes.md §4.1).

    DIR/records/rank=0/part-0.parquet     prof's per-record table of rank 0 (every column, or -c)
    DIR/ranks/rank=0/part-0.parquet       the ranks report's rows of rank 0 (report "ranks", table
                                          "per_rank", "step_detail" or "collectives")
    DIR/rank_steps/part-0.parquet         its per-step verdicts (straggler, lag), all ranks
    DIR/op/rank=0/part-0.parquet          each --report REPORT of rank 0, as a Parquet report file
                                          (--report all: every report pyprof-prof makes of one rank)

The folders are Hive-style partitions, which DuckDB, pyarrow.dataset, Spark, Dask and Polars
read as a `rank` column; a file itself has no `rank` column (a reader would otherwise see it
twice). A column has the same type in every rank's file: a report's column types are decided
over all ranks' rows at once, so the dataset reads as one table.

One pyprof-prof runs per rank, `-j` at a time (default: the number of cores); the ranks report
is one more run over all of them. Nothing is written to DIR until every file is: the tables are
written under a hidden folder beside DIR, then each of DIR's table folders that the command
wrote is replaced whole (other files in DIR stay).
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import sys
import tempfile

from pyprof import _files, _reports, _tools, frames

# The ranks report's tables keyed by rank go under ranks/rank=R; the per-step table (its id), a
# verdict over all ranks, is a table of its own.
_RANKS_PER_STEP_TABLE = "steps"


def per_rank_reports() -> list[str]:
    """Every report pyprof-prof makes of one profile (its registry, `--list-reports`, less
    ranks): what `--report all` writes."""
    try:
        return _reports.profile_reports()
    except RuntimeError as e:
        raise DatasetError(str(e)) from None


class DatasetError(Exception):
    """Bad input for a dataset (no rank, a rank twice, no net.dict in a folder); exit 1."""


def wanted(inputs: list[str]) -> bool:
    """True when `--parquet` is given several inputs or a folder: a dataset, not one file."""
    return len(inputs) > 1 or any(os.path.isdir(p) for p in inputs)


def expand_inputs(inputs: list[str]) -> list[str]:
    """Files as given; a folder as its *.dict files, sorted (as pyprof-prof expands folders)."""
    files = []
    for path in inputs:
        if not os.path.isdir(path):
            files.append(path)
            continue
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            raise DatasetError(f"cannot list {path}: {exc.strerror or exc}") from exc
        # Every entry but a folder: a broken link among the ranks fails as an input (its
        # header cannot be read), never silently left out.
        found = [os.path.join(path, n) for n in names
                 if n.endswith(".dict") and not os.path.isdir(os.path.join(path, n))]
        if not found:
            raise DatasetError(f"{path} holds no *.dict files (pyprof parse -o DIR writes them)")
        files += found
    return files


def header_of(path: str) -> dict:
    """A net.dict's header line (docs/formats.md §3), or DatasetError naming what is wrong."""
    try:
        _files.check_regular_input(path, "each rank is read more than once (save it to a file "
                                         "first)")
        # A header lists every step: long, but not unbounded.
        return _tools.read_dict_header(path, 16 << 20)
    except _files.FileError as exc:
        raise DatasetError(str(exc)) from None
    except OSError as exc:
        raise DatasetError(f"cannot open {path}: {exc.strerror or exc}") from exc
    except _tools.NotADict:
        raise DatasetError(f"{path}: not a net.dict (pyprof parse output); a dataset is made "
                           "from parsed ranks: pyprof parse -o DIR RANK.sqlite...") from None


def ranks_of(files: list[str]) -> dict[int, str]:
    """{rank: file}. Files without a rank are left out with a warning; a rank twice is an
    error (two runs' files in one folder)."""
    by_rank: dict[int, str] = {}
    for path in files:
        rank = header_of(path).get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            print(f"pyprof prof: warning: {path}: no rank in its header (not a per-rank "
                  "profile?): left out", file=sys.stderr)
            continue
        if rank in by_rank:
            raise DatasetError(f"rank {rank} twice: {by_rank[rank]} and {path}")
        by_rank[rank] = path
    if not by_rank:
        raise DatasetError("no input states its rank")
    return dict(sorted(by_rank.items()))


class _Tool:
    """pyprof-prof runs whose warnings are passed on, prefixed by the input they concern."""

    def __init__(self):
        self._said: set[str] = set()  # each rank is read twice (records, reports): said once

    def __call__(self, args: list[str], about: str) -> None:
        try:
            err = _tools.run_checked("pyprof-prof", args)
        except _tools.ProfError as exc:
            raise DatasetError(f"{about}: {exc}") from exc
        for line in err.splitlines():
            if line.strip() and (said := f"{about}: {line}") not in self._said:
                self._said.add(said)
                print(said, file=sys.stderr)


def _rank_tables(tool: _Tool, path: str, rank: int, options: list[str], columns: list[str] | None,
                 reports: list[str], work: str) -> tuple:
    """One rank: its records as an Arrow table and each report's tables (pyprof._reports)."""
    folder = os.path.join(work, f"rank{rank}")
    os.mkdir(folder)
    records_json = os.path.join(folder, "records.json")
    tool([*options, "-c", ",".join(columns) if columns else "all", "--json", "-o",
          records_json, path], path)
    records = frames.records_table(records_json, columns)
    os.remove(records_json)
    rows = {}
    if reports:
        prefix = os.path.join(folder, "r")
        # Two formats make one file per report (PREFIX.REPORT.FORMAT); the text ones are dropped.
        tool([*options, "--report", ",".join(reports), "--formats", "json,text", "-o", prefix,
              path], path)
        for report in reports:
            rows[report] = _reports.read_file(f"{prefix}.{report}.json")
    shutil.rmtree(folder, ignore_errors=True)
    return records, rows


def _id_rows(tables) -> list[dict]:
    """The rows of report tables, each with its report and table ids first."""
    return [{"report": t.report, "table": t.id, **row} for t in tables for row in t.rows]


def _report_tables(tables_by_rank: dict[int, list], drop=()) -> dict:
    """{rank: Arrow table} of one report, each with the same columns and types: the columns and
    their types are decided over every rank's tables together, from their units."""
    every_table = [t for tables in tables_by_rank.values() for t in tables]
    rows_by_rank = {rank: _id_rows(tables) for rank, tables in tables_by_rank.items()}
    every = [row for rows in rows_by_rank.values() for row in rows]
    keys = ["report", "table"]
    if any("per-row" in t.units.values() for t in every_table):
        keys.append("unit")
    for t in every_table:
        keys += [c for c in t.columns if c not in keys and c not in drop]
    kinds = frames.column_kinds(every_table, every)
    return {rank: frames.rows_table(rows, keys, kinds) for rank, rows in rows_by_rank.items()}


def write(inputs: list[str], output: str, options: list[str], columns: list[str] | None,
          reports: list[str], jobs: int) -> int:
    """Writes the dataset; returns the exit status. options: prof's options for every run
    (--iterations, --no-tf32, --peaks, ...)."""
    from pyprof import __version__

    if "all" in reports:
        reports = per_rank_reports()
    reports = list(dict.fromkeys(r for r in reports if r != "ranks"))  # ranks: always written
    by_rank = ranks_of(expand_inputs(inputs))
    if os.path.exists(output) and not os.path.isdir(output):
        raise DatasetError(f"-o {output}: exists and is not a folder (with several inputs "
                           "--parquet writes a dataset folder)")
    parent = os.path.dirname(os.path.abspath(output))
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(output))}.", dir=parent)
    try:
        tool = _Tool()
        work = os.path.join(stage, ".work")
        os.mkdir(work)

        def meta(table: str, rank: int | None, report: str | None = None) -> dict:
            m = {"pyprof": __version__, "table": table}
            if report:
                m["report"] = report
            if rank is not None:
                m["rank"] = rank
                m["source"] = os.path.abspath(by_rank[rank])
            return m

        def one_rank(rank: int) -> dict:
            records, rows = _rank_tables(tool, by_rank[rank], rank, options, columns, reports,
                                         work)
            folder = os.path.join(stage, "records", f"rank={rank}")
            os.makedirs(folder)
            frames.write_table(records, os.path.join(folder, "part-0.parquet"),
                               meta("records", rank))
            return rows

        report_rows: dict[str, dict[int, list]] = {r: {} for r in reports}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {rank: pool.submit(one_rank, rank) for rank in by_rank}
            try:
                for rank, future in futures.items():
                    for report, rows in future.result().items():
                        report_rows[report][rank] = rows
            except BaseException:  # a failed rank, or a signal: no rank not yet started starts
                pool.shutdown(cancel_futures=True)
                raise

        # The cross-rank report, over the same files (one run; pyprof-prof reads them in
        # parallel itself).
        ranks_json = os.path.join(work, "ranks.json")
        tool([*options, "--report", "ranks", "--formats", "json", "-o", ranks_json,
              *by_rank.values()], "ranks report")
        per_step, per_rank = None, {rank: [] for rank in by_rank}
        for table in _reports.read_file(ranks_json):
            if table.id == _RANKS_PER_STEP_TABLE:
                per_step = table
                continue
            for rank in per_rank:  # each rank's share of the table, with the table's columns
                part = _reports.Table(table.report, table.id, table.title, table.columns,
                                      table.units, [r for r in table.rows if r.get("Rank") == rank])
                per_rank[rank].append(part)
        report_rows["ranks"] = per_rank

        for report, rows_by_rank in report_rows.items():
            drop = ("Rank",) if report == "ranks" else ()
            for rank, table in _report_tables(rows_by_rank, drop).items():
                folder = os.path.join(stage, report, f"rank={rank}")
                os.makedirs(folder)
                frames.write_table(table, os.path.join(folder, "part-0.parquet"),
                            meta("report", rank, report))
        os.makedirs(os.path.join(stage, "rank_steps"))
        step_rows = _id_rows([per_step] if per_step else [])
        steps = frames.rows_table(step_rows, ["report", "table", *(per_step.columns if per_step else [])],
                                  frames.column_kinds([per_step] if per_step else [], step_rows))
        frames.write_table(steps, os.path.join(stage, "rank_steps", "part-0.parquet"),
                    meta("report", None, "ranks"))
        shutil.rmtree(work)
        _commit(stage, output)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    tables = ["records", "ranks", "rank_steps", *reports]
    print(f"pyprof prof: {len(by_rank)} ranks ({', '.join(map(str, by_rank))}) written to "
          f"{output}: {', '.join(tables)}", file=sys.stderr)
    return 0


def _commit(stage: str, output: str) -> None:
    """Each table folder of the stage replaces DIR's folder of that name whole."""
    os.makedirs(output, exist_ok=True)
    for name in sorted(os.listdir(stage)):
        target = os.path.join(output, name)
        if os.path.lexists(target):
            old = tempfile.mkdtemp(prefix=f".{name}.old.", dir=output)
            os.replace(target, os.path.join(old, name))
            os.replace(os.path.join(stage, name), target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(os.path.join(stage, name), target)
