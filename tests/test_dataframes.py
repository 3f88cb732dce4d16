"""pyprof.read_dict / read_report (pandas) and `pyprof prof --parquet` / `--formats ...,parquet`.

Inputs: a real CPU capture (examples/train.py lenet under `pyprof profile`) and real GPU traces
(the synthetic MLP nsys database, which has FLOPs, and the Kineto A100 AlexNet trace, which has
devices and nulls in most columns). The oracles are prof's own CSV output read with the csv
module, its JSON read with the json module, and its summary report; the frames and Parquet files
are made by pyprof/frames.py and pyprof/parquet.py from prof's JSON, so the CSV comparison is
the independent one.
"""

import csv
import io
import json
import math
import os
import subprocess
import sys

import pytest

import pyprof_db
import testlib

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import pyprof  # noqa: E402
from pyprof import frames, parquet  # noqa: E402

pytestmark = pytest.mark.needs_build

TRAIN = os.path.join(testlib.ROOT, "examples", "train.py")
MLP = os.path.join(testlib.DATA, "synthetic_mlp.nsys.sqlite")
KINETO = os.path.join(testlib.DATA, "kineto_hta-alexnet-a100.json.gz")
REPORTS = ["summary", "op", "instance", "kernel", "module", "tc"]
# Reports with no rows: the MLP database and the Kineto trace name no modules, a CPU capture has
# no kernels, the Kineto trace has no shapes (so no Tensor Core eligible op).
EMPTY_REPORTS = {("mlp", "module"), ("kineto", "module"), ("lenet", "tc"), ("kineto", "tc")}


@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    """A real CPU capture: (database, net.dict)."""
    tmp = tmp_path_factory.mktemp("lenet")
    res = pyprof_db.profile(tmp, TRAIN, "--model", "lenet", "--steps", "2", "--batch", "4")
    assert res.returncode == 0, res.stderr
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.sqlite", tmp / "net.dict"


@pytest.fixture(scope="module")
def dicts(lenet, tmp_path_factory):
    """{name: net.dict} of the three inputs."""
    tmp = tmp_path_factory.mktemp("dicts")
    out = {"lenet": lenet[1]}
    for name, trace in (("mlp", MLP), ("kineto", KINETO)):
        testlib.parse_to(trace, tmp / f"{name}.dict")
        out[name] = tmp / f"{name}.dict"
    return out


INPUTS = ["lenet", "mlp", "kineto"]


def prof_json(*args) -> list[dict]:
    """prof's JSON: the records (--json), or a report's rows, each with its report and table
    ids (testlib.report_rows)."""
    out = testlib.prof(*args).stdout
    if "--report" in args:
        return testlib.report_rows(out)
    return [json.loads(line) for line in out.splitlines() if line]


def report_units(*args) -> dict[str, str]:
    """{column: unit} over the tables of a report's JSON, the ids "report", "table" and a
    per-row table's "unit" as text."""
    tables, _ = testlib.report_json(testlib.prof(*args).stdout)
    units = {"report": "text", "table": "text", "unit": "text"}
    for t in tables:
        units.update({c["name"]: c["unit"] for c in t["columns"]})
    return units


def prof_csv(*args) -> list[list[str]]:
    return list(csv.reader(io.StringIO(testlib.prof("--csv", *args).stdout)))


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """`python -m pyprof prof ARGS` (the Python front, where Parquet is written)."""
    return subprocess.run([testlib.PY, "-m", "pyprof", "prof", *map(str, args)],
                          capture_output=True, text=True, env=testlib.pyprof_env(), cwd=cwd,
                          timeout=120)


