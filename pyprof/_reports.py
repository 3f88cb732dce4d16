"""prof's reports as the Python front reads them: the registry (`pyprof-prof --list-reports`)
and report JSON read by ids and units (docs/prof.md §3, "JSON").

A report JSON file is JSON Lines: each table is one line naming it,

    {"report": "iteration", "table": "steady_state", "title": "...",
     "columns": [{"name": "Metric", "unit": "text"}, {"name": "Median", "unit": "per-row"}, ...]}

then one line per row, with the same `report` and `table` (and `unit` where the table's units
are per row), its cells keyed by column name; `null` is a cell without a value. Nothing here
reads a title or guesses a unit from a header.
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass, field

from pyprof import _tools
from pyprof._units import NUMERIC_UNITS


class ReportFormatError(ValueError):
    """A report JSON file this front cannot read (not prof's, or from another pyprof)."""


@dataclass
class Table:
    report: str  # the report's id: "op", "iteration", ...
    id: str  # the table's id within it: "op", "steady_state", ...
    title: str  # for people; may hold data ("iterations (5 by ...)")
    columns: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)  # column -> unit (pyprof._units.UNITS)
    rows: list[dict] = field(default_factory=list)  # cells by column; per-row units in "unit"

    @property
    def key(self) -> str:
        """"report/table": one name for the table among several reports' ("iteration/steps")."""
        return f"{self.report}/{self.id}"

    def unit(self, column: str, row: dict | None = None) -> str:
        """The unit of `column` (in `row`, for a per-row column)."""
        unit = self.units.get(column, "text")
        if unit == "per-row" and row is not None:
            return row.get("unit") or "text"
        return unit

    def numeric(self, column: str) -> bool:
        return self.units.get(column) in NUMERIC_UNITS

    def value(self, metric: str, column: str = "Value", key: str = "Metric"):
        """The `column` cell of the row whose `key` cell is `metric` (a summary's metric); None
        when there is no such row."""
        for row in self.rows:
            if row.get(key) == metric:
                return row.get(column)
        return None


def read_tables(lines) -> list[Table]:
    """prof's or diff's report JSON (an iterable of lines) as its tables, in the order written.
    Raises ReportFormatError on a row before its table's line or a line that is not JSON."""
    tables: list[Table] = []
    by_key: dict[tuple[str, str], Table] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise ReportFormatError(f"line {number} is not JSON ({e})") from None
        if not isinstance(item, dict) or "report" not in item or "table" not in item:
            raise ReportFormatError(f"line {number} has no report and table ids: not a report "
                                    "of this pyprof's prof (docs/prof.md §3)")
        key = (item.pop("report"), item.pop("table"))
        if "columns" in item and "title" in item:
            table = Table(key[0], key[1], item["title"],
                          [c["name"] for c in item["columns"]],
                          {c["name"]: c["unit"] for c in item["columns"]})
            tables.append(table)
            by_key[key] = table
            continue
        if key not in by_key:
            raise ReportFormatError(f"line {number}: a row of {key[0]}/{key[1]} before its "
                                    "table's line")
        by_key[key].rows.append(item)
    return tables


def read_file(path: str) -> list[Table]:
    with open(path, encoding="utf-8") as f:
        return read_tables(f)


def by_key(tables: list[Table]) -> dict[str, Table]:
    """{"report/table": Table}."""
    return {t.key: t for t in tables}


@functools.lru_cache(maxsize=None)
def _registry(prof: str) -> tuple:
    res = subprocess.run([prof, "--list-reports"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        raise RuntimeError(f"{prof} --list-reports failed: {res.stderr.strip()}")
    return tuple(json.loads(line) for line in res.stdout.splitlines() if line.strip())


def registry() -> list[dict]:
    """Every report pyprof-prof makes, in order: {"report", "tables", "options", "one_profile",
    "about"} (prof/reports.cpp, report_registry())."""
    prof = _tools.tool_path("pyprof-prof")
    if why := _tools.missing_tool(prof):
        raise RuntimeError(why)
    return [dict(r) for r in _registry(prof)]


def profile_reports() -> list[str]:
    """The reports of one profile (`--report all`): every report but those comparing several
    profiles (ranks)."""
    return [r["report"] for r in registry() if r["one_profile"]]
