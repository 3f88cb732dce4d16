"""The docs' examples, column lists and help texts against what the tools print (issue 38: a new
user found docs/dataframes.md's pandas example printing 2.65 TFLOP/s on a 121 GFLOP/s CPU, its
column lists naming columns a CPU profile does not have, and `--help` lines of 478 characters).

Each docs table is parsed from the Markdown; each example is run on a real capture
(examples/train.py's LeNet under `pyprof profile`) or a real GPU trace (tests/data)."""

import io
import json
import os
import re
import subprocess
import unicodedata
from contextlib import redirect_stdout

import pytest

import pyprof_db
import testlib
from testlib import prof

pytestmark = pytest.mark.needs_build

DOCS = os.path.join(testlib.ROOT, "docs")
TRAIN = os.path.join(testlib.ROOT, "examples", "train.py")
MLP = os.path.join(testlib.DATA, "synthetic_mlp.nsys.sqlite")


def doc(name: str) -> str:
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return f.read()


def section(text: str, heading: str) -> str:
    """The text of the Markdown section whose heading starts with `heading`, up to the next
    heading of the same or a higher level (lines in fenced code blocks are no headings)."""
    lines = text.splitlines(keepends=True)
    out, level, fenced = None, 0, False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"(#+) (.*)", line)
        if out is None:
            if m and m.group(2).startswith(heading):
                out, level = [], len(m.group(1))
            continue
        if m and len(m.group(1)) <= level:
            break
        out.append(line)
    assert out is not None, heading
    return "".join(out)


def table_rows(text: str) -> list[list[str]]:
    """The cells of each row of the Markdown tables in `text` (header and rule lines left out)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows[1:] if rows else rows


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@pytest.fixture(scope="module")
def cpu_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docs_cpu")
    res = pyprof_db.profile(tmp, TRAIN, "--model", "lenet", "--steps", "4", "--batch", "4")
    assert res.returncode == 0, res.stderr
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.dict"


@pytest.fixture(scope="module")
def gpu_dict(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs_gpu") / "mlp.dict"
    testlib.parse_to(MLP, out)
    return out


# ---- help texts -------------------------------------------------------------------------------

def columns_of(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


@pytest.mark.parametrize("command", [
    ["pyprof-prof"], ["pyprof-parse"], ["pyprof-export"], ["pyprof-diff"], ["pyprof-profile"],
    ["-m", "pyprof"], ["-m", "pyprof", "prof"], ["-m", "pyprof", "profile"],
    ["-m", "pyprof", "report"],
    ["-m", "pyprof", "peak"], ["-m", "pyprof", "flop-table"]], ids=lambda c: " ".join(c))
def test_help_fits_80_columns(command):
    """Without a terminal and without $COLUMNS, every --help line fits 80 columns."""
    env = testlib.pyprof_env()
    env.pop("COLUMNS", None)
    args = [os.path.join(testlib.BIN, command[0])] if command[0].startswith("pyprof-") \
        else [testlib.PY, *command]
    res = subprocess.run([*args, "--help"], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) > 5
    wide = [line for line in lines if columns_of(line) > 80]
    assert not wide, wide
    # The wrapping follows $COLUMNS: nothing wider, and some lines wider than at 80.
    env["COLUMNS"] = "120"
    wider = subprocess.run([*args, "--help"], capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL, timeout=120).stdout.splitlines()
    assert max(map(columns_of, wider)) <= 120
    if command[0].startswith("pyprof-"):
        assert max(map(columns_of, wider)) > 80


def test_diff_help_says_what_docs_diff_md_says():
    text = testlib.run_tool(os.path.join(testlib.BIN, "pyprof-diff"), "--help").stdout
    flat = " ".join(text.split())
    assert "q-value" in flat and "< alpha" in flat and "p < alpha" not in flat
    assert "a row is significant when q < α" in " ".join(doc("diff.md").split())
    assert "database" in flat  # BASE and NEW: net.dicts or anything parse reads


def test_every_report_is_documented():
    res = prof("--report", "nope", "-", stdin="", check=False)
    names = re.search(r"\(reports: ([^)]*)\)", res.stderr).group(1).split(", ")
    assert "marks" in names and names[-1] == "all"
    documented = {ticked(row[0])[0] for row in table_rows(section(doc("prof.md"), "3. Reports"))
                  if row and ticked(row[0])}
    readme = open(os.path.join(testlib.ROOT, "README.md"), encoding="utf-8").read()
    cost_row = next(line for line in readme.splitlines() if line.startswith("| cost |"))
    # Report ids are lower case with underscores (memory_timeline).
    listed = re.search(r"--report ([a-z_,]+)", cost_row).group(1).split(",")
    for name in names[:-1]:
        assert name in documented, f"docs/prof.md §3 lacks report {name}"
        assert name in listed, f"README's cost row lacks report {name}"


# ---- column lists -----------------------------------------------------------------------------

def test_prof_md_columns_are_prof_columns(gpu_dict):
    keys = []
    for row in table_rows(section(doc("prof.md"), "2. Columns")):
        keys += [k.strip() for k in row[0].split(",")]
    record = json.loads(prof("--json", "-c", "all", gpu_dict).stdout.splitlines()[0])
    assert keys == list(record)


def test_dataframes_md_record_columns_are_read_dicts(cpu_dict):
    pytest.importorskip("pandas")
    import pyprof
    from pyprof import frames

    rows = table_rows(section(doc("dataframes.md"), "2. The records frame"))
    documented = {}
    for row in rows:
        for key in ticked(row[0]):
            documented[key] = row[1]
    assert list(documented) == list(frames.RECORD_COLUMNS)
    kinds = {"int64": "int", "Int64": "int", "float64": "float", "Float64": "float",
             "string": "str"}
    for key, dtype in documented.items():
        assert kinds[dtype] == frames.RECORD_COLUMNS[key], key
    frame = pyprof.read_dict(cpu_dict)
    for key, dtype in documented.items():
        # The table gives a typical CPU or GPU profile's dtype: nullable where it can be null.
        assert kinds[str(frame[key].dtype)] == kinds[dtype], (key, frame[key].dtype)


@pytest.mark.parametrize("profile", ["gpu", "cpu"])
def test_dataframes_md_report_columns_are_read_reports(profile, cpu_dict, gpu_dict):
    pytest.importorskip("pandas")
    import pyprof

    path = gpu_dict if profile == "gpu" else cpu_dict
    rows = table_rows(section(doc("dataframes.md"), "3. Report frames"))
    assert {ticked(r[0])[0] for r in rows} == {"summary", "op", "instance", "kernel", "module",
                                                "tc"}
    checked = 0
    for row in rows:
        name = ticked(row[0])[0]
        gpu_columns = ticked(row[2])
        columns = gpu_columns if profile == "gpu" or row[3].startswith("the same") \
            else ticked(row[3])
        frame = pyprof.read_report(path, name)
        if frame.empty and not len(frame.columns):
            continue  # a report without rows (no modules in the GPU trace, no kernels on a CPU)
        assert list(frame.columns) == columns, (name, profile)
        checked += 1
    assert checked >= 4
    ops = pyprof.read_report(path, "op")
    kinds = {kind for value in ops["Modeled"].dropna() for kind in value.split("/")}
    prose = " ".join(section(doc("dataframes.md"), "3. Report frames").split())
    for kind in kinds:
        assert f"`{kind}`" in prose, kind


def text(value):
    """A string cell, or None for pandas' NA (which compares as neither true nor false)."""
    return value if isinstance(value, str) else None


