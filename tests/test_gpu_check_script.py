"""scripts/gpu-check.sh and scripts/gpu_check_report.py on a machine without a GPU: the parts
that must not rot between the rare sessions that have one (docs/gpu-validation.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def test_a_skipped_phase_reports_no_earlier_runs_output(tmp_path):
    """Rerunning into the same folder with a phase skipped must not pass the last run's log of
    that phase off as this run's (nor copy it to $OUT)."""
    (tmp_path / "smoke.log").write_text("ops by total time (an earlier run)\n")
    (tmp_path / "tests.xml").write_text("<testsuites/>")
    res = gpu_check("--skip", "build,smoke", "--cpu-ok", "--out", tmp_path)
    assert res.returncode == 0, res.stdout[-3000:]
    assert not (tmp_path / "smoke.log").exists() and not (tmp_path / "tests.xml").exists()
    assert (tmp_path / "facts.json").exists() and (tmp_path / "rows.md").exists()


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
