"""Report JSON that describes itself (docs/prof.md §3, "JSON"), and the Python front reading it
by ids and units.

On a real profile (DLProf's LeNet under nsys, tests/data) every table is one line naming its
report's id, its table's id (identifiers, never a title), its title and each column's unit,
followed by its rows, each with the same two ids; a cell without a value is null, the one
spelling (no "-", no "na"). The registry (`pyprof-prof --list-reports`) lists every report and
table id the JSON uses. pyprof/_units.py formats a quantity as prof's format_quantity does, on
the cases tests/data/format_quantity.json shares with prof/reports_test.cpp.
"""

import json
import math
import os

import pytest

import testlib
from pyprof import _reports, _units

LENET = os.path.join(testlib.DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")
CPU = os.path.join(testlib.DATA, "kineto_hta-cpu-only-gloo-rank34.json.gz")
IDENTIFIER = set("abcdefghijklmnopqrstuvwxyz_")


def registry() -> list[dict]:
    res = testlib.run_tool(testlib.PROF, "--list-reports")
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.fixture(scope="module", params=["gpu", "cpu"])
def report_all(request, tmp_path_factory):
    """(the registry, prof's `--report all` JSON, its tables and rows) of a real profile."""
    work = tmp_path_factory.mktemp(request.param)
    testlib.parse_to(LENET if request.param == "gpu" else CPU, work / "net.dict")
    res = testlib.run_tool(testlib.PROF, "--report", "all", "--formats", "json",
                           str(work / "net.dict"), timeout=120)
    assert res.returncode == 0, res.stderr
    return registry(), res.stdout, *testlib.report_json(res.stdout)


pytestmark = pytest.mark.needs_build


def test_registry_lists_ids_options_and_scope():
    reports = registry()
    ids = [r["report"] for r in reports]
    assert len(ids) == len(set(ids)) >= 16
    for r in reports:
        assert set(r) == {"report", "tables", "optional_tables", "options", "one_profile", "about"}
        assert set(r["optional_tables"]) <= set(r["tables"]), r
        assert set(r["report"]) <= IDENTIFIER and r["about"], r
        assert r["tables"] and all(set(t) <= IDENTIFIER for t in r["tables"]), r
        assert set(r["options"]) <= {"--top", "--depth", "--peaks"}, r
    by_id = {r["report"]: r for r in reports}
    assert by_id["iteration"]["tables"] == ["steps", "steady_state"]
    assert by_id["roofline"]["tables"] == ["op_types", "op_instances"]
    assert not by_id["ranks"]["one_profile"]
    assert [r for r in ids if by_id[r]["one_profile"]] == _reports.profile_reports()
    # --report's names are the registry's: an unknown one lists them in its error.
    res = testlib.run_tool(testlib.PROF, "--report", "nosuch", os.devnull)
    assert res.returncode != 0
    assert ", ".join(ids) in res.stderr


def test_every_table_names_its_ids_title_and_column_units(report_all):
    reports, _, tables, rows = report_all
    declared = {(r["report"], t) for r in reports for t in r["tables"]}
    # --report all: every report of one profile, in the registry's order, each table once; a
    # report whose tables are all optional (written only with rows: `unmodelled`; `memory` and
    # `memory_timeline`, which have none for a profile without memory lines, as these are) may
    # be absent.
    written = list(dict.fromkeys(t["report"] for t in tables))
    assert written == [r["report"] for r in reports if r["one_profile"]
                       and (r["report"] in written or set(r["tables"]) - set(r["optional_tables"]))]
    keys = [(t["report"], t["table"]) for t in tables]
    assert len(keys) == len(set(keys)) and set(keys) <= declared
    for t in tables:
        assert list(t) == ["report", "table", "title", "columns"], t
        assert set(t["table"]) <= IDENTIFIER, t
        assert t["title"] and t["title"] != t["table"] or t["report"] == "summary", t
        for c in t["columns"]:
            assert list(c) == ["name", "unit"] and c["unit"] in _units.UNITS, (t["table"], c)
    assert rows, "a real profile has rows"
    columns = {(t["report"], t["table"]): t["columns"] for t in tables}
    for row in rows:
        cols = columns[(row["report"], row["table"])]
        per_row = any(c["unit"] == "per-row" for c in cols)
        want = ["report", "table"] + (["unit"] if per_row else []) + [c["name"] for c in cols]
        assert list(row) == want, row


def test_cells_are_numbers_text_or_null(report_all):
    _, text, tables, rows = report_all
    assert '"-"' not in text and '"na"' not in text and '""' not in text.replace('"aten":""', "")
    units = {(t["report"], t["table"]): {c["name"]: c["unit"] for c in t["columns"]}
             for t in tables}
    nulls = numbers = 0
    for row in rows:
        for name, unit in units[(row["report"], row["table"])].items():
            value = row[name]
            if unit == "per-row":
                unit = row["unit"]
            if value is None:
                nulls += 1
            elif unit in _units.NUMERIC_UNITS:
                # A quantity is a JSON number, or text where JSON has none ("inf").
                assert isinstance(value, (int, float)) or value in ("inf", "-inf"), (name, value)
                numbers += 1
            else:
                assert isinstance(value, str), (name, value)
    assert numbers > 50 and nulls > 0


def test_text_columns_hold_no_number_and_ids_are_integers(report_all):
    _, _, tables, rows = report_all
    ids = {(t["report"], t["table"], c["name"]) for t in tables for c in t["columns"]
           if c["unit"] == "id"}
    for row in rows:
        for report, table, name in ids:
            if (row["report"], row["table"]) == (report, table) and row[name] is not None:
                assert isinstance(row[name], int), (table, name, row[name])


def test_python_reader_gives_tables_by_ids_and_units(report_all, tmp_path):
    _, text, tables, rows = report_all
    path = tmp_path / "all.json"
    path.write_text(text)
    read = _reports.by_key(_reports.read_file(str(path)))
    assert list(read) == [f"{t['report']}/{t['table']}" for t in tables]
    assert sum(len(t.rows) for t in read.values()) == len(rows)
    summary = read["summary/summary"]
    assert summary.units["Metric"] == "text" and summary.units["Value"] == "per-row"
    assert summary.unit("Value", summary.rows[0]) in _units.UNITS
    op = read["op/op"]
    assert op.units["Op"] == "text" and not op.numeric("Op")
    assert op.units["FLOPs(FMA=2)"] == "FLOPs" and op.numeric("FLOPs(FMA=2)")


def test_reader_refuses_json_without_ids(tmp_path):
    old = tmp_path / "old.json"
    old.write_text('{"report":"op","table":"op","Op":"aten::relu","Total(ns)":845}\n')
    with pytest.raises(_reports.ReportFormatError, match="before its table's line"):
        _reports.read_file(str(old))
    other = tmp_path / "other.json"
    other.write_text('{"Op":"aten::relu"}\n')
    with pytest.raises(_reports.ReportFormatError, match="no report and table ids"):
        _reports.read_file(str(other))


def test_python_format_quantity_is_prof_s():
    with open(os.path.join(testlib.DATA, "format_quantity.json"), encoding="utf-8") as f:
        cases = json.load(f)
    assert len(cases) > 40
    for case in cases:
        value = case["value"]
        if value == "inf":
            value = math.inf
        elif value == "nan":
            value = math.nan
        assert _units.format_quantity(value, case["unit"]) == case["text"], case


def test_python_format_quantity_matches_prof_text_on_a_real_profile(tmp_path):
    """Every time, FLOP and byte cell of the op report: the text report's cell (prof's C++) and
    pyprof._units on the JSON's number agree. (Rates are left out: JSON holds them with the
    CSV's fixed decimals, 2.80 GB/s, where the text report formats the unrounded 2.806.)"""
    testlib.parse_to(LENET, tmp_path / "net.dict")
    args = ["--report", "op", str(tmp_path / "net.dict")]
    res = testlib.run_tool(testlib.PROF, *args, "--formats", "json")
    assert res.returncode == 0, res.stderr
    (table,), rows = testlib.report_json(res.stdout)
    # The text report prints the human ones, a row a line (no width limit).
    text = testlib.run_tool(testlib.PROF, *args, "-w", "0").stdout.splitlines()
    header = text[1]
    checked = 0
    for c in table["columns"]:
        if c["unit"] not in ("ns", "FLOPs", "bytes"):
            continue
        for row, line in zip(rows, text[2:]):
            if row[c["name"]] is None:
                continue
            assert _units.format_quantity(row[c["name"]], c["unit"]) in line, (c, line, header)
            checked += 1
    assert checked > 20
