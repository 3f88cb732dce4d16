"""prof's output formats, pinned: the default columns, -w, CSV quoting, JSON, reports, and the
comparison with legacy PyProf's prof on the same synthetic MLP database."""

import csv
import io
import json
import os

import pytest

from testlib import DATA, parse_to, prof, report_rows

pytestmark = pytest.mark.needs_build


@pytest.fixture(scope="module")
def mlp_dict(tmp_path_factory):
    out = tmp_path_factory.mktemp("mlp") / "mlp.dict"
    parse_to(os.path.join(DATA, "synthetic_mlp.nsys.sqlite"), out, timeout=60)
    return out


def test_default_columns(mlp_dict):
    assert prof(mlp_dict).stdout == (
        "Idx Direction Sub Module Op Kernel Params Sil(ns)\n"
        "1 fprop 0 torch.nn.functional linear volta_h884gemm_64x64_ldg8_nn M=32,N=256,K=128,fp16 1000\n"
        "2 fprop 0 torch.nn.functional relu vectorized_elementwise_kernel [32,256]fp16 400\n"
        "3 fprop 0 torch sum reduce_kernel [32,256]fp16,all 400\n"
        "4 bprop 0 torch.nn.functional relu vectorized_elementwise_kernel [32,256]fp16,bwd=est 400\n"
        "5 bprop 0 torch.nn.functional linear volta_h884gemm_64x64_ldg8_nt M=32,N=256,K=128,fp16,bwd=est 1000\n"
        "6 bprop 1 torch.nn.functional linear volta_h884gemm_64x64_ldg8_tn M=32,N=256,K=128,fp16,bwd=est 1000\n"
        "7 bprop 2 torch.nn.functional linear reduce_kernel M=32,N=256,K=128,fp16,bwd=est 300\n")


def test_fixed_width(mlp_dict):
    """The layout of PyProf's `prof -w 150` (synthetic_mlp.nsys.pyprof.w150.txt): the header
    line is identical; rows differ only in Params (PyProf's M/N swap and trailing comma)."""
    lines = prof("-w", 150, mlp_dict).stdout.splitlines()
    with open(os.path.join(DATA, "synthetic_mlp.nsys.pyprof.w150.txt")) as f:
        theirs = f.read().splitlines()
    assert lines[0] == theirs[0]
    assert {len(line) for line in lines} == {len(line) for line in theirs} == {157}
    for ours_line, their_line in zip(lines[1:7], theirs[1:7]):
        assert ours_line[:87] == their_line[:87]  # Idx .. Kernel
        assert ours_line[-12:] == their_line[-12:]  # Sil(ns)
    # Kernel 7, the bias gradient: PyProf called its op "bias" and numbered it sub 0; for us it
    # is the third kernel (sub 2) of the linear's backward node.
    assert lines[7][:33] == "      7 bprop   2 torch.nn.functi"
    assert theirs[7][:33] == "      7 bprop   0 torch.nn.functi"
    assert lines[7][34:].startswith("linear ") and theirs[7][34:].startswith("bias ")
    res = prof("-w", 60, mlp_dict, check=False)
    assert res.returncode == 2 and "too narrow" in res.stderr


def test_csv_quoting_and_all_columns(mlp_dict):
    text = prof("--csv", "-c", "all", mlp_dict).stdout
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:20] == ["Idx", "SeqId", "AltSeqId", "TId", "Layer", "Trace", "Direction",
                            "Sub", "Module", "Op", "Kernel", "Params", "Sil(ns)", "TC", "Device",
                            "Stream", "Grid", "Block", "FLOPs(FMA=2)", "Bytes(ideal DRAM)"]
    assert all(len(r) == len(rows[0]) for r in rows)
    assert text.splitlines()[1].startswith('"1","10","-","4242","MLP"')
    # A name with a quote and a comma survives the round trip.
    header = '{"pyprof_dict":1,"source":"x","format":"nsys","records":"gpu"}\n'
    rec = {"kind": "kernel", "name": 'we"ird,name', "long_name": 'we"ird,name', "op": None,
           "dir": None, "duration": 5, "start": 0}
    out = prof("--csv", "-c", "kernel,sil", "-", stdin=header + json.dumps(rec) + "\n").stdout
    assert out.splitlines()[1] == '"we""ird,name","5"'
    assert list(csv.reader(io.StringIO(out)))[1] == ['we"ird,name', "5"]


def test_json_types(mlp_dict):
    rows = [json.loads(line) for line in prof("--json", "-c", "idx,op,tc,flops,tflops,params",
                                               mlp_dict).stdout.splitlines()]
    assert rows[0] == {"idx": 1, "op": "linear", "tc": 1, "flops": 2097152, "tflops": 2.097,
                       "params": "M=32,N=256,K=128,fp16"}
    assert rows[1]["tc"] == 0