def is_null(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


# ---- the records frame --------------------------------------------------------------------

@pytest.mark.parametrize("name", INPUTS)
def test_records_frame_equals_prof_csv_cell_by_cell(dicts, name):
    frame = pyprof.read_dict(dicts[name])
    rows = prof_csv("-c", "all", "--all-records", dicts[name])
    header, rows = rows[0], rows[1:]
    assert list(frame.columns) == list(frames.RECORD_COLUMNS)
    assert len(header) == len(frame.columns) and len(rows) == len(frame) > 0
    for i, row in enumerate(rows):
        for key, text in zip(frame.columns, row):
            value = frame.at[i, key]
            kind = frames.RECORD_COLUMNS[key]
            if text in ("-", "na"):
                assert is_null(value), (i, key, text, value)
            elif kind == "int":
                assert not is_null(value) and int(value) == int(text), (i, key, text, value)
            elif kind == "float":
                assert not is_null(value) and float(value) == float(text), (i, key, text, value)
            else:
                assert value == text, (i, key, text, value)


@pytest.mark.parametrize("name", INPUTS)
def test_dtypes_int64_unless_null(dicts, name):
    frame = pyprof.read_dict(dicts[name])
    for key, kind in frames.RECORD_COLUMNS.items():
        has_null = bool(frame[key].isna().any())
        expected = {"int": "Int64" if has_null else "int64",
                    "float": "Float64" if has_null else "float64", "str": "string"}[kind]
        assert str(frame[key].dtype) == expected, (key, frame[key].dtype)
    assert frame["idx"].tolist() == list(range(1, len(frame) + 1))


def test_cpu_capture_nulls_and_known_values(dicts):
    frame = pyprof.read_dict(dicts["lenet"])
    # A CPU capture has no devices, streams, grids, Tensor Core verdicts: all nulls.
    for key in ("device", "stream", "grid", "block", "tc", "altseq"):
        assert frame[key].isna().all(), key
    conv = frame[frame["op"] == "aten::conv2d"].iloc[0]
    # LeNet's conv1 on a batch of 4: 6 filters 5x5 over 1x28x28 (padding 2): 2*4*6*28*28*25.
    assert conv["op_flops"] == 2 * 4 * 6 * 28 * 28 * 25
    assert conv["module"] == "LeNet.conv1" and conv["dtype"] == "float32"


def test_input_parsed_first_equals_dict(lenet, dicts):
    """A database (or trace) given to read_dict is parsed first: the same frame."""
    pd.testing.assert_frame_equal(pyprof.read_dict(lenet[0]), pyprof.read_dict(dicts["lenet"]))
    pd.testing.assert_frame_equal(pyprof.read_dict(KINETO), pyprof.read_dict(dicts["kineto"]))


@pytest.mark.parametrize("name", INPUTS)
def test_sums_equal_summary(dicts, name):
    # Every record, those the iteration selection leaves out of the reports marked selected 0.
    every = pyprof.read_dict(dicts[name])
    assert len(every) == len(testlib.read_dict(dicts[name])[1])
    frame = every[every["selected"] == 1].reset_index(drop=True)
    selected_only = pyprof.read_dict(dicts[name], all_records=False)
    assert selected_only["kernel"].fillna("").tolist() == frame["kernel"].fillna("").tolist()
    summary = pyprof.read_report(dicts[name], "summary")
    values = dict(zip(summary["Metric"], summary["Value"]))
    counted = frame[frame["flag"].isna()]
    # Each record holds its share of its op instance's cost, rounded: the sums may differ from
    # the summary's exact totals by half a unit per record that has a share.
    for key, metric in (("flops", "FLOPs (FMA=2)"), ("bytes", "bytes (ideal DRAM)")):
        shares = int((counted[key] > 0).sum())
        assert abs(int(counted[key].sum()) - int(values[metric])) <= shares / 2 + 1e-9, key
    if values["profile"].startswith("CPU"):
        assert int(frame["sil"].sum()) == int(values["op self time (ns)"])
    else:
        kernels = frame[~frame["family"].isin(["memcpy", "memset"]).fillna(False)]
        assert int(kernels["duration"].sum()) == int(values["kernel time (ns)"])
    assert int(values["records"]) == len(frame)
    if name != "kineto":
        assert int(values["FLOPs (FMA=2)"]) > 0  # the check above compared real numbers


def test_json_fallback_reader_agrees(dicts, tmp_path):
    """The json-module reader (taken when Arrow's refuses a line) gives the same table."""
    for name in INPUTS:
        out = tmp_path / f"{name}.json"
        out.write_text(testlib.prof("--json", "-c", "all", dicts[name]).stdout)
        fast = frames.records_table(str(out))
        slow = frames._records_table_by_json(str(out), frames.records_schema())
        assert fast.equals(slow), name


def test_options_pass_through(dicts):
    """no_tf32=True is --no-tf32: the MLP's fp16 GEMMs stay eligible, and the frame equals
    prof's own output with the option."""
    frame = pyprof.read_dict(dicts["mlp"], no_tf32=True)
    rows = prof_json("--json", "-c", "all", "--no-tf32", dicts["mlp"])
    assert frame["tc_eligible"].tolist() == [r["tc_eligible"] for r in rows]
    assert frames.option_args({"depth": 2, "no_tf32": True, "peaks": "p.json", "x": False}) == \
        ["--depth", "2", "--no-tf32", "--peaks", "p.json"]


# ---- reports ------------------------------------------------------------------------------

def report_cell(value, unit):
    """A report JSON cell as a Parquet file holds it: a number in a text or per-row column (the
    summary's values) as its JSON text, so that the column is one type."""
    if unit in ("text", "per-row") and value is not None and not isinstance(value, str):
        return json.dumps(value)
    return value


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("report", REPORTS)
def test_report_frame_equals_json(dicts, name, report):
    frame = pyprof.read_report(dicts[name], report)
    rows = prof_json("--report", report, "--formats", "json", dicts[name])
    assert len(frame) == len(rows)
    if not rows:
        assert (name, report) in EMPTY_REPORTS and frame.empty
        return
    tables, _ = testlib.report_json(testlib.prof("--report", report, "--formats", "json",
                                                 dicts[name]).stdout)
    assert (frame.attrs["report"], frame.attrs["table"], frame.attrs["title"]) == (
        report, tables[0]["table"], tables[0]["title"])
    assert frame.attrs["units"] == {c["name"]: c["unit"] for c in tables[0]["columns"]}
    assert list(frame.columns) == [k for k in rows[0] if k not in ("report", "table")]
    for i, row in enumerate(rows):
        for key in frame.columns:
            value, cell = frame.at[i, key], row[key]
            if is_null(value):
                assert cell is None, (i, key, cell)
            else:
                # The summary's values (per-row units) are one string column, as in Parquet.
                unit = frame.attrs["units"].get(key, "text")
                assert value == report_cell(cell, unit), (i, key, cell, value)


def test_report_numeric_columns(dicts):
    ops = pyprof.read_report(dicts["kineto"], "op")
    assert str(ops["Total(ns)"].dtype) == "int64"
    # Ops without counted time have no rate: `null` in prof's JSON, NA here.
    assert str(ops["TFLOP/s"].dtype) == "Float64"
    copy = ops[ops["Op"] == "aten::copy_"].iloc[0]
    assert copy["Total(ns)"] == 55503000 and copy["GB/s"] == pytest.approx(4.4)
    assert ops["TFLOP/s"].isna().sum() == sum(
        r["TFLOP/s"] is None for r in prof_json("--report", "op", "--formats", "json",
                                                dicts["kineto"]))
    # The one op instance without a sequence number: null in prof's JSON, NA in an Int64 column.
    inst = pyprof.read_report(dicts["kineto"], "instance")
    assert str(inst["Seq"].dtype) == "Int64" and inst["Seq"].isna().sum() == 1


def test_report_options_pass_through(dicts):
    full = pyprof.read_report(dicts["lenet"], "module")
    top = pyprof.read_report(dicts["lenet"], "module", depth=1)
    rows = prof_json("--report", "module", "--formats", "json", "--depth", "1", dicts["lenet"])
    assert len(top) == len(rows) < len(full)


# ---- Parquet ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", INPUTS)
def test_records_parquet_equals_json(dicts, name, tmp_path):
    out = tmp_path / "records.parquet"
    res = cli("--parquet", "-o", out, dicts[name])
    assert res.returncode == 0, res.stderr
    table = pq.read_table(out)
    rows = prof_json("--json", "-c", "all", dicts[name])
    assert table.column_names == list(rows[0])
    for key, kind in frames.RECORD_COLUMNS.items():
        assert table.schema.field(key).type == {"int": pa.int64(), "float": pa.float64(),
                                                "str": pa.string()}[kind], key
    expected = [{k: (int(v) if k == "seq" and v is not None else v) for k, v in row.items()}
                for row in rows]
    assert table.to_pylist() == expected
    # Nulls are Parquet nulls, as many as prof's JSON has.
    for key in table.column_names:
        assert table.column(key).null_count == sum(row[key] is None for row in rows), key
    # The frame read from the Parquet file equals read_dict's.
    pd.testing.assert_frame_equal(frames.to_frame(table), pyprof.read_dict(dicts[name]))


def test_records_parquet_from_standard_input(dicts, tmp_path):
    out = tmp_path / "stdin.parquet"
    with open(dicts["mlp"]) as f:
        res = subprocess.run([testlib.PY, "-m", "pyprof", "prof", "--parquet", "-o", str(out),
                              "-"], stdin=f, capture_output=True, text=True,
                             env=testlib.pyprof_env(), timeout=120)
    assert res.returncode == 0, res.stderr
    pd.testing.assert_frame_equal(frames.to_frame(pq.read_table(out)),
                                  pyprof.read_dict(dicts["mlp"]))


def test_records_parquet_selected_columns(dicts, tmp_path):
    out = tmp_path / "some.parquet"
    res = cli("--parquet", "-c", "op,flops,tflops,device", "-o", out, dicts["kineto"])
    assert res.returncode == 0, res.stderr
    table = pq.read_table(out)
    assert table.column_names == ["op", "flops", "tflops", "device"]
    rows = prof_json("--json", "-c", "op,flops,tflops,device", dicts["kineto"])
    assert table.to_pylist() == rows


def test_report_parquet_and_csv(dicts, tmp_path):
    prefix = tmp_path / "out" / "net"
    prefix.parent.mkdir()
    res = cli("--report", "op,summary,kernel,instance", "--formats", "csv,parquet", "-o", prefix,
              dicts["kineto"])
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(prefix.parent)) == sorted(
        f"net.{r}.{f}" for r in ("op", "summary", "kernel", "instance") for f in ("csv", "parquet"))
    for report in ("op", "summary", "kernel", "instance"):
        # The CSV is prof's own, byte for byte.
        with open(f"{prefix}.{report}.csv") as f:
            assert f.read() == testlib.prof("--report", report, "--formats", "csv",
                                            dicts["kineto"]).stdout
        rows = prof_json("--report", report, "--formats", "json", dicts["kineto"])
        units = report_units("--report", report, "--formats", "json", dicts["kineto"])
        table = pq.read_table(f"{prefix}.{report}.parquet")
        assert table.column_names == list(rows[0])
        assert table.to_pylist() == [{k: report_cell(v, units[k]) for k, v in r.items()}
                                     for r in rows]
    # One op instance of the trace has no sequence number: its Seq is null in the JSON (an id
    # column), a null here; and rates without counted time are null.
    inst = pq.read_table(f"{prefix}.instance.parquet")
    assert inst.schema.field("Seq").type == pa.int64()
    assert inst.column("Seq").null_count == 1
    ops = pq.read_table(f"{prefix}.op.parquet")
    assert ops.schema.field("TFLOP/s").type == pa.float64()
    assert ops.column("TFLOP/s").null_count >= 1
    # Only parquet: still PREFIX.REPORT.parquet.
    res = cli("--report", "tc", "--formats", "parquet", "-o", tmp_path / "only", dicts["mlp"])
    assert res.returncode == 0, res.stderr
    assert pq.read_table(tmp_path / "only.tc.parquet").num_rows == len(
        prof_json("--report", "tc", "--formats", "json", dicts["mlp"]))
    assert not (tmp_path / "only.tc.text").exists() and not (tmp_path / "only.tc.json").exists()


