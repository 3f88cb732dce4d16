"""scripts/gpu-check.sh and scripts/gpu_check_report.py on a machine without a GPU: the parts
that must not rot between the rare sessions that have one (docs/gpu-validation.md)."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import testlib

GPU_CHECK = os.path.join(testlib.ROOT, "scripts", "gpu-check.sh")
REPORT = os.path.join(testlib.ROOT, "scripts", "gpu_check_report.py")


def gpu_check(*args, timeout=600):
    env = testlib.pyprof_env({"PYTHON": sys.executable})
    env.pop("OUT", None)
    return subprocess.run(["bash", GPU_CHECK, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=testlib.ROOT)


def cuda_visible() -> bool:
    import torch

    return torch.cuda.is_available()


def plotly_imports() -> bool:
    try:
        import plotly  # noqa: F401
    except ImportError:
        return False
    return True


def kinds(path) -> collections.Counter:
    """Records by kind in a net.dict, counted here (not by gpu_check_report.py)."""
    counted = collections.Counter()
    for line in open(path, encoding="utf-8"):
        record = json.loads(line)
        if "kind" in record:
            counted[record["kind"]] += 1
    return counted


def check_lines(log: str, name: str) -> list[str]:
    return [line[len(f"check {name}: "):] for line in log.splitlines()
            if line.startswith(f"check {name}: ")]


def dummy_wheel(folder, name: str, version: str) -> str:
    """A minimal pure-Python wheel of one module that says its name and version."""
    path = os.path.join(folder, f"{name}-{version}-py3-none-any.whl")
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{f},,\n" for f in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as whl:
        for member, text in files.items():
            whl.writestr(member, text)
    return path


@pytest.mark.needs_build
def test_dry_run_profiles_parses_and_costs_on_the_cpu(tmp_path):
    import torch

    res = gpu_check("--skip", "build", "--cpu-ok", "--out", tmp_path)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    facts = json.loads((tmp_path / "facts.json").read_text())
    assert facts["torch"] == torch.__version__ and facts["python"]
    smoke = (tmp_path / "smoke.log").read_text()
    # "ops by self time" on this CPU, "ops by total time" on a GPU.
    assert "ops by " in smoke and "aten::" in smoke, smoke[-3000:]
    assert (tmp_path / "smoke.sqlite").stat().st_size > 0
    rows = (tmp_path / "rows.md").read_text()
    assert f"torch {torch.__version__}" in rows
    if not cuda_visible():
        assert "| not run |" in rows and "no CUDA device visible" in res.stdout

    # The report phase on the smoke capture: every step ran and said so.
    log = (tmp_path / "report.log").read_text()
    assert check_lines(log, "roofline") and check_lines(log, "roofline")[0].startswith("ok")
    assert "roofline: op types" in log and "device peaks" in log
    # Export round trip: the counts the check printed are the dicts' own, counted here.
    ranges = kinds(tmp_path / "smoke.ranges.dict")
    reparsed = kinds(tmp_path / "smoke.reparsed.dict")
    # Memory lines are exported as counter tracks, which parse does not read back as memory
    # lines (docs/export.md): compared without them, and said.
    memory = ranges.pop("memory", 0)
    assert memory == 0 or \
        f"(exported as counter tracks, not read back: memory {memory})" in log, log
    assert ranges == reparsed and ranges["op"] == kinds(tmp_path / "smoke.dict")["op"] > 0
    assert ranges["range"] > 0  # parse --ranges: module and user ranges too
    (export,) = check_lines(log, "export")
    assert export.startswith("ok: smoke.trace.json.gz") and export.endswith(": equal"), export
    assert f"op {ranges['op']}, range {ranges['range']}" in export
    # pyprof peak, the CPU's tiny run: the file prof reads, and measured rows in the log.
    peaks = json.loads((tmp_path / "peaks.json").read_text())
    (device,) = peaks["devices"]
    assert device["name"] == "cpu" and device["kind"] == "measured"
    assert set(device["flops"]) <= {"fp64", "fp32", "bf16", "fp16"} and "fp32" in device["flops"]
    assert check_lines(log, "peak")[0].startswith("ok: peaks.json (pyprof peak --device cpu")
    assert check_lines(log, "peaks") == ["device cpu 'host CPU': no datasheet peaks: only the "
                                         "measured ones"]
    ratios = check_lines(log, "ratio")
    assert any(r.startswith("host CPU | fp32 | ") and r.endswith("| - | -") for r in ratios)
    assert any(r.startswith("host CPU | copy (memory B/s) | ") for r in ratios)
    # The report page: written, then rewritten with the measured roofs; or said to be skipped.
    if plotly_imports():
        assert check_lines(log, "report")[0].startswith("ok: smoke.html")
        assert check_lines(log, "report-measured")[0].startswith("ok: smoke.html rewritten")
        html = (tmp_path / "smoke.html").read_text()
        # The page that stays is the second: it names the measured peaks' source.
        assert html.lstrip().lower().startswith("<!doctype html") and device["source"] in html
    else:
        assert check_lines(log, "report")[0].startswith("skipped: plotly does not import")
        assert not (tmp_path / "smoke.html").exists()
    # ... and its rows.
    assert "Report, export and peaks (third table):" in rows
    assert "records by kind" in rows and ": equal |" in rows
    assert "Measured vs datasheet (fourth table):" in rows
    assert "| host CPU | fp32 | " in rows


def test_a_skipped_phase_reports_no_earlier_runs_output(tmp_path):
    """Rerunning into the same folder with a phase skipped must not pass the last run's log of
    that phase off as this run's (nor copy it to $OUT)."""
    (tmp_path / "smoke.log").write_text("ops by total time (an earlier run)\n")
    (tmp_path / "tests.xml").write_text("<testsuites/>")
    earlier = ["report.log", "smoke.html", "peaks.json", "smoke.trace.json.gz",
               "smoke-peaks.jsonl"]
    for name in earlier:
        (tmp_path / name).write_text("check report: ok: smoke.html (an earlier run)\n")
    res = gpu_check("--skip", "build,smoke", "--cpu-ok", "--out", tmp_path)
    assert res.returncode == 0, res.stdout[-3000:]
    assert not (tmp_path / "smoke.log").exists() and not (tmp_path / "tests.xml").exists()
    assert not [name for name in earlier if (tmp_path / name).exists()]
    assert (tmp_path / "facts.json").exists() and (tmp_path / "rows.md").exists()
    # Without a smoke capture the report phase cannot run: said, not failed (smoke was skipped).
    assert "== report: skipped: the smoke phase left no smoke.sqlite" in res.stdout
    assert "(the report phase did not run)" in (tmp_path / "rows.md").read_text()