def test_against_legacy_pyprof_prof(mlp_dict):
    """NVIDIA/PyProf's prof on the same database (synthetic_mlp.nsys.pyprof.allcols.csv):
    every column agrees except where PyProf had a documented bug."""
    ours = list(csv.DictReader(io.StringIO(prof("--csv", "-c", "all", mlp_dict).stdout)))
    with open(os.path.join(DATA, "synthetic_mlp.nsys.pyprof.allcols.csv")) as f:
        theirs = list(csv.DictReader(f))
    assert len(ours) == len(theirs) == 7
    same = ["Idx", "SeqId", "AltSeqId", "TId", "Layer", "Trace", "Direction", "Module", "Kernel",
            "Sil(ns)", "Device", "Stream", "Grid", "Block"]
    for o, t in zip(ours, theirs):
        assert {k: o[k] for k in same} == {k: t[k] for k in same}
    # FLOPs of the forward GEMM and relu agree: 2*32*256*128 and 32*256.
    assert (ours[0]["FLOPs(FMA=2)"], theirs[0]["FLOPs"]) == ("2097152", "2097152")
    assert (ours[1]["FLOPs(FMA=2)"], theirs[1]["FLOPs"]) == ("8192", "8192")
    # PyProf's linear bytes bug (legacy-pyprof.md §2.4 item 1): m*n + m*k + n*k*sz = 49152;
    # the ideal traffic is 2 bytes * (32*128 + 256*128 + 256 + 32*256) = 90624.
    assert (ours[0]["Bytes(ideal DRAM)"], theirs[0]["Bytes"]) == ("90624", "49152")
    # Sub: PyProf numbered the bias reduction 0 again (a new op list); it is the third kernel of
    # the backward node.
    assert [o["Sub"] for o in ours] == ["0", "0", "0", "0", "0", "1", "2"]
    assert [t["Sub"] for t in theirs] == ["0", "0", "0", "0", "0", "1", "0"]
    # TC: PyProf printed "-" where no op asked; we judge every kernel by its name.
    assert [o["TC"] for o in ours] == ["1", "0", "0", "0", "1", "1", "0"]


def test_reports(mlp_dict, tmp_path):
    text = prof("--report", "summary,op,kernel,module,tc,instance", mlp_dict).stdout
    for title in ("summary", "ops by total time", "kernels by total time", "modules",
                  "Tensor Core use of eligible ops", "op instances"):
        assert title in text
    summary = {r["Metric"]: r["Value"] for r in report_rows(prof(
        "--report", "summary", "--formats", "json", mlp_dict).stdout)}
    assert summary["records"] == 7 and summary["GPU busy (ns)"] == 4500
    assert summary["Tensor Core kernel time %"] == 66.7  # 3000 of 4500 ns in h884 kernels
    prof("--report", "op,tc", "--formats", "csv,json", "-o", tmp_path / "r", mlp_dict)
    assert sorted(os.listdir(tmp_path)) == ["r.op.csv", "r.op.json", "r.tc.csv", "r.tc.json"]
    ops = list(csv.DictReader(open(tmp_path / "r.op.csv")))
    assert ops[0]["Op"] == "linear" and ops[0]["Direction"] == "bprop"
    assert ops[0]["Total(ns)"] == "2300" and ops[0]["Instances"] == "1"


def test_usage_and_bad_input(tmp_path, mlp_dict):
    assert prof("--csv", "--json", mlp_dict, check=False).returncode == 2
    res = prof("-c", "idx,nope", mlp_dict, check=False)
    assert res.returncode == 2 and "unknown column 'nope'" in res.stderr
    res = prof("--report", "nope", mlp_dict, check=False)
    assert res.returncode == 2 and "unknown report" in res.stderr
    res = prof(tmp_path / "missing.dict", check=False)
    assert res.returncode == 1 and "cannot open" in res.stderr
    bad = tmp_path / "bad.dict"
    bad.write_text("not json\n")
    res = prof(bad, check=False)
    assert res.returncode == 1 and "pyprof_dict header" in res.stderr
    mixed = tmp_path / "mixed.dict"
    mixed.write_text(open(mlp_dict).read() + "garbage line\n{\"kind\":\"kernel\"}\n")
    res = prof(mixed, check=False)
    assert res.returncode == 0 and "1 unreadable lines skipped" in res.stderr
    assert len(res.stdout.splitlines()) == 1 + 8


def test_ranks_report_says_skipped_lines_as_prof_does(tmp_path, mlp_dict):
    """Each rank's file is read as `pyprof prof` reads one (prof/load_profile.h): an unreadable
    line is skipped, named and counted, with the rank's file named (the ranks path used to say
    neither the count nor the notes)."""
    header, records = open(mlp_dict).read().split("\n", 1)
    ranks = []
    for rank in (0, 1):
        path = tmp_path / f"net.rank{rank}.dict"
        text = header[:-1] + f',"rank":{rank},"world_size":2}}\n' + records
        if rank == 1:
            text += "garbage line\n"
        path.write_text(text)
        ranks.append(path)
    bad_line = len(text.splitlines())
    res = prof("--report", "ranks", *ranks, check=False)
    assert res.returncode == 0, res.stderr
    assert f"pyprof prof: warning: {ranks[1]}: line {bad_line}: not a JSON object\n" in res.stderr
    assert f"pyprof prof: warning: {ranks[1]}: 1 unreadable lines skipped\n" in res.stderr
