"""Reports `peaks` and `roofline` of `pyprof prof` (docs/peaks.md): hand-made net.dicts with
numbers worked out by hand, real traces from tests/data, and `--peaks` files good and bad."""
import json
import os

import pytest

import testlib

pytestmark = pytest.mark.needs_build

HEADER_CPU = {"pyprof_dict": 1, "source": "hand", "format": "pyprof", "records": "op"}


def tensor(shape, dtype="float32"):
    return {"shape": shape, "dtype": dtype}


def write_lines(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def report_rows(*args):
    """`pyprof prof ... --formats json`: {"report/table" id: [row dicts]}."""
    res = testlib.prof(*args, "--formats", "json")
    tables = {}
    for row in testlib.report_rows(res.stdout):
        tables.setdefault(f"{row.pop('report')}/{row.pop('table')}", []).append(row)
    return tables


def peaks_file(tmp_path, devices, name="peaks.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"pyprof_peaks": 1, "devices": devices}))
    return str(path)


@pytest.fixture
def cpu_mm_dict(tmp_path):
    # aten::mm [64,128] x [128,256] float32 in 1 ms: 2*64*128*256 = 4194304 FLOPs and
    # (64*128 + 128*256 + 64*256) * 4 = 229376 bytes.
    mm = {"kind": "op", "name": "aten::mm", "op": "aten::mm", "dir": "fprop", "start": 1000,
          "duration": 1000000, "self_duration": 1000000, "pid": 1, "tid": 1, "id": 1,
          "op_id": 1, "dialect": "pyprof", "instance": 1, "module": "Net.fc",
          "args": {"self": tensor([64, 128]), "mat2": tensor([128, 256])}}
    return write_lines(tmp_path / "mm.dict", [HEADER_CPU, mm])


def test_cpu_roofline_by_hand(cpu_mm_dict, tmp_path):
    # CPU: 10 GFLOP/s fp32, 1 GB/s. Intensity 4194304 / 229376 = 18.2857 FLOP/B > ridge 10:
    # compute bound, roof 1e10; achieved 4194304 / 1 ms = 4.194304e9 = 41.94% of it.
    peaks = peaks_file(tmp_path, [{"name": "cpu", "kind": "datasheet", "source": "by hand",
                                   "memory_bandwidth": 1e9, "flops": {"fp32": 1e10}}])
    tables = report_rows(cpu_mm_dict, "--report", "peaks,roofline", "--peaks", peaks)
    assert tables["peaks/peaks"] == [{
        "Device": "cpu", "Name": "host CPU", "Kind": "override",
        "Source": f"--peaks {peaks}: by hand", "Mode": "fp32", "Peak FLOP/s": 1e10,
        "Memory B/s": 1e9, "Ridge FLOP/Byte": 10}]
    # A type's row has no module or shapes: null, JSON's one "no value".
    for title, module, shapes in (("roofline/op_types", None, None),
                                  ("roofline/op_instances", "Net.fc", "[64,128],[128,256]")):
        (row,) = tables[title]
        assert row == {
            "Op": "aten::mm", "Direction": "fprop", "Module": module, "Shapes": shapes,
            "DType": "float32", "Mode": "fp32", "Device": "cpu", "Instances": 1,
            "Time(ns)": 1000000, "FLOPs(FMA=2)": 4194304, "Bytes(ideal DRAM)": 229376,
            "FLOP/Byte": pytest.approx(18.2857142857, rel=1e-9),
            "FLOP/s": pytest.approx(4.194304e9, rel=1e-9), "Roof FLOP/s": 1e10,
            "% of roof": 41.94, "Bound": "compute"}


def test_cpu_without_peaks_says_what_is_missing(cpu_mm_dict):
    tables = report_rows(cpu_mm_dict, "--report", "peaks,roofline")
    (row,) = tables["peaks/peaks"]
    assert row["Device"] == "cpu" and row["Mode"] is None and row["Peak FLOP/s"] is None
    assert "no peaks for the host CPU" in row["Source"] and "--peaks" in row["Source"]
    (point,) = tables["roofline/op_instances"]
    assert point["FLOP/s"] == pytest.approx(4.194304e9, rel=1e-9)
    assert point["Roof FLOP/s"] is None and point["% of roof"] is None
    assert point["Bound"] is None  # na: null in JSON


def gpu_dict(tmp_path, device):
    # One fp16 GEMM on Tensor Cores, [1024,1024] x [1024,1024] in 20 us: 2*1024^3 =
    # 2147483648 FLOPs, 3 * 1024*1024 * 2 = 6291456 bytes.
    header = {"pyprof_dict": 1, "source": "hand", "format": "pyprof", "records": "gpu",
              "devices": [device]}
    kernel = {"kind": "kernel", "name": "gemm",
              "long_name": "void cutlass::Kernel<cutlass_80_tensorop_h16816gemm_128x128_32x3_nn_"
                           "align8>(Params)",
              "device": 0, "stream": 7, "start": 1000, "duration": 20000, "op": "aten::mm",
              "dir": "fprop", "instance": 1, "module": "Net.fc",
              "args": {"self": tensor([1024, 1024], "float16"),
                       "mat2": tensor([1024, 1024], "float16")}}
    return write_lines(tmp_path / "gpu.dict", [header, kernel])


def test_gpu_roofline_by_hand_h100_pcie(tmp_path):
    d = gpu_dict(tmp_path, {"id": 0, "name": "NVIDIA H100 PCIe", "sm_count": 114,
                            "clock_hz": 1755000000, "memory_bandwidth": 2000000000000,
                            "total_memory": 85000000000, "compute_capability": [9, 0]})
    tables = report_rows(d, "--report", "peaks,roofline")
    peaks = {row["Mode"]: row for row in tables["peaks/peaks"]}
    # H100 PCIe, not SXM or NVL: fp16 Tensor 756 TFLOP/s, 2000 GB/s (reference §1, §2).
    assert peaks["fp16_tc"]["Peak FLOP/s"] == 756e12
    assert peaks["fp16_tc"]["Memory B/s"] == 2000e9
    assert peaks["fp16_tc"]["Ridge FLOP/Byte"] == 378
    assert peaks["tf32_tc"]["Source"].startswith("FLOP/s: N2,N3 (sparse figure halved)")
    assert all(row["Kind"] == "datasheet" and row["Name"] == "NVIDIA H100 PCIe"
               for row in peaks.values())
    # Intensity 2147483648 / 6291456 = 341.33 FLOP/B < ridge 378: memory bound, roof
    # 341.33 x 2e12 = 6.8267e14; achieved 2147483648 / 20 us = 1.0737e14 = 15.73%.
    (row,) = tables["roofline/op_instances"]
    assert row["Mode"] == "fp16_tc" and row["DType"] == "float16" and row["Device"] == "0"
    assert row["FLOP/Byte"] == pytest.approx(2147483648 / 6291456, rel=1e-9)
    assert row["FLOP/s"] == pytest.approx(2147483648 / 20e-6, rel=1e-9)
    assert row["Roof FLOP/s"] == pytest.approx(2147483648 / 6291456 * 2e12, rel=1e-9)
    assert row["% of roof"] == 15.73
    assert row["Bound"] == "memory"


def test_unknown_gpu_derived_from_header(tmp_path):
    d = gpu_dict(tmp_path, {"id": 0, "name": "NVIDIA Future GPU", "sm_count": 100,
                            "clock_hz": 1500000000, "memory_bandwidth": 1000000000000,
                            "total_memory": 0, "compute_capability": [9, 0]})
    tables = report_rows(d, "--report", "peaks,roofline")
    peaks = {row["Mode"]: row for row in tables["peaks/peaks"]}
    assert {row["Kind"] for row in peaks.values()} == {"derived"}
    # sm_90: 4096 FP16 Tensor FLOP/clk/SM: 100 x 1.5 GHz x 4096 = 6.144e14.
    assert peaks["fp16_tc"]["Peak FLOP/s"] == 6.144e14
    assert peaks["fp32"]["Peak FLOP/s"] == 100 * 1.5e9 * 256
    assert peaks["fp16_tc"]["Memory B/s"] == 1e12
    # Intensity 341.33 < ridge 614.4: memory bound; 6291456 B / 20 us = 3.1457e11 B/s = 31.46%.
    (row,) = tables["roofline/op_instances"]
    assert row["% of roof"] == 31.46 and row["Bound"] == "memory"


def test_gpu_without_clock_or_name_match_has_no_peaks(tmp_path):
    d = gpu_dict(tmp_path, {"id": 0, "name": "Mystery", "sm_count": 0, "clock_hz": 0,
                            "memory_bandwidth": 0, "total_memory": 0,
                            "compute_capability": [0, 0]})
    tables = report_rows(d, "--report", "peaks,roofline")
    (row,) = tables["peaks/peaks"]
    assert row["Source"] == ("unknown GPU 'Mystery': no datasheet entry and no compute "
                             "capability/clock to derive peaks")
    assert tables["roofline/op_instances"][0]["Bound"] is None


def test_peaks_file_overrides_and_measured(tmp_path):
    d = gpu_dict(tmp_path, {"id": 0, "name": "NVIDIA H100 PCIe", "sm_count": 114,
                            "clock_hz": 1755000000, "memory_bandwidth": 0, "total_memory": 0,
                            "compute_capability": [9, 0]})
    peaks = peaks_file(tmp_path, [
        {"name": "*", "kind": "measured", "source": "pyprof peak, 2025-06-01, node7",
         "memory_bandwidth": 1.6e12, "flops": {"fp16_tc": 6e14}},
        {"name": "nvidia h100 pcie", "kind": "datasheet", "source": "vendor sheet rev 2",
         "memory_bandwidth": 2e12, "flops": {"fp16_tc": 5e14}}])
    tables = report_rows(d, "--report", "peaks,roofline", "--peaks", peaks)
    rows = tables["peaks/peaks"]
    assert [(r["Kind"], r["Mode"], r["Peak FLOP/s"], r["Memory B/s"]) for r in rows] == [
        ("override", "fp16_tc", 5e14, 2e12), ("measured", "fp16_tc", 6e14, 1.6e12)]
    # The roof is the override's: intensity 341.33 x 2e12 = 6.83e14 > 5e14: compute bound,
    # 1.0737e14 / 5e14 = 21.47%.
    (row,) = tables["roofline/op_instances"]
    assert row["Roof FLOP/s"] == 5e14 and row["Bound"] == "compute"
    assert row["% of roof"] == 21.47


@pytest.mark.parametrize("text, message", [
    ("{not json", "not a JSON document"),
    ('{"pyprof_peaks": 2, "devices": []}', "peaks file version 2"),
    ('{"pyprof_peaks": 1, "devices": [{"name": "cpu", "kind": "measured", '
     '"flops": {"fp32": -1}}]}', 'devices[0] ("cpu"): flops.fp32 is -1, not a positive number'),
    ('{"pyprof_peaks": 1, "devices": [{"name": "cpu", "kind": "measured", '
     '"flops": {"fp128": 1}}]}', 'devices[0] ("cpu"): unknown mode "fp128"'),
    ('{"pyprof_peaks": 1, "devices": [{"name": "cpu", "kind": "roughly"}]}',
     'devices[0] ("cpu"): "kind" must be "datasheet" or "measured"'),
])
def test_bad_peaks_file_exits_1(cpu_mm_dict, tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    res = testlib.prof(cpu_mm_dict, "--report", "roofline", "--peaks", str(path), check=False)
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr.startswith(f"pyprof prof: error: {path}: ")
    assert message in res.stderr
    assert res.stderr.count("\n") == 1


def test_missing_peaks_file(cpu_mm_dict, tmp_path):
    res = testlib.prof(cpu_mm_dict, "--report", "roofline", "--peaks",
                       str(tmp_path / "none.json"), check=False)
    assert res.returncode == 1
    assert f"cannot open peaks file {tmp_path / 'none.json'}" in res.stderr


def test_kineto_a100_matched_by_model(tmp_path):
    out = tmp_path / "alexnet.dict"
    testlib.parse_to(os.path.join(testlib.DATA, "kineto_hta-alexnet-a100.json.gz"), out)
    tables = report_rows(str(out), "--report", "peaks")
    rows = tables["peaks/peaks"]
    # The trace lists 8 GPUs named "NVIDIA A100-PG509-200" (108 SMs, 39.4 GiB, no clock); its
    # kernels ran on device 0 only. 40 GB A100: 312 TFLOP/s fp16, 1555 GB/s.
    assert {r["Device"] for r in rows} == {"0"}
    by_mode = {r["Mode"]: r for r in rows}
    assert set(by_mode) == {"fp64", "fp64_tc", "fp32", "tf32_tc", "fp16_tc", "bf16_tc",
                            "int8_tc"}
    assert by_mode["fp16_tc"]["Peak FLOP/s"] == 312e12
    assert by_mode["fp16_tc"]["Memory B/s"] == 1555e9
    assert by_mode["fp64"]["Peak FLOP/s"] == 9.7e12
    assert "matched to the A100 40GB" in by_mode["fp32"]["Source"]


def test_nsys_lenet_derived_and_consistent(tmp_path):
    out = tmp_path / "lenet.dict"
    testlib.parse_to(os.path.join(testlib.DATA,
                                  "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite"), out)
    tables = report_rows(str(out), "--report", "peaks,roofline")
    by_mode = {r["Mode"]: r for r in tables["peaks/peaks"]}
    # An RTX 2070 SUPER (not in the table): sm_75 GeForce rates x 40 SMs x 1785 MHz.
    assert by_mode["fp32"]["Kind"] == "derived"
    assert by_mode["fp32"]["Peak FLOP/s"] == 40 * 128 * 1.785e9
    assert by_mode["fp16_tc"]["Peak FLOP/s"] == 40 * 512 * 1.785e9
    bandwidth = by_mode["fp32"]["Memory B/s"]
    assert bandwidth > 0
    points = tables["roofline/op_instances"]
    assert points and tables["roofline/op_types"]
    times = [p["Time(ns)"] for p in points]
    assert times == sorted(times, reverse=True)
    for p in points:
        peak = by_mode[p["Mode"]]["Peak FLOP/s"]
        intensity = p["FLOPs(FMA=2)"] / p["Bytes(ideal DRAM)"]
        assert p["Roof FLOP/s"] == pytest.approx(min(peak, intensity * bandwidth), rel=1e-8)
        achieved = p["FLOPs(FMA=2)"] / (p["Time(ns)"] * 1e-9)
        assert p["% of roof"] == pytest.approx(100 * achieved / p["Roof FLOP/s"], abs=0.006)
        assert p["Bound"] == ("memory" if intensity < peak / bandwidth else "compute")
    # Op types add up their instances.
    for t in tables["roofline/op_types"]:
        mine = [p for p in points if (p["Op"], p["Direction"]) == (t["Op"], t["Direction"])]
        assert t["Instances"] == len(mine)
        assert t["Time(ns)"] == sum(p["Time(ns)"] for p in mine)


def test_several_formats_one_file_per_report(cpu_mm_dict, tmp_path):
    prefix = tmp_path / "out"
    testlib.prof(cpu_mm_dict, "--report", "peaks,roofline", "--formats", "json,csv", "-o",
                 str(prefix))
    roofline = (tmp_path / "out.roofline.json").read_text().splitlines()
    tables, _ = testlib.report_json("\n".join(roofline))
    assert [(t["report"], t["table"]) for t in tables] == [("roofline", "op_types"),
                                                            ("roofline", "op_instances")]
    assert (tmp_path / "out.peaks.csv").read_text().startswith(
        '"Device","Name","Kind","Source","Mode","Peak FLOP/s","Memory B/s","Ridge FLOP/Byte"')
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["mm.dict", "out.peaks.csv", "out.peaks.json", "out.roofline.csv", "out.roofline.json"])


def test_docs_table_is_the_compiled_table():
    """docs/peaks.md §1 shows prof/gpu_peaks.txt: every row, every value and mark."""
    marks = {"ᵈ": "d", "ᵘ": "u", "½": "h"}

    def plain(cell):
        cell = cell.strip().strip("`")
        if cell == "—":
            return "-"
        for sup, letter in marks.items():
            cell = cell.replace(sup, letter)
        return cell

    with open(os.path.join(testlib.ROOT, "prof", "gpu_peaks.txt")) as f:
        data = [[c.strip() for c in line.split("|")] for line in f
                if line.strip() and not line.startswith("#")]
    with open(os.path.join(testlib.ROOT, "docs", "peaks.md")) as f:
        text = f.read()
    start = text.index("| GPU | CUDA device name | CC |")
    lines = text[start:].split("\n\n")[0].splitlines()[2:]
    docs = [[plain(c) for c in line.strip("|").split("|")] for line in lines]
    assert len(docs) == len(data) == 24
    for doc_row, data_row in zip(docs, data):
        assert doc_row[:16] == data_row[:16]
        compute = data_row[17] if data_row[17] != "-" else "u"
        assert doc_row[16] == f"{data_row[16]}; {compute}"