def test_parquet_overwrite_keeps_permissions_and_links(dicts, tmp_path):
    target = tmp_path / "target.parquet"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.parquet"
    link.symlink_to(target)
    res = cli("--parquet", "-o", link, dicts["mlp"])
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and pq.read_table(target).num_rows == 7
    assert os.stat(target).st_mode & 0o777 == 0o640


# ---- errors and incomplete output ---------------------------------------------------------

def test_broken_input_raises_tool_message(tmp_path):
    broken = tmp_path / "broken.dict"
    broken.write_bytes(b"\x00\x01 not a trace at all")
    with pytest.raises(pyprof.ProfError, match="not an SQLite database") as info:
        pyprof.read_dict(broken)
    assert info.value.returncode == 1
    with pytest.raises(FileNotFoundError):
        pyprof.read_report(tmp_path / "missing.dict", "op")


def test_bad_options_raise_tool_message(dicts):
    with pytest.raises(pyprof.ProfError, match="unknown report 'nope'") as info:
        pyprof.read_report(dicts["mlp"], "nope")
    assert info.value.returncode == 2
    with pytest.raises(pyprof.ProfError, match="depth"):
        pyprof.read_report(dicts["mlp"], "module", depth=-1)
    with pytest.raises(ValueError):
        pyprof.read_report(dicts["mlp"], "op,kernel")