def test_without_a_gpu_the_run_fails_unless_told_it_is_a_dry_run(tmp_path):
    if cuda_visible():
        pytest.skip("a GPU is visible: the GPU phases would run")
    res = gpu_check("--skip", "build,smoke", "--out", tmp_path)
    assert res.returncode == 1
    assert "FAILED: no-gpu" in res.stdout


def test_bad_options_and_a_missing_pack_are_usage_errors(tmp_path):
    res = gpu_check("--deps", tmp_path / "nowhere")
    assert res.returncode == 2 and "make it with --pack" in res.stderr
    res = gpu_check("--runs", "many")
    assert res.returncode == 2 and "whole numbers" in res.stderr
    res = gpu_check("--frobnicate")
    assert res.returncode == 2 and "unknown option --frobnicate" in res.stderr


def test_report_turns_phase_outputs_into_the_table_rows(tmp_path):
    """The rows come from what the tools print: pytest's JUnit file, test_gpu_capture's -rP
    lines and gpu_overhead's markdown table (formats copied from those files' print calls)."""
    (tmp_path / "facts.json").write_text(json.dumps(
        {"python": "3.12.3", "torch": "2.11.0+cu130", "cuda": "13.0", "cuda_available": True,
         "gpu": "NVIDIA H100 80GB HBM3"}))
    (tmp_path / "nvidia-smi.txt").write_text("NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB\n")
    (tmp_path / "tests.xml").write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        '<testcase name="test_a[resnet_block]"/><testcase name="test_b[resnet_block]"/>'
        '<testcase name="test_c[transformer]"><failure message="x"/></testcase>'
        '<testcase name="test_d"><skipped/></testcase></testsuite></testsuites>')
    (tmp_path / "tests.log").write_text(
        "resnet_block: launch calls inside an op range: main thread(s) 100.0% (120/120); "
        "inside a backward node: 40; innermost op is aten::*: 99.2% (119/120)\n"
        "resnet_block: kernel records attributed to an op: 100.0% (120/120); bprop 60, paired 60\n")
    (tmp_path / "overhead.log").write_text(
        "machine: NVIDIA H100 80GB HBM3, driver 580.159.04; torch 2.11.0+cu130\n\n"
        "| model | batch | step, no profiling (ms) | step, pyprof profile (ms) | overhead "
        "| kernels/step | CUDA trace | verdict |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n"
        "| resnet_block | 256 | 31.20 (31.10-31.40) | 32.00 (31.90-32.10) | +2.6% | 412 | on "
        "| ok (target <= 10%) |\n")
    res = subprocess.run([sys.executable, REPORT, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    test_row = next(line for line in lines if line.startswith("| ") and "passed" in line)
    cells = [c.strip() for c in test_row.strip("|").split("|")]
    assert cells[1:4] == ["NVIDIA H100 80GB HBM3, driver 580.159.04",
                          "torch 2.11.0+cu130, CUDA 13.0",
                          "2 passed, 1 failed, 1 skipped (test_c[transformer])"]
    assert cells[4].startswith("resnet_block: launch calls inside an op range: main thread(s)")
    assert cells[5].startswith("resnet_block: kernel records attributed to an op: 100.0%")
    overhead_row = next(line for line in lines if "| resnet_block | 256 |" in line)
    assert overhead_row.endswith("| NVIDIA H100 80GB HBM3 | resnet_block | 256 | 31.20 "
                                 "(31.10-31.40) | 32.00 (31.90-32.10) | +2.6% |")
    assert "machine: NVIDIA H100" in res.stdout


def test_report_rows_for_the_report_phase(tmp_path):
    """The third and fourth tables come from the report phase's check lines (as report_phase in
    gpu-check.sh and the peaks helper print them); a '|' inside a cell must not split it."""
    (tmp_path / "nvidia-smi.txt").write_text("NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB\n")
    (tmp_path / "report.log").write_text(
        "$ bash -c report_phase\n"
        "check roofline: ok: 183 lines\n"
        "check export: ok: smoke.trace.json.gz 36497 bytes; records by kind: parse --ranges of "
        "the database kernel 410, op 785, range 887; the export parsed back kernel 410, op 785, "
        "range 887: equal\n"
        "check report: ok: smoke.html 5250334 bytes (datasheet roofs)\n"
        "check peak: ok: peaks.json (pyprof peak --device cuda --repeat 3)\n"
        "check peaks: device 0 'NVIDIA H100 80GB HBM3': datasheet: FLOP/s: N2; B/s: N17 | x\n"
        "check ratio: NVIDIA H100 80GB HBM3 | fp16_tc | 700 TFLOP/s | 989 TFLOP/s | 70.8 %\n"
        "check report-measured: ok: smoke.html rewritten with the measured roofs\n")
    res = subprocess.run([sys.executable, REPORT, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index("Report, export and peaks (third table):")
    cells = [c.strip() for c in lines[at + 1].strip("|").split("|")]
    assert cells[1:] == [
        "NVIDIA H100 80GB HBM3",
        "ok: smoke.html 5250334 bytes (datasheet roofs); ok: smoke.html rewritten with the "
        "measured roofs",
        "ok: smoke.trace.json.gz 36497 bytes; records by kind: parse --ranges of the database "
        "kernel 410, op 785, range 887; the export parsed back kernel 410, op 785, range 887: "
        "equal",
        "device 0 'NVIDIA H100 80GB HBM3': datasheet: FLOP/s: N2; B/s: N17 / x",
        "ok: peaks.json (pyprof peak --device cuda --repeat 3)"]
    at = lines.index("Measured vs datasheet (fourth table):")
    assert lines[at + 1].endswith("| NVIDIA H100 80GB HBM3 | fp16_tc | 700 TFLOP/s | 989 TFLOP/s "
                                  "| 70.8 % |")


def test_report_rows_for_the_cuda12_phase(tmp_path):
    """The fifth table: one row per packed CUDA 12 release, from the lines
    tests/test_gpu_cuda12.py prints (-rP; pytest repeats them, the row lists each once) and its
    JUnit file."""
    (tmp_path / "nvidia-smi.txt").write_text("NVIDIA H200, 580.159.04, 143771 MiB\n")
    (tmp_path / "cuda12.xml").write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        '<testcase name="test_a[12.0.146]"/><testcase name="test_a[12.9.79]"/>'
        '</testsuite></testsuites>')
    status = ("on: CUPTI API version 28, CUDA 12.9 (/p/12.9.79/nvidia/cuda_cupti/lib/"
              "libcupti.so.12), CUDA 12 records")
    (tmp_path / "cuda12.log").write_text(
        f"cuda12 12.9.79: {status}; cudart 12090, driver 13000, NVIDIA H200\n"
        "cuda12 12.0.146: kernels 10/10 recorded with their launch call (cuLaunchKernel 4, "
        "cudaGraphLaunch 6), 10/10 inside their range; graph replays with their node 6\n"
        "cuda12 12.9.79 client-first: subscribe 0, exit 0, result ok; a | b\n"
        f"cuda12 12.9.79: {status}; cudart 12090, driver 13000, NVIDIA H200\n")
    res = subprocess.run([sys.executable, REPORT, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index("CUDA 12 (fifth table):")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[at + 1:at + 3]]
    assert [row[1:4] for row in rows] == [
        ["NVIDIA H200, driver 580.159.04", "CUDA 12.0.146 (pip's libcudart.so.12 and "
         "libcupti.so.12), cuda12_capture_app", "2 passed"],
        ["NVIDIA H200, driver 580.159.04", "CUDA 12.9.79 (pip's libcudart.so.12 and "
         "libcupti.so.12), cuda12_capture_app", "2 passed"]]
    assert rows[0][4].startswith("kernels 10/10 recorded with their launch call")
    assert rows[1][4] == (f"{status}; cudart 12090, driver 13000, NVIDIA H200; client-first: "
                          "subscribe 0, exit 0, result ok; a / b")

    # Without the phase: said so, not left blank.
    for name in ("cuda12.log", "cuda12.xml"):
        (tmp_path / name).unlink()
    res = subprocess.run([sys.executable, REPORT, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert "(the cuda12 phase did not run: not run)" in res.stdout


def test_records_helper_compares_kinds(tmp_path):
    header = '{"pyprof_dict":1,"format":"pyprof"}\n'
    a, b = tmp_path / "a.dict", tmp_path / "b.dict"
    a.write_text(header + '{"kind":"op"}\n{"kind":"kernel"}\n{"kind":"op"}\n')
    b.write_text(header + '{"kind":"kernel"}\n{"kind":"op"}\n{"kind":"op"}\n')
    res = subprocess.run([sys.executable, REPORT, "records", str(a), str(b)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip().endswith(
        "database kernel 1, op 2; the export parsed back kernel 1, op 2: equal")
    b.write_text(header + '{"kind":"kernel"}\n{"kind":"op"}\n')
    res = subprocess.run([sys.executable, REPORT, "records", str(a), str(b)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and res.stdout.strip().endswith("kernel 1, op 1: DIFFER")


@pytest.mark.needs_build
def test_peaks_helper_sets_measured_beside_the_datasheet(tmp_path):
    """Real `pyprof prof --report peaks --peaks FILE --formats json` output for the A100 of the
    Kineto trace (matched to the A100 40GB SXM row: fp16_tc 312 TFLOP/s, 1555 GB/s, fp64 9.7 and
    fp64_tc 19.5 TFLOP/s, docs/peaks.md) and a measured file: ratios by hand."""
    trace = os.path.join(testlib.ROOT, "tests", "data", "kineto_hta-alexnet-a100.json.gz")
    measured = tmp_path / "peaks.json"
    measured.write_text(json.dumps({"pyprof_peaks": 1, "devices": [{
        "name": "NVIDIA A100-PG509-200", "kind": "measured", "source": "by hand",
        "memory_bandwidth": 1.3e12, "flops": {"fp16_tc": 2.5e14, "fp64": 1.8e13}}]}))
    jsonl, net = tmp_path / "peaks.jsonl", tmp_path / "net.dict"
    parse = subprocess.run([sys.executable, "-m", "pyprof", "parse", trace, "-o", str(net)],
                           capture_output=True, text=True, timeout=120,
                           env=testlib.pyprof_env(), cwd=testlib.ROOT)
    assert parse.returncode == 0, parse.stderr

    def helper(peaks_file):
        prof = subprocess.run([sys.executable, "-m", "pyprof", "prof", "--report", "peaks",
                               "--peaks", str(peaks_file), "--formats", "json", str(net)],
                              capture_output=True, text=True, timeout=120,
                              env=testlib.pyprof_env(), cwd=testlib.ROOT)
        assert prof.returncode == 0, prof.stderr
        jsonl.write_text(prof.stdout)
        return subprocess.run([sys.executable, REPORT, "peaks", str(jsonl), str(peaks_file)],
                              capture_output=True, text=True, timeout=60)

    res = helper(measured)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("check peaks: device 0 'NVIDIA A100-PG509-200': datasheet: ")
    assert "matched to the A100 40GB SXM row" in lines[0]
    ratios = check_lines(res.stdout, "ratio")
    assert "NVIDIA A100-PG509-200 | fp16_tc | 250 TFLOP/s | 312 TFLOP/s | 80.1 %" in ratios
    # 18 / 9.7 = 185.6 %, 18 / 19.5 = 92.3 %: cuBLAS runs fp64 on the FP64 Tensor Cores.
    assert ("NVIDIA A100-PG509-200 | fp64 | 18 TFLOP/s | 9.7 TFLOP/s | 185.6 % "
            "(of fp64_tc 19.5 TFLOP/s: 92.3 %)") in ratios
    assert "NVIDIA A100-PG509-200 | copy (memory B/s) | 1.3 TB/s | 1.55 TB/s | 83.6 %" in ratios

    # A measured file named for another GPU gives no measured roofs: that is a failure.
    measured.write_text(measured.read_text().replace("A100-PG509-200", "H100 80GB HBM3"))
    res = helper(measured)
    assert res.returncode == 1
    assert "check peaks: FAILED: the measured peaks of 'NVIDIA H100 80GB HBM3' matched no device " \
           "of the profile (0 'NVIDIA A100-PG509-200')" in res.stdout
    assert not check_lines(res.stdout, "ratio")


FAKE_APT_GET = r"""#!/usr/bin/env bash
# apt-get download PKG...: a tiny .deb per package, with one header, built here (no network).
[ "$1" = download ] || { echo "fake apt-get: only download" >&2; exit 100; }
shift
for pkg; do
  root=$(mktemp -d)
  mkdir -p "$root/DEBIAN" "$root/usr/include" "$root/usr/share/doc/$pkg"
  printf 'Package: %s\nVersion: 1.0-test\nArchitecture: all\nMaintainer: t <t@t>\n' "$pkg" \
    >"$root/DEBIAN/control"
  echo "Description: t" >>"$root/DEBIAN/control"
  echo "/* $pkg */" >"$root/usr/include/$pkg.h"
  dpkg-deb --build "$root" "${pkg}_1.0-test_all.deb" >/dev/null || exit 1
  rm -rf "$root"
done
"""


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="--pack needs dpkg-deb (Debian)")
def test_pack_gathers_debs_and_wheels_without_network(tmp_path):
    """--pack end to end with a stand-in apt-get (tiny .debs built here) and a local wheel folder
    for pip (PYPROF_PACK_PIP_ARGS): the wheels land in DIR/wheels, one version each, and the
    MANIFEST names them. The real download is the same pip command against PyPI."""
    bin_dir, mirror, pack = tmp_path / "bin", tmp_path / "mirror", tmp_path / "pack"
    bin_dir.mkdir()
    mirror.mkdir()
    (bin_dir / "apt-get").write_text(FAKE_APT_GET)
    (bin_dir / "apt-get").chmod(0o755)
    for name in ("plotly", "narwhals", "packaging"):
        dummy_wheel(mirror, name, "0.0.1")
    # An earlier pack's wheel: gone after this one.
    (pack / "wheels").mkdir(parents=True)
    dummy_wheel(pack / "wheels", "plotly", "0.0.0")
    # The CUDA 12 libraries and program (pack_cuda12) need NVIDIA's real wheels: left out here.
    env = testlib.pyprof_env({"PYTHON": sys.executable,
                              "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                              "PYPROF_PACK_PIP_ARGS": f"--no-index --find-links {mirror}",
                              "PYPROF_PACK_CUDA12": "0"})
    res = subprocess.run(["bash", GPU_CHECK, "--pack", str(pack)], capture_output=True,
                         text=True, timeout=300, env=env, cwd=testlib.ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (pack / "prefix" / "usr" / "include" / "libsqlite3-dev.h").exists()
    assert not (pack / "prefix" / "usr" / "share" / "doc").exists()
    assert not (pack / "debs").exists()
    assert sorted(os.listdir(pack / "wheels")) == [
        "narwhals-0.0.1-py3-none-any.whl", "packaging-0.0.1-py3-none-any.whl",
        "plotly-0.0.1-py3-none-any.whl"]
    manifest = (pack / "MANIFEST").read_text().splitlines()
    assert "libsqlite3-dev 1.0-test" in manifest
    assert "wheel plotly-0.0.1-py3-none-any.whl" in manifest
    assert "wheel narwhals-0.0.1-py3-none-any.whl" in manifest

    # pip finding nothing is a clear failure, not a pack without the report's wheels.
    for whl in mirror.iterdir():
        whl.unlink()
    res = subprocess.run(["bash", GPU_CHECK, "--pack", str(pack)], capture_output=True,
                         text=True, timeout=300, env=env, cwd=testlib.ROOT)
    assert res.returncode == 1 and "pip download failed" in res.stderr


def test_deps_installs_the_packed_wheels_this_python_lacks(tmp_path):
    """Run mode with --deps: a packed wheel whose package is missing here is installed offline
    into OUT/wheels-site, which the later phases see on PYTHONPATH (facts.json is written by one
    of them); a packed wheel of a package this Python has is left alone."""
    pack, out = tmp_path / "pack", tmp_path / "out"
    (pack / "prefix" / "usr").mkdir(parents=True)
    (pack / "wheels").mkdir()
    dummy_wheel(pack / "wheels", "pyprof_gpucheck_probe", "1.0")
    dummy_wheel(pack / "wheels", "packaging", "0.0.1")  # installed here: not to be shadowed
    res = gpu_check("--deps", pack, "--skip", "build,smoke,report", "--cpu-ok", "--out", out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "packed wheels installed into" in res.stdout
    assert (out / "wheels-site" / "pyprof_gpucheck_probe" / "__init__.py").exists()
    assert not (out / "wheels-site" / "packaging").exists()
    packages = json.loads((out / "facts.json").read_text())["python_packages"]
    assert packages["pyprof_gpucheck_probe"] == "1.0"
    assert packages["packaging"] not in (None, "0.0.1")

    # Again into the same folder, with nothing missing: nothing installed, the old site gone.
    (pack / "wheels" / "pyprof_gpucheck_probe-1.0-py3-none-any.whl").unlink()
    res = gpu_check("--deps", pack, "--skip", "build,smoke,report", "--cpu-ok", "--out", out)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "the packed wheels' packages are all installed here: none used" in res.stdout
    assert not (out / "wheels-site").exists()
