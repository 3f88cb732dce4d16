"""User op models (docs/ops.md "Adding your own models") end to end.

A custom op registered with torch.library on the CPU (tests/scripts/user_op_models.py:
mylib::fused_gate(Tensor x, Tensor w, int repeats) on x [8, 32] and w [32, 16] float32, repeats
3), profiled with `pyprof profile` and with torch.profiler: pyprof has no model of it (na); with
`pyprof prof --op-models FILE` (or $PYPROF_OP_MODELS) it costs what the file's formulas give,
counted by hand; a bad file is an error naming its line; a call the formula cannot cost is na with
one warning for the op.
"""

from __future__ import annotations

import json

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("user_op_models.py")
OP = "mylib::fused_gate"

# x [8,32], w [32,16], out [8,16], repeats 3:
#   flops = 2*256*16 (x @ w) + 4*3*8*16 (3 gates of 4 FLOPs per element) = 8192 + 1536 = 9728
#   bytes = x 1024 + w 2048 + out 8*16*4 = 512 -> 3584
MODELS = """\
# mylib's ops (tests/scripts/user_op_models.py)
op mylib::fused_gate(x, w, repeats)
  flops = 2 * numel(x) * size(w, -1) + 4 * repeats * size(x, 0) * size(w, -1)
  bytes = nbytes(x) + nbytes(w) + size(x, 0) * size(w, -1) * itemsize(x)
  family = matmul
  dtype = x
"""
FLOPS, BYTES = 9728, 3584


