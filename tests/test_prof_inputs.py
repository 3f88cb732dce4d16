"""`pyprof prof` takes any input `pyprof parse` reads (issue 33), as report, diff and export do:
a database or a torch.profiler trace is parsed first into a temporary net.dict, and prof's
output is exactly what it prints for the net.dict that `pyprof parse` writes of it. Before,
`pyprof prof net.sqlite` said "no pyprof_dict header"."""

import os
import subprocess

import pytest

import testlib
from testlib import DATA, PY, pyprof_env

pytestmark = pytest.mark.needs_build

NSYS = os.path.join(DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")
KINETO = os.path.join(DATA, "kineto_hta-alexnet-a100.json.gz")


def pyprof(*args, env=None):
    return subprocess.run([PY, "-m", "pyprof", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=pyprof_env(env), cwd=testlib.ROOT)


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    """Each input's net.dict, written by pyprof parse itself."""
    folder = tmp_path_factory.mktemp("parsed")
    out = {}
    for name, source in (("nsys", NSYS), ("kineto", KINETO)):
        out[name] = folder / f"{name}.dict"
        testlib.parse_to(source, out[name])
    return out


@pytest.mark.parametrize("name,source", [("nsys", NSYS), ("kineto", KINETO)])
@pytest.mark.parametrize("args", [[], ["-c", "all", "--csv"],
                                  ["--report", "summary,op,module", "--formats", "json"]])
def test_prof_of_a_database_or_trace_is_prof_of_its_dict(name, source, args, parsed, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    direct = pyprof("prof", *args, source, env={"TMPDIR": str(tmp)})
    assert direct.returncode == 0, direct.stderr
    of_dict = pyprof("prof", *args, parsed[name])
    assert of_dict.returncode == 0, of_dict.stderr
    assert direct.stdout == of_dict.stdout and direct.stdout
    assert os.listdir(tmp) == []  # the temporary net.dict is gone


def test_prof_of_a_database_writes_its_files(parsed, tmp_path):
    """-o with several formats: the same files as from the net.dict."""
    assert pyprof("prof", NSYS, "--report", "op,tc", "--formats", "csv,json", "-o",
                  tmp_path / "db").returncode == 0
    assert pyprof("prof", parsed["nsys"], "--report", "op,tc", "--formats", "csv,json", "-o",
                  tmp_path / "dict").returncode == 0
    for suffix in ("op.csv", "op.json", "tc.csv", "tc.json"):
        assert (tmp_path / f"db.{suffix}").read_bytes() == \
            (tmp_path / f"dict.{suffix}").read_bytes(), suffix


def test_parquet_of_a_database_is_parquet_of_its_dict(parsed, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    assert pyprof("prof", "--parquet", "-o", tmp_path / "db.parquet", NSYS).returncode == 0
    assert pyprof("prof", "--parquet", "-o", tmp_path / "dict.parquet",
                  parsed["nsys"]).returncode == 0
    db, of_dict = pq.read_table(tmp_path / "db.parquet"), pq.read_table(tmp_path / "dict.parquet")
    assert db.num_rows > 0 and db.equals(of_dict)


def test_a_file_parse_cannot_read_is_named(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a profile\n")
    res = pyprof("prof", bad)
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip().splitlines()[-1] == \
        f"pyprof prof: error: {bad}: pyprof parse could not read it (above)", res.stderr
    assert "Traceback" not in res.stderr


def test_messages_name_the_input_not_the_temporary(tmp_path):
    """prof's messages about its input name the database the user gave."""
    res = pyprof("prof", "--report", "ranks", NSYS, NSYS)
    assert res.returncode == 1
    assert NSYS in res.stderr and "input0.dict" not in res.stderr, res.stderr
    assert "pyprof-prof-" not in res.stderr


def test_a_net_dict_and_a_stream_go_to_prof_untouched(parsed):
    """Only what is not a net.dict is parsed: standard input is read once, by pyprof-prof."""
    with open(parsed["nsys"], "rb") as f:
        piped = subprocess.run([PY, "-m", "pyprof", "prof", "-"], stdin=f, capture_output=True,
                               timeout=300, env=pyprof_env(), cwd=testlib.ROOT)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == pyprof("prof", parsed["nsys"]).stdout


@pytest.mark.parametrize("args,message", [
    (["prof", "nope.sqlite"], "pyprof prof: error: cannot open nope.sqlite: no such file"),
    (["export", "nope.sqlite", "-o", "t.json"],
     "pyprof export: error: cannot open nope.sqlite: no such file"),
    (["diff", NSYS, "nope.sqlite"],
     "pyprof diff: error: new: cannot open nope.sqlite: no such file"),
])
def test_a_missing_input_is_named_alike_by_every_front(args, message, tmp_path):
    """Before, diff of a missing database said `pyprof parse failed`, and each front its own."""
    res = subprocess.run([PY, "-m", "pyprof", *args], capture_output=True, text=True,
                         timeout=300, env=pyprof_env(), cwd=tmp_path)
    assert (res.returncode, res.stderr.strip()) == (1, message)