def test_prof_warnings_become_python_warnings(dicts, tmp_path):
    """A record with an impossible time: prof warns, read_dict passes it on as ProfWarning and
    the record's flag says bad-time."""
    with open(dicts["mlp"]) as f:
        lines = f.read().splitlines()
    # The first record: the compact form's `args` lines come before it (docs/formats.md §3).
    at = next(i for i, line in enumerate(lines[1:], 1) if not line.startswith('{"kind":"args",'))
    first = json.loads(lines[at])
    first["duration"] = -7
    path = tmp_path / "bad.dict"
    path.write_text("\n".join([*lines[:at], json.dumps(first), *lines[at + 1:]]) + "\n")
    with pytest.warns(frames.ProfWarning, match="cannot be right"):
        frame = pyprof.read_dict(path)
    assert frame.at[0, "flag"] == "bad-time"


def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith("."))


def test_cli_failure_leaves_nothing(tmp_path):
    out = tmp_path / "x.parquet"
    res = cli("--parquet", "-o", out, tmp_path / "missing.dict")
    assert res.returncode == 1 and "missing.dict" in res.stderr
    assert not out.exists() and leftovers(tmp_path) == []
    out.write_text("older")
    res = cli("--report", "op", "--formats", "csv,parquet", "-o", tmp_path / "p", tmp_path / "no")
    assert res.returncode == 1 and leftovers(tmp_path) == []
    assert out.read_text() == "older" and not (tmp_path / "p.op.csv").exists()