@pytest.fixture(scope="module")
def pyprof_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user_op_models")
    res = pyprof_db.profile(tmp, SCRIPT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.dict"


@pytest.fixture(scope="module")
def kineto_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user_op_models_kineto")
    trace = tmp / "trace.json"
    res = testlib.run_tool(testlib.PY, SCRIPT, "--torch-profiler", trace, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(trace, tmp / "net.dict")
    return tmp / "net.dict"


@pytest.fixture
def models_file(tmp_path):
    path = tmp_path / "op_models.txt"
    path.write_text(MODELS)
    return path


def gate_records(dict_path, *args, check=True):
    """prof's JSON records of mylib::fused_gate, and prof's result."""
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", *map(str, args),
                       str(dict_path), check=check)
    records = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return [r for r in records if r.get("op") == OP], res


def test_without_a_models_file_the_op_is_na(pyprof_dict):
    gates, _ = gate_records(pyprof_dict)
    assert len(gates) == 2, gates  # two steps, one call each
    for r in gates:
        assert r["op_flops"] is None and r["op_bytes"] is None, r


@pytest.mark.parametrize("capture", ["pyprof_dict", "kineto_dict"])
def test_op_models_file_costs_the_op_by_hand(capture, models_file, request):
    dict_path = request.getfixturevalue(capture)
    gates, res = gate_records(dict_path, "--op-models", models_file)
    assert len(gates) == 2, gates
    for r in gates:
        assert (r["op_flops"], r["op_bytes"]) == (FLOPS, BYTES), r
        assert r["family"] == "matmul" and r["params"] == "user=op_models.txt:2", r
    assert "warning" not in res.stderr, res.stderr
    # pyprof capture names the arguments; torch.profiler's are positions ("0", "1", "2"), which
    # the op line's argument list maps.
    _, records = testlib.read_dict(dict_path)
    args = next(r for r in records if r["name"] == OP)["args"]
    assert list(args) == (["x", "w", "repeats"] if capture == "pyprof_dict" else ["0", "1", "2"])


def test_the_environment_names_a_default_file(pyprof_dict, models_file, monkeypatch):
    monkeypatch.setenv("PYPROF_OP_MODELS", str(models_file))
    gates, _ = gate_records(pyprof_dict)
    assert {(r["op_flops"], r["op_bytes"]) for r in gates} == {(FLOPS, BYTES)}


def test_a_call_the_formula_cannot_cost_is_na_said_once(pyprof_dict, tmp_path):
    # size(x, 2) of a 2-D x: both calls unmodelled, one warning for the op.
    path = tmp_path / "rank.txt"
    path.write_text("op mylib::fused_gate(x, w, repeats)\nflops = size(x, 2)\nbytes = nbytes(x)\n")
    gates, res = gate_records(pyprof_dict, "--op-models", path)
    assert [r["op_flops"] for r in gates] == [None, None], gates
    warnings = [line for line in res.stderr.splitlines() if OP in line and "warning" in line]
    assert len(warnings) == 1, res.stderr
    assert (f"2 records of {OP} that its user model cannot cost (first: line" in warnings[0]
            and f"{path}:1: flops: size(x, 2): 'x' has rank 2): not modelled (na)" in warnings[0]
            ), warnings[0]


def test_a_bad_file_is_an_error_naming_its_line(pyprof_dict, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text(MODELS.replace("size(w, -1) * itemsize(x)", "size(w, -1) * itemsiz(x)"))
    res = testlib.prof("--op-models", path, pyprof_dict, check=False)
    assert res.returncode == 2, res
    assert res.stderr == (
        f"pyprof prof: error: {path}:4: op {OP}: bytes: unknown function 'itemsiz' (did you mean "
        "'itemsize'?) (functions: numel, nbytes, itemsize, rank, size, min, max, ceil_div)\n")
    twice = tmp_path / "twice.txt"
    twice.write_text(MODELS + "\n" + MODELS)
    res = testlib.prof("--op-models", str(twice), "--op-models", str(path), pyprof_dict,
                       check=False)
    assert res.returncode == 2
    assert f"{twice}:9: op {OP} defined twice (first at {twice}:2)" in res.stderr, res.stderr
    res = testlib.prof("--op-models", tmp_path / "missing.txt", pyprof_dict, check=False)
    assert res.returncode == 2
    assert "cannot read op models file" in res.stderr and "missing.txt: no such file" in res.stderr


def test_a_user_model_replaces_pyprofs_with_one_note(pyprof_dict, tmp_path):
    # aten::mm ([8,32] x [32,16]) inside the custom op: pyprof's model 2*8*16*32 = 8192 FLOPs;
    # the file's says 7.
    _, records = testlib.read_dict(pyprof_dict)
    assert any(r["name"] == "aten::mm" for r in records)
    mm_before, _ = mm_flops(pyprof_dict)
    assert mm_before == {8192}
    path = tmp_path / "mm.txt"
    path.write_text("op aten::mm(self, mat2)\nflops = 7\nbytes = nbytes(self)\n")
    mm_after, res = mm_flops(pyprof_dict, "--op-models", path)
    assert mm_after == {7}
    assert res.stderr.count(
        f"pyprof prof: note: {path}:1: op aten::mm has a model in pyprof; this file's formulas "
        "replace it\n") == 1, res.stderr


def mm_flops(dict_path, *args):
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", *map(str, args),
                       str(dict_path))
    records = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return {r["op_flops"] for r in records if r.get("op") == "aten::mm"}, res


def test_help_names_the_option():
    res = testlib.prof("--help")
    assert "--op-models" in res.stdout and "PYPROF_OP_MODELS" in res.stdout


def test_parquet_passes_the_file_to_prof(kineto_dict, models_file, tmp_path):
    # `pyprof prof --parquet` runs pyprof-prof itself: --op-models and its FILE reach it (FILE is
    # not taken for a second input).
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "net.parquet"
    res = testlib.run_tool(testlib.PY, "-m", "pyprof", "prof", "--parquet", "--op-models",
                           models_file, "-o", out, kineto_dict)
    assert res.returncode == 0, res.stderr
    frame = pd.read_parquet(out)
    gates = frame[frame["op"] == OP]
    assert len(gates) == 2
    assert set(zip(gates["op_flops"], gates["op_bytes"])) == {(FLOPS, BYTES)}