# ---- the pandas example -----------------------------------------------------------------------

def test_dataframes_md_pandas_example_prints_what_the_op_report_says(cpu_dict, gpu_dict):
    """docs/dataframes.md §5's pandas block, run as written on a CPU capture and a GPU trace:
    its per-op time is the op report's time column and its rate the op report's TFLOP/s."""
    pytest.importorskip("pandas")
    block = re.search(r"```python\n(.*?)```", section(doc("dataframes.md"), "5. Examples"),
                      re.S).group(1)
    for path, time_column in ((cpu_dict, "Self(ns)"), (gpu_dict, "Total(ns)")):
        scope: dict = {}
        out = io.StringIO()
        with redirect_stdout(out):
            exec(block.replace('"net.dict"', repr(str(path))), scope)  # noqa: S102
        by_op = scope["by_op"]
        ops = scope["ops"]
        assert "tflops" in out.getvalue()
        checked = 0
        for _, row in ops.iterrows():
            key = (text(row["Op"]), text(row["Direction"]) if row["Direction"] != "-" else None)
            match = [v for k, v in by_op.iterrows() if (text(k[0]), text(k[1])) == key]
            if not match:
                continue
            (mine,) = match
            assert int(mine["time_ns"]) == int(row[time_column]), key
            import pandas as pd

            if pd.notna(row["TFLOP/s"]) and pd.notna(mine["counted_ns"]) and \
                    mine["counted_ns"] > 0:
                assert float(mine["tflops"]) == pytest.approx(float(row["TFLOP/s"]), rel=5e-3,
                                                              abs=5e-4), key
                checked += 1
        assert checked > 0


# ---- the HTML roofline ------------------------------------------------------------------------

def test_roofline_axes_use_si_prefixes(cpu_dict, tmp_path):
    """Plotly's default log-axis labels read 10 GFLOP/s as "10B" (billions)."""
    page = tmp_path / "lenet.html"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "report", str(cpu_dict), "-o", str(page)],
                         capture_output=True, text=True, env=testlib.pyprof_env(), timeout=300)
    if res.returncode != 0 and "pandas" in res.stderr:
        pytest.skip("pyprof report needs its dependencies")
    assert res.returncode == 0, res.stderr
    html = page.read_text(encoding="utf-8")
    axes = re.findall(r'"([xy])axis":\{"type":"log","title":\{[^}]*\},"exponentformat":"SI"', html)
    assert sorted(axes) == ["x", "y"], axes