def test_write_failure_leaves_nothing(dicts, tmp_path, monkeypatch, capsys):
    """The Parquet writer fails halfway (a full disk): no file of the command is left, not even
    the CSV prof wrote, and an older file stays as it was."""
    def failing_write(table, path, metadata):
        with open(path, "wb") as f:
            f.write(b"PAR1 partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(frames, "write_table", failing_write)  # the writer parquet.py calls
    older = tmp_path / "net.op.parquet"
    older.write_text("older")
    status = parquet.prof_command(["--report", "op,kernel", "--formats", "csv,parquet", "-o",
                                   str(tmp_path / "net"), str(dicts["mlp"])])
    assert status == 1
    assert "writing" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["net.op.parquet"] and older.read_text() == "older"
    status = parquet.prof_command(["--parquet", "-o", str(tmp_path / "r.parquet"),
                                   str(dicts["mlp"])])
    assert status == 1 and sorted(os.listdir(tmp_path)) == ["net.op.parquet"]


@pytest.mark.parametrize("args, message", [
    (["--parquet", "IN"], "--parquet needs -o FILE"),
    (["--parquet", "--csv", "-o", "x", "IN"], "mutually exclusive"),
    (["--parquet", "--report", "op", "-o", "x", "IN"], "--formats"),
    (["--formats", "parquet", "-o", "x", "IN"], "--formats applies to --report"),
    (["--report", "op", "--formats", "parquet", "IN"], "needs -o PREFIX"),
    (["--report", "op", "--formats", "parquet,xml", "-o", "x", "IN"], "unknown format 'xml'"),
    (["--parquet", "-c", "op,op", "-o", "x", "IN"], "named twice"),
    (["--parquet", "-o", "-", "IN"], "not written to standard output"),
])
def test_usage_errors(dicts, tmp_path, args, message):
    args = [str(dicts["mlp"]) if a == "IN" else a for a in args]
    res = cli(*args, cwd=tmp_path)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert os.listdir(tmp_path) == []


def test_help_lists_parquet():
    res = cli("--help")
    assert res.returncode == 0
    assert "--report" in res.stdout and "--parquet" in res.stdout and "PREFIX.REPORT.parquet" \
        in res.stdout


def test_import_pyprof_stays_light():
    """`import pyprof` (and the prof command's dispatch) imports neither pandas nor pyarrow."""
    code = ("import sys, pyprof, pyprof.cli, pyprof.parquet; pyprof.read_dict; "
            "print(sorted(m for m in ('pandas', 'pyarrow', 'torch') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=testlib.pyprof_env(), timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
